//! Why replicas believe what they read from Redis: anyone who can write to the Redis server
//! could otherwise publish a routed message with an admin principal, or forge a session or
//! task record. Every value, bus message and event-log entry the Redis backplane writes
//! carries an HMAC-SHA-256 tag, keyed with a key derived from the state key (never the state
//! key itself) and bound to the kind of thing it is and the Redis key or channel it is stored
//! under, so a valid value copied elsewhere fails too. The tag is 64 hex digits in front of
//! the payload. A replica seals with the current state key and opens with the current or
//! the previous one, as sealed multi round-trip state rotates.

use crate::signals;
use crate::state_key::{StateKey, StateKeys};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The label the backplane's key is derived with, from a state key.
const LABEL: &[u8] = b"duet backplane v1";
/// Length of the hex tag in front of a sealed payload.
pub(super) const TAG_HEX_LEN: usize = 64;

/// What a sealed payload is, so that one kind of value never passes for another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A value of [`super::Keys`].
    Key,
    /// A message on the bus channel.
    Bus,
    /// An entry of an event log.
    EventLog,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Key => "key",
            Kind::Bus => "bus",
            Kind::EventLog => "event_log",
        }
    }
}

/// The keys that tag and check what replicas exchange through Redis.
pub(super) struct BackplaneMac {
    current: [u8; 32],
    previous: Option<[u8; 32]>,
}

impl BackplaneMac {
    pub(super) fn new(keys: &StateKeys) -> Self {
        BackplaneMac { current: derive(&keys.current), previous: keys.previous.as_ref().map(derive) }
    }

    /// The key prefix a deployment gets when it names none: `duet:` and 8 hex digits of a
    /// hash of the derived key, so deployments with different state keys sharing one Redis
    /// never mix. It says nothing useful about the key.
    pub(super) fn default_prefix(&self) -> String {
        let digest = Sha256::digest(self.current);
        format!("duet:{}:", hex::encode(&digest[..4]))
    }

    /// `payload` with its tag in front, for storing under `place`.
    pub(super) fn seal(&self, kind: Kind, place: &str, payload: &[u8]) -> Vec<u8> {
        let tag = mac(&self.current, kind, place, payload).finalize().into_bytes();
        let mut sealed = hex::encode(tag).into_bytes();
        sealed.extend_from_slice(payload);
        sealed
    }

    /// The payload of `sealed`, read from `place`, if its tag is right under either key.
    /// What fails is logged (never the value) and counted in
    /// [`signals::BACKPLANE_REJECTIONS`].
    pub(super) fn open<'a>(&self, kind: Kind, place: &str, sealed: &'a [u8]) -> Option<&'a [u8]> {
        let opened = sealed.split_at_checked(TAG_HEX_LEN).and_then(|(tag, payload)| {
            let tag = hex::decode(tag).ok()?;
            let verifies = |key: &[u8; 32]| mac(key, kind, place, payload).verify_slice(&tag).is_ok();
            (verifies(&self.current) || self.previous.as_ref().is_some_and(verifies)).then_some(payload)
        });
        if opened.is_none() {
            tracing::warn!(kind = kind.label(), place, "ignored what Redis holds: its MAC is missing or wrong");
            metrics::counter!(signals::BACKPLANE_REJECTIONS, "kind" => kind.label()).increment(1);
        }
        opened
    }
}

/// HMAC(state key, [`LABEL`]): the backplane's own key.
fn derive(state_key: &StateKey) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(state_key.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(LABEL);
    mac.finalize().into_bytes().into()
}

/// The MAC of `payload` as `kind` under `place`, the place's length first so that no
/// place and payload run into each other.
fn mac(key: &[u8; 32], kind: Kind, place: &str, payload: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(kind.label().as_bytes());
    mac.update(&[0]);
    mac.update(&(place.len() as u64).to_be_bytes());
    mac.update(place.as_bytes());
    mac.update(payload);
    mac
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(byte: u8) -> StateKeys {
        StateKeys::new(StateKey::from_bytes([byte; 32]))
    }

    #[test]
    fn a_sealed_value_opens_only_where_and_as_what_it_was_sealed() {
        let mac = BackplaneMac::new(&keys(1));
        let sealed = mac.seal(Kind::Key, "duet:session:a", b"{\"principal\":\"token:alice\"}");
        assert_eq!(mac.open(Kind::Key, "duet:session:a", &sealed), Some(&b"{\"principal\":\"token:alice\"}"[..]));
        assert_eq!(mac.open(Kind::Key, "duet:session:b", &sealed), None, "another key");
        assert_eq!(mac.open(Kind::Bus, "duet:session:a", &sealed), None, "another kind");
        let mut edited = sealed.clone();
        *edited.last_mut().unwrap() = b']';
        assert_eq!(mac.open(Kind::Key, "duet:session:a", &edited), None, "an edited payload");
        assert_eq!(mac.open(Kind::Key, "duet:session:a", b"{}"), None, "no tag at all");
        assert_eq!(BackplaneMac::new(&keys(2)).open(Kind::Key, "duet:session:a", &sealed), None, "another key");
    }

    #[test]
    fn the_previous_key_still_opens_and_the_prefix_follows_the_current_key() {
        let old = BackplaneMac::new(&keys(1));
        let sealed = old.seal(Kind::Bus, "duet:bus", b"event");
        let rotated = BackplaneMac::new(&keys(2).with_previous(StateKey::from_bytes([1; 32])));
        assert_eq!(rotated.open(Kind::Bus, "duet:bus", &sealed), Some(&b"event"[..]));
        let prefix = old.default_prefix();
        assert!(prefix.starts_with("duet:") && prefix.len() == "duet:12345678:".len(), "{prefix}");
        assert_ne!(prefix, rotated.default_prefix());
        assert_eq!(prefix, BackplaneMac::new(&keys(1)).default_prefix());
    }
}
