//! The listing: a snapshot of the files under the roots (at most [`MAX_LISTED`]) and of the
//! skills among them, kept as the `resources/list` answer ready to hand out, so listing
//! stays cheap. The watcher
//! replaces it as files change; comparing two snapshots tells which changes to raise.
//! Path completion reads it too.

use super::files;
use super::paths::Roots;
use super::skills::Skills;
use super::uri;
use super::walk;
use duet::layer::{About, Annotations, Listing, Resource};
use std::collections::{BTreeMap, BTreeSet};
use std::fs::Metadata;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// The most files the listing holds; the others are reachable by template and tools.
pub const MAX_LISTED: usize = 10_000;

/// What tells one version of a file from the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub modified: Option<SystemTime>,
}

impl Stamp {
    pub fn of(meta: &Metadata) -> Stamp {
        Stamp { size: meta.len(), modified: meta.modified().ok() }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    root: usize,
    stamp: Stamp,
}

/// The files under the roots at one moment, the skills among them, and the resources they
/// list as.
pub struct Snapshot {
    files: BTreeMap<PathBuf, Entry>,
    truncated: bool,
    skills: Skills,
    resources: Listing<Resource>,
}

/// What changed between two snapshots.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// Files appeared or disappeared.
    pub membership: bool,
    /// Files in both whose stamps differ.
    pub modified: Vec<PathBuf>,
}

/// Which paths a completion offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Files,
    Dirs,
}

impl Snapshot {
    /// Walks every root, up to [`MAX_LISTED`] files in all.
    pub fn scan(roots: &Roots) -> Snapshot {
        let mut files = BTreeMap::new();
        let mut truncated = false;
        'roots: for (index, root) in roots.iter().enumerate() {
            for entry in walk::files(&root.path) {
                if files.len() >= MAX_LISTED {
                    truncated = true;
                    break 'roots;
                }
                let Ok(meta) = entry.metadata() else { continue };
                // Where roots nest, a file belongs to the innermost.
                let root = roots.owner(entry.path()).unwrap_or(index);
                files.insert(entry.into_path(), Entry { root, stamp: Stamp::of(&meta) });
            }
        }
        Snapshot::build(roots, files, truncated)
    }

    /// The snapshot of these files; the skills are found afresh.
    fn build(roots: &Roots, files: BTreeMap<PathBuf, Entry>, truncated: bool) -> Snapshot {
        let mut resources: Vec<Resource> = files.iter().map(|(path, entry)| resource(roots, path, entry)).collect();
        if let (true, Some(last)) = (truncated, resources.last_mut()) {
            last.about.description = Some(format!(
                "The listing stops here, at {MAX_LISTED} files; the workspace has more. Find them with the \
                 find_files tool and read them through the file:// resource templates."
            ));
        }
        let skills = Skills::scan(roots);
        resources.extend(skills.manifests());
        Snapshot { files, truncated, skills, resources: Arc::new(resources) }
    }

    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    /// Whether the roots hold more files than the listing.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    pub fn resources(&self) -> Listing<Resource> {
        self.resources.clone()
    }

    pub fn stamp(&self, path: &Path) -> Option<Stamp> {
        self.files.get(path).map(|e| e.stamp)
    }

    /// This snapshot with new stamps for some of its files.
    pub fn restamped(&self, roots: &Roots, stamps: &[(PathBuf, Stamp)]) -> Snapshot {
        let mut files = self.files.clone();
        for (path, stamp) in stamps {
            if let Some(entry) = files.get_mut(path) {
                entry.stamp = *stamp;
            }
        }
        Snapshot::build(roots, files, self.truncated)
    }

    pub fn diff(&self, newer: &Snapshot) -> Diff {
        let skills = |s: &Snapshot| s.skills.listing().iter().map(|k| k.uri.clone()).collect::<Vec<_>>();
        let membership = self.files.len() != newer.files.len()
            || !self.files.keys().eq(newer.files.keys())
            || skills(self) != skills(newer);
        let modified = newer
            .files
            .iter()
            .filter(|(path, entry)| self.files.get(*path).is_some_and(|old| old.stamp != entry.stamp))
            .map(|(path, _)| path.clone())
            .collect();
        Diff { membership, modified }
    }

    /// Listed paths starting with `prefix`, sorted: the tools' paths, or with `root`, paths
    /// relative to that root (a template's `{+path}`); only files `keep` keeps count.
    /// Directories are those holding a listed file.
    pub fn complete(
        &self,
        roots: &Roots,
        prefix: &str,
        want: Want,
        root: Option<usize>,
        keep: impl Fn(&Path) -> bool,
    ) -> Vec<String> {
        let mut found = BTreeSet::new();
        for (path, entry) in &self.files {
            if root.is_some_and(|r| r != entry.root) || !keep(path) {
                continue;
            }
            let shown = match root {
                Some(r) => path.strip_prefix(&roots.get(r).path).map(|p| p.to_string_lossy().into_owned()),
                None => Ok(roots.display(entry.root, path)),
            };
            let Ok(shown) = shown else { continue };
            match want {
                Want::Files => {
                    if shown.starts_with(prefix) {
                        found.insert(shown);
                    }
                }
                Want::Dirs => {
                    let mut end = 0;
                    while let Some(slash) = shown[end..].find('/') {
                        end += slash;
                        if shown[..end].starts_with(prefix) {
                            found.insert(shown[..end].to_string());
                        }
                        end += 1;
                    }
                }
            }
        }
        if want == Want::Dirs && root.is_none() && roots.len() > 1 {
            found.extend(roots.iter().map(|r| r.name.clone()).filter(|n| n.starts_with(prefix)));
        }
        found.into_iter().collect()
    }
}

fn resource(roots: &Roots, path: &Path, entry: &Entry) -> Resource {
    let last_modified = entry.stamp.modified.and_then(files::rfc3339);
    Resource {
        uri: uri::from_path(path),
        name: roots.display(entry.root, path),
        about: About::default(),
        mime_type: Some(files::mime_type(path, None)),
        size: Some(entry.stamp.size),
        annotations: last_modified.map(|t| Annotations { last_modified: Some(t), ..Default::default() }),
    }
}
