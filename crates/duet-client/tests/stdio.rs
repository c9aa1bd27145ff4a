//! The client against the `duet` binary over stdio (`DUET_BIN`, built with the `fixtures`
//! feature), both eras; after close, the server's process group is gone.

mod common;

use common::{PAGE_SIZE, converse, duet_bin, options};
use duet_client::{Client, Error, Negotiate, StdioTransport, Version};
use rustix::process::{Pid, test_kill_process_group};
use std::time::{Duration, Instant};

/// `duet serve --fixtures testkit` over stdio, its listings paged small.
fn stdio_command() -> tokio::process::Command {
    let mut command = tokio::process::Command::new(duet_bin());
    command.args(["serve", "--fixtures", "testkit", "--page-size", &PAGE_SIZE.to_string()]);
    command
}

/// Whether any process of group `group` is left (a zombie counts: it was not reaped).
fn group_alive(group: u32) -> bool {
    let pid = Pid::from_raw(i32::try_from(group).expect("a process id")).expect("not zero");
    test_kill_process_group(pid).is_ok()
}

async fn run(negotiate: Negotiate, version: Version) {
    let transport = StdioTransport::spawn(stdio_command()).expect("duet spawns");
    let group = transport.process_group();
    let client = Client::connect_with(transport, negotiate, options()).await.expect("connects");
    converse(&client, version).await;
    assert!(group_alive(group));
    let closing = Instant::now();
    client.close().await;
    assert!(!group_alive(group), "the server's process group is gone after close");
    // The given-up call was cancelled on the wire: nothing kept the server from exiting at
    // the end of its input.
    assert!(closing.elapsed() < Duration::from_secs(1), "closed in {:?}", closing.elapsed());
}

#[tokio::test]
async fn auto_speaks_2026() {
    run(Negotiate::Auto, Version::V2026_07_28).await;
}

#[tokio::test]
async fn pinned_handshake_revisions() {
    for version in [Version::V2025_11_25, Version::V2025_03_26] {
        run(Negotiate::Pin(version), version).await;
    }
}

#[tokio::test]
async fn a_dropped_client_kills_the_group() {
    let transport = StdioTransport::spawn(stdio_command()).expect("duet spawns");
    let group = transport.process_group();
    let client = Client::connect(transport, Negotiate::Auto).await.expect("connects");
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(5);
    while group_alive(group) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!group_alive(group), "the dropped client's server is killed and reaped");
}

#[tokio::test]
async fn a_line_past_the_bound_is_a_protocol_violation() {
    // Not an MCP server: a process that writes one line of 17 MB (the bound is 16 MiB).
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", "head -c 17000000 /dev/zero | tr '\\0' a; echo"]);
    let transport = StdioTransport::spawn(command).expect("sh spawns");
    let group = transport.process_group();
    match Client::connect(transport, Negotiate::Pin(Version::V2025_11_25)).await {
        Err(Error::Protocol(why)) => assert!(why.contains("longer than"), "{why}"),
        other => panic!("a line past the bound: {other:?}"),
    }
    assert!(!group_alive(group), "a failed connect closes what it spawned");
}
