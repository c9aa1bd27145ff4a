//! Decoding what a client sends: one JSON text becomes a [`Message`] (one message or a
//! batch) of [`Incoming`] messages, each already sorted by the JSON-RPC framing rules into a
//! request, a notification, a stray response or an error, its method looked up in the
//! method table and its `params._meta` read into typed fields. The rules run while the text
//! is parsed: only the values of params become `Value`s. A `Value` (an in-process caller's
//! message) decodes through the same rules. The engine answers with a `Message` of
//! responses: one, or a batch.

use crate::canonical_uri::canonicalize;
use crate::jsonrpc::{RequestId, Response, RpcError};
use crate::key;
use crate::method::Method;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// One JSON text: a single message or a batch. What a client sends decodes into messages
/// of [`Incoming`]; what the engine answers is a message of responses.
// A single message is by far the common case: it is kept inline rather than boxed.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Message<T = Incoming> {
    /// A single message.
    One(T),
    /// A JSON array of messages (a JSON-RPC batch).
    Batch(Vec<T>),
}

/// A request: its id, its method, its params without `_meta`, and its `_meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Its id, which the response carries back.
    pub id: RequestId,
    /// Its method.
    pub method: Method,
    /// Its params, less `_meta`.
    pub params: Map<String, Value>,
    /// Its `params._meta`.
    pub meta: Meta,
}

/// A notification: a request without an id, never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// Its method.
    pub method: Method,
    /// Its params, less `_meta`.
    pub params: Map<String, Value>,
    /// Its `params._meta`.
    pub meta: Meta,
}

/// What one message turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request, to be answered.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response from the client: ignored unless something waits for it.
    Response {
        /// The id of the server's request it answers.
        id: Option<RequestId>,
        /// The result, or the error.
        outcome: Result<Value, RpcError>,
    },
    /// A notification whose params are not an object: dropped silently.
    Dropped,
    /// A message that breaks the framing rules; the error answers it.
    Invalid(Response),
}

/// A request's `params._meta`: the 2026 envelope keys and the progress token, each as sent
/// (the engine checks them), and every other key. The envelope's client info is skipped:
/// duet keeps no client info in either era. A `_meta` that is not an object carries
/// nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Meta {
    /// `io.modelcontextprotocol/protocolVersion`.
    pub protocol_version: Option<Value>,
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub client_capabilities: Option<Value>,
    /// `io.modelcontextprotocol/logLevel`.
    pub log_level: Option<Value>,
    /// `progressToken`.
    pub progress_token: Option<Value>,
    /// Keys MCP does not reserve for the envelope (`traceparent`, a vendor's own).
    pub other: Map<String, Value>,
}

impl<T> Message<T> {
    /// The messages, one or all of a batch.
    pub fn items(&self) -> &[T] {
        match self {
            Message::One(one) => std::slice::from_ref(one),
            Message::Batch(items) => items,
        }
    }
}

impl Message {
    /// The method of a single request or notification.
    pub fn method(&self) -> Option<&Method> {
        match self {
            Message::One(
                Incoming::Request(Request { method, .. }) | Incoming::Notification(Notification { method, .. }),
            ) => Some(method),
            _ => None,
        }
    }

    /// Whether handling it (or a message of its batch) may change what a handshake-era
    /// session holds: the table's `changes_session` column.
    pub fn changes_session(&self) -> bool {
        self.items().iter().any(|item| match item {
            Incoming::Request(Request { method, .. }) | Incoming::Notification(Notification { method, .. }) => {
                method.traits().changes_session
            }
            _ => false,
        })
    }

    /// The requests among the messages.
    pub fn requests(&self) -> impl Iterator<Item = &Request> {
        self.items().iter().filter_map(|m| match m {
            Incoming::Request(request) => Some(request),
            _ => None,
        })
    }

    /// Whether a transport should handle it in arrival order rather than concurrently:
    /// `initialize`, notifications, responses and invalid messages are; other requests and
    /// batches are not.
    pub fn runs_inline(&self) -> bool {
        match self {
            Message::One(Incoming::Request(request)) => request.method == Method::Initialize,
            Message::One(_) => true,
            Message::Batch(_) => false,
        }
    }
}

impl Message<Response> {
    /// The responses, one or all of a batch.
    pub fn responses(&self) -> &[Response] {
        self.items()
    }

    /// Compact single-line JSON: one response object, or the array of a batch.
    pub fn to_line(&self) -> String {
        let responses = self.responses();
        let mut out = Vec::with_capacity(responses.iter().map(Response::line_capacity).sum::<usize>() + 2);
        match self {
            Message::One(response) => response.write_line(&mut out),
            Message::Batch(responses) => {
                out.push(b'[');
                for (i, r) in responses.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    r.write_line(&mut out);
                }
                out.push(b']');
            }
        }
        // serde_json writes UTF-8 only, and the rest is ASCII.
        String::from_utf8(out).unwrap_or_default()
    }
}

/// Decodes a value through the framing rules (never fails: what breaks them is `Invalid`).
impl From<Value> for Message {
    fn from(value: Value) -> Self {
        Message::deserialize(value).unwrap_or_else(|_| Message::One(invalid(None, "Invalid Request")))
    }
}

fn invalid(id: Option<RequestId>, message: &str) -> Incoming {
    Incoming::Invalid(Response::error(id, RpcError::invalid_request(message)))
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyJson(MessageShape))
    }
}

impl<'de> Deserialize<'de> for Incoming {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyJson(IncomingShape))
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyJson(MetaShape))
    }
}

/// What to make of a JSON value by its shape: an object, an array, a string, an integer,
/// or anything else (whose content does not matter).
trait Shape<'de>: Sized {
    type Out;
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Out, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(self.other())
    }
    fn array<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Out, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.other())
    }
    fn string(self, _: &str) -> Self::Out {
        self.other()
    }
    fn integer(self, _: Option<i64>) -> Self::Out {
        self.other()
    }
    fn other(self) -> Self::Out;
    fn null(self) -> Self::Out {
        self.other()
    }
}

/// A visitor that accepts any JSON value and hands it to a [`Shape`].
struct AnyJson<S>(S);

macro_rules! scalars_are_other {
    ($($method:ident($t:ty)),*) => {$(
        fn $method<E: de::Error>(self, _: $t) -> Result<Self::Value, E> {
            Ok(self.0.other())
        }
    )*};
}

impl<'de, S: Shape<'de>> Visitor<'de> for AnyJson<S> {
    type Value = S::Out;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.object(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.array(seq)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.0.null())
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.0.null())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(self.0.string(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(self.0.integer(Some(v)))
    }

    /// An integer past `i64`'s range, which is no valid id.
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(self.0.integer(i64::try_from(v).ok()))
    }

    scalars_are_other!(visit_bool(bool), visit_f64(f64));
}

/// `"jsonrpc": "2.0"`, read without building a value.
struct Version2;

impl<'de> Shape<'de> for Version2 {
    type Out = bool;

    fn string(self, s: &str) -> bool {
        s == "2.0"
    }

    fn other(self) -> bool {
        false
    }
}

/// What the `id` member holds: a valid request id, or something else.
struct IdShape;

impl<'de> Shape<'de> for IdShape {
    type Out = Option<RequestId>;

    fn string(self, s: &str) -> Option<RequestId> {
        Some(RequestId::Str(s.to_owned()))
    }

    fn integer(self, i: Option<i64>) -> Option<RequestId> {
        i.map(RequestId::Int)
    }

    fn other(self) -> Option<RequestId> {
        None
    }
}

/// The `method` member: its entry in the method table, or `None` when it is not a string.
struct MethodShape;

impl<'de> Shape<'de> for MethodShape {
    type Out = Option<Method>;

    fn string(self, s: &str) -> Option<Method> {
        Some(Method::parse(s))
    }

    fn other(self) -> Option<Method> {
        None
    }
}

/// One member's value read through a [`Shape`].
struct Read<S>(S);

impl<'de, S: Shape<'de>> de::DeserializeSeed<'de> for Read<S> {
    type Value = S::Out;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Out, D::Error> {
        deserializer.deserialize_any(AnyJson(self.0))
    }
}

struct MessageShape;

impl<'de> Shape<'de> for MessageShape {
    type Out = Message;

    fn object<A: MapAccess<'de>>(self, map: A) -> Result<Message, A::Error> {
        IncomingShape.object(map).map(Message::One)
    }

    fn array<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Message, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element::<Incoming>()? {
            items.push(item);
        }
        Ok(Message::Batch(items))
    }

    fn other(self) -> Message {
        Message::One(IncomingShape.other())
    }
}

/// A map key, borrowed from the text when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// `params` as sent: an object (without its `_meta`), absent or null, or something else.
// Short-lived: it only carries an object's parts into its message.
#[allow(clippy::large_enum_variant)]
enum Params {
    Object(Map<String, Value>, Meta),
    Null,
    NotObject,
}

struct ParamsShape;

impl<'de> Shape<'de> for ParamsShape {
    type Out = Params;

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
        let (mut params, mut meta) = (Map::new(), Meta::default());
        while let Some(Key(k)) = map.next_key::<Key>()? {
            if k == "_meta" {
                meta = map.next_value()?;
            } else {
                params.insert(k.into_owned(), map.next_value()?);
            }
        }
        Ok(Params::Object(params, meta))
    }

    fn other(self) -> Params {
        Params::NotObject
    }

    fn null(self) -> Params {
        Params::Null
    }
}

impl<'de> Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AnyJson(ParamsShape))
    }
}

struct MetaShape;

impl<'de> Shape<'de> for MetaShape {
    type Out = Meta;

    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Meta, A::Error> {
        let mut meta = Meta::default();
        while let Some(Key(k)) = map.next_key::<Key>()? {
            let slot = match k.as_ref() {
                key::PROTOCOL_VERSION => &mut meta.protocol_version,
                key::CLIENT_CAPABILITIES => &mut meta.client_capabilities,
                key::CLIENT_INFO => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
                key::LOG_LEVEL => &mut meta.log_level,
                "progressToken" => &mut meta.progress_token,
                _ => {
                    meta.other.insert(k.into_owned(), map.next_value()?);
                    continue;
                }
            };
            *slot = Some(map.next_value()?);
        }
        Ok(meta)
    }

    fn other(self) -> Meta {
        Meta::default()
    }
}

/// The top-level keys of a JSON-RPC message; the rest are ignored.
#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    #[serde(other)]
    Unknown,
}

struct IncomingShape;

impl<'de> Shape<'de> for IncomingShape {
    type Out = Incoming;

    /// The framing rules of one message (JSON-RPC 2.0 as MCP uses it).
    fn object<A: MapAccess<'de>>(self, mut map: A) -> Result<Incoming, A::Error> {
        let (mut version_ok, mut id, mut method, mut params) = (false, None, None, None);
        let (mut result, mut error) = (None::<Value>, None::<Value>);
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Jsonrpc => version_ok = map.next_value_seed(Read(Version2))?,
                Field::Id => id = Some(map.next_value_seed(Read(IdShape))?),
                Field::Method => method = Some(map.next_value_seed(Read(MethodShape))?),
                Field::Params => params = Some(map.next_value::<Params>()?),
                Field::Result => result = Some(map.next_value()?),
                Field::Error => error = Some(map.next_value()?),
                Field::Unknown => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let has_id = id.is_some();
        let id = id.flatten();
        if !version_ok {
            return Ok(invalid(id, "Invalid Request"));
        }
        let Some(method) = method else {
            return Ok(match (result, error) {
                (_, Some(e)) => Incoming::Response {
                    id,
                    outcome: Err(
                        serde_json::from_value(e).unwrap_or_else(|_| RpcError::invalid_request("malformed error"))
                    ),
                },
                (Some(result), None) => Incoming::Response { id, outcome: Ok(result) },
                (None, None) => invalid(id, "Invalid Request"),
            });
        };
        let Some(method) = method else {
            return Ok(invalid(id, "Invalid Request: method must be a string"));
        };
        if has_id && id.is_none() {
            return Ok(invalid(None, "Invalid Request: bad id"));
        }
        let (mut params, meta) = match params.unwrap_or(Params::Null) {
            Params::Object(params, meta) => (params, meta),
            Params::Null => (Map::new(), Meta::default()),
            Params::NotObject => {
                return Ok(match id {
                    Some(id) => Incoming::Invalid(Response::error(
                        Some(id),
                        RpcError::invalid_params("params must be an object"),
                    )),
                    None => Incoming::Dropped,
                });
            }
        };
        Ok(match id {
            Some(id) => match canonical_uri_param(&method, &mut params) {
                Ok(()) => Incoming::Request(Request { id, method, params, meta }),
                Err(error) => Incoming::Invalid(Response::error(Some(id), error)),
            },
            None => Incoming::Notification(Notification { method, params, meta }),
        })
    }

    fn other(self) -> Incoming {
        invalid(None, "Invalid Request")
    }
}

/// Rewrites the `uri` parameter of a method that names a resource by it into its canonical
/// spelling ([`canonicalize`]), so that scope rules, lookups and subscriptions, which all
/// compare strings, see one spelling of each resource. A URI that is no URI is refused.
fn canonical_uri_param(method: &Method, params: &mut Map<String, Value>) -> Result<(), RpcError> {
    let names_resource =
        matches!(method, Method::ResourcesRead | Method::ResourcesSubscribe | Method::ResourcesUnsubscribe);
    match params.get_mut("uri") {
        Some(Value::String(uri)) if names_resource && !uri.is_empty() => {
            *uri = canonicalize(uri).map_err(|e| RpcError::invalid_params(format!("Invalid parameter uri: {e}")))?;
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Decodes `v` from its text and from the value; both must agree.
    fn decode(v: Value) -> Message {
        let from_text: Message = serde_json::from_str(&v.to_string()).expect("valid JSON decodes");
        assert_eq!(from_text, Message::from(v.clone()), "{v}");
        from_text
    }

    fn one(v: Value) -> Incoming {
        match decode(v) {
            Message::One(m) => m,
            batch => panic!("expected one message, got {batch:?}"),
        }
    }

    fn invalid(v: Value) -> Response {
        match one(v) {
            Incoming::Invalid(r) => r,
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn framing_errors() {
        let r = invalid(json!({"id": 1, "method": "ping"}));
        assert_eq!((r.id.clone(), r.error_code()), (Some(RequestId::Int(1)), Some(-32600)));
        let r = invalid(json!({"jsonrpc": "1.0", "id": 2, "method": "ping"}));
        assert_eq!(r.error_code(), Some(-32600));
        let r = invalid(json!({"jsonrpc": 2, "id": 2, "method": "ping"}));
        assert_eq!(r.error_code(), Some(-32600));
        let r = invalid(json!({"jsonrpc": "2.0", "id": 3, "method": 5}));
        assert_eq!(r.result.unwrap_err().message, "Invalid Request: method must be a string");
        for bad_id in [json!(null), json!(true), json!(1.5), json!({"a": 1})] {
            let r = invalid(json!({"jsonrpc": "2.0", "id": bad_id, "method": "ping"}));
            assert_eq!(r.id, None);
            assert_eq!(r.result.unwrap_err().message, "Invalid Request: bad id");
        }
        for not_an_object in [json!("just a string"), json!(5), json!(null), json!(true), json!([[1]])] {
            let r = match decode(not_an_object) {
                Message::One(Incoming::Invalid(r)) => r,
                Message::Batch(items) => match &items[..] {
                    [Incoming::Invalid(r)] => r.clone(),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            };
            assert_eq!((r.id.clone(), r.error_code()), (None, Some(-32600)));
        }
        let r = invalid(json!({"jsonrpc": "2.0", "id": 4}));
        assert_eq!(r.error_code(), Some(-32600));
    }

    #[test]
    fn a_resource_uri_is_decoded_canonical() {
        for method in ["resources/read", "resources/subscribe", "resources/unsubscribe"] {
            let sent =
                json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"uri": "FILE://localhost/a//./%62"}});
            match one(sent) {
                Incoming::Request(r) => assert_eq!(r.params["uri"], "file:///a/b", "{method}"),
                other => panic!("{other:?}"),
            }
        }
        let other = one(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"uri": "FILE:///a"}}));
        assert!(matches!(other, Incoming::Request(r) if r.params["uri"] == "FILE:///a"), "other methods keep theirs");
        let r = invalid(json!({"jsonrpc": "2.0", "id": 7, "method": "resources/read", "params": {"uri": "no uri"}}));
        assert_eq!(r.id, Some(RequestId::Int(7)));
        let error = r.result.unwrap_err();
        assert_eq!(
            (error.code, error.message.as_str()),
            (-32602, "Invalid parameter uri: not a valid URI: relative URL without a base")
        );
    }

    #[test]
    fn params_rules() {
        let r = invalid(json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1, 2]}));
        assert_eq!(r.result.unwrap_err(), RpcError::invalid_params("params must be an object"));
        assert_eq!(one(json!({"jsonrpc": "2.0", "method": "x", "params": 3})), Incoming::Dropped);
        match one(json!({"jsonrpc": "2.0", "id": 1, "method": "x", "params": null})) {
            Incoming::Request(r) => assert_eq!((r.params, r.meta), (Map::new(), Meta::default())),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_keys_are_ignored_and_the_last_of_a_repeated_key_wins() {
        let text = r#"{"jsonrpc":"2.0","id":1,"method":"a","extra":{"x":[1]},"method":"b"}"#;
        match serde_json::from_str::<Message>(text).unwrap() {
            Message::One(Incoming::Request(r)) => assert_eq!(r.method, Method::Other("b".into())),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn meta_is_read_into_its_fields() {
        let request = json!({"jsonrpc": "2.0", "id": "r", "method": "tools/call", "params": {
            "name": "echo",
            "_meta": {
                key::PROTOCOL_VERSION: "2026-07-28",
                key::CLIENT_CAPABILITIES: {"sampling": {}},
                key::CLIENT_INFO: {"name": "c", "version": "1"},
                key::LOG_LEVEL: "debug",
                "progressToken": 7,
                "traceparent": "00-abc",
                "vendor/x": [1]
            }
        }});
        let Incoming::Request(Request { id, method, params, meta }) = one(request) else { panic!() };
        assert_eq!(method, Method::ToolsCall);
        assert_eq!(id, RequestId::Str("r".into()));
        assert_eq!(Value::Object(params), json!({"name": "echo"}));
        assert_eq!(meta.protocol_version, Some(json!("2026-07-28")));
        assert_eq!(meta.client_capabilities, Some(json!({"sampling": {}})));
        assert_eq!((meta.log_level, meta.progress_token), (Some(json!("debug")), Some(json!(7))));
        assert_eq!(Value::Object(meta.other), json!({"traceparent": "00-abc", "vendor/x": [1]}));
        // A `_meta` that is not an object carries nothing.
        let Incoming::Notification(Notification { meta, .. }) =
            one(json!({"jsonrpc": "2.0", "method": "n", "params": {"_meta": [1, {"a": 2}]}}))
        else {
            panic!()
        };
        assert_eq!(meta, Meta::default());
        let escaped = r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol\/protocolVersion":"v"}}}"#;
        let Message::One(Incoming::Request(Request { meta, .. })) = serde_json::from_str(escaped).unwrap() else {
            panic!()
        };
        assert_eq!(meta.protocol_version, Some(json!("v")));
    }

    #[test]
    fn batches_and_responses() {
        let batch = decode(json!([
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 7, "result": {}},
            {"jsonrpc": "2.0", "id": 8, "error": {"code": -1, "message": "no"}},
            {"jsonrpc": "2.0", "id": 9, "error": "malformed"},
            3
        ]));
        let Message::Batch(items) = &batch else { panic!("{batch:?}") };
        assert!(matches!(items[0], Incoming::Request(_)));
        assert!(matches!(items[1], Incoming::Notification(_)));
        assert_eq!(items[2], Incoming::Response { id: Some(RequestId::Int(7)), outcome: Ok(json!({})) });
        assert_eq!(items[3], Incoming::Response { id: Some(RequestId::Int(8)), outcome: Err(RpcError::new(-1, "no")) });
        assert!(matches!(&items[4], Incoming::Response { outcome: Err(e), .. } if e.message == "malformed error"));
        assert!(matches!(items[5], Incoming::Invalid(_)));
        assert_eq!(batch.requests().map(|r| r.method.clone()).collect::<Vec<_>>(), [Method::Ping]);
        assert!(!batch.runs_inline());
        assert_eq!(decode(json!([])), Message::Batch(vec![]));
    }

    #[test]
    fn what_runs_inline() {
        let inline = |v: Value| decode(v).runs_inline();
        assert!(inline(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"})));
        assert!(inline(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})));
        assert!(!inline(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"})));
    }
}
