//! Writing one file in one step, where confinement put it. The bytes go to a temporary
//! file beside the target, which then takes the target's name: a rename over an existing
//! file (keeping its permissions), a hard link for a new one (which fails rather than
//! replace a file that appeared meanwhile). A reader sees the old file or the new one,
//! never half of one. Moving a file takes the same two ways to its new name, and creating
//! a directory is the first step of writing a file in it.
//!
//! Every step works relative to an open handle on the directory, and that handle is
//! checked to be the directory confinement approved (under the root, by its real path):
//! a directory swapped for a link after the check is not followed, and the directories a
//! new file needs are created one at a time without following links. The temporary name
//! is hidden (`.duet-write-…`), so the watcher never announces it.

use super::files;
use super::paths::Root;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, fchmod, linkat, mkdirat, open, openat, renameat, statat, unlinkat};
use rustix::io::Errno;
use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// What the target was when the user was asked; the write fails if that changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// No file: it is created, and never replaces one that appeared since.
    Absent,
    /// A regular file: it is replaced, keeping its permission bits.
    File,
}

/// Writes `bytes` as the file `path` under `root` (absolute, resolved by confinement).
pub(crate) fn write(root: &Root, path: &Path, bytes: &[u8], expect: Expect) -> io::Result<()> {
    let (dir, name) = dir_and_name(root, path)?;
    let mode = expected(&dir, &name, expect)?;
    let temp = temp_name();
    let mut file = create_at(&dir, &temp)?;
    let written = (|| {
        file.write_all(bytes)?;
        if let Some(mode) = mode {
            fchmod(&file, mode)?;
        }
        file.sync_all()?;
        take_name(&dir, &temp, &dir, &name, expect)
    })();
    // After a rename the temporary name is gone already; in every other case it goes now.
    let _ = unlinkat(&dir, &temp, AtFlags::empty());
    written
}

/// Moves the regular file `from` (under `from_root`) to `to` (under `to_root`, maybe the
/// same), both resolved by confinement; `to`'s missing directories are created.
pub(crate) fn rename(from_root: &Root, from: &Path, to_root: &Root, to: &Path, expect: Expect) -> io::Result<()> {
    let ((from_dir, from_name), (to_dir, to_name)) = (dir_and_name(from_root, from)?, dir_and_name(to_root, to)?);
    expected(&from_dir, &from_name, Expect::File)?;
    expected(&to_dir, &to_name, expect)?;
    take_name(&from_dir, &from_name, &to_dir, &to_name, expect)?;
    if expect == Expect::Absent {
        // Linked under its new name; now the old one goes.
        unlinkat(&from_dir, &from_name, AtFlags::empty())?;
    }
    Ok(())
}

/// Creates directory `path` (resolved by confinement, under `root`) and those missing on
/// its way.
pub(crate) fn create_dir(root: &Root, path: &Path) -> io::Result<()> {
    open_dir(root, path).map(drop)
}

/// An open handle on the directory of `path`, and its name in there.
fn dir_and_name(root: &Root, path: &Path) -> io::Result<(File, CString)> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"));
    };
    Ok((open_dir(root, parent)?, c_name(name)?))
}

fn changed(what: &str) -> io::Error {
    io::Error::other(format!("it {what} after the user confirmed the change"))
}

/// Checks that `name` in `dir` is still what the user was asked about; the permission bits
/// of the file there, if any.
fn expected(dir: &File, name: &CStr, expect: Expect) -> io::Result<Option<Mode>> {
    match (stat_at(dir, name)?, expect) {
        (None, Expect::Absent) => Ok(None),
        (Some(stat), Expect::File) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
            Ok(Some(Mode::from_raw_mode(stat.st_mode)))
        }
        (None, Expect::File) => Err(changed("was removed")),
        (Some(_), Expect::Absent) => Err(changed("was created")),
        (Some(_), Expect::File) => Err(changed("stopped being a regular file")),
    }
}

/// Gives the file `from` in `from_dir` the name `to` in `to_dir`: in place of the file
/// there, or as a new name (a hard link) that fails if one appeared meanwhile.
fn take_name(from_dir: &File, from: &CStr, to_dir: &File, to: &CStr, expect: Expect) -> io::Result<()> {
    match expect {
        Expect::File => Ok(renameat(from_dir, from, to_dir, to)?),
        Expect::Absent => linkat(from_dir, from, to_dir, to, AtFlags::empty()).map_err(|e| match e {
            Errno::EXIST => changed("was created"),
            _ => e.into(),
        }),
    }
}

/// An open handle on directory `path` (canonical, under `root`), creating the directories
/// missing on the way.
fn open_dir(root: &Root, path: &Path) -> io::Result<File> {
    let refuse = || io::Error::new(io::ErrorKind::PermissionDenied, "its directory changed after it was checked");
    let mut missing = Vec::new();
    let mut base = path;
    while let Err(e) = base.symlink_metadata() {
        if e.kind() != io::ErrorKind::NotFound {
            return Err(e);
        }
        let (Some(name), Some(parent)) = (base.file_name(), base.parent()) else { return Err(refuse()) };
        missing.push(name);
        base = parent;
    }
    if !base.starts_with(&root.path) {
        return Err(refuse());
    }
    let mut dir = File::from(open(base, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?);
    if files::opened_path(&dir, base).as_deref() != Some(base) {
        return Err(refuse());
    }
    for name in missing.iter().rev() {
        let name = c_name(name)?;
        match mkdirat(&dir, &name, Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        dir = File::from(openat(&dir, &name, flags, Mode::empty())?);
    }
    Ok(dir)
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in a file name"))
}

/// A name no other write uses: hidden, and unique to this process and call.
fn temp_name() -> CString {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    CString::new(format!(".duet-write-{}-{n}.tmp", std::process::id())).unwrap_or_default()
}

/// A new file for writing, never through a link (the mode is subject to the umask).
fn create_at(dir: &File, name: &CStr) -> io::Result<File> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(File::from(openat(dir, name, flags, Mode::from_raw_mode(0o666))?))
}

/// What `name` in `dir` is, without following a link; `None` when there is nothing.
fn stat_at(dir: &File, name: &CStr) -> io::Result<Option<rustix::fs::Stat>> {
    match statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(stat)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::paths::Roots;
    use super::*;
    use std::fs::Permissions;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn root() -> (tempfile::TempDir, Roots) {
        let dir = tempfile::TempDir::new().unwrap();
        let roots = Roots::new(vec![dir.path().to_path_buf()]).unwrap();
        (dir, roots)
    }

    #[test]
    fn replaces_a_file_keeping_its_mode_and_leaves_no_temporary() {
        let (_dir, roots) = root();
        let root = roots.get(0);
        let path = root.path.join("a.sh");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o750)).unwrap();
        let before = path.metadata().unwrap().ino();
        write(root, &path, b"new", Expect::File).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let meta = path.metadata().unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o750);
        assert_ne!(meta.ino(), before, "a new file took the name: readers never saw half of one");
        let names: Vec<_> = std::fs::read_dir(&root.path).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["a.sh"]);
    }

    #[test]
    fn creates_missing_directories_and_refuses_what_changed() {
        let (_dir, roots) = root();
        let root = roots.get(0);
        let path = root.path.join("x/y/new.txt");
        write(root, &path, b"hi", Expect::Absent).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "hi");
        let error = write(root, &path, b"again", Expect::Absent).unwrap_err();
        assert!(error.to_string().contains("was created after the user confirmed"), "{error}");
        let error = write(root, &root.path.join("gone.txt"), b"x", Expect::File).unwrap_err();
        assert!(error.to_string().contains("was removed"), "{error}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "hi");
    }

    #[test]
    fn a_directory_swapped_for_a_link_is_not_followed() {
        let (_dir, roots) = root();
        let outside = tempfile::TempDir::new().unwrap();
        let root = roots.get(0);
        // Checked as a directory under the root, then replaced by a link out of it.
        std::os::unix::fs::symlink(outside.path(), root.path.join("sub")).unwrap();
        let error = write(root, &root.path.join("sub/f.txt"), b"x", Expect::Absent).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{error}");
        // Nor is a link found where a directory was expected.
        std::fs::create_dir(root.path.join("real")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path.join("real/deeper")).unwrap();
        let error = write(root, &root.path.join("real/deeper/f.txt"), b"x", Expect::Absent).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied, "{error}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }
}
