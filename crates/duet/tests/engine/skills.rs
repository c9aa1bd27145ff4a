//! The skills extension (SEP-2640) through the engine, on both eras: a registry with skills
//! declares the extension (with `directoryRead`), lists its skills in pages, answers
//! `skills/get`, lists each folder, and reads each file; a layer without skills has none of
//! these methods and declares nothing.

use crate::client::{Client, MODERN, assert_error, testkit_server};
use duet::layer::{Registry, ServerInfo, SkillSpec};
use duet::protocol::{Server, ServerOptions};
use duet::wire::Version;
use serde_json::{Value, json};
use std::sync::Arc;

const LINT: &str = "---\nname: lint\ndescription: Lint before you push\n---\nRun the linter.\n";
const REFUNDS: &str = "---\nname: refunds\ndescription: Refund by policy\nlicense: MIT\n---\n# Refunds\n";

fn skills_server() -> Server {
    let mut registry = Registry::new(ServerInfo::new("skills", "1"));
    registry.skill(SkillSpec::new(LINT).file("rules/style.md", "# Style\n")).unwrap();
    registry
        .skill(SkillSpec::new(REFUNDS).prefix("acme/billing").file("templates/eu/email.txt", "Dear customer"))
        .unwrap();
    Server::new(Arc::new(registry), ServerOptions { page_size: 1, ..ServerOptions::default() })
}

async fn client(version: Version) -> Client {
    let client = Client::connect(&skills_server(), version);
    if !version.is_modern() {
        let result = client.initialize(version.as_str()).await;
        assert_eq!(
            result["capabilities"]["extensions"],
            json!({"io.modelcontextprotocol/skills": {"directoryRead": true}})
        );
    }
    client
}

fn uris(items: &[Value]) -> Vec<&str> {
    items.iter().map(|i| i["uri"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn skills_are_declared_listed_got_and_read_in_both_eras() {
    for version in [Version::V2025_11_25, MODERN] {
        let client = client(version).await;
        let skills = client.list_all("skills/list", "skills").await;
        assert_eq!(uris(&skills), ["skill://lint/SKILL.md", "skill://acme/billing/refunds/SKILL.md"], "{version}");
        assert_eq!(
            skills[1]["frontmatter"],
            json!({"name": "refunds", "description": "Refund by policy", "license": "MIT"})
        );
        let files = skills[1]["resources"].as_array().unwrap();
        assert_eq!(
            uris(files),
            ["skill://acme/billing/refunds/SKILL.md", "skill://acme/billing/refunds/templates/eu/email.txt"]
        );
        assert_eq!(files[0]["size"], REFUNDS.len());
        assert!(files[0]["digest"].as_str().unwrap().starts_with("sha256:"));

        let got = client.request("skills/get", json!({"uri": "skill://lint/SKILL.md"})).await;
        assert_eq!(got["skill"], skills[0]);
        assert!(got.get("nextCursor").is_none());
        let unknown = client.error("skills/get", json!({"uri": "skill://nope/SKILL.md"})).await;
        assert_error(&unknown, -32602, "Unknown skill: skill://nope/SKILL.md");
        assert_eq!(unknown.data, Some(json!({"uri": "skill://nope/SKILL.md"})));

        let listed = client.list_all("resources/list", "resources").await;
        let manifest = listed.iter().find(|r| r["uri"] == "skill://lint/SKILL.md").unwrap();
        assert_eq!((&manifest["name"], &manifest["description"]), (&json!("lint"), &json!("Lint before you push")));
        assert_eq!(manifest["mimeType"], "text/markdown");
        let read = client
            .request("resources/read", json!({"uri": "skill://acme/billing/refunds/templates/eu/email.txt"}))
            .await;
        assert_eq!(read["contents"][0]["text"], "Dear customer");
        let manifest = client.request("resources/read", json!({"uri": "skill://lint/SKILL.md"})).await;
        assert_eq!(
            (&manifest["contents"][0]["text"], &manifest["contents"][0]["mimeType"]),
            (&json!(LINT), &json!("text/markdown"))
        );
    }
}

#[tokio::test]
async fn every_folder_of_the_skills_lists_its_children() {
    for version in [Version::V2025_11_25, MODERN] {
        let client = client(version).await;
        let read = |uri: &str| client.request("resources/directory/read", json!({"uri": uri}));
        let root = read("skill://acme/billing/refunds").await;
        assert_eq!(
            uris(root["resources"].as_array().unwrap()),
            ["skill://acme/billing/refunds/SKILL.md"],
            "one a page"
        );
        let cursor = root["nextCursor"].clone();
        let next = client
            .request("resources/directory/read", json!({"uri": "skill://acme/billing/refunds", "cursor": cursor}))
            .await;
        assert_eq!(
            next["resources"],
            json!([{"uri": "skill://acme/billing/refunds/templates", "name": "templates", "mimeType": "inode/directory"}])
        );
        let above = read("skill://acme").await;
        assert_eq!(above["resources"][0]["uri"], "skill://acme/billing");
        if version.is_modern() {
            assert_eq!((&root["ttlMs"], &root["cacheScope"]), (&json!(0), &json!("private")));
        }
        for not_a_folder in ["skill://lint/SKILL.md", "skill://elsewhere", "file:///etc"] {
            let e = client.error("resources/directory/read", json!({"uri": not_a_folder})).await;
            assert_eq!(e.code, -32602, "{not_a_folder}");
            assert!(e.message.contains("is not a directory"), "{}", e.message);
        }
    }
}

#[tokio::test]
async fn a_layer_without_skills_declares_and_serves_none() {
    let (server, _) = testkit_server();
    let client = Client::connect(&server, MODERN);
    let discovered = client.request("server/discover", json!({})).await;
    assert!(discovered["capabilities"].get("extensions").is_none(), "{discovered}");
    for method in ["skills/list", "skills/get", "resources/directory/read"] {
        let e = client.error(method, json!({"uri": "skill://lint/SKILL.md"})).await;
        assert_eq!(e.code, -32601, "{method}");
    }
    let client = Client::connect(&skills_server(), MODERN);
    let discovered = client.request("server/discover", json!({})).await;
    assert_eq!(
        discovered["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        json!({"directoryRead": true})
    );
}
