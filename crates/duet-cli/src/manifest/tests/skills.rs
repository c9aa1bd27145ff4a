//! Skills declared in a manifest: a folder read at load, served under its name (or a
//! prefix), to some roles only when asked; a folder that is not a valid skill fails the load
//! at its `dir` line.

use super::bad_manifests::assert_located;
use super::*;
use duet::layer::ResourceBody;

fn skill_folder(root: &Path, name: &str, frontmatter_name: &str) {
    let skill = root.join("skills").join(name);
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    let md = format!("---\nname: {frontmatter_name}\ndescription: Deploy with care\n---\nRun scripts/deploy.sh.\n");
    std::fs::write(skill.join("SKILL.md"), md).unwrap();
    std::fs::write(skill.join("scripts/deploy.sh"), "echo deploy\n").unwrap();
}

#[tokio::test]
async fn a_skill_folder_is_served() {
    let dir = tempfile::tempdir().unwrap();
    skill_folder(dir.path(), "deploy", "deploy");
    skill_folder(dir.path(), "audit", "audit");
    let r = registry_in(
        dir.path(),
        "[[skill]]\ndir = \"skills/deploy\"\n\n[[skill]]\ndir = \"skills/audit\"\nprefix = \"acme\"\nroles = [\"ops\"]\n",
    );
    let everyone = r.skills(&Principal::local()).expect("skills are served");
    assert_eq!(everyone.len(), 1);
    let files: Vec<&str> = everyone[0].resources.iter().map(|f| f.uri.as_str()).collect();
    assert_eq!(files, ["skill://deploy/SKILL.md", "skill://deploy/scripts/deploy.sh"]);
    let ops = r.skills(&Principal::new("o", ["ops"])).unwrap();
    assert_eq!(ops[1].uri, "skill://acme/audit/SKILL.md");
    let script = read(&r, "skill://deploy/scripts/deploy.sh").await;
    assert_eq!(script[0].body, ResourceBody::Text("echo deploy\n".into()));
}

#[test]
fn a_bad_skill_folder_fails_the_load_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    skill_folder(dir.path(), "deploy", "deploy-it");
    let body = "\n[[skill]]\ndir = \"skills/deploy\"\n";
    let message = parse(&manifest(body), &dir.path().join("duet.toml")).err().unwrap().to_string();
    assert_located(&message, 6, &[r#"skill "skills/deploy": cannot serve the skill: its folder is named "deploy""#]);
    let body = "\n[[skill]]\ndir = \"skills/missing\"\n";
    let message = parse(&manifest(body), &dir.path().join("duet.toml")).err().unwrap().to_string();
    assert_located(&message, 6, &[r#"skill "skills/missing": cannot read"#, "relative paths start at"]);
}
