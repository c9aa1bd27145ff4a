//! `resources/list` for the workspace: pages of the listing, each made when it is asked for,
//! from the names the listing holds (within the roots in force) and a look at each file
//! (its size and modification time), then the `SKILL.md` of each skill (by URI). Every file is listed, however many
//! there are, a page at a time. A cursor names the last file (or skill) of the page before
//! it, so the next page starts after it even when files came or went in between: a file
//! that stays is listed once.

use super::in_force::InForce;
use super::paths::Roots;
use super::{Shared, files, uri};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use duet::layer::{About, Annotations, LayerError, Resource, ResourcePage};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Where a page starts: after this file, or after this skill.
#[derive(Serialize, Deserialize)]
struct Cursor {
    /// The file's root; one past the last root for a skill.
    r: usize,
    /// The file's path relative to its root, or the URI of the skill's `SKILL.md`.
    p: String,
}

/// The page after `cursor` (from the start without one), at most `limit` resources (0: all),
/// of the files `in_force`.
pub(crate) fn page(
    shared: &Shared,
    in_force: &InForce,
    cursor: Option<&str>,
    limit: usize,
) -> Result<ResourcePage, LayerError> {
    let limit = if limit == 0 { usize::MAX - 1 } else { limit };
    let skills_at = shared.roots.len();
    let after = cursor.map(|c| decode(c, &shared.roots)).transpose()?;
    let ((files, more), skills) = {
        let listed = shared.listing();
        let files = match &after {
            Some(cursor) if cursor.r == skills_at => (Vec::new(), false),
            _ => listed.page(in_force, after.as_ref().map(|c| (c.r, c.p.as_str())), limit),
        };
        (files, listed.skills())
    };
    let mut next_cursor = match files.last() {
        Some((root, rel)) if more => Some(encode(*root, rel)),
        _ => None,
    };
    let mut resources: Vec<Resource> =
        files.iter().filter_map(|(root, rel)| resource(&shared.roots, *root, rel)).collect();
    if !more {
        let past = after.filter(|c| c.r == skills_at).map(|c| c.p).unwrap_or_default();
        let mut manifests: Vec<Resource> = skills.manifests().filter(|m| m.uri > past).collect();
        manifests.sort_by(|a, b| a.uri.cmp(&b.uri));
        let room = limit - files.len();
        if manifests.len() > room {
            let last = if room == 0 { String::new() } else { manifests[room - 1].uri.clone() };
            manifests.truncate(room);
            next_cursor = Some(encode(skills_at, &last));
        }
        resources.extend(manifests);
    }
    Ok(ResourcePage { resources, next_cursor })
}

fn encode(root: usize, rel: &str) -> String {
    let cursor = Cursor { r: root, p: rel.to_string() };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&cursor).unwrap_or_default())
}

fn decode(cursor: &str, roots: &Roots) -> Result<Cursor, LayerError> {
    let invalid = || LayerError::invalid_arguments("Invalid cursor");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let cursor: Cursor = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    if cursor.r > roots.len() {
        return Err(invalid());
    }
    Ok(cursor)
}

/// The resource of a listed file, as it is now; `None` when it is no longer a file (the
/// watcher will say so), or when it has other hard links the root does not follow (it
/// could not be read).
fn resource(roots: &Roots, root: usize, rel: &str) -> Option<Resource> {
    let path = roots.get(root).path.join(rel);
    let meta = path.symlink_metadata().ok().filter(|m| m.is_file())?;
    files::check_hard_links(&meta, roots.get(root)).ok()?;
    Some(describe(roots, root, &path, &meta))
}

/// A file as a resource: its URI, its name as the tools write it, its MIME type by name,
/// its size and when it was last modified.
pub(crate) fn describe(roots: &Roots, root: usize, path: &Path, meta: &std::fs::Metadata) -> Resource {
    let last_modified = meta.modified().ok().and_then(files::rfc3339);
    Resource {
        uri: uri::from_path(path),
        name: roots.display(root, path),
        about: About::default(),
        mime_type: Some(files::mime_type(path, None)),
        size: Some(meta.len()),
        annotations: last_modified.map(|t| Annotations { last_modified: Some(t), ..Default::default() }),
    }
}
