//! What replicas share, from the command line: a state key given by `--state-key-file` or
//! `DUET_STATE_KEY` seals multi round-trip state that another process holding the key opens
//! (and one holding another key refuses); a malformed key, a store without a key, and a
//! store that cannot be reached stop the start with exit code 2 and say why; a Redis over
//! TLS is reached when its certificate is trusted and refused when not. The replicas
//! themselves, on a real Redis behind nginx, are tested in tests/interop/test_replicas.py
//! (and against a Redis that is not to be trusted in untrusted_redis.rs).

// Shared with the stdio tests; this file uses only part of it.
#[allow(dead_code)]
mod common;

use common::redis_server::{RedisServer, issue_certificates};
use common::{CAPABILITIES_KEY, Duet, VERSION_KEY};
use serde_json::{Value, json};
use std::process::{Command, Output};
use std::time::Duration;

const MODERN: &str = "2026-07-28";

fn key_file(dir: &tempfile::TempDir, name: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, hex(rand_bytes())).expect("write the key");
    path.to_str().expect("a UTF-8 path").to_string()
}

fn rand_bytes() -> [u8; 32] {
    rand::random()
}

fn hex(bytes: [u8; 32]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A 2026 refund call over 100 USD from a client that can elicit, with `extra` params.
fn refund(extra: Value) -> Value {
    let mut params = json!({
        "name": "refund_order",
        "arguments": {"order_id": "A-1", "amount_cents": 25_000},
        "_meta": {VERSION_KEY: MODERN, CAPABILITIES_KEY: {"elicitation": {}}}
    });
    params.as_object_mut().expect("an object").extend(extra.as_object().expect("an object").clone());
    params
}

/// The answer of one request to a fresh `duet serve --fixtures testkit` with `args` and `env`.
fn ask(args: &[&str], env: &[(&str, &str)], params: Value) -> Value {
    let argv = [&["serve", "--fixtures", "testkit"], args].concat();
    let mut duet = Duet::spawn_with_env(&argv, env, MODERN);
    duet.request(json!(1), "tools/call", params);
    let answer = duet.response(&json!(1));
    duet.close_stdin();
    duet.finish(Duration::from_secs(10)).assert_success();
    answer
}

/// The sealed state of the refund's question, asked of a duet with `args` and `env`.
fn question(args: &[&str], env: &[(&str, &str)]) -> String {
    let asked = ask(args, env, refund(json!({})));
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    asked["result"]["requestState"].as_str().expect("a requestState").to_string()
}

fn confirmed(state: &str) -> Value {
    refund(json!({
        "requestState": state,
        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}}
    }))
}

#[test]
fn a_shared_key_opens_state_sealed_by_another_process() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let key = key_file(&dir, "state.key");
    let state = question(&["--state-key-file", &key], &[]);
    let paid = ask(&["--state-key-file", &key], &[], confirmed(&state));
    assert_eq!(paid["result"]["structuredContent"]["refund_id"], "R-1", "{paid}");
    // The same key from the environment opens it too.
    let text = std::fs::read_to_string(&key).expect("the key");
    let paid = ask(&[], &[("DUET_STATE_KEY", &text)], confirmed(&state));
    assert_eq!(paid["result"]["structuredContent"]["refund_id"], "R-1", "{paid}");
    // Another key does not.
    let other = key_file(&dir, "other.key");
    let refused = ask(&["--state-key-file", &other], &[], confirmed(&state));
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("integrity"), "{refused}");
}

#[test]
fn a_rotated_key_still_opens_state_sealed_with_the_previous_one() {
    let (old, new) = (hex(rand_bytes()), hex(rand_bytes()));
    let state = question(&[], &[("DUET_STATE_KEY", &old)]);
    let paid = ask(&[], &[("DUET_STATE_KEY", &format!("{new},{old}"))], confirmed(&state));
    assert_eq!(paid["result"]["structuredContent"]["refund_id"], "R-1", "{paid}");
}

fn serve(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["serve", "--fixtures", "testkit"])
        .args(args)
        .envs(env.iter().copied())
        .env_remove("DUET_STORE")
        .output()
        .expect("duet runs")
}

/// Exit code 2 and a stderr line saying `why`.
fn refused(out: &Output, why: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(why), "wanted {why:?} in: {stderr}");
}

#[test]
fn a_malformed_key_stops_the_start() {
    refused(&serve(&[], &[("DUET_STATE_KEY", "c2hvcnQ=")]), "DUET_STATE_KEY: a state key must be 32 bytes");
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("bad.key");
    std::fs::write(&path, "not a key at all!").expect("write");
    let path = path.to_str().expect("UTF-8");
    refused(&serve(&["--state-key-file", path], &[]), &format!("--state-key-file {path}: a state key"));
    refused(&serve(&["--state-key-file", "/nonexistent/state.key"], &[]), "cannot read --state-key-file");
}

#[test]
fn a_store_needs_a_shared_key_and_a_redis_url() {
    let unused = "redis://127.0.0.1:9/0";
    refused(&serve(&["--store", unused], &[]), "must also share a state key");
    let key = hex(rand_bytes());
    let other = serve(&["--store", "memcached://:hunter2@127.0.0.1:11211"], &[("DUET_STATE_KEY", &key)]);
    refused(&other, "takes a redis:// or rediss:// (Redis over TLS) URL, not a memcached:// one");
    assert!(!String::from_utf8_lossy(&other.stderr).contains("hunter2"), "the password is never shown");
}

#[test]
fn an_unreachable_store_is_named() {
    // A port nothing listens on: bound and released.
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("bound").port();
    let url = format!("redis://127.0.0.1:{port}/0");
    let key = hex(rand_bytes());
    let out = serve(&["--transport", "http", "--port", "0", "--store", &url], &[("DUET_STATE_KEY", &key)]);
    refused(&out, &format!("cannot use Redis at {url}"));
    let secret = format!("redis://:hunter2@127.0.0.1:{port}/0");
    let out = serve(&["--transport", "http", "--port", "0", "--store", &secret], &[("DUET_STATE_KEY", &key)]);
    refused(&out, &format!("cannot use Redis at redis://:***@127.0.0.1:{port}/0"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("hunter2"), "the password is never shown");
    // Over TLS too.
    let secret = format!("rediss://:hunter2@127.0.0.1:{port}/0");
    let out = serve(&["--transport", "http", "--port", "0", "--store", &secret], &[("DUET_STATE_KEY", &key)]);
    refused(&out, &format!("cannot use Redis at rediss://:***@127.0.0.1:{port}/0"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("hunter2"), "the password is never shown");
}

#[test]
fn redis_over_tls_is_reached_only_with_a_trusted_certificate() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let tls = issue_certificates(dir.path());
    let ca = tls.ca.to_str().expect("UTF-8").to_string();
    let redis = RedisServer::start_tls(tls);
    let url = redis.url();
    assert!(url.starts_with("rediss://"), "{url}");
    let key = hex(rand_bytes());
    let args = ["serve", "--fixtures", "testkit", "--transport", "http", "--port", "0", "--store", &url];
    let trusted = Duet::spawn_with_env(&args, &[("DUET_STATE_KEY", &key), ("SSL_CERT_FILE", &ca)], MODERN);
    trusted.stderr_line("listening on http://");
    let channel = redis.cli(&["PUBSUB", "CHANNELS", "*"]);
    assert!(channel.starts_with("duet:") && channel.ends_with(":bus"), "subscribed over TLS: {channel:?}");
    // The same CA, not trusted: the start stops and says why.
    let out = serve(&["--transport", "http", "--port", "0", "--store", &url], &[("DUET_STATE_KEY", &key)]);
    refused(&out, &format!("cannot use Redis at {url}: invalid peer certificate"));
}
