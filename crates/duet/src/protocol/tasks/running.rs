//! The tasks this replica runs: by id, to bound how many run at once and to tell whether a
//! task is still at work here; and counted by owner, because a principal's running tasks
//! hold its slots in flight (`--max-in-flight-per-principal`) as its open requests do.

use std::collections::HashMap;

#[derive(Default)]
pub(super) struct Running {
    /// Task id to its owner's principal id.
    owners: HashMap<String, String>,
    /// Tasks running per owner; an owner with none has no entry.
    per_owner: HashMap<String, usize>,
}

impl Running {
    pub(super) fn len(&self) -> usize {
        self.owners.len()
    }

    pub(super) fn contains(&self, id: &str) -> bool {
        self.owners.contains_key(id)
    }

    pub(super) fn insert(&mut self, id: String, owner: &str) {
        if self.owners.insert(id, owner.to_string()).is_none() {
            *self.per_owner.entry(owner.to_string()).or_insert(0) += 1;
        }
    }

    pub(super) fn remove(&mut self, id: &str) {
        let Some(owner) = self.owners.remove(id) else { return };
        if let Some(n) = self.per_owner.get_mut(&owner) {
            *n -= 1;
            if *n == 0 {
                self.per_owner.remove(&owner);
            }
        }
    }

    /// How many tasks of `owner` run here.
    pub(super) fn of(&self, owner: &str) -> usize {
        self.per_owner.get(owner).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_by_owner_until_removed() {
        let mut running = Running::default();
        running.insert("a".into(), "alice");
        running.insert("b".into(), "alice");
        running.insert("c".into(), "bob");
        running.insert("c".into(), "bob");
        assert_eq!((running.len(), running.of("alice"), running.of("bob")), (3, 2, 1), "an id counts once");
        running.remove("a");
        running.remove("a");
        assert_eq!(running.of("alice"), 1, "removed once");
        assert!(!running.contains("a") && running.contains("b"));
        running.remove("b");
        assert_eq!(running.of("alice"), 0);
        assert!(!running.per_owner.contains_key("alice"), "an owner with none is forgotten");
    }
}
