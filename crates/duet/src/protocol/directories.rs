//! The folders of the skills a layer serves, for `resources/directory/read`: each folder a
//! skill file lies in, and each folder above it within the skill's URI (`skill://acme`,
//! `skill://acme/billing`, ...), lists its direct children, files with their size and
//! folders as `inode/directory` resources. The index is made once per skills listing.

use crate::layer::memo::PerListing;
use crate::layer::skill::MARKDOWN;
use crate::layer::{Listing, Resource, Skill};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// The MIME type of a directory resource.
pub(super) const DIRECTORY: &str = "inode/directory";

/// How many listings' indexes are kept before starting over.
const MAX_LISTINGS: usize = 64;

/// Folder URIs to their children.
type Index = HashMap<String, Listing<Resource>>;

pub(crate) struct Directories {
    memo: PerListing<(), Arc<Index>>,
}

impl Default for Directories {
    fn default() -> Self {
        Directories { memo: PerListing::new(MAX_LISTINGS) }
    }
}

impl Directories {
    /// The children of the folder at `uri` among `skills`' files; `None` when no file lies
    /// under it (then it is not a folder the server serves).
    pub(crate) fn children(&self, skills: &Listing<Skill>, uri: &str) -> Option<Listing<Resource>> {
        self.memo.get_or_make(skills, (), |_| Arc::new(index(skills))).get(uri).cloned()
    }
}

fn index(skills: &[Skill]) -> Index {
    let mut folders: BTreeMap<String, BTreeMap<String, Resource>> = BTreeMap::new();
    for file in skills.iter().flat_map(|s| &s.resources) {
        let Some((scheme, path)) = file.uri.split_once("://") else { continue };
        let segments: Vec<&str> = path.split('/').collect();
        for depth in 1..segments.len() {
            let folder = format!("{scheme}://{}", segments[..depth].join("/"));
            let name = segments[depth];
            let child = if depth + 1 == segments.len() {
                let mime_type = name.ends_with(".md").then(|| MARKDOWN.to_string());
                Resource {
                    uri: file.uri.clone(),
                    name: name.into(),
                    about: Default::default(),
                    mime_type,
                    size: Some(file.size),
                    annotations: None,
                }
            } else {
                let uri = format!("{folder}/{name}");
                Resource {
                    uri,
                    name: name.into(),
                    about: Default::default(),
                    mime_type: Some(DIRECTORY.into()),
                    size: None,
                    annotations: None,
                }
            };
            folders.entry(folder).or_default().entry(name.to_string()).or_insert(child);
        }
    }
    folders.into_iter().map(|(folder, children)| (folder, Arc::new(children.into_values().collect()))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layer::SkillFile;

    fn skill(uri: &str, files: &[&str]) -> Skill {
        let resources = files.iter().map(|f| SkillFile::of(*f, f.as_bytes())).collect();
        Skill { uri: uri.into(), frontmatter: Default::default(), resources }
    }

    #[test]
    fn each_folder_lists_its_direct_children() {
        let skills: Listing<Skill> = Arc::new(vec![
            skill(
                "skill://acme/refunds/SKILL.md",
                &["skill://acme/refunds/SKILL.md", "skill://acme/refunds/t/a.md", "skill://acme/refunds/t/eu/b.txt"],
            ),
            skill("skill://lint/SKILL.md", &["skill://lint/SKILL.md"]),
        ]);
        let dirs = Directories::default();
        let names = |uri: &str| -> Vec<(String, Option<String>)> {
            dirs.children(&skills, uri).unwrap().iter().map(|r| (r.name.clone(), r.mime_type.clone())).collect()
        };
        let dir = Some(DIRECTORY.to_string());
        assert_eq!(names("skill://acme"), [("refunds".into(), dir.clone())]);
        assert_eq!(
            names("skill://acme/refunds"),
            [("SKILL.md".into(), Some(MARKDOWN.into())), ("t".into(), dir.clone())]
        );
        assert_eq!(names("skill://acme/refunds/t"), [("a.md".into(), Some(MARKDOWN.into())), ("eu".into(), dir)]);
        assert_eq!(
            dirs.children(&skills, "skill://acme/refunds/t/eu").unwrap()[0].uri,
            "skill://acme/refunds/t/eu/b.txt"
        );
        assert_eq!(dirs.children(&skills, "skill://lint").unwrap()[0].size, Some(21));
        assert!(dirs.children(&skills, "skill://lint/SKILL.md").is_none(), "a file is not a folder");
        assert!(dirs.children(&skills, "skill://nothing").is_none());
        assert!(Arc::ptr_eq(
            &dirs.children(&skills, "skill://acme").unwrap(),
            &dirs.children(&skills, "skill://acme").unwrap()
        ));
    }
}
