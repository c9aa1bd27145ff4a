//! The resource URIs one subscriber follows: a handshake-era session's `resources/subscribe`s,
//! a listen stream's `resourceSubscriptions`. They are bounded in number and in length (the
//! server's `max_subscriptions` and `max_subscription_uri_bytes`), so no client grows them
//! without end, and an update is matched by looking its URI and the URIs above it up in a
//! set, so it costs the same however many a subscriber holds.

use duet_wire::canonical_uri::canonicalize;
use duet_wire::jsonrpc::RpcError;
use serde_json::Value;
use std::collections::HashSet;

/// How many URIs a subscriber may hold, and how long each may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    pub count: usize,
    pub uri_bytes: usize,
}

impl Bounds {
    /// Refuses a URI longer than the bound; `what` names it in the error.
    fn check(&self, what: &str, uri: &str) -> Result<(), RpcError> {
        if uri.len() > self.uri_bytes {
            let why =
                format!("{what} is {} bytes long; a subscription's URI may be at most {}", uri.len(), self.uri_bytes);
            return Err(RpcError::invalid_params(why));
        }
        Ok(())
    }
}

/// A set of subscribed URIs. A subscription to a URI covers it and every resource below it
/// (`file:///p` and `file:///p/` both cover `file:///p/a.txt`, not `file:///pa.txt`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Subscribed(HashSet<String>);

impl Subscribed {
    /// Subscribes to `uri`: refused when it is too long, or when it is new and the set holds
    /// as many as it may.
    pub(crate) fn insert(&mut self, uri: &str, bounds: Bounds) -> Result<(), RpcError> {
        bounds.check("uri", uri)?;
        if self.0.contains(uri) {
            return Ok(());
        }
        if self.0.len() >= bounds.count {
            let why = format!(
                "this session holds {} resource subscriptions, the most it may; unsubscribe from one first",
                self.0.len()
            );
            return Err(RpcError::invalid_params(why));
        }
        self.0.insert(uri.to_string());
        Ok(())
    }

    pub(crate) fn remove(&mut self, uri: &str) {
        self.0.remove(uri);
    }

    /// The URIs a listen request's `resourceSubscriptions` lists (entries that are not
    /// strings are left out), within `bounds`, each made canonical as a request's `uri` is.
    pub(crate) fn listed(uris: &[Value], bounds: Bounds) -> Result<Subscribed, RpcError> {
        if uris.len() > bounds.count {
            let why = format!(
                "notifications.resourceSubscriptions lists {} URIs; a listen stream may follow at most {}",
                uris.len(),
                bounds.count
            );
            return Err(RpcError::invalid_params(why));
        }
        let mut set = HashSet::with_capacity(uris.len());
        for (at, uri) in uris.iter().enumerate() {
            if let Some(uri) = uri.as_str() {
                let what = format!("notifications.resourceSubscriptions[{at}]");
                bounds.check(&what, uri)?;
                let uri = canonicalize(uri).map_err(|e| RpcError::invalid_params(format!("{what}: {e}")))?;
                set.insert(uri);
            }
        }
        Ok(Subscribed(set))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The URIs, sorted.
    pub(crate) fn sorted(&self) -> Vec<String> {
        let mut uris: Vec<String> = self.0.iter().cloned().collect();
        uris.sort_unstable();
        uris
    }

    /// Whether a subscription covers an update of `uri`: `uri` itself, or a URI above it,
    /// which is `uri` cut just before one of its slashes or just after it.
    pub(crate) fn covers(&self, uri: &str) -> bool {
        if self.0.is_empty() {
            return false;
        }
        self.0.contains(uri)
            || uri.match_indices('/').any(|(at, _)| self.0.contains(&uri[..at]) || self.0.contains(&uri[..=at]))
    }
}

impl FromIterator<String> for Subscribed {
    fn from_iter<I: IntoIterator<Item = String>>(uris: I) -> Self {
        Subscribed(uris.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BOUNDS: Bounds = Bounds { count: 2, uri_bytes: 16 };

    fn of(uris: &[&str]) -> Subscribed {
        uris.iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn sub_resources() {
        assert!(of(&["file:///p"]).covers("file:///p/a.txt"));
        assert!(of(&["file:///p/"]).covers("file:///p/a.txt"));
        assert!(of(&["file:///p"]).covers("file:///p"));
        assert!(of(&["file:///p/a"]).covers("file:///p/a/b/c"));
        assert!(!of(&["file:///p"]).covers("file:///pa.txt"));
        assert!(!of(&["file:///p/a"]).covers("file:///p/"));
        assert!(!of(&[]).covers("file:///p"));
    }

    #[test]
    fn bounded_in_number_and_length() {
        let mut set = Subscribed::default();
        set.insert("test://a", BOUNDS).unwrap();
        set.insert("test://b", BOUNDS).unwrap();
        set.insert("test://a", BOUNDS).expect("one held already takes no room");
        let full = set.insert("test://c", BOUNDS).unwrap_err();
        assert_eq!(full.code, -32602);
        assert_eq!(
            full.message,
            "this session holds 2 resource subscriptions, the most it may; unsubscribe from one first"
        );
        set.remove("test://a");
        set.insert("test://c", BOUNDS).expect("room again");
        let long = Subscribed::default().insert("test://17-bytes-x", BOUNDS).unwrap_err();
        assert_eq!(long.message, "uri is 17 bytes long; a subscription's URI may be at most 16");
        assert_eq!(set.sorted(), ["test://b", "test://c"]);
    }

    #[test]
    fn a_listen_streams_list() {
        let listed =
            Subscribed::listed(&[json!("test://a"), json!(5), json!("test://a")], Bounds { count: 3, ..BOUNDS });
        assert_eq!(listed.unwrap().sorted(), ["test://a"]);
        let many = Subscribed::listed(&[json!("a"), json!("b"), json!("c")], BOUNDS).unwrap_err();
        assert_eq!(
            many.message,
            "notifications.resourceSubscriptions lists 3 URIs; a listen stream may follow at most 2"
        );
        let long = Subscribed::listed(&[json!("test://a"), json!("test://17-bytes-x")], BOUNDS).unwrap_err();
        assert_eq!(
            long.message,
            "notifications.resourceSubscriptions[1] is 17 bytes long; a subscription's URI may be at most 16"
        );
        let spelt =
            Subscribed::listed(&[json!("FILE://localhost/a//%62")], Bounds { uri_bytes: 64, ..BOUNDS }).unwrap();
        assert_eq!(spelt.sorted(), ["file:///a/b"], "kept canonical");
        let bad = Subscribed::listed(&[json!("test://a"), json!("no uri")], BOUNDS).unwrap_err();
        assert_eq!(bad.message, "notifications.resourceSubscriptions[1]: not a valid URI: relative URL without a base");
    }
}
