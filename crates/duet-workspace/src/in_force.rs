//! The roots in force for one request: the workspace's roots, narrowed to the client's
//! roots when the client listed them (MCP roots, see `RequestCx::client_roots`). A client
//! narrows what the workspace serves and never widens it: a client root under a workspace
//! root is in force as far as confinement serves it (an existing directory, not ignored,
//! not in `.git`); a workspace root under a client root is in force whole; a client root
//! outside every workspace root adds nothing. A path outside what is in force is refused
//! with the roots in force named; a listing, search or find of a directory above them (the
//! top of the workspace, by default) covers only them.
//!
//! Within them, a request reaches only the files its context allows
//! ([`RequestCx::may_reach`], a scope map's `[resources]` rules), asked with each file's
//! `file://` URI: a path is refused as named (before anything tells whether it exists) and
//! as resolved (where its links lead), and what a search, a listing or a completion finds
//! leaves out the files it may not reach.
//!
//! [`RequestCx::may_reach`]: duet::layer::RequestCx::may_reach

use super::paths::{Kind, PathError, Resolved, Roots, WriteTarget};
use super::uri;
use duet::layer::{ClientRoot, ReachCheck};
use std::path::Path;

/// What one request may reach.
pub(crate) struct InForce<'a> {
    roots: &'a Roots,
    /// `None`: the client stated no roots, and every workspace root is in force.
    narrowed: Option<Narrowed>,
    /// Which files the request may reach (`None`: all).
    reach: Option<ReachCheck>,
}

struct Narrowed {
    /// The directories in force, canonical; none lies under another.
    dirs: Vec<Resolved>,
    /// The client's roots as it listed them, for refusals.
    client: Vec<String>,
}

impl<'a> InForce<'a> {
    /// The roots in force when the client listed `client` (`None`: it stated none).
    pub(crate) fn new(roots: &'a Roots, client: Option<&[ClientRoot]>) -> InForce<'a> {
        let narrowed = client.map(|client| Narrowed {
            dirs: in_force(roots, client),
            client: client.iter().map(|r| r.uri.clone()).collect(),
        });
        InForce { roots, narrowed, reach: None }
    }

    /// The same, for a request that may reach only what `reach` allows (`None`: everything,
    /// see [`RequestCx::reach_check`](duet::layer::RequestCx::reach_check)).
    pub(crate) fn reaching(self, reach: Option<ReachCheck>) -> InForce<'a> {
        InForce { reach, ..self }
    }

    /// Whether the request may reach `abs`, a path under a root: `Err` says why not.
    pub(crate) fn reachable(&self, abs: &Path) -> Result<(), String> {
        self.reach.as_ref().map_or(Ok(()), |check| check(&uri::from_path(abs)))
    }

    /// The workspace's roots.
    pub(crate) fn roots(&self) -> &'a Roots {
        self.roots
    }

    /// Whether the client narrowed the workspace.
    pub(crate) fn is_narrowed(&self) -> bool {
        self.narrowed.is_some()
    }

    /// Whether `abs`, a canonical path under a root, is in force and may be reached.
    pub(crate) fn covers(&self, abs: &Path) -> bool {
        self.in_roots(abs) && self.reachable(abs).is_ok()
    }

    /// Whether `abs`, a canonical path under a root, lies under the roots in force.
    fn in_roots(&self, abs: &Path) -> bool {
        self.narrowed.as_ref().is_none_or(|n| n.dirs.iter().any(|d| abs.starts_with(&d.abs)))
    }

    /// Whether `abs`, a canonical path under a root, is in force or holds a directory that
    /// is: whether anything under it may be served.
    pub(crate) fn reaches(&self, abs: &Path) -> bool {
        self.narrowed.as_ref().is_none_or(|n| n.dirs.iter().any(|d| abs.starts_with(&d.abs) || d.abs.starts_with(abs)))
    }

    /// The roots in force, as refusals and the log say it.
    pub(crate) fn describe(&self) -> String {
        let paths = |dirs: &mut dyn Iterator<Item = &Path>| {
            dirs.map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        };
        let configured = paths(&mut self.roots.iter().map(|r| r.path.as_path()));
        match &self.narrowed {
            None => format!("the roots in force are the workspace's: {configured}"),
            Some(n) if n.client.is_empty() => {
                format!("no root is in force: the client listed no roots (the workspace serves {configured})")
            }
            Some(n) if n.dirs.is_empty() => format!(
                "no root is in force: the client's roots ({}) lie outside the workspace ({configured}) or are not served",
                n.client.join(", ")
            ),
            Some(n) => format!(
                "the roots in force (the client's, within the workspace) are {}",
                paths(&mut n.dirs.iter().map(|d| d.abs.as_path()))
            ),
        }
    }

    /// [`Roots::resolve`], in force.
    pub(crate) fn resolve(&self, input: &str) -> Result<Resolved, PathError> {
        self.reach_as_named(input)?;
        let resolved = self.roots.resolve(input).map_err(|e| self.refusal(e))?;
        self.admit(input, &resolved.abs)?;
        Ok(resolved)
    }

    /// [`Roots::resolve_scope`], in force: a directory above the roots in force stands for
    /// those under it.
    pub(crate) fn resolve_scope(&self, input: &str) -> Result<Vec<Resolved>, PathError> {
        self.reach_as_named(input)?;
        let scope = self.roots.resolve_scope(input).map_err(|e| self.refusal(e))?;
        for asked in &scope {
            self.reach(input, &asked.abs)?;
        }
        let Some(narrowed) = &self.narrowed else { return Ok(scope) };
        let mut kept: Vec<Resolved> = Vec::new();
        for asked in scope {
            if self.in_roots(&asked.abs) {
                kept.push(asked);
            } else if asked.kind == Kind::Dir {
                kept.extend(narrowed.dirs.iter().filter(|d| d.abs.starts_with(&asked.abs)).cloned());
            }
        }
        kept.sort_by(|a, b| a.abs.cmp(&b.abs));
        kept.dedup_by(|a, b| a.abs == b.abs);
        if kept.is_empty() {
            return Err(self.outside(input));
        }
        Ok(kept)
    }

    /// [`Roots::resolve_write`], in force.
    pub(crate) fn resolve_write(&self, input: &str) -> Result<WriteTarget, PathError> {
        self.reach_as_named(input)?;
        let target = self.roots.resolve_write(input).map_err(|e| self.refusal(e))?;
        self.admit(input, &target.abs)?;
        Ok(target)
    }

    /// [`Roots::resolve_dir_write`], in force.
    pub(crate) fn resolve_dir_write(&self, input: &str) -> Result<WriteTarget, PathError> {
        self.reach_as_named(input)?;
        let target = self.roots.resolve_dir_write(input).map_err(|e| self.refusal(e))?;
        self.admit(input, &target.abs)?;
        Ok(target)
    }

    /// Refuses a path the request may not reach as named, before the file system is asked.
    fn reach_as_named(&self, input: &str) -> Result<(), PathError> {
        match self.roots.locate(input) {
            Ok(Some((_, candidate))) => self.reach(input, &candidate),
            _ => Ok(()),
        }
    }

    fn reach(&self, input: &str, abs: &Path) -> Result<(), PathError> {
        self.reachable(abs).map_err(|why| PathError::Denied { input: input.into(), why })
    }

    /// Reachable where it turned out to be, and in force.
    fn admit(&self, input: &str, abs: &Path) -> Result<(), PathError> {
        self.reach(input, abs)?;
        if self.in_roots(abs) { Ok(()) } else { Err(self.outside(input)) }
    }

    fn outside(&self, input: &str) -> PathError {
        PathError::NotInForce { input: input.into(), in_force: self.describe() }
    }

    /// A path outside the workspace is outside what is in force too, and says so.
    fn refusal(&self, error: PathError) -> PathError {
        match error {
            PathError::Outside { input, .. } if self.is_narrowed() => self.outside(&input),
            other => other,
        }
    }
}

/// The directories in force for a client that listed `client`: each root's
/// directory as confinement resolves it, when under a workspace root, else the workspace
/// roots under it; without those nested in another.
fn in_force(roots: &Roots, client: &[ClientRoot]) -> Vec<Resolved> {
    let mut dirs: Vec<Resolved> = Vec::new();
    for root in client {
        let path = match root.path() {
            Ok(path) => path,
            Err(why) => {
                tracing::debug!(root = %root.uri, "a client root names no directory here: {why}");
                continue;
            }
        };
        match roots.resolve(&path.to_string_lossy()) {
            Ok(dir) if dir.kind == Kind::Dir => dirs.push(dir),
            Ok(_) => tracing::debug!(root = %root.uri, "a client root is a file, not a directory; it adds nothing"),
            Err(PathError::Outside { .. }) => {
                let Ok(canonical) = path.canonicalize() else { continue };
                dirs.extend(roots.all().into_iter().filter(|r| r.abs.starts_with(&canonical)));
            }
            Err(why) => tracing::debug!(root = %root.uri, "a client root is not served: {why}"),
        }
    }
    dirs.sort_by(|a, b| a.abs.cmp(&b.abs));
    dirs.dedup_by(|inner, outer| inner.abs.starts_with(&outer.abs));
    dirs
}
