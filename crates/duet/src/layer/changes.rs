//! Change events a layer raises when what it serves changes: a list, or one resource.
//! They may be raised from any thread; the engine fans them out to sessions and listen
//! streams without blocking the caller.

use std::sync::{Arc, Mutex, Weak};

/// One change in what a layer serves.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Change {
    ToolsChanged,
    PromptsChanged,
    ResourcesChanged,
    /// The contents of one resource changed.
    ResourceUpdated(String),
}

/// A change listener.
pub type Listener = dyn Fn(&Change) + Send + Sync;

/// The change events of one layer. Listeners are held weakly: a dropped server stops
/// listening without unregistering.
#[derive(Default)]
pub struct ChangeFeed {
    listeners: Mutex<Vec<Weak<Listener>>>,
}

impl ChangeFeed {
    pub fn new() -> Self {
        Self::default()
    }

    /// Tells every live listener about `change`. Callable from any thread.
    pub fn notify(&self, change: Change) {
        let live: Vec<Arc<Listener>> = {
            let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
            listeners.retain(|l| l.strong_count() > 0);
            listeners.iter().filter_map(Weak::upgrade).collect()
        };
        for listener in live {
            listener(&change);
        }
    }

    /// Registers a listener for as long as the caller keeps the `Arc` alive.
    pub fn subscribe(&self, listener: &Arc<Listener>) {
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        listeners.push(Arc::downgrade(listener));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_are_weak() {
        let feed = ChangeFeed::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let listener: Arc<Listener> = Arc::new(move |c: &Change| s.lock().unwrap().push(c.clone()));
        feed.subscribe(&listener);
        std::thread::scope(|scope| {
            scope.spawn(|| feed.notify(Change::ToolsChanged));
        });
        drop(listener);
        feed.notify(Change::PromptsChanged);
        assert_eq!(*seen.lock().unwrap(), vec![Change::ToolsChanged]);
    }
}
