//! Agent Skills served over MCP (SEP-2640, the `io.modelcontextprotocol/skills` extension).
//! A skill is a folder holding a `SKILL.md` (YAML frontmatter with at least `name` and
//! `description`, then instructions) and any supporting files. Each file is a resource at
//! `skill://<skill-path>/<file>`, where the skill path ends in the skill's name; a server
//! lists its skills with `skills/list`, answers `skills/get` for one, and lists a skill's
//! folders with `resources/directory/read`.
//!
//! What a skill is on the wire ([`Skill`]), its frontmatter and its naming rules are
//! duet-wire's, shared with duet's client, and re-exported here. This module holds the
//! limits a server keeps (at most [`MAX_FILES`] files and [`MAX_BYTES`] bytes) and
//! [`SkillSpec`], a skill a [`Registry`](super::Registry) serves from memory or from a
//! folder read once.

use super::spec::Spec;
pub use duet_wire::types::skill::{
    EXTENSION, MANIFEST, MARKDOWN, SCHEME, Skill, SkillFile, check_name, file_uri, frontmatter,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The most files a skill may have, `SKILL.md` included.
pub const MAX_FILES: usize = 512;
/// The most bytes a skill's files may add up to (16 MiB).
pub const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Checks a path of `/`-separated segments (a skill's prefix, or a file's path in it): no
/// empty, `.` or `..` segment, and only characters a URI path carries as they are.
fn check_path(path: &str, what: &str) -> Result<(), String> {
    let segment_ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars().all(|c| c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=@".contains(c))
    };
    if path.split('/').all(segment_ok) {
        Ok(())
    } else {
        Err(format!(
            "{what} {path:?} is not a relative path of plain segments (letters, digits, -._~!$&'()*+,;=@; no empty, . or .. segment)"
        ))
    }
}

/// A skill for a [`Registry`](super::Registry), served from memory: its `SKILL.md`, its
/// other files, and the prefix it is served under. Build it with [`SkillSpec::new`] or
/// [`SkillSpec::from_dir`]; roles (see [`Spec::roles`]) hide it from others.
pub type SkillSpec = Spec<SkillParts>;

/// What a skill has of its own.
pub struct SkillParts {
    pub(crate) skill_md: String,
    pub(crate) prefix: Option<String>,
    /// By path relative to the skill's root.
    pub(crate) files: BTreeMap<String, Vec<u8>>,
    /// The name of the folder it was read from, which must be the skill's.
    pub(crate) folder: Option<String>,
}

impl Spec<SkillParts> {
    /// A skill whose `SKILL.md` is `skill_md`: served at `skill://<name>/SKILL.md`, the name
    /// being its frontmatter's (checked when it is registered).
    pub fn new(skill_md: impl Into<String>) -> Self {
        Spec::of(SkillParts { skill_md: skill_md.into(), prefix: None, files: BTreeMap::new(), folder: None })
    }

    /// A supporting file at `path`, relative to the skill's root (`references/FORMS.md`).
    pub fn file(mut self, path: impl Into<String>, contents: impl Into<Vec<u8>>) -> Self {
        self.parts.files.insert(path.into(), contents.into());
        self
    }

    /// Serves the skill under a prefix: `skill://<prefix>/<name>/SKILL.md`
    /// (`acme/billing` for `skill://acme/billing/refunds/SKILL.md`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.parts.prefix = Some(prefix.into());
        self
    }

    /// The skill in folder `dir`, read now: its `SKILL.md` and every regular file below it,
    /// hidden files and folders left out, symbolic links not followed. The folder's name
    /// must be the skill's name (checked when it is registered, with the rest).
    pub fn from_dir(dir: &Path) -> Result<Self, String> {
        let shown = dir.display();
        let skill_md =
            std::fs::read_to_string(dir.join(MANIFEST)).map_err(|e| format!("cannot read {shown}/{MANIFEST}: {e}"))?;
        let mut spec = SkillSpec::new(skill_md);
        let mut stack = vec![dir.to_path_buf()];
        let mut total = 0u64;
        while let Some(at) = stack.pop() {
            let entries = std::fs::read_dir(&at).map_err(|e| format!("cannot list {}: {e}", at.display()))?;
            for entry in entries {
                let entry = entry.map_err(|e| format!("cannot list {}: {e}", at.display()))?;
                let (path, kind) = (entry.path(), entry.file_type().map_err(|e| e.to_string())?);
                if entry.file_name().to_string_lossy().starts_with('.') {
                    continue;
                }
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file() {
                    let relative = path.strip_prefix(dir).map_err(|e| e.to_string())?;
                    let Some(relative) = relative.to_str().map(|r| r.replace(std::path::MAIN_SEPARATOR, "/")) else {
                        return Err(format!("{} is not a UTF-8 path", path.display()));
                    };
                    if relative == MANIFEST {
                        continue;
                    }
                    if spec.parts.files.len() + 1 >= MAX_FILES {
                        return Err(format!("{shown} has more than {MAX_FILES} files"));
                    }
                    total += entry.metadata().map_err(|e| e.to_string())?.len();
                    if total > MAX_BYTES {
                        return Err(format!("{shown} holds more than {MAX_BYTES} bytes"));
                    }
                    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                    spec.parts.files.insert(relative, bytes);
                }
            }
        }
        spec.parts.folder = Some(dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        Ok(spec)
    }
}

/// A skill checked and made ready to serve: its entry, and the contents of each file by URI.
pub(crate) struct Built {
    pub skill: Skill,
    pub contents: Vec<(String, Vec<u8>)>,
}

impl SkillParts {
    /// Checks the skill and computes its entry.
    pub(crate) fn build(self) -> Result<Built, String> {
        let SkillParts { skill_md, prefix, files, folder } = self;
        let frontmatter = frontmatter(&skill_md)?;
        let name = frontmatter.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
        check_name(&name)?;
        if let Some(folder) = folder
            && folder != name
        {
            return Err(format!("its folder is named {folder:?} but its frontmatter names it {name:?}"));
        }
        let path = match &prefix {
            Some(prefix) => {
                check_path(prefix, "prefix")?;
                format!("{prefix}/{name}")
            }
            None => name.clone(),
        };
        if files.len() + 1 > MAX_FILES {
            return Err(format!("it has {} files; a skill has at most {MAX_FILES}", files.len() + 1));
        }
        let total: u64 = skill_md.len() as u64 + files.values().map(|b| b.len() as u64).sum::<u64>();
        if total > MAX_BYTES {
            return Err(format!("its files add up to {total} bytes; a skill holds at most {MAX_BYTES}"));
        }
        let uri = file_uri(&path, MANIFEST);
        let mut resources = vec![SkillFile::of(&uri, skill_md.as_bytes())];
        let mut contents = vec![(uri.clone(), skill_md.into_bytes())];
        for (file, bytes) in files {
            check_path(&file, "file")?;
            if file == MANIFEST {
                return Err(format!("{MANIFEST} is the skill's manifest; give it to SkillSpec::new"));
            }
            let file_uri = file_uri(&path, &file);
            resources.push(SkillFile::of(&file_uri, &bytes));
            contents.push((file_uri, bytes));
        }
        Ok(Built { skill: Skill { uri, frontmatter, resources }, contents })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DEPLOY: &str = "---\nname: deploy\ndescription: Ship it safely\nlicense: MIT\nmetadata:\n  version: 2.1\n  tags: [a, b]\n---\n# Deploy\n";

    #[test]
    fn a_skill_is_built_with_digests() {
        let built =
            SkillSpec::new(DEPLOY).file("references/GUIDE.md", "guide").prefix("acme/ops").parts.build().unwrap();
        let skill = built.skill;
        assert_eq!(skill.uri, "skill://acme/ops/deploy/SKILL.md");
        assert_eq!(skill.resources[1].uri, "skill://acme/ops/deploy/references/GUIDE.md");
        assert_eq!(
            skill.resources[1].digest,
            "sha256:83ca68be6227af2feb15f227485ed18aff8ecae99416a4bd6df3be1b5e8059b4"
        );
        assert_eq!(skill.resources[1].size, 5);
        assert_eq!(skill.resources[0].size, DEPLOY.len() as u64);
        let listed = skill.manifest_resource();
        assert_eq!((listed.name.as_str(), listed.mime_type.as_deref()), ("deploy", Some(MARKDOWN)));
        assert_eq!(listed.about.description.as_deref(), Some("Ship it safely"));
        let entry = serde_json::to_value(&skill).unwrap();
        assert_eq!(
            entry["resources"][0],
            json!({"uri": skill.uri, "digest": skill.resources[0].digest, "size": DEPLOY.len()})
        );
    }

    #[test]
    fn bad_skills_are_refused() {
        let refused = |spec: SkillSpec| spec.parts.build().err().unwrap_or_default();
        assert!(refused(SkillSpec::new("---\nname: Bad\ndescription: d\n---\n")).contains("naming rules"));
        assert!(refused(SkillSpec::new(DEPLOY).file("../x", "")).contains("not a relative path"));
        assert!(refused(SkillSpec::new(DEPLOY).file("a//b", "")).contains("not a relative path"));
        assert!(refused(SkillSpec::new(DEPLOY).prefix("a/../b")).contains("prefix"));
        assert!(refused(SkillSpec::new(DEPLOY).file("SKILL.md", "")).contains("manifest"));
        let big = SkillSpec::new(DEPLOY).file("big", vec![0u8; MAX_BYTES as usize]);
        assert!(refused(big).contains("at most"));
        let mut many = SkillSpec::new(DEPLOY);
        for i in 0..MAX_FILES {
            many = many.file(format!("f{i}"), "");
        }
        assert!(refused(many).contains("at most 512"));
    }

    #[test]
    fn a_folder_is_read_once_and_must_be_named_for_the_skill() {
        let dir = std::env::temp_dir().join(format!("duet-skill-{}", std::process::id()));
        let skill = dir.join("deploy");
        std::fs::create_dir_all(skill.join("scripts")).unwrap();
        std::fs::create_dir_all(skill.join(".hidden")).unwrap();
        std::fs::write(skill.join(MANIFEST), DEPLOY).unwrap();
        std::fs::write(skill.join("scripts/run.sh"), "echo hi\n").unwrap();
        std::fs::write(skill.join(".hidden/secret"), "no").unwrap();
        let built = SkillSpec::from_dir(&skill).unwrap().parts.build().unwrap();
        let uris: Vec<&str> = built.skill.resources.iter().map(|f| f.uri.as_str()).collect();
        assert_eq!(uris, ["skill://deploy/SKILL.md", "skill://deploy/scripts/run.sh"]);
        let renamed = dir.join("other");
        std::fs::rename(&skill, &renamed).unwrap();
        let e = SkillSpec::from_dir(&renamed).unwrap().parts.build().err().unwrap();
        assert!(e.contains("folder is named \"other\""), "{e}");
        assert!(SkillSpec::from_dir(&dir.join("missing")).err().unwrap().contains("cannot read"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
