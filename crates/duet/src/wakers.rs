//! Tasks of this process waiting for something named by a key to change (a task's record, a
//! stream's event log): one `Notify` per key, held weakly here, so a key nobody waits on any
//! more costs nothing once the next new key sweeps it out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::Notify;

#[derive(Default)]
pub(crate) struct Wakers {
    by_key: Mutex<HashMap<String, Weak<Notify>>>,
}

impl Wakers {
    /// What wakes whoever waits here on `key`; keep it while waiting.
    pub(crate) fn watch(&self, key: &str) -> Arc<Notify> {
        let mut by_key = self.by_key.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(notify) = by_key.get(key).and_then(Weak::upgrade) {
            return notify;
        }
        by_key.retain(|_, w| w.strong_count() > 0);
        let notify = Arc::new(Notify::new());
        by_key.insert(key.to_string(), Arc::downgrade(&notify));
        notify
    }

    /// Wakes whoever waits here on `key` now.
    pub(crate) fn wake(&self, key: &str) {
        let notify = self.by_key.lock().unwrap_or_else(|p| p.into_inner()).get(key).and_then(Weak::upgrade);
        if let Some(notify) = notify {
            notify.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_notify_per_key_while_someone_waits() {
        let wakers = Wakers::default();
        let a = wakers.watch("a");
        assert!(Arc::ptr_eq(&a, &wakers.watch("a")));
        drop(a);
        wakers.watch("b");
        assert!(wakers.by_key.lock().unwrap().get("a").is_none(), "swept once nobody waits");
    }
}
