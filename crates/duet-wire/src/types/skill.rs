//! Agent Skills on the wire (SEP-2640, the `io.modelcontextprotocol/skills` extension): a
//! skill as `skills/list` and `skills/get` carry it ([`Skill`]: its `SKILL.md` URI, its
//! frontmatter verbatim, and every file with its SHA-256 digest and size), how a
//! `SKILL.md`'s frontmatter is read, and the naming rules. duet's server builds skills with
//! them; its client checks what it reads against them ([`SkillFile::verify`]).

use super::{About, Resource};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The extension's identifier, under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// The file every skill has at its root.
pub const MANIFEST: &str = "SKILL.md";
/// The URI scheme of the skills duet serves.
pub const SCHEME: &str = "skill://";
/// The MIME type of `SKILL.md`.
pub const MARKDOWN: &str = "text/markdown";

/// A skill as `skills/list` and `skills/get` carry it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of its `SKILL.md`: `skill://<skill-path>/SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter, every field as written, as JSON.
    pub frontmatter: Map<String, Value>,
    /// Every file of the skill, `SKILL.md` first, each once.
    pub resources: Vec<SkillFile>,
}

/// One file of a skill: where to read it, and what its bytes must hash to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// The `skill://` URI it is read at.
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

impl SkillFile {
    /// The entry of the file at `uri` holding `bytes`.
    pub fn of(uri: impl Into<String>, bytes: &[u8]) -> SkillFile {
        SkillFile { uri: uri.into(), digest: digest_of(bytes), size: bytes.len() as u64 }
    }

    /// Whether `bytes`, read at this file's URI, are what the entry says: its size first,
    /// then its digest. Content that fails must not be used.
    pub fn verify(&self, bytes: &[u8]) -> Result<(), String> {
        if bytes.len() as u64 != self.size {
            return Err(format!("{} is {} bytes, not the {} its entry says", self.uri, bytes.len(), self.size));
        }
        if digest_of(bytes) != self.digest {
            return Err(format!("{} does not match its entry's digest {}", self.uri, self.digest));
        }
        Ok(())
    }
}

/// `sha256:` and the lowercase hex of the SHA-256 of `bytes`.
fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

impl Skill {
    /// The skill's name (its frontmatter's).
    pub fn name(&self) -> &str {
        self.frontmatter.get("name").and_then(Value::as_str).unwrap_or_default()
    }

    /// Its `SKILL.md` as `resources/list` shows it: named and described by the frontmatter.
    pub fn manifest_resource(&self) -> Resource {
        let description = self.frontmatter.get("description").and_then(Value::as_str).map(str::to_string);
        Resource {
            uri: self.uri.clone(),
            name: self.name().to_string(),
            about: About { description, ..About::default() },
            mime_type: Some(MARKDOWN.into()),
            size: self.resources.iter().find(|f| f.uri == self.uri).map(|f| f.size),
            annotations: None,
        }
    }
}

/// The URI of a skill's file: `skill://<skill-path>/<file>`.
pub fn file_uri(skill_path: &str, file: &str) -> String {
    format!("{SCHEME}{skill_path}/{file}")
}

/// The frontmatter of a `SKILL.md`: the YAML between its opening `---` line and the next
/// `---` line, as a JSON object with a non-empty string `name` and `description`.
pub fn frontmatter(skill_md: &str) -> Result<Map<String, Value>, String> {
    let text = skill_md.strip_prefix('\u{feff}').unwrap_or(skill_md);
    let missing = || format!("{MANIFEST} must begin with YAML frontmatter between --- lines");
    let rest = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")).ok_or_else(missing)?;
    let mut yaml_end = None;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']).trim_end_matches([' ', '\t']) == "---" {
            yaml_end = Some(at);
            break;
        }
        at += line.len();
    }
    let yaml = &rest[..yaml_end.ok_or_else(missing)?];
    let value: Value = serde_saphyr::from_str(yaml).map_err(|e| format!("its frontmatter is not valid YAML: {e}"))?;
    let Value::Object(fields) = value else {
        return Err("its frontmatter is not a YAML mapping".into());
    };
    for field in ["name", "description"] {
        if fields.get(field).and_then(Value::as_str).is_none_or(|v| v.trim().is_empty()) {
            return Err(format!("its frontmatter has no {field} (a non-empty string)"));
        }
    }
    Ok(fields)
}

/// Checks a skill name against the Agent Skills rules: 1 to 64 lowercase letters, digits
/// and hyphens, no hyphen first, last or twice in a row.
pub fn check_name(name: &str) -> Result<(), String> {
    let chars_ok = name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if name.is_empty()
        || name.len() > 64
        || !chars_ok
        || name.starts_with('-')
        || name.ends_with('-')
        || name.contains("--")
    {
        return Err(format!(
            "skill name {name:?} breaks the naming rules: 1 to 64 lowercase letters, digits and hyphens, \
             no hyphen first, last or twice in a row"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DEPLOY: &str = "---\nname: deploy\ndescription: Ship it safely\nlicense: MIT\nmetadata:\n  version: 2.1\n  tags: [a, b]\n---\n# Deploy\n";

    #[test]
    fn frontmatter_is_read_verbatim() {
        let fields = frontmatter(DEPLOY).unwrap();
        assert_eq!(
            Value::Object(fields),
            json!({"name": "deploy", "description": "Ship it safely", "license": "MIT",
                   "metadata": {"version": 2.1, "tags": ["a", "b"]}})
        );
        assert!(frontmatter(&format!("\u{feff}{}", DEPLOY.replace('\n', "\r\n"))).is_ok(), "BOM and CRLF");
        for (bad, why) in [
            ("# no frontmatter", "must begin with YAML frontmatter"),
            ("---\nname: x\n", "must begin with YAML frontmatter"),
            ("---\n- a\n---\n", "not a YAML mapping"),
            ("---\nname: x\n---\n", "no description"),
            ("---\nname: ''\ndescription: d\n---\n", "no name"),
            ("---\nname: [\n---\n", "not valid YAML"),
        ] {
            let e = frontmatter(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn names_follow_the_rules() {
        for good in ["a", "pdf-processing", "v2", &"x".repeat(64)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "-a", "a-", "a--b", "Deploy", "a_b", "a b", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_file_is_verified_by_size_then_digest() {
        let file = SkillFile::of("skill://deploy/SKILL.md", DEPLOY.as_bytes());
        assert!(file.verify(DEPLOY.as_bytes()).is_ok());
        let longer = format!("{DEPLOY}more");
        assert!(file.verify(longer.as_bytes()).unwrap_err().contains("bytes, not the"));
        let same_size = DEPLOY.replace("Ship", "Shop");
        assert!(file.verify(same_size.as_bytes()).unwrap_err().contains("digest"));
    }
}
