//! Confinement: the workspace roots, and the one way a path a client names becomes a file
//! the server may open. `..` is refused outright, an absolute path must lie under a root,
//! symbolic links are resolved and the result must still lie under the same root, only
//! regular files and directories are served (never devices, FIFOs or sockets), and what a
//! walk leaves out as ignored (`.gitignore`, `.ignore`, git's exclude files), or anything
//! in a `.git` directory, is refused: both the path as named and where its links lead.
//! Hidden files that nothing ignores are served when named.
//!
//! A path a tool writes (`duet serve --allow-write`) passes the same checks: an existing
//! file (or directory, for one to create) as for reading, a new one through the nearest
//! directory on its way that exists, and the path as resolved through it is checked again
//! for exclusion.
//!
//! Refusals name the path the client sent and nothing it could not already see: whether
//! something exists outside the roots or among ignored files, or where a link points, is
//! never said.

use super::WorkspaceError;
use super::uri;
use super::walk::{Exclusion, Rules};
use duet::layer::LayerError;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

/// One directory the workspace serves.
#[derive(Debug)]
pub(crate) struct Root {
    /// The directory's own name, made unique among the roots.
    pub name: String,
    /// The canonical absolute path.
    pub path: PathBuf,
    /// The absolute path as given, before symbolic links were resolved.
    given: PathBuf,
    /// What walks from this root leave out as ignored.
    rules: Rules,
    /// Whether a file with other hard links is served (`--follow-hard-links`).
    follow_hard_links: bool,
}

impl Root {
    pub(crate) fn follows_hard_links(&self) -> bool {
        self.follow_hard_links
    }

    /// Why `abs`, a path under this root, is not served; `None` when it is.
    pub(crate) fn excluded(&self, abs: &Path) -> Option<Exclusion> {
        self.rules.excluded(&self.path, abs)
    }
}

/// The roots of a workspace, in the order given.
#[derive(Debug)]
pub(crate) struct Roots(Vec<Root>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
}

/// A path inside the workspace, checked: it exists, lies under its root once links are
/// resolved, and is a regular file or a directory.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The index of its root.
    pub root: usize,
    /// The canonical absolute path.
    pub abs: PathBuf,
    pub kind: Kind,
}

/// A file (or a directory) a tool may write, checked: it lies under its root once links
/// are resolved, and it is a regular file (a directory) or does not exist yet.
#[derive(Debug)]
pub(crate) struct WriteTarget {
    /// The index of its root.
    pub root: usize,
    /// Where it is or will be: canonical up to the last directory that exists, then the
    /// names of those still missing.
    pub abs: PathBuf,
    pub exists: bool,
}

/// Why a path was refused.
#[derive(Debug)]
pub(crate) enum PathError {
    Invalid {
        input: String,
        reason: String,
    },
    Parent(String),
    Outside {
        input: String,
        roots: String,
    },
    /// Outside the roots the client narrowed the workspace to; `in_force` says what is.
    NotInForce {
        input: String,
        in_force: String,
    },
    UnknownRoot {
        input: String,
        names: String,
    },
    AllRoots(String),
    Escapes(String),
    Excluded {
        input: String,
        why: Exclusion,
    },
    NotFound(String),
    Special(String),
    Io {
        input: String,
        error: io::Error,
    },
    Directory(String),
    File(String),
    ThroughFile(String),
    Dangling(String),
    /// A file the request may not reach (`InForce`'s check says `why`).
    Denied {
        input: String,
        why: String,
    },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Invalid { input, reason } => write!(f, "{input:?} is not a valid workspace path: {reason}"),
            PathError::Parent(input) => write!(f, "{input:?}: '..' is not allowed in workspace paths"),
            PathError::Outside { input, roots } => {
                write!(f, "{input:?} is outside the workspace, which serves only {roots}")
            }
            PathError::NotInForce { input, in_force } => {
                write!(f, "{input:?} is outside the roots the client gave; {in_force}")
            }
            PathError::UnknownRoot { input, names } => write!(
                f,
                "{input:?}: the workspace has several roots, so a relative path starts with one of their names: {names}"
            ),
            PathError::AllRoots(input) => {
                write!(f, "{input:?} names every root of the workspace; name a path under one of them")
            }
            PathError::Escapes(input) => write!(f, "{input:?} leads outside the workspace through a symbolic link"),
            PathError::Excluded { input, why: Exclusion::Ignored(by) } => {
                write!(f, "{input:?} is excluded by {by} and is not served")
            }
            PathError::Excluded { input, why: Exclusion::GitDir } => {
                write!(f, "{input:?} is in a .git directory, which is not served")
            }
            PathError::NotFound(input) => write!(f, "{input:?} does not exist in the workspace"),
            PathError::Special(input) => {
                write!(f, "{input:?} is not a regular file or directory (devices, FIFOs and sockets are not served)")
            }
            PathError::Io { input, error } => write!(f, "cannot access {input:?}: {error}"),
            PathError::Directory(input) => write!(f, "{input:?} is a directory; name a file"),
            PathError::File(input) => write!(f, "{input:?} is a file; name a directory"),
            PathError::ThroughFile(input) => {
                write!(f, "{input:?} goes through a file as if it were a directory")
            }
            PathError::Dangling(input) => {
                write!(f, "{input:?} goes through a symbolic link that leads nowhere; name the file itself")
            }
            PathError::Denied { input, why } => write!(f, "{input:?} is not served to this client: {why}"),
        }
    }
}

impl PathError {
    /// The protocol error of a refused resource or prompt path.
    pub(crate) fn to_layer(&self) -> LayerError {
        match self {
            PathError::NotFound(_) => LayerError::NotFound(self.to_string()),
            PathError::Denied { .. } => LayerError::AccessDenied(self.to_string()),
            _ => LayerError::invalid_arguments(self.to_string()),
        }
    }
}

impl Roots {
    /// Checks and names the roots: each must be an existing directory. The same directory
    /// given twice is served once.
    pub(crate) fn new(paths: Vec<PathBuf>) -> Result<Roots, WorkspaceError> {
        if paths.is_empty() {
            return Err(WorkspaceError::NoRoots);
        }
        let mut roots: Vec<Root> = Vec::with_capacity(paths.len());
        for given in paths {
            let fail = |source| WorkspaceError::Root { path: given.clone(), source };
            let absolute = std::path::absolute(&given).map_err(fail)?;
            let path = absolute.canonicalize().map_err(fail)?;
            if !path.is_dir() {
                return Err(WorkspaceError::NotADirectory(given));
            }
            if path.to_str().is_none() {
                return Err(WorkspaceError::NotUtf8(given));
            }
            if roots.iter().any(|r| r.path == path) {
                continue;
            }
            let base = path.file_name().map_or_else(|| "root".into(), |n| n.to_string_lossy().into_owned());
            let mut name = base.clone();
            for n in 2.. {
                if !roots.iter().any(|r| r.name == name) {
                    break;
                }
                name = format!("{base}-{n}");
            }
            roots.push(Root { name, path, given: absolute, rules: Rules::new(), follow_hard_links: false });
        }
        Ok(Roots(roots))
    }

    /// Serves files with other hard links too (`--follow-hard-links`): a hard link is
    /// another name of the same file, which may lie outside the roots or be ignored.
    pub(crate) fn follow_hard_links(mut self) -> Roots {
        for root in &mut self.0 {
            root.follow_hard_links = true;
        }
        self
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Root> {
        self.0.iter()
    }

    pub(crate) fn get(&self, index: usize) -> &Root {
        &self.0[index]
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// One root, for every root.
    pub(crate) fn all(&self) -> Vec<Resolved> {
        (0..self.0.len()).map(|root| Resolved { root, abs: self.0[root].path.clone(), kind: Kind::Dir }).collect()
    }

    /// The root an absolute path lies under (the innermost, when roots nest).
    pub(crate) fn owner(&self, abs: &Path) -> Option<usize> {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, r)| abs.starts_with(&r.path))
            .max_by_key(|(_, r)| r.path.components().count())
            .map(|(i, _)| i)
    }

    /// How the tools write a path under root `root`: relative to it with one root, prefixed
    /// by its name with several. What they write, they accept back.
    pub(crate) fn display(&self, root: usize, abs: &Path) -> String {
        let rel = abs.strip_prefix(&self.0[root].path).unwrap_or(Path::new(""));
        let rel: Vec<_> = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect();
        match (self.0.len(), rel.is_empty()) {
            (1, true) => ".".into(),
            (1, false) => rel.join("/"),
            (_, true) => self.0[root].name.clone(),
            (_, false) => format!("{}/{}", self.0[root].name, rel.join("/")),
        }
    }

    /// Resolves a path that must name one file or directory.
    pub(crate) fn resolve(&self, input: &str) -> Result<Resolved, PathError> {
        match self.locate(input)? {
            Some((root, candidate)) => self.check(root, &candidate, input),
            None => Err(PathError::AllRoots(input.into())),
        }
    }

    /// Resolves a path that may name every root at once (`.` with several roots).
    pub(crate) fn resolve_scope(&self, input: &str) -> Result<Vec<Resolved>, PathError> {
        match self.locate(input)? {
            Some((root, candidate)) => Ok(vec![self.check(root, &candidate, input)?]),
            None => Ok(self.all()),
        }
    }

    /// Resolves a path a tool may write. An existing file is checked as for reading and
    /// must be a regular file. For a new file, the nearest directory on its way that exists
    /// is checked as for reading, and the path as resolved through that directory must not
    /// be excluded either; the directories still missing are created only when it is
    /// written.
    pub(crate) fn resolve_write(&self, input: &str) -> Result<WriteTarget, PathError> {
        if input.ends_with('/') {
            return Err(PathError::Directory(input.into()));
        }
        self.resolve_writable(input, Kind::File)
    }

    /// Resolves a directory a tool may create: an existing one is checked as for reading; a
    /// missing one as a new file is by [`Roots::resolve_write`].
    pub(crate) fn resolve_dir_write(&self, input: &str) -> Result<WriteTarget, PathError> {
        self.resolve_writable(input, Kind::Dir)
    }

    /// A file or directory (`want`) that exists, or where a new one would be.
    fn resolve_writable(&self, input: &str, want: Kind) -> Result<WriteTarget, PathError> {
        let (root, candidate) = self.locate(input)?.ok_or_else(|| PathError::AllRoots(input.into()))?;
        match self.check(root, &candidate, input) {
            Ok(Resolved { kind, abs, .. }) if kind == want => return Ok(WriteTarget { root, abs, exists: true }),
            Ok(_) if want == Kind::File => return Err(PathError::Directory(input.into())),
            Ok(_) => return Err(PathError::File(input.into())),
            Err(PathError::NotFound(_)) => {}
            Err(PathError::Io { error, .. }) if error.kind() == io::ErrorKind::NotADirectory => {}
            Err(e) => return Err(e),
        }
        let abs = self.resolve_missing(root, &candidate, input)?;
        Ok(WriteTarget { root, abs, exists: false })
    }

    /// Where `candidate`, which does not exist, would be: the nearest directory on its way
    /// that exists is checked as for reading, and the path as resolved through it must not
    /// be excluded either.
    fn resolve_missing(&self, root: usize, candidate: &Path, input: &str) -> Result<PathBuf, PathError> {
        // Up to the nearest thing that exists, remembering the names on the way.
        let mut missing = Vec::new();
        let mut base = candidate;
        loop {
            match base.symlink_metadata() {
                Ok(_) => break,
                Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {}
                Err(error) => return Err(PathError::Io { input: input.into(), error }),
            }
            match (base.file_name(), base.parent()) {
                (Some(name), Some(parent)) if base != self.0[root].path => {
                    missing.push(name);
                    base = parent;
                }
                _ => return Err(PathError::NotFound(input.into())),
            }
        }
        if missing.is_empty() {
            // It exists, yet resolving it found nothing: a link to nowhere.
            return Err(PathError::Dangling(input.into()));
        }
        let dir = match self.check(root, base, input) {
            Err(PathError::NotFound(_)) => return Err(PathError::Dangling(input.into())),
            other => other?,
        };
        if dir.kind != Kind::Dir {
            return Err(PathError::ThroughFile(input.into()));
        }
        let abs = missing.iter().rev().fold(dir.abs, |path, name| path.join(name));
        if let Some(why) = self.0[root].excluded(&abs) {
            return Err(PathError::Excluded { input: input.into(), why });
        }
        Ok(abs)
    }

    /// The root a path belongs to and where it would be, before touching the file system;
    /// `None` for the top of a workspace of several roots.
    pub(super) fn locate(&self, input: &str) -> Result<Option<(usize, PathBuf)>, PathError> {
        let invalid = |reason: String| PathError::Invalid { input: input.into(), reason };
        if input.contains('\0') {
            return Err(invalid("it contains a NUL character".into()));
        }
        let path = if uri::is_file_uri(input) {
            uri::to_path(input).map_err(|e| invalid(e.to_string()))?
        } else {
            PathBuf::from(input)
        };
        let mut parts = Vec::new();
        for component in path.components() {
            match component {
                Component::ParentDir => return Err(PathError::Parent(input.into())),
                Component::Normal(part) => parts.push(part),
                Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            }
        }
        if path.is_absolute() {
            return self.locate_absolute(&path).map(Some).ok_or_else(|| PathError::Outside {
                input: input.into(),
                roots: self.0.iter().map(|r| r.path.display().to_string()).collect::<Vec<_>>().join(", "),
            });
        }
        if path.has_root() {
            return Err(invalid("it is neither relative nor absolute".into()));
        }
        if self.0.len() == 1 {
            return Ok(Some((0, parts.iter().fold(self.0[0].path.clone(), |p, part| p.join(part)))));
        }
        let Some((first, rest)) = parts.split_first() else {
            return Ok(None);
        };
        let Some(root) = self.0.iter().position(|r| r.name.as_str() == *first) else {
            let names = self.0.iter().map(|r| r.name.as_str()).collect::<Vec<_>>().join(", ");
            return Err(PathError::UnknownRoot { input: input.into(), names });
        };
        Ok(Some((root, rest.iter().fold(self.0[root].path.clone(), |p, part| p.join(part)))))
    }

    /// An absolute path under a root, as written or as the root's path was given.
    fn locate_absolute(&self, path: &Path) -> Option<(usize, PathBuf)> {
        let mut best: Option<(usize, PathBuf, usize)> = None;
        for (i, root) in self.0.iter().enumerate() {
            for base in [&root.path, &root.given] {
                if let Ok(rest) = path.strip_prefix(base) {
                    let depth = base.components().count();
                    if best.as_ref().is_none_or(|b| depth > b.2) {
                        best = Some((i, root.path.join(rest), depth));
                    }
                }
            }
        }
        best.map(|(i, p, _)| (i, p))
    }

    /// Resolves links and checks what the path turned out to be. An excluded path is
    /// refused as named (before anything tells whether it exists) and as resolved.
    fn check(&self, root: usize, candidate: &Path, input: &str) -> Result<Resolved, PathError> {
        let excluded = |why| PathError::Excluded { input: input.into(), why };
        if let Some(why) = self.0[root].excluded(candidate) {
            return Err(excluded(why));
        }
        let abs = candidate.canonicalize().map_err(|error| match error.kind() {
            io::ErrorKind::NotFound => PathError::NotFound(input.into()),
            _ => PathError::Io { input: input.into(), error },
        })?;
        if !abs.starts_with(&self.0[root].path) {
            return Err(PathError::Escapes(input.into()));
        }
        if abs != candidate
            && let Some(why) = self.0[root].excluded(&abs)
        {
            return Err(excluded(why));
        }
        let meta = abs.metadata().map_err(|error| PathError::Io { input: input.into(), error })?;
        let kind = match meta.file_type() {
            t if t.is_file() => Kind::File,
            t if t.is_dir() => Kind::Dir,
            _ => return Err(PathError::Special(input.into())),
        };
        Ok(Resolved { root, abs, kind })
    }
}
