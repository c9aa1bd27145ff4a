//! [`Exchange`]: a whole HTTP answer read at once, its JSON body or its SSE events split into
//! JSON-RPC messages (each checked), and the assertions tests make about it.

use super::sse::parse_event;
use super::{Checker, SseEvent, bounded, header_of};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// A whole HTTP answer.
#[derive(Debug)]
pub struct Exchange {
    /// The HTTP status.
    pub status: StatusCode,
    /// The response headers.
    pub headers: HeaderMap,
    /// The body, as text.
    pub body: String,
    /// The body as JSON, when it is JSON.
    pub json: Option<Value>,
    /// The SSE events, when it is an event stream.
    pub events: Vec<SseEvent>,
    /// The JSON-RPC messages (of a JSON body or of the SSE `message` events), all checked.
    pub messages: Vec<Value>,
}

impl Exchange {
    pub(super) async fn read(response: reqwest::Response, checker: &Checker) -> Exchange {
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = bounded("the response body", response.bytes()).await.expect("reading the body fails");
        let body = String::from_utf8(bytes.to_vec()).expect("the body is UTF-8");
        let content_type = header_of(&headers, "content-type").unwrap_or_default().to_string();
        let mut exchange = Exchange { status, headers, body, json: None, events: Vec::new(), messages: Vec::new() };
        if content_type.starts_with("text/event-stream") {
            let text = exchange.body.replace("\r\n", "\n");
            assert!(text.is_empty() || text.ends_with("\n\n"), "a truncated event stream: {text:?}");
            exchange.events = text.split("\n\n").filter_map(parse_event).collect();
            let primed = exchange.events.iter().position(SseEvent::is_priming);
            assert!(primed.is_none_or(|at| at == 0), "a priming event comes first or not at all: {text:?}");
            for event in exchange.events.iter().filter(|e| !e.is_priming()) {
                assert_eq!(event.event.as_deref(), Some("message"), "an unexpected event: {event:?}");
                exchange.messages.push(event.json());
            }
        } else if content_type.starts_with("application/json") {
            let value: Value = serde_json::from_str(&exchange.body)
                .unwrap_or_else(|e| panic!("a JSON answer that is not JSON ({e}): {}", exchange.body));
            match &value {
                Value::Array(items) => exchange.messages = items.clone(),
                Value::Object(o) if o.contains_key("jsonrpc") => exchange.messages = vec![value.clone()],
                _ => {}
            }
            exchange.json = Some(value);
        }
        for message in &exchange.messages {
            checker.check(message);
        }
        exchange
    }

    /// The (first) value of header `name`, when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_of(&self.headers, name)
    }

    /// The `Content-Type`, or `""`.
    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or_default()
    }

    /// Whether the answer is an event stream.
    pub fn is_sse(&self) -> bool {
        self.content_type().starts_with("text/event-stream")
    }

    /// Asserts the status, showing the body when it is another.
    pub fn expect_status(&self, status: StatusCode) -> &Exchange {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.body);
        self
    }

    /// The one response (a message with a result or an error) of the answer.
    pub fn response(&self) -> &Value {
        let responses: Vec<&Value> =
            self.messages.iter().filter(|m| m.get("result").is_some() || m.get("error").is_some()).collect();
        assert_eq!(responses.len(), 1, "expected one response in: {}", self.body);
        responses[0]
    }

    /// The result of the one response, which must not be an error.
    pub fn result(&self) -> &Value {
        let response = self.response();
        response.get("result").unwrap_or_else(|| panic!("an error, not a result: {response}"))
    }

    /// The notifications with `method`, in order.
    pub fn notifications(&self, method: &str) -> Vec<&Value> {
        self.messages.iter().filter(|m| m.get("id").is_none() && m["method"] == method).collect()
    }

    /// An HTTP-level failure: `status`, a JSON-RPC error with id null, code -32600 and
    /// `message`.
    pub fn expect_http_error(&self, status: StatusCode, message: &str) {
        self.expect_status(status);
        assert!(self.content_type().starts_with("application/json"), "{:?}", self.headers);
        let response = self.response();
        assert_eq!(response["id"], Value::Null, "{response}");
        assert_eq!(response["error"]["code"], -32600, "{response}");
        assert_eq!(response["error"]["message"], message, "{response}");
    }

    /// A JSON-RPC error answered with `status`: its code and the request id it names.
    pub fn expect_rpc_error(&self, status: StatusCode, code: i64, id: &Value) -> &Value {
        self.expect_status(status);
        let response = self.response();
        assert_eq!(response["error"]["code"], code, "{response}");
        assert_eq!(&response["id"], id, "{response}");
        &response["error"]
    }
}
