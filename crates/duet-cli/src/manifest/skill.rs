//! A `[[skill]]` entry: a skill folder next to the manifest (its `SKILL.md` and every file
//! below it, read once at load), served under the skills extension (SEP-2640), optionally
//! under a prefix and to some roles only.

use super::locate::Place;
use super::schema::SkillDecl;
use super::{Problem, check_roles};
use duet::layer::SkillSpec;
use std::path::Path;

/// Checks a skill's declaration (found at `at`) and reads its folder.
pub(super) fn compile(decl: SkillDecl, at: &Place, dir: &Path) -> Result<SkillSpec, Problem> {
    let folder = dir.join(&decl.dir);
    let fail = |place: Place, message: String| Problem::new(place, format!("skill {:?}: {message}", decl.dir));
    check_roles(&decl.roles, at, &format!("skill {:?}", decl.dir))?;
    let mut spec = SkillSpec::from_dir(&folder)
        .map_err(|e| fail(at.key("dir"), format!("{e} (relative paths start at {})", dir.display())))?;
    if let Some(prefix) = decl.prefix {
        spec = spec.prefix(prefix);
    }
    if !decl.roles.is_empty() {
        spec = spec.roles(decl.roles);
    }
    Ok(spec)
}
