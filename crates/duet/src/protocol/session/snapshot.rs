//! What a handshake-era session shares with the other replicas that serve it, and how one
//! replica's change to it is laid over what the others changed meanwhile: two replicas may
//! each handle a request of the same session at once, and neither may undo the other's.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

/// What a handshake-era session agreed on and asked for since: enough for another replica
/// to carry the session on ([`Session::snapshot`](super::Session::snapshot),
/// [`Session::restore`](super::Session::restore)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionSnapshot {
    /// The protocol version `initialize` agreed on.
    pub version: String,
    /// What the client declared it can do.
    pub client_capabilities: Value,
    /// The log threshold (`logging/setLevel`, else the server's default).
    pub log_level: String,
    /// The resource URIs the session subscribed to, sorted.
    pub subscriptions: Vec<String>,
    /// Whether the client sent `notifications/initialized`.
    pub initialized: bool,
    /// How many times the client said its roots changed: a copy that has asked for them
    /// fewer times asks again (the roots themselves are not shared; each copy asks).
    #[serde(default)]
    pub roots_changes: u64,
}

impl SessionSnapshot {
    /// Takes on what changed from `before` to `after` (one replica's request), keeping
    /// whatever else changed here since `before`: subscriptions added and removed, the log
    /// level if it was set, `initialized` once it is, and the count of root changes. What
    /// `initialize` agreed never changes.
    pub fn apply(&mut self, before: &SessionSnapshot, after: &SessionSnapshot) {
        let (was, is): (BTreeSet<&String>, BTreeSet<&String>) =
            (before.subscriptions.iter().collect(), after.subscriptions.iter().collect());
        let mut subscriptions: BTreeSet<String> = self.subscriptions.drain(..).collect();
        subscriptions.retain(|uri| is.contains(uri) || !was.contains(uri));
        subscriptions.extend(is.difference(&was).map(|uri| uri.to_string()));
        self.subscriptions = subscriptions.into_iter().collect();
        if after.log_level != before.log_level {
            self.log_level.clone_from(&after.log_level);
        }
        self.initialized |= after.initialized;
        self.roots_changes += after.roots_changes.saturating_sub(before.roots_changes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snapshot(log_level: &str, subscriptions: &[&str], initialized: bool, roots_changes: u64) -> SessionSnapshot {
        SessionSnapshot {
            version: "2025-11-25".into(),
            client_capabilities: json!({}),
            log_level: log_level.into(),
            subscriptions: subscriptions.iter().map(|s| s.to_string()).collect(),
            initialized,
            roots_changes,
        }
    }

    #[test]
    fn a_change_keeps_what_another_replica_changed_meanwhile() {
        // Another replica initialized the session, subscribed to b and set the level.
        let mut shared = snapshot("debug", &["a", "b"], true, 1);
        // This one, from before all that, subscribed to c, unsubscribed a and saw a roots change.
        let (before, after) = (snapshot("info", &["a"], false, 0), snapshot("info", &["c"], false, 1));
        shared.apply(&before, &after);
        assert_eq!(shared, snapshot("debug", &["b", "c"], true, 2));
    }

    #[test]
    fn the_change_itself_is_taken_on() {
        let mut shared = snapshot("info", &["a"], false, 3);
        let before = shared.clone();
        let after = snapshot("error", &["a", "b"], true, 4);
        shared.apply(&before, &after);
        assert_eq!(shared, after);
    }

    #[test]
    fn nothing_changed_changes_nothing() {
        let mut shared = snapshot("debug", &["b"], true, 2);
        let stale = snapshot("info", &[], false, 0);
        shared.apply(&stale, &stale);
        assert_eq!(shared, snapshot("debug", &["b"], true, 2));
    }
}
