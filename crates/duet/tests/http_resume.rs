//! Resumable streams of handshake-era Streamable HTTP sessions over real sockets: event ids
//! that name their stream, the priming event and `retry` of 2025-11-25, a broken POST
//! stream and a broken GET stream picked up with `Last-Event-ID` (each event once), what
//! comes while no stream is open, duet ending a long POST's stream for the client to poll
//! (SEP-1699), and 2026-07-28, which has none of it.

pub mod http_support;

use duet::layer::Change;
use duet::transport::http::HttpConfig;
use http_support::*;
use serde_json::json;
use std::time::Duration;

/// Progress of `slow` with `steps` steps, as an SSE stream.
async fn slow_stream(client: &Client, steps: u64) -> EventStream {
    let params = json!({"name": "slow", "arguments": {"steps": steps}, "_meta": {"progressToken": "p"}});
    client.post("tools/call", params).stream().await
}

/// The events of `stream` up to and including the answer (its end), with their ids.
async fn until_answer(stream: &mut EventStream) -> Vec<SseEvent> {
    let mut events = Vec::new();
    while let Some(event) = stream.next_event().await {
        let answered = !event.is_priming() && event.json().get("result").is_some();
        events.push(event);
        if answered {
            return events;
        }
    }
    panic!("the stream ended without the answer: {events:?}");
}

/// The session's GET stream once the last one closed (a replica holds one at a time).
async fn open_get(client: &Client, last: Option<&str>) -> EventStream {
    within(WAIT, "a GET stream after the last closed", async {
        loop {
            let get = client.get();
            let get = match last {
                Some(last) => get.header("last-event-id", last),
                None => get,
            };
            let stream = get.stream_or_refusal().await;
            if let Ok(stream) = stream {
                return stream;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

fn progress_of(events: &[SseEvent]) -> Vec<u64> {
    let messages = events.iter().filter(|e| !e.is_priming()).map(SseEvent::json);
    messages
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_u64().unwrap())
        .collect()
}

/// The stream an event id names: `g` or `p<token>`.
fn stream_of(id: &str) -> &str {
    id.split('.').next().unwrap()
}

#[tokio::test]
async fn a_broken_post_stream_is_picked_up_with_a_get() {
    let ts = TestServer::start(config()).await;
    let client = ts.session(LATEST).await;
    let mut stream = slow_stream(&client, 40).await;
    let priming = stream.next_event().await.expect("a priming event");
    assert!(priming.is_priming(), "{priming:?}");
    assert_eq!(priming.retry, Some(1000), "the retry interval comes with it");
    let post = stream_of(priming.id.as_deref().unwrap()).to_string();
    assert!(post.starts_with('p'), "{post}");
    let mut before = Vec::new();
    for _ in 0..4 {
        let event = stream.next_event().await.expect("an event");
        assert_eq!(stream_of(event.id.as_deref().expect("an id")), post, "{event:?}");
        before.push(event);
    }
    // The client goes away; the tool goes on.
    drop(stream);
    let last = before.last().unwrap().id.clone().unwrap();
    let mut resumed = client.get().header("last-event-id", &last).stream().await;
    let primed = resumed.next_event().await.unwrap();
    assert_eq!((primed.is_priming(), primed.id.as_deref()), (true, Some(last.as_str())));
    let after = until_answer(&mut resumed).await;
    assert!(after.iter().all(|e| stream_of(e.id.as_deref().unwrap()) == post), "{after:?}");
    let mut progress = progress_of(&before);
    progress.extend(progress_of(&after));
    assert_eq!(progress, (1..=40).collect::<Vec<_>>(), "every event once");
    assert_eq!(after.last().unwrap().json()["result"]["structuredContent"], json!({"done": 40}));
    resumed.expect_end().await;
    ts.stop().await;
}

#[tokio::test]
async fn a_stream_that_ended_while_its_client_left_is_picked_up_too() {
    let ts = TestServer::start(config()).await;
    let client = ts.session(LATEST).await;
    let mut stream = slow_stream(&client, 3).await;
    assert!(stream.next_event().await.unwrap().is_priming());
    let first = stream.next_event().await.unwrap();
    // The server sends the rest, and the answer, while the client reads no more.
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(stream);
    let started = std::time::Instant::now();
    let mut resumed = client.get().header("last-event-id", first.id.as_deref().unwrap()).stream().await;
    let after = until_answer(&mut resumed).await;
    assert!(started.elapsed() < Duration::from_secs(5), "found at once: {:?}", started.elapsed());
    let mut progress = progress_of(&[first]);
    progress.extend(progress_of(&after));
    assert_eq!(progress, [1, 2, 3]);
    ts.stop().await;
}

#[tokio::test]
async fn a_broken_get_stream_is_picked_up_and_keeps_what_came_meanwhile() {
    let ts = TestServer::start(config()).await;
    let client = ts.session(LATEST).await;
    let mut stream = client.get().stream().await;
    assert_eq!(stream.next_event().await.unwrap().id.as_deref(), Some("g.0"), "primed at the start");
    ts.feed.notify(Change::ToolsChanged);
    let first = stream.next_event().await.unwrap();
    assert_eq!(first.json()["method"], "notifications/tools/list_changed");
    assert_eq!(stream_of(first.id.as_deref().unwrap()), "g");
    ts.feed.notify(Change::PromptsChanged);
    assert_eq!(stream.next_message().await["method"], "notifications/prompts/list_changed");
    drop(stream);
    // While no stream is open.
    ts.feed.notify(Change::ResourcesChanged);
    let mut resumed = open_get(&client, first.id.as_deref()).await;
    assert_eq!(resumed.next_event().await.unwrap().id, first.id, "primed where it resumes");
    assert_eq!(resumed.next_message().await["method"], "notifications/prompts/list_changed");
    let kept = resumed.next_event().await.unwrap();
    assert_eq!(kept.json()["method"], "notifications/resources/list_changed");
    drop(resumed);
    // Without Last-Event-ID, a GET goes on after the last event a GET stream sent.
    let mut fresh = open_get(&client, None).await;
    assert_eq!(fresh.next_event().await.unwrap().id, kept.id, "primed after the last event sent");
    ts.feed.notify(Change::ToolsChanged);
    assert_eq!(fresh.next_message().await["method"], "notifications/tools/list_changed");
    ts.stop().await;
}

#[tokio::test]
async fn duet_ends_a_long_post_stream_for_the_client_to_poll() {
    let ts = TestServer::start(HttpConfig {
        sse_close_after: Some(Duration::from_millis(150)),
        sse_retry: Duration::from_millis(250),
        ..config()
    })
    .await;
    let client = ts.session(LATEST).await;
    let mut stream = slow_stream(&client, 30).await;
    let mut before = vec![stream.next_event().await.unwrap()];
    assert_eq!(before[0].retry, Some(250));
    while let Some(event) = stream.next_event().await {
        before.push(event);
    }
    let progress = progress_of(&before);
    assert!(!progress.is_empty() && progress.len() < 30, "ended before its answer: {progress:?}");
    let last = before.last().unwrap().id.clone().unwrap();
    let mut resumed = client.get().header("last-event-id", &last).stream().await;
    let after = until_answer(&mut resumed).await;
    let mut all = progress;
    all.extend(progress_of(&after));
    assert_eq!(all, (1..=30).collect::<Vec<_>>());
    // A quick request is answered on its own stream as before.
    let quick = client.post("tools/call", json!({"name": "echo", "arguments": {"text": "hi"}})).send().await;
    assert_eq!(quick.result()["structuredContent"]["text"], "hi");
    ts.stop().await;
}

#[tokio::test]
async fn older_sessions_get_ids_without_priming_and_2026_gets_neither() {
    let ts = TestServer::start(config()).await;
    let client = ts.session("2025-06-18").await;
    let mut stream = slow_stream(&client, 2).await;
    let first = stream.next_event().await.unwrap();
    assert!(!first.is_priming() && first.id.is_some(), "{first:?}");
    let answer = until_answer(&mut stream).await;
    assert!(answer.iter().all(|e| e.id.is_some() && e.retry.is_none()), "{answer:?}");

    // 2026-07-28: no ids, and Last-Event-ID changes nothing.
    let modern = ts.modern();
    let params = enveloped(json!({"name": "slow", "arguments": {"steps": 3}, "_meta": {"progressToken": "m"}}));
    let exchange = modern.post("tools/call", params).header("last-event-id", "g.1.1").send().await;
    assert!(exchange.is_sse(), "{}", exchange.body);
    assert!(exchange.events.iter().all(|e| e.id.is_none() && e.retry.is_none()), "{:?}", exchange.events);
    assert_eq!(exchange.result()["structuredContent"], json!({"done": 3}));
    let listen = enveloped(json!({"notifications": {"toolsListChanged": true}}));
    let mut listening = modern.post("subscriptions/listen", listen).header("last-event-id", "g.1.1").stream().await;
    let acknowledged = listening.next_event().await.unwrap();
    assert!(acknowledged.id.is_none(), "{acknowledged:?}");
    ts.feed.notify(Change::ToolsChanged);
    let changed = within(WAIT, "the change", async {
        loop {
            let event = listening.next_event().await.unwrap();
            if event.data.contains("tools/list_changed") {
                return event;
            }
        }
    })
    .await;
    assert!(changed.id.is_none());
    ts.stop().await;
}

#[tokio::test]
async fn ids_duet_did_not_make_start_a_fresh_stream() {
    let ts = TestServer::start(config()).await;
    let client = ts.session(LATEST).await;
    for foreign in ["42", "g", "pzz.1", "x.1.2"] {
        let mut stream = open_get(&client, Some(foreign)).await;
        let priming = stream.next_event().await.unwrap();
        assert_eq!(priming.id.as_deref(), Some("g.0"), "{foreign}: {priming:?}");
    }
    // A POST stream no replica knows: the GET ends once it is clear no events come.
    let started = std::time::Instant::now();
    let unknown = client.get().header("last-event-id", "p1234.5.6").response().await;
    let body = within(Duration::from_secs(15), "the end of the stream", unknown.text()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(9), "{:?}", started.elapsed());
    assert!(body.starts_with("id: p1234.5.6\nretry: 1000\ndata: \n\n"), "{body:?}");
    assert!(!body.contains("event: message"), "{body:?}");
    ts.stop().await;
}
