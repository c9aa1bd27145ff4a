//! What `duet call` shows of a tool's progress notifications (from the layer in process, or
//! from the server called), on stderr: a progress bar
//! when stderr is a terminal (indicatif), plain lines (`progress 1/3: step 1`) otherwise,
//! so a log or a script reads them too. stdout keeps the result alone.

use duet::wire::jsonrpc::Sink;
use duet::wire::message::Notification;
use duet::wire::method::Method;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use std::io::IsTerminal as _;
use std::sync::{Arc, Mutex};

/// The progress of one call.
pub(super) struct Progress {
    /// On a terminal, the bar (made at the first notification).
    bar: Option<Mutex<Option<ProgressBar>>>,
}

impl Progress {
    pub(super) fn new() -> Arc<Progress> {
        Arc::new(Progress { bar: std::io::stderr().is_terminal().then(|| Mutex::new(None)) })
    }

    /// The sink a call's notifications go to: progress is shown, the rest dropped.
    pub(super) fn sink(self: &Arc<Self>) -> Sink {
        let progress = self.clone();
        Arc::new(move |message: Value| {
            if message["method"] == Method::Progress.as_str() {
                progress.show(&message["params"]);
            }
        })
    }

    /// Shows a server's notification, when it is progress.
    pub(super) fn notification(&self, notification: &Notification) {
        if notification.method == Method::Progress {
            self.show(&Value::Object(notification.params.clone()));
        }
    }

    fn show(&self, params: &Value) {
        let (done, total) = (&params["progress"], &params["total"]);
        let message = params["message"].as_str().unwrap_or_default();
        let Some(bar) = &self.bar else {
            let of = if total.is_number() { format!("/{total}") } else { String::new() };
            let message = if message.is_empty() { String::new() } else { format!(": {message}") };
            eprintln!("progress {done}{of}{message}");
            return;
        };
        let mut bar = bar.lock().unwrap_or_else(|p| p.into_inner());
        let bar = bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            let style =
                ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").unwrap_or(ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        if let Some(total) = total.as_f64() {
            bar.set_length(total as u64);
        }
        bar.set_position(done.as_f64().unwrap_or_default() as u64);
        bar.set_message(message.to_string());
    }

    /// Takes the bar off the terminal before the result is printed.
    pub(super) fn finish(&self) {
        if let Some(bar) = self.bar.as_ref().and_then(|b| b.lock().unwrap_or_else(|p| p.into_inner()).take()) {
            bar.finish_and_clear();
        }
    }
}
