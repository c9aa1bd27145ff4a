//! [`LegacySession`]: a session of the deprecated HTTP+SSE transport, opened and initialized
//! step by step with every step checked.

use super::{Client, EventStream, TestServer, is_session_id};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// A session of the legacy HTTP+SSE transport, initialized.
pub struct LegacySession {
    /// The `/sse` stream, which carries every answer.
    pub stream: EventStream,
    /// A client posting to the session's message endpoint.
    pub messages: Client,
    /// The session's id, from the `endpoint` event.
    pub id: String,
    /// What `initialize` answered.
    pub initialized: Value,
}

impl LegacySession {
    /// Opens `/sse` as `client` (a new session of the server) and initializes the session at
    /// the client's version through the endpoint the stream names, checking every step.
    pub async fn open(ts: &TestServer, client: &Client) -> LegacySession {
        let sessions = ts.session_count();
        let mut stream = client.request(Method::GET, "/sse").header("accept", "text/event-stream").stream().await;
        let endpoint = stream.next_event().await.expect("the endpoint event");
        assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
        assert!(endpoint.data.starts_with("/messages/?session_id="), "{endpoint:?}");
        let id = endpoint.data.trim_start_matches("/messages/?session_id=").to_string();
        assert!(is_session_id(&id), "{id}");
        assert_eq!(ts.session_count(), sessions + 1);
        let messages = client.at(&endpoint.data);

        let info = json!({"name": "t", "version": "0"});
        let params = json!({"protocolVersion": client.version, "capabilities": {}, "clientInfo": info});
        let accepted = messages.post("initialize", params).send().await;
        accepted.expect_status(StatusCode::ACCEPTED);
        assert!(accepted.messages.is_empty(), "the reply goes to the stream: {}", accepted.body);
        let reply = stream.next_message().await;
        assert_eq!(reply["result"]["protocolVersion"], client.version.as_str());
        assert_eq!(reply["result"]["serverInfo"]["name"], "duet-testkit");
        messages.notify("notifications/initialized", json!({})).send().await.expect_status(StatusCode::ACCEPTED);
        LegacySession { stream, messages, id, initialized: reply["result"].clone() }
    }
}
