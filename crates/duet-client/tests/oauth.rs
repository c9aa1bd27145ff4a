//! duet-client's OAuth against a real authorization server (`oidc-provider` on 127.0.0.1,
//! the one duet's own OAuth tests use) and duet as the protected server: the client
//! discovers the provider from duet's challenge, gets a token with its client credentials,
//! steps up when a tool needs a scope it lacks, and keeps its tokens in a file of mode 0600.

#[path = "../../duet/tests/oauth_support/mod.rs"]
mod oauth_support;

use duet_client::oauth::{Authorizer, TokenStore};
use duet_client::{Client, HttpTransport, Negotiate};
use oauth_support::{Provider, oauth_config, scratch, start_duet};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

#[tokio::test]
async fn client_credentials_reach_a_protected_duet_and_step_up() {
    let keys = scratch("keys.json");
    let provider = Provider::start(&keys).await;
    let duet = start_duet(oauth_config(&provider)).await;
    let tokens = scratch("tokens.json");
    let authorizer = Authorizer::client_secret("duet-test", "duet-test-secret").store(TokenStore::File(tokens.clone()));
    let transport = HttpTransport::new(&duet.url).unwrap().with_authorizer(Arc::new(authorizer));
    let client = Client::connect(transport, Negotiate::Auto).await.expect("connects once authorized");

    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|tool| tool.name).collect();
    assert_eq!(names, ["echo", "whoami"], "the first token has the scopes duet lists, not mcp:admin");
    let echoed = client.call_tool("echo", json!({"text": "hi"})).await.unwrap();
    assert_eq!(serde_json::to_value(&echoed.content).unwrap()[0]["text"], "hi");
    // admin_reset needs mcp:admin: the 403 names it, and the client asks for it too.
    let reset = client.call_tool("admin_reset", json!({})).await.expect("stepped up");
    assert_eq!(serde_json::to_value(&reset.content).unwrap()[0]["text"], "reset");
    client.close().await;

    let mode = std::fs::metadata(&tokens).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the token file is its owner's alone");
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(&tokens).unwrap()).unwrap();
    assert_eq!(kept["issuer"], provider.issuer.as_str());
    assert!(kept["tokens"]["scope"].as_str().unwrap().contains("mcp:admin"), "{kept}");

    duet.stop().await;
    provider.stop().await;
    let _ = std::fs::remove_file(&keys);
    let _ = std::fs::remove_file(&tokens);
}
