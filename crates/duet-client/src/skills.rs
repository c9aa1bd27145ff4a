//! Agent Skills from the client's side (SEP-2640): the server's skills listed
//! (`skills/list`), and one loaded when the caller needs it. Nothing of a skill is read
//! before it is loaded. Loading reads its `SKILL.md` and checks it against the listed
//! entry before anything else: its size, its digest, and its frontmatter field by field.
//! Only then are its other files read, each checked the same way. Content that fails a
//! check is never returned: the load fails, saying what did not match.

use crate::client::Client;
use crate::error::Error;
use crate::pages::{self, Page};
use base64::Engine;
use duet_wire::types::skill::{Skill, SkillFile, frontmatter};
use duet_wire::types::{ResourceBody, ResourceContents};

/// A skill loaded and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    /// The entry it was listed with.
    pub skill: Skill,
    /// Its `SKILL.md`: frontmatter, then instructions.
    pub manifest: String,
    /// Its other files, in the entry's order: each URI and its bytes.
    pub files: Vec<(String, Vec<u8>)>,
}

impl Client {
    /// Every skill the server lists, all pages.
    pub async fn list_skills(&self) -> Result<Vec<Skill>, Error> {
        pages::all(&pages::SKILLS, self.options().max_pages, |cursor| self.page(&pages::SKILLS, cursor)).await
    }

    /// One page of skills, from `cursor` (`None` for the first).
    pub async fn list_skills_page(&self, cursor: Option<String>) -> Result<Page<Skill>, Error> {
        self.page(&pages::SKILLS, cursor).await
    }

    /// Reads `skill`'s files, checking each against its entry, `SKILL.md` first (and its
    /// frontmatter against the entry's); the first that fails ends the load.
    pub async fn load_skill(&self, skill: &Skill) -> Result<LoadedSkill, Error> {
        let entry = |uri: &str| skill.resources.iter().find(|file| file.uri == uri);
        let manifest_entry = entry(&skill.uri).ok_or_else(|| {
            Error::Protocol(format!("skill {} lists no entry for its own {}", skill.name(), skill.uri))
        })?;
        let manifest = String::from_utf8(self.read_verified(manifest_entry).await?)
            .map_err(|_| Error::Protocol(format!("{} is not UTF-8 text", skill.uri)))?;
        let read = frontmatter(&manifest).map_err(|why| Error::Protocol(format!("{}: {why}", skill.uri)))?;
        if read != skill.frontmatter {
            let field =
                skill.frontmatter.keys().chain(read.keys()).find(|key| skill.frontmatter.get(*key) != read.get(*key));
            return Err(Error::Protocol(format!(
                "the frontmatter of {} differs from its entry's (field {:?}): the skill is not loaded",
                skill.uri,
                field.map(String::as_str).unwrap_or_default()
            )));
        }
        let mut files = Vec::new();
        for file in skill.resources.iter().filter(|file| file.uri != skill.uri) {
            files.push((file.uri.clone(), self.read_verified(file).await?));
        }
        Ok(LoadedSkill { skill: skill.clone(), manifest, files })
    }

    /// The bytes of `file`, read and checked against its entry.
    async fn read_verified(&self, file: &SkillFile) -> Result<Vec<u8>, Error> {
        let contents = self.read_resource(&file.uri).await?;
        let bytes = match contents.into_iter().find(|contents| contents.uri == file.uri) {
            Some(ResourceContents { body: ResourceBody::Text(text), .. }) => text.into_bytes(),
            Some(ResourceContents { body: ResourceBody::Blob(blob), .. }) => base64::engine::general_purpose::STANDARD
                .decode(blob)
                .map_err(|e| Error::Protocol(format!("{} is not valid base64: {e}", file.uri)))?,
            None => return Err(Error::Protocol(format!("reading {} returned no contents for it", file.uri))),
        };
        file.verify(&bytes).map_err(|why| Error::Protocol(format!("{why}: the skill is not loaded")))?;
        Ok(bytes)
    }
}
