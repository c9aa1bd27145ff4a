//! `subscriptions/listen` (2026): a long-lived request whose stream carries the change
//! notifications its filter asked for, and the status of the tasks it follows, each tagged
//! with the listen request's id. Streams are server-wide; a message goes straight to each
//! stream's sink (the transport's bounded queue, which drops when a client does not keep
//! up), so an idle stream holds no queue of its own. A stream ends with a final result when
//! the server closes it. An update of a resource reaches a stream only when the layer lets
//! the stream's principal see that resource ([`Layer::may_see_resource`]): following a
//! directory does not reveal the guarded files below it.

use super::subscribed::{Bounds, Subscribed};
use super::tasks::TaskRecord;
use crate::layer::{Change, Layer, Principal};
use crate::signals;
use duet_wire::jsonrpc::{RequestId, RpcError, Sink, notification};
use duet_wire::key;
use duet_wire::method::Method;
use duet_wire::params::ListenFilter;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// What one listen stream asked for (and duet honours).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Subscribed,
    /// The tasks whose status it follows (the caller's own, checked before).
    tasks: Vec<String>,
}

impl Filter {
    /// The filter a listen request asks for (its params' `notifications`); its
    /// `resourceSubscriptions` within `bounds`.
    pub(crate) fn parse(asked: &ListenFilter, bounds: Bounds) -> Result<Filter, RpcError> {
        let uris = match &asked.resource_subscriptions {
            Some(uris) => Subscribed::listed(uris, bounds)?,
            None => Subscribed::default(),
        };
        Ok(Filter {
            tools: asked.tools_list_changed == Some(true),
            prompts: asked.prompts_list_changed == Some(true),
            resources: asked.resources_list_changed == Some(true),
            uris,
            tasks: Vec::new(),
        })
    }

    /// The filter as honoured, for the acknowledgement.
    pub(crate) fn honoured(&self) -> Value {
        let mut m = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                m.insert(key.into(), Value::Bool(true));
            }
        }
        if !self.uris.is_empty() {
            m.insert("resourceSubscriptions".into(), json!(self.uris.sorted()));
        }
        if !self.tasks.is_empty() {
            m.insert("taskIds".into(), json!(self.tasks));
        }
        Value::Object(m)
    }

    pub(crate) fn wants(&self, change: &Change) -> bool {
        match change {
            Change::ToolsChanged => self.tools,
            Change::PromptsChanged => self.prompts,
            Change::ResourcesChanged => self.resources,
            Change::ResourceUpdated(uri) => self.uris.covers(uri),
        }
    }
}

/// The wire notification of a change, with extra params (such as a subscription id).
pub(super) fn change_notification(change: &Change, meta: Option<Map<String, Value>>) -> Value {
    let (method, mut params) = match change {
        Change::ToolsChanged => (Method::ToolsListChanged.as_str(), Map::new()),
        Change::PromptsChanged => (Method::PromptsListChanged.as_str(), Map::new()),
        Change::ResourcesChanged => (Method::ResourcesListChanged.as_str(), Map::new()),
        Change::ResourceUpdated(uri) => {
            let mut p = Map::new();
            p.insert("uri".into(), Value::from(uri.as_str()));
            (Method::ResourcesUpdated.as_str(), p)
        }
    };
    if let Some(meta) = meta {
        params.insert("_meta".into(), Value::Object(meta));
    }
    notification(method, (!params.is_empty()).then_some(Value::Object(params)))
}

/// The `_meta` that tags a listen stream's messages with the listen request's id.
fn subscription_meta(id: &RequestId) -> Map<String, Value> {
    let mut meta = Map::with_capacity(1);
    meta.insert(key::SUBSCRIPTION_ID.into(), id.to_value());
    meta
}

struct Entry {
    filter: Filter,
    id: RequestId,
    /// Who opened the stream: what it is sent is what this principal may see.
    who: Arc<Principal>,
    notify: Sink,
    /// Of each task it follows, the last change sent: when it was made, and whether it
    /// ended the task. An older one read late is not sent after it.
    sent: HashMap<String, (u64, bool)>,
}

impl Entry {
    /// Whether `change` goes to this stream: its filter wants it, and an updated resource
    /// is one `layer` lets the stream's principal see.
    fn wants(&self, change: &Change, layer: &dyn Layer) -> bool {
        self.filter.wants(change)
            && match change {
                Change::ResourceUpdated(uri) => layer.may_see_resource(&self.who, uri),
                _ => true,
            }
    }

    /// Sends the status of a task this stream follows, unless it sent it (or a later one).
    fn send_task(&mut self, record: &TaskRecord) {
        let last = self.sent.get(&record.id).copied();
        if last.is_some_and(|(at, ended)| ended || at >= record.updated_ms) {
            return;
        }
        self.sent.insert(record.id.clone(), (record.updated_ms, record.status.is_terminal()));
        (self.notify)(task_notification(record, &self.id));
    }
}

/// The extension's `notifications/tasks`: the task as `tasks/get` shows it, tagged with the
/// listen request's id.
fn task_notification(record: &TaskRecord, id: &RequestId) -> Value {
    let mut params = match serde_json::to_value(record.detailed()) {
        Ok(Value::Object(params)) => params,
        _ => Map::new(),
    };
    params.insert("_meta".into(), Value::Object(subscription_meta(id)));
    notification(Method::TaskStatus.as_str(), Some(Value::Object(params)))
}

/// The open listen streams of one server.
#[derive(Default)]
pub(crate) struct Listens {
    streams: Mutex<HashMap<u64, Entry>>,
    next: AtomicU64,
    closing: CancellationToken,
}

/// Removes a stream from the set when its request ends, however it ends.
struct Registration<'a> {
    listens: &'a Listens,
    key: u64,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.listens.lock().remove(&self.key);
        metrics::gauge!(signals::LISTEN_STREAMS_ACTIVE).decrement(1);
    }
}

impl Listens {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        self.streams.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    pub(crate) fn close_all(&self) {
        self.closing.cancel();
    }

    /// Whether some stream follows task `id`.
    pub(crate) fn follows(&self, id: &str) -> bool {
        self.lock().values().any(|e| e.filter.tasks.iter().any(|t| t == id))
    }

    /// Sends the status of a task to the streams that follow it.
    pub(crate) fn dispatch_task(&self, record: &TaskRecord) {
        for entry in self.lock().values_mut().filter(|e| e.filter.tasks.contains(&record.id)) {
            entry.send_task(record);
        }
    }

    /// Sends `change` to the streams that want it and may see it (by `layer`'s rules).
    pub(crate) fn dispatch(&self, change: &Change, layer: &dyn Layer) {
        for entry in self.lock().values().filter(|e| e.wants(change, layer)) {
            (entry.notify)(change_notification(change, Some(subscription_meta(&entry.id))));
        }
    }

    /// Runs one listen request of `who`: acknowledgement, the status of each task in `tasks`
    /// (the caller's, which it follows from now on), then events until the server closes
    /// the stream or the request is cancelled (the caller drops this future). Returns the
    /// `_meta` of the final result.
    pub(crate) async fn run(
        &self,
        id: &RequestId,
        who: Arc<Principal>,
        mut filter: Filter,
        tasks: Vec<TaskRecord>,
        notify: &Sink,
    ) -> Result<Map<String, Value>, RpcError> {
        filter.tasks = tasks.iter().map(|t| t.id.clone()).collect();
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let ack = json!({"notifications": filter.honoured(), "_meta": subscription_meta(id)});
        // Acknowledged before any change or task status can reach the stream.
        notify(notification(Method::SubscriptionsAcknowledged.as_str(), Some(ack)));
        let mut entry = Entry { filter, id: id.clone(), who, notify: notify.clone(), sent: HashMap::new() };
        for task in &tasks {
            entry.send_task(task);
        }
        self.lock().insert(key, entry);
        metrics::gauge!(signals::LISTEN_STREAMS_ACTIVE).increment(1);
        let _registration = Registration { listens: self, key };
        self.closing.cancelled().await;
        Ok(subscription_meta(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duet_wire::params::{ListenParams, decode};

    /// The filter of a listen request whose params are `params`.
    fn parse(params: Value, bounds: Bounds) -> Result<Filter, RpcError> {
        let Value::Object(params) = params else { unreachable!("params are an object") };
        let ListenParams { notifications } = decode(params)?;
        Filter::parse(&notifications, bounds)
    }

    #[test]
    fn filters() {
        let params = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": false,
            "resourcesListChanged": "yes", "resourceSubscriptions": ["test://info", 5]}});
        let bounds = Bounds { count: 10, uri_bytes: 100 };
        let f = parse(params, bounds).unwrap();
        assert_eq!(f.honoured(), json!({"toolsListChanged": true, "resourceSubscriptions": ["test://info"]}));
        assert!(f.wants(&Change::ToolsChanged) && !f.wants(&Change::PromptsChanged));
        assert!(f.wants(&Change::ResourceUpdated("test://info".into())));
        assert!(!f.wants(&Change::ResourceUpdated("test://information".into())));
        assert!(parse(json!({}), bounds).is_err());
        let too_many = json!({"notifications": {"resourceSubscriptions": ["a", "b"]}});
        let refused = parse(too_many, Bounds { count: 1, ..bounds }).unwrap_err();
        assert_eq!(refused.code, -32602);
    }
}
