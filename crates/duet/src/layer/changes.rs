//! Change events a layer raises when what it serves changes: a list, or one resource.
//! They may be raised from any thread; the engine fans them out to sessions and listen
//! streams without blocking the caller.

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, Weak};

/// One change in what a layer serves.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Change {
    /// The list of tools changed.
    ToolsChanged,
    /// The list of prompts changed.
    PromptsChanged,
    /// The list of resources (or templates) changed.
    ResourcesChanged,
    /// The contents of one resource changed.
    ResourceUpdated(String),
}

/// What a [`Feed`] tells its events to.
pub type Receiver<T> = dyn Fn(&T) + Send + Sync;

/// A change listener.
pub type Listener = Receiver<Change>;

/// The change events of one layer.
pub type ChangeFeed = Feed<Change>;

/// Events told to listeners, from any thread. Listeners are held weakly: a dropped server
/// stops listening without unregistering.
pub struct Feed<T> {
    listeners: Mutex<Vec<Weak<Receiver<T>>>>,
}

impl<T> Default for Feed<T> {
    fn default() -> Self {
        Feed { listeners: Mutex::new(Vec::new()) }
    }
}

impl<T> Feed<T> {
    /// A feed with no listeners.
    pub fn new() -> Self {
        Self::default()
    }

    /// Tells every live listener about `event`. Callable from any thread.
    pub fn notify(&self, event: T) {
        let live: Vec<Arc<Receiver<T>>> = {
            let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
            listeners.retain(|l| l.strong_count() > 0);
            listeners.iter().filter_map(Weak::upgrade).collect()
        };
        for listener in live {
            listener(&event);
        }
    }

    /// Registers a listener for as long as the caller keeps the `Arc` alive.
    pub fn subscribe(&self, listener: &Arc<Receiver<T>>) {
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
