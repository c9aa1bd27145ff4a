//! The skills under the workspace's roots (SEP-2640). In each root, every folder holding a
//! `SKILL.md` in one of the places agents keep them — `.claude/skills/<name>/` (Claude
//! Code), `.agents/skills/<name>/` (the tool-neutral convention), `.github/skills/<name>/`
//! (GitHub Copilot) and `skills/<name>/` (a repository of skills) — is a skill served at
//! `skill://<name>/SKILL.md`, its files at `skill://<name>/<path>`.
//!
//! The workspace's rules hold: a folder or file that `.gitignore` (or `.ignore`, or git's
//! exclude files) leaves out is not served, hidden files inside a skill are left out,
//! symbolic links are not followed, and each file is opened through the same confinement
//! as any other read. A skill is skipped, with a warning in the log, when its `SKILL.md`
//! has no valid frontmatter, its folder is not named after it, it breaks the extension's
//! limits (512 files, 16 MiB), or an earlier root or place already serves that name (roots
//! in order, then the places in the order above).
//!
//! The skills are found when the workspace opens, and again whenever the watcher sees a
//! change where they live ([`dirs`] are the folders it watches for that).

use super::files;
use super::paths::{Root, Roots};
use super::walk;
use duet::layer::skill::{self, MANIFEST, MAX_BYTES, MAX_FILES};
use duet::layer::{Listing, Resource, Skill, SkillFile};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where skills live in a root, first found first served.
pub(crate) const PLACES: [&str; 4] = [".claude/skills", ".agents/skills", ".github/skills", "skills"];

/// The skills of the roots at one moment.
#[derive(Default)]
pub(crate) struct Skills {
    listing: Listing<Skill>,
    /// Each skill file's URI: its root and its path.
    files: HashMap<String, (usize, PathBuf)>,
}

impl Skills {
    /// Finds the skills under `roots`.
    pub(crate) fn scan(roots: &Roots) -> Skills {
        let mut found = Skills::default();
        let mut listing = Vec::new();
        for (index, root) in roots.iter().enumerate() {
            for place in PLACES {
                let dir = root.path.join(place);
                if !dir.is_dir() || root.excluded(&dir).is_some() {
                    continue;
                }
                let Ok(entries) = std::fs::read_dir(&dir) else { continue };
                let mut folders: Vec<PathBuf> = entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .filter(|p| p.join(MANIFEST).is_file() && root.excluded(p).is_none())
                    .collect();
                folders.sort();
                for folder in folders {
                    match read_skill(root, &folder) {
                        Ok((skill, _)) if listing.iter().any(|s: &Skill| s.uri == skill.uri) => tracing::warn!(
                            folder = %folder.display(),
                            "skill {:?} is served from an earlier folder; this one is left out",
                            skill.name()
                        ),
                        Ok((skill, paths)) => {
                            found.files.extend(paths.into_iter().map(|(uri, path)| (uri, (index, path))));
                            listing.push(skill);
                        }
                        Err(why) => tracing::warn!(folder = %folder.display(), "not served as a skill: {why}"),
                    }
                }
            }
        }
        found.listing = Arc::new(listing);
        found
    }

    pub(crate) fn listing(&self) -> Listing<Skill> {
        self.listing.clone()
    }

    /// The `SKILL.md` of each skill, as `resources/list` shows it.
    pub(crate) fn manifests(&self) -> impl Iterator<Item = Resource> + '_ {
        self.listing.iter().map(Skill::manifest_resource)
    }

    /// The root and path of the skill file at `uri`.
    pub(crate) fn file(&self, uri: &str) -> Option<(usize, &Path)> {
        self.files.get(uri).map(|(root, path)| (*root, path.as_path()))
    }
}

/// The skill in `folder`, and the path of each of its files by URI.
fn read_skill(root: &Root, folder: &Path) -> Result<(Skill, Vec<(String, PathBuf)>), String> {
    let manifest = read_bounded(root, &folder.join(MANIFEST), MAX_BYTES)?;
    let text = String::from_utf8(manifest.clone()).map_err(|_| format!("its {MANIFEST} is not UTF-8"))?;
    let frontmatter = skill::frontmatter(&text)?;
    let name = frontmatter.get("name").and_then(|n| n.as_str()).unwrap_or_default().to_string();
    skill::check_name(&name)?;
    if folder.file_name().and_then(|n| n.to_str()) != Some(name.as_str()) {
        return Err(format!("its folder is not named after the skill, {name:?}"));
    }
    let uri = skill::file_uri(&name, MANIFEST);
    let mut resources = vec![SkillFile::of(&uri, &manifest)];
    let mut paths = vec![(uri.clone(), folder.join(MANIFEST))];
    let mut total = manifest.len() as u64;
    for entry in walk::files(folder) {
        let path = entry.into_path();
        let Some(relative) = path.strip_prefix(folder).ok().and_then(Path::to_str).map(|r| r.replace('\\', "/")) else {
            continue;
        };
        if relative == MANIFEST || root.excluded(&path).is_some() {
            continue;
        }
        if resources.len() >= MAX_FILES {
            return Err(format!("it has more than {MAX_FILES} files"));
        }
        let bytes = read_bounded(root, &path, MAX_BYTES - total)?;
        total += bytes.len() as u64;
        let file_uri = skill::file_uri(&name, &relative);
        resources.push(SkillFile::of(&file_uri, &bytes));
        paths.push((file_uri, path));
    }
    Ok((Skill { uri, frontmatter, resources }, paths))
}

/// A file's bytes, through the workspace's confinement, refused past `limit` bytes.
fn read_bounded(root: &Root, path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let file = files::open(path, root).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(format!("its files add up to more than {MAX_BYTES} bytes"));
    }
    Ok(bytes)
}

/// The folders to watch for skills: in each root, the folders on the way to each place
/// skills live, and the folders in those places a walk serves, as far as they exist.
pub(crate) fn dirs(roots: &Roots) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for root in roots.iter() {
        for place in PLACES.map(|place| root.path.join(place)) {
            let on_the_way = place.ancestors().skip(1).take_while(|dir| *dir != root.path);
            dirs.extend(on_the_way.filter(|dir| dir.is_dir()).map(Path::to_path_buf));
            if place.is_dir() && root.excluded(&place).is_none() {
                let walked = walk::walker(&place).build().filter_map(walk::served_entry).filter(walk::is_dir);
                dirs.extend(walked.map(ignore::DirEntry::into_path));
            }
        }
    }
    dirs
}

/// Whether `relative` (a path under a root) is one of the places skills live, lies in one,
/// or is a folder on the way to one: what the watcher must not drop as hidden.
pub(crate) fn on_the_way(relative: &Path) -> bool {
    PLACES.iter().map(Path::new).any(|place| relative.starts_with(place) || place.starts_with(relative))
}
