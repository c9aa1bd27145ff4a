//! A handshake-era session's GET stream: what the server sends outside any request (list
//! changes, resource updates, its own requests), opened once the handshake is done and
//! read on a task of its own until the transport closes. A server without one (405, or any
//! refusal) is fine: the session goes on without. A stream that breaks off is resumed
//! (`resume.rs`).

use super::http::Endpoint;
use super::resume::{Resume, Resuming};
use duet_wire::version::Version;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long opening the stream may hold up the client: the server should know of the
/// stream before the client's next request, but a server slow to answer the GET does not
/// hold the client back longer.
const OPEN_WAIT: Duration = Duration::from_secs(2);

/// The task reading the session's GET stream; dropped, it is stopped and the stream closed.
#[derive(Debug)]
pub(super) struct Listening(JoinHandle<()>);

impl Listening {
    /// Opens `endpoint`'s GET stream in `version`, waiting (a little) for the server's
    /// answer to the GET.
    pub(super) async fn open(endpoint: &Arc<Endpoint>, version: Version) -> Listening {
        let (opened, answered) = oneshot::channel();
        let task = tokio::spawn(listen(Arc::clone(endpoint), version, opened));
        let _ = tokio::time::timeout(OPEN_WAIT, answered).await;
        Listening(task)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// GETs the stream, tells `opened` the server answered, and routes what comes until the
/// stream ends for good.
async fn listen(endpoint: Arc<Endpoint>, version: Version, opened: oneshot::Sender<()>) {
    let response = endpoint.get(version, None).send().await;
    let _ = opened.send(());
    let Ok(response) = response.and_then(reqwest::Response::error_for_status) else { return };
    let mut stream = Resuming::new(Arc::clone(&endpoint), Some(version), response, Resume::Always);
    while let Ok(Some(text)) = stream.next().await {
        // Answers have no place here: none of the client's requests waits on this stream.
        let _ = endpoint.route(&text, Some(version));
    }
}
