//! Sealed `requestState`. The state of a multi round-trip request travels through the
//! client, so it is attacker-controlled: duet encrypts and authenticates it
//! (XChaCha20-Poly1305) and binds it to the principal, the method, the tool / prompt name or
//! resource URI, a digest of the arguments, and an expiry. Any replica holding the key can
//! open it; the current key seals, the current and previous keys open. Each state has a
//! random nonce of its own, which names it: the engine spends a state that comes back with
//! answers once (`protocol/methods/input.rs`), so a replay cannot run its request again.

use crate::state_key::StateKeys;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use duet_wire::method::{Method, Primitive};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a sealed state stays valid unless configured otherwise.
pub(crate) const DEFAULT_STATE_TTL: Duration = Duration::from_secs(300);

/// What one sealed state is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Binding {
    pub principal: String,
    pub method: Method,
    /// The tool or prompt name, or the resource URI.
    pub target: String,
    /// SHA-256 of the canonical JSON of the arguments.
    pub arguments: [u8; 32],
}

impl Binding {
    pub(crate) fn new(principal: &str, method: &Method, target: &str, arguments: &Value) -> Self {
        Binding {
            principal: principal.to_string(),
            method: method.clone(),
            target: target.to_string(),
            arguments: digest(arguments),
        }
    }

    /// What the target is called in errors: the parameter that names it.
    fn target_label(&self) -> &'static str {
        match self.method.traits().target {
            Some(Primitive::Resource) => "URI",
            _ => "name",
        }
    }
}

/// SHA-256 of `value` serialized with object keys sorted, so key order does not matter.
pub(crate) fn digest(value: &Value) -> [u8; 32] {
    fn canonical(value: &Value, out: &mut Vec<u8>) {
        match value {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push(b'{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(Value::from(k.as_str()).to_string().as_bytes());
                    out.push(b':');
                    canonical(&m[k], out);
                }
                out.push(b'}');
            }
            Value::Array(a) => {
                out.push(b'[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    canonical(v, out);
                }
                out.push(b']');
            }
            other => out.extend(other.to_string().as_bytes()),
        }
    }
    let mut bytes = Vec::new();
    canonical(value, &mut bytes);
    Sha256::digest(&bytes).into()
}

/// Why a `requestState` was refused. Each message says which check failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StateError {
    #[error("requestState is not a state this server issued (malformed)")]
    Malformed,
    #[error("requestState failed its integrity check: it was altered, or sealed with a key this server does not hold")]
    Integrity,
    #[error("requestState has expired; send the request again without it")]
    Expired,
    #[error("requestState was issued to another principal")]
    OtherPrincipal,
    #[error("requestState was issued for another request (method or {0})")]
    OtherRequest(&'static str),
    #[error("requestState was issued for different arguments")]
    OtherArguments,
}

#[derive(Serialize, Deserialize)]
struct Payload {
    /// principal id, method, target, argument digest (hex)
    p: String,
    m: String,
    t: String,
    d: String,
    /// expiry, seconds since the epoch
    e: u64,
    /// the keys of the input requests this state answers
    k: Vec<String>,
    /// the handler's own state (`null` too: present is `Some`)
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    s: Option<Value>,
}

/// A field that is present is `Some`, even when it is `null`.
fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// What an opened state carries back to the handler, and what tells this state apart.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Opened {
    /// The keys the previous round asked for.
    pub asked: Vec<String>,
    pub state: Option<Value>,
    /// This state's own name: its nonce, in hex. Every copy of one sealed state has it,
    /// and no other state does.
    pub id: String,
    /// How long from now the state still opens (at least a second).
    pub remaining: Duration,
}

/// Seals and opens request state with a server's keys.
#[derive(Debug, Clone)]
pub(crate) struct Sealer {
    keys: StateKeys,
    ttl: Duration,
}

const NONCE: usize = 24;

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl Sealer {
    pub(crate) fn new(keys: StateKeys, ttl: Duration) -> Self {
        Sealer { keys, ttl }
    }

    pub(crate) fn seal(&self, binding: &Binding, asked: Vec<String>, state: Option<Value>) -> String {
        let payload = Payload {
            p: binding.principal.clone(),
            m: binding.method.as_str().to_string(),
            t: binding.target.clone(),
            d: hex::encode(binding.arguments),
            e: now().saturating_add(self.ttl.as_secs()),
            k: asked,
            s: state,
        };
        let plaintext = serde_json::to_vec(&payload).unwrap_or_default();
        let nonce: [u8; NONCE] = rand::random();
        let cipher = XChaCha20Poly1305::new(self.keys.current.as_bytes().into());
        // Encryption with a valid key and nonce length cannot fail.
        let sealed = cipher.encrypt(XNonce::from_slice(&nonce), plaintext.as_slice()).unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend(sealed);
        URL_SAFE_NO_PAD.encode(out)
    }

    pub(crate) fn open(&self, token: &str, binding: &Binding) -> Result<Opened, StateError> {
        let raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| StateError::Malformed)?;
        if raw.len() <= NONCE {
            return Err(StateError::Malformed);
        }
        let (nonce, sealed) = raw.split_at(NONCE);
        let keys = std::iter::once(&self.keys.current).chain(self.keys.previous.as_ref());
        let plaintext = keys
            .filter_map(|k| XChaCha20Poly1305::new(k.as_bytes().into()).decrypt(XNonce::from_slice(nonce), sealed).ok())
            .next()
            .ok_or(StateError::Integrity)?;
        let payload: Payload = serde_json::from_slice(&plaintext).map_err(|_| StateError::Malformed)?;
        if payload.e < now() {
            return Err(StateError::Expired);
        }
        if payload.p != binding.principal {
            return Err(StateError::OtherPrincipal);
        }
        if payload.m != binding.method.as_str() {
            return Err(StateError::OtherRequest("method"));
        }
        if payload.t != binding.target {
            return Err(StateError::OtherRequest(binding.target_label()));
        }
        if payload.d != hex::encode(binding.arguments) {
            return Err(StateError::OtherArguments);
        }
        // Valid through second `e`, so up to a second more than `e - now`.
        let remaining = Duration::from_secs(payload.e.saturating_sub(now()).saturating_add(1));
        Ok(Opened { asked: payload.k, state: payload.s, id: hex::encode(nonce), remaining })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state_key::StateKey;
    use serde_json::json;

    fn binding(principal: &str, args: Value) -> Binding {
        Binding::new(principal, &Method::ToolsCall, "refund_order", &args)
    }

    fn sealer() -> Sealer {
        Sealer::new(StateKeys::new(StateKey::from_bytes([7; 32])), DEFAULT_STATE_TTL)
    }

    /// What an opened state hands the handler: the keys asked and its state.
    fn contents(opened: Result<Opened, StateError>) -> Result<(Vec<String>, Option<Value>), StateError> {
        opened.map(|o| (o.asked, o.state))
    }

    #[test]
    fn round_trip() {
        let b = binding("alice", json!({"order": "A-1", "cents": 25000}));
        let token = sealer().seal(&b, vec!["confirm".into()], Some(json!({"step": 1})));
        let reordered = binding("alice", json!({"cents": 25000, "order": "A-1"}));
        let opened = sealer().open(&token, &reordered);
        assert_eq!(contents(opened), Ok((vec!["confirm".into()], Some(json!({"step": 1})))));
        assert!(!token.contains("alice") && !token.contains("step"), "the state is confidential");
    }

    #[test]
    fn each_state_has_a_name_of_its_own_and_says_how_long_it_lives() {
        let b = binding("alice", json!({}));
        let (one, other) = (sealer().seal(&b, vec![], None), sealer().seal(&b, vec![], None));
        let (first, again) = (sealer().open(&one, &b).unwrap(), sealer().open(&one, &b).unwrap());
        assert_eq!(first.id, again.id, "one state, one name");
        assert_ne!(first.id, sealer().open(&other, &b).unwrap().id, "the same request sealed again is another state");
        let most = DEFAULT_STATE_TTL + Duration::from_secs(1);
        assert!(first.remaining > DEFAULT_STATE_TTL - Duration::from_secs(2) && first.remaining <= most);
    }

    #[test]
    fn each_check_says_what_failed() {
        let s = sealer();
        let b = binding("alice", json!({"cents": 25000}));
        let token = s.seal(&b, vec![], None);
        let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert_eq!(s.open(&URL_SAFE_NO_PAD.encode(&bytes), &b), Err(StateError::Integrity));
        assert_eq!(s.open("not base64!", &b), Err(StateError::Malformed));
        assert_eq!(s.open(&token, &binding("mallory", json!({"cents": 25000}))), Err(StateError::OtherPrincipal));
        assert_eq!(s.open(&token, &binding("alice", json!({"cents": 99999}))), Err(StateError::OtherArguments));
        let other_tool = Binding::new("alice", &Method::ToolsCall, "other", &json!({"cents": 25000}));
        assert_eq!(s.open(&token, &other_tool), Err(StateError::OtherRequest("name")));
        let other_method = Binding::new("alice", &Method::PromptsGet, "refund_order", &json!({"cents": 25000}));
        assert_eq!(s.open(&token, &other_method), Err(StateError::OtherRequest("method")));
        let wrong_key = Sealer::new(StateKeys::new(StateKey::from_bytes([8; 32])), DEFAULT_STATE_TTL);
        assert_eq!(wrong_key.open(&token, &b), Err(StateError::Integrity));
        let expired = Sealer::new(StateKeys::new(StateKey::from_bytes([7; 32])), Duration::ZERO);
        let old = expired.seal(&b, vec![], None);
        std::thread::sleep(Duration::from_millis(1100));
        assert_eq!(s.open(&old, &b), Err(StateError::Expired));
    }

    proptest::proptest! {
        /// Whatever a handler keeps, it gets back unchanged, for the request it was sealed for.
        #[test]
        fn sealed_state_opens_unchanged(
            principal in "[a-z]{1,12}",
            asked in proptest::collection::vec("[a-z_]{1,10}", 0..4),
            text in ".{0,40}",
            n in proptest::num::i64::ANY,
        ) {
            let b = binding(&principal, json!({"n": n}));
            let state = json!({"text": text, "n": n});
            let token = sealer().seal(&b, asked.clone(), Some(state.clone()));
            proptest::prop_assert_eq!(contents(sealer().open(&token, &b)), Ok((asked, Some(state))));
        }

        /// Changing any one byte of a token makes it unopenable, and a token opens for no
        /// other principal or arguments.
        #[test]
        fn tampered_or_misused_state_never_opens(at in proptest::num::usize::ANY, bit in 0u8..8, n in 0i64..1000) {
            let b = binding("alice", json!({"n": n}));
            let token = sealer().seal(&b, vec!["confirm".into()], Some(json!({"n": n})));
            let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
            let at = at % bytes.len();
            bytes[at] ^= 1 << bit;
            proptest::prop_assert!(sealer().open(&URL_SAFE_NO_PAD.encode(&bytes), &b).is_err());
            let (mallory, other_arguments) = (binding("mallory", json!({"n": n})), binding("alice", json!({"n": n + 1})));
            proptest::prop_assert!(sealer().open(&token, &mallory).is_err(), "another principal");
            proptest::prop_assert!(sealer().open(&token, &other_arguments).is_err(), "other arguments");
        }

        /// Arbitrary text is refused, never opened and never a panic.
        #[test]
        fn arbitrary_tokens_are_refused(token in ".{0,200}") {
            let alice = binding("alice", json!({}));
            proptest::prop_assert!(sealer().open(&token, &alice).is_err(), "opened {:?}", token);
        }
    }

    /// Found by fuzzing (the seal target): a TTL past the end of time overflowed
    /// the expiry and panicked; it now means a state that does not expire.
    #[test]
    fn a_ttl_past_the_end_of_time_never_expires() {
        let b = binding("alice", json!({}));
        let forever = Sealer::new(StateKeys::new(StateKey::from_bytes([7; 32])), Duration::MAX);
        let token = forever.seal(&b, vec!["confirm".into()], None);
        assert_eq!(contents(forever.open(&token, &b)), Ok((vec!["confirm".into()], None)));
    }

    /// Found by fuzzing (the seal target): a handler's state of `null` came back
    /// as no state at all, so on 2026-07-28 a handler that kept `null` never saw its own
    /// state (the handshake era hands it back as it was).
    #[test]
    fn a_null_state_comes_back() {
        let b = binding("alice", json!({}));
        let token = sealer().seal(&b, vec![], Some(Value::Null));
        assert_eq!(contents(sealer().open(&token, &b)), Ok((vec![], Some(Value::Null))));
        let token = sealer().seal(&b, vec![], None);
        assert_eq!(contents(sealer().open(&token, &b)), Ok((vec![], None)));
    }

    #[test]
    fn rotation() {
        let (old, new) = (StateKey::from_bytes([1; 32]), StateKey::from_bytes([2; 32]));
        let b = binding("alice", json!({}));
        let before = Sealer::new(StateKeys::new(old.clone()), DEFAULT_STATE_TTL).seal(&b, vec![], None);
        let rotated = Sealer::new(StateKeys::new(new.clone()).with_previous(old), DEFAULT_STATE_TTL);
        assert!(rotated.open(&before, &b).is_ok(), "the previous key still opens");
        let after = rotated.seal(&b, vec![], None);
        assert_eq!(
            Sealer::new(StateKeys::new(StateKey::from_bytes([1; 32])), DEFAULT_STATE_TTL).open(&after, &b),
            Err(StateError::Integrity)
        );
        assert!(Sealer::new(StateKeys::new(new), DEFAULT_STATE_TTL).open(&after, &b).is_ok());
    }
}
