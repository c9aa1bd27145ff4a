//! The one writer of the protocol stream: a thread that writes whole lines in order, so
//! messages never interleave. What waits for it is bounded. An answer carries the permit
//! of the request it answers and gives it back once written, so a client that stops
//! reading holds every permit and the session stops reading too. Notifications (progress,
//! logs, changes) carry none; past a cap of queued lines they are dropped, and counted.

use std::io::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use tokio::sync::OwnedSemaphorePermit;

/// Notifications are dropped while this many lines wait to be written.
const MAX_QUEUED_NOTIFICATIONS: usize = 4096;

enum Out {
    Line(String, Option<OwnedSemaphorePermit>),
    Finish,
}

#[derive(Clone)]
pub(super) struct Writer {
    tx: mpsc::Sender<Out>,
    queued: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

impl Writer {
    pub(super) fn start<W: Write + Send + 'static>(output: W) -> (Writer, std::thread::JoinHandle<io::Result<()>>) {
        let (tx, rx) = mpsc::channel::<Out>();
        let queued = Arc::new(AtomicUsize::new(0));
        let writer = Writer { tx, queued: queued.clone(), dropped: Arc::new(AtomicUsize::new(0)) };
        let handle = std::thread::spawn(move || {
            let mut out = io::BufWriter::new(output);
            let write = |out: &mut io::BufWriter<W>, line: String, permit: Option<OwnedSemaphorePermit>| {
                out.write_all(line.as_bytes())?;
                out.write_all(b"\n")?;
                queued.fetch_sub(1, Ordering::Relaxed);
                drop(permit);
                io::Result::Ok(())
            };
            while let Ok(Out::Line(line, permit)) = rx.recv() {
                write(&mut out, line, permit)?;
                // Flush once the queue is empty, so bursts go out in one write.
                loop {
                    match rx.try_recv() {
                        Ok(Out::Line(line, permit)) => write(&mut out, line, permit)?,
                        Ok(Out::Finish) => return out.flush(),
                        Err(_) => break,
                    }
                }
                out.flush()?;
            }
            out.flush()
        });
        (writer, handle)
    }

    /// Queues an answer; `permit` is released once it is written.
    pub(super) fn answer(&self, line: String, permit: Option<OwnedSemaphorePermit>) {
        self.queued.fetch_add(1, Ordering::Relaxed);
        // After `finish` the thread is gone and late lines are dropped.
        let _ = self.tx.send(Out::Line(line, permit));
    }

    /// Queues a notification, unless too many lines already wait.
    pub(super) fn notification(&self, line: String) {
        if self.queued.load(Ordering::Relaxed) >= MAX_QUEUED_NOTIFICATIONS {
            let dropped = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if dropped.is_power_of_two() {
                tracing::warn!(dropped, "the client is not reading stdout; notifications dropped");
            }
            return;
        }
        self.answer(line, None);
    }

    /// Lets the thread write what is queued and stop.
    pub(super) fn finish(&self) {
        let _ = self.tx.send(Out::Finish);
    }
}
