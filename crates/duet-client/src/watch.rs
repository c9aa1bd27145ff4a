//! Changes the caller watches, as one stream whichever the era ([`Client::watch`]): the
//! lists of tools, prompts and resources, and the resources it names. In 2026 the client
//! opens a `subscriptions/listen` request with the matching filter and waits for the
//! server's acknowledgement; the server's notifications on it (each carrying the listen's
//! id) become [`Change`]s, and the stream ends when the server ends the listen. In the
//! handshake era the list changes come unasked (over HTTP on the session's GET stream),
//! and each named resource is subscribed to (`resources/subscribe`); [`Changes::stop`]
//! unsubscribes. A watcher that does not keep up loses changes beyond a bounded number
//! waiting, never blocking the connection.

use crate::client::Client;
use crate::error::Error;
use duet_wire::jsonrpc::RequestId;
use duet_wire::key;
use duet_wire::message::Notification;
use duet_wire::method::Method;
use duet_wire::params::{ListenFilter, ReadResourceParams};
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot};

/// How many changes wait for a watcher to read them; more are dropped.
const CHANGES_CAPACITY: usize = 256;

/// What to watch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interest {
    /// The list of tools.
    pub tools: bool,
    /// The list of prompts.
    pub prompts: bool,
    /// The list of resources.
    pub resources: bool,
    /// These resources (and, where the server says so, the resources under them).
    pub resource_uris: Vec<String>,
}

/// One change the server announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The list of tools changed: list them again.
    Tools,
    /// The list of prompts changed.
    Prompts,
    /// The list of resources changed.
    Resources,
    /// The resource at `uri` changed: read it again.
    Resource {
        /// Its URI.
        uri: String,
    },
}

impl Interest {
    /// The change `notification` announces, if it is one this interest covers.
    fn change(&self, notification: &Notification) -> Option<Change> {
        match notification.method {
            Method::ToolsListChanged if self.tools => Some(Change::Tools),
            Method::PromptsListChanged if self.prompts => Some(Change::Prompts),
            Method::ResourcesListChanged if self.resources => Some(Change::Resources),
            Method::ResourcesUpdated => {
                let uri = notification.params.get("uri")?.as_str()?;
                let watched = self.resource_uris.iter().any(|watched| uri.starts_with(watched.as_str()));
                watched.then(|| Change::Resource { uri: uri.to_string() })
            }
            _ => None,
        }
    }

    /// The filter of a 2026 listen request.
    fn filter(&self) -> ListenFilter {
        let flag = |on: bool| on.then_some(true);
        let uris = (!self.resource_uris.is_empty())
            .then(|| self.resource_uris.iter().map(|uri| Value::String(uri.clone())).collect());
        ListenFilter {
            tools_list_changed: flag(self.tools),
            prompts_list_changed: flag(self.prompts),
            resources_list_changed: flag(self.resources),
            resource_subscriptions: uris,
            task_ids: None,
        }
    }
}

/// One watcher: what it wants, where its changes go, and in 2026 the listen it belongs to.
struct Watcher {
    id: u64,
    interest: Interest,
    /// The listen request's id: only notifications that carry it are the watcher's.
    listen: Option<Value>,
    changes: mpsc::Sender<Change>,
    acknowledged: Option<oneshot::Sender<()>>,
}

/// The watchers of one connection, offered every notification the server sends.
#[derive(Default)]
pub(crate) struct Watchers {
    list: Mutex<Vec<Watcher>>,
    next_id: AtomicU64,
}

impl std::fmt::Debug for Watchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watchers").field("watching", &self.lock().len()).finish()
    }
}

impl Watchers {
    fn lock(&self) -> MutexGuard<'_, Vec<Watcher>> {
        self.list.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Hands `notification` to every watcher it concerns: a change to those whose
    /// interest covers it, a listen's acknowledgement to the one waiting for it.
    pub(crate) fn offer(&self, notification: &Notification) {
        let mut watchers = self.lock();
        if watchers.is_empty() {
            return;
        }
        let listen = notification.meta.other.get(key::SUBSCRIPTION_ID);
        for watcher in watchers.iter_mut().filter(|watcher| watcher.listen.as_ref() == listen) {
            if notification.method == Method::SubscriptionsAcknowledged {
                if let Some(acknowledged) = watcher.acknowledged.take() {
                    let _ = acknowledged.send(());
                }
            } else if let Some(change) = watcher.interest.change(notification) {
                let _ = watcher.changes.try_send(change);
            }
        }
    }

    /// A new watcher; its id, its changes, and (for a listen) its acknowledgement.
    fn add(&self, interest: Interest, listen: Option<Value>) -> (u64, mpsc::Receiver<Change>, oneshot::Receiver<()>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (changes, receiver) = mpsc::channel(CHANGES_CAPACITY);
        let (acknowledged, ack) = oneshot::channel();
        self.lock().push(Watcher { id, interest, listen, changes, acknowledged: Some(acknowledged) });
        (id, receiver, ack)
    }

    /// Takes watcher `id` away: its stream ends once what it holds is read.
    fn remove(&self, id: u64) {
        self.lock().retain(|watcher| watcher.id != id);
    }
}

/// A stream of [`Change`]s ([`Client::watch`]). Dropped, it stops watching: a 2026 listen
/// is cancelled (its stream closed); handshake-era subscriptions stay until [`stop`]
/// (or the session's end).
///
/// [`stop`]: Changes::stop
pub struct Changes<'a> {
    client: &'a Client,
    id: u64,
    receiver: mpsc::Receiver<Change>,
    /// The 2026 listen request, read on while the caller waits for changes.
    listening: Option<BoxFuture<'a, Result<Value, Error>>>,
    subscribed: Vec<String>,
}

impl std::fmt::Debug for Changes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes").field("listening", &self.listening.is_some()).finish_non_exhaustive()
    }
}

impl Changes<'_> {
    /// The next change; `None` once the server ended the watch (a 2026 listen it closed).
    pub async fn next(&mut self) -> Option<Change> {
        if let Some(listening) = self.listening.as_mut() {
            tokio::select! {
                change = self.receiver.recv() => return change,
                _ = listening => {
                    self.listening = None;
                    self.client.watchers().remove(self.id);
                }
            }
        }
        self.receiver.recv().await
    }

    /// Stops watching: a 2026 listen is cancelled, and handshake-era subscriptions are
    /// ended (`resources/unsubscribe`), the first failure reported.
    pub async fn stop(mut self) -> Result<(), Error> {
        self.listening = None;
        self.client.watchers().remove(self.id);
        for uri in std::mem::take(&mut self.subscribed) {
            let params = ReadResourceParams { uri, ..ReadResourceParams::default() };
            let _: Map<String, Value> = self.client.request(Method::ResourcesUnsubscribe, params).await?;
        }
        Ok(())
    }
}

impl Drop for Changes<'_> {
    fn drop(&mut self) {
        self.client.watchers().remove(self.id);
    }
}

impl Client {
    /// Watches what `interest` names. Returns once the server is listening: in 2026 when
    /// it acknowledged the listen (within [`Options::probe_timeout`]), in the handshake
    /// era when each named resource is subscribed to.
    ///
    /// [`Options::probe_timeout`]: crate::Options::probe_timeout
    pub async fn watch(&self, interest: Interest) -> Result<Changes<'_>, Error> {
        if self.terms().version.is_modern() { self.listen(interest).await } else { self.subscribe(interest).await }
    }

    async fn listen(&self, interest: Interest) -> Result<Changes<'_>, Error> {
        let filter = interest.filter();
        let request_id = self.next_id();
        let listen_id = request_id.to_value();
        let (id, receiver, acknowledged) = self.watchers().add(interest, Some(listen_id));
        let mut changes = Changes { client: self, id, receiver, listening: None, subscribed: Vec::new() };
        let mut listening = self.listening(request_id, filter);
        let wait = async {
            tokio::select! {
                ack = acknowledged => ack.map_err(|_| Error::Closed),
                ended = &mut listening => Err(match ended {
                    Err(error) => error,
                    Ok(_) => Error::Protocol("the server ended subscriptions/listen before acknowledging it".into()),
                }),
            }
        };
        match tokio::time::timeout(self.options().probe_timeout, wait).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(error),
            Err(_) => {
                return Err(Error::Protocol("the server did not acknowledge subscriptions/listen in time".into()));
            }
        }
        changes.listening = Some(listening);
        Ok(changes)
    }

    /// The listen request `id`, sent with `filter`, as a future the stream reads on.
    fn listening(&self, id: RequestId, filter: ListenFilter) -> BoxFuture<'_, Result<Value, Error>> {
        let params = duet_wire::params::ListenParams { notifications: filter };
        Box::pin(async move { self.send_as(id, Method::SubscriptionsListen, params, false).await })
    }

    async fn subscribe(&self, interest: Interest) -> Result<Changes<'_>, Error> {
        let uris = interest.resource_uris.clone();
        let (id, receiver, _) = self.watchers().add(interest, None);
        let mut changes = Changes { client: self, id, receiver, listening: None, subscribed: Vec::new() };
        for uri in uris {
            let params = ReadResourceParams { uri: uri.clone(), ..ReadResourceParams::default() };
            let _: Map<String, Value> = self.request(Method::ResourcesSubscribe, params).await?;
            changes.subscribed.push(uri);
        }
        Ok(changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn notification(method: &str, params: Value, listen: Option<i64>) -> Notification {
        let mut params = params.as_object().cloned().unwrap_or_default();
        if let Some(listen) = listen {
            params.insert("_meta".into(), json!({ key::SUBSCRIPTION_ID: listen }));
        }
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        match serde_json::from_value(message).unwrap() {
            duet_wire::message::Incoming::Notification(notification) => notification,
            other => panic!("not a notification: {other:?}"),
        }
    }

    #[tokio::test]
    async fn each_watcher_gets_the_changes_of_its_interest_and_its_listen() {
        let watchers = Watchers::default();
        let tools = Interest { tools: true, ..Interest::default() };
        let (_, mut handshake, _) = watchers.add(tools.clone(), None);
        let files = Interest { resource_uris: vec!["file:///a/".into()], ..Interest::default() };
        let (_, mut listening, mut ack) = watchers.add(files, Some(json!(7)));

        watchers.offer(&notification("notifications/tools/list_changed", json!({}), None));
        watchers.offer(&notification("notifications/subscriptions/acknowledged", json!({}), Some(7)));
        watchers.offer(&notification("notifications/resources/updated", json!({"uri": "file:///a/b"}), Some(7)));
        watchers.offer(&notification("notifications/resources/updated", json!({"uri": "file:///c"}), Some(7)));
        watchers.offer(&notification("notifications/resources/updated", json!({"uri": "file:///a/d"}), Some(8)));

        assert_eq!(handshake.try_recv(), Ok(Change::Tools));
        assert!(handshake.try_recv().is_err(), "no resource changes for a tools watcher");
        assert_eq!(ack.try_recv(), Ok(()));
        assert_eq!(listening.try_recv(), Ok(Change::Resource { uri: "file:///a/b".into() }));
        assert!(listening.try_recv().is_err(), "not under a watched URI, or another listen's");
    }
}
