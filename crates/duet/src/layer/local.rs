//! Handlers whose futures are not `Send`. The engine runs requests on a multi-threaded
//! runtime, so every spec takes a handler whose future is `Send`; a handler that keeps an
//! `Rc`, a `RefCell` borrow, a `MutexGuard` or some other `!Send` value across an `.await`
//! cannot be registered as it is. [`local`] adapts it: each call runs on a worker thread of
//! a process-wide pool and stays pinned there, and what the engine awaits is a `Send` handle
//! to that call. Dropping the handle (the client cancelled, the tool timed out) aborts the
//! call; a panic in the call comes back out of the handle, so the engine answers it as it
//! answers any panicking handler.

use super::RequestCx;
use crate::trace::RequestTrace;
use std::future::Future;
use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};
use tokio_util::task::{AbortOnDropHandle, LocalPoolHandle};
use tracing::Dispatch;
use tracing::instrument::WithSubscriber;

/// Adapts a handler whose future is not `Send` for any spec ([`ToolSpec::new`],
/// [`ToolSpec::typed`], [`ResourceSpec::new`], [`TemplateSpec::new`],
/// [`PromptSpec::new`]), over any transport.
///
/// Each call is started on the least busy thread of a pool shared by the whole process (one
/// thread per available CPU, started on the first call), each running a single-threaded
/// tokio runtime, so the handler's future may use `tokio::time`, `tokio::task::spawn_local`
/// and the request's [`RequestCx`] as usual, and runs in the request's tracing span. The
/// call never moves to another thread; the future it returns to the engine is `Send`.
///
/// The handler itself is shared by every call, so it is still `Send + Sync`, and its
/// arguments and output cross threads, so they are `Send`: what need not be `Send` is the
/// future a call creates. State shared between calls still wants an `Arc` (a
/// `thread_local!` would exist once per pool thread). The closure's argument type cannot be
/// inferred through `local`: name it when the body uses it (`|args: Map<String, Value>, cx|`,
/// `|input: MyInput, cx|`).
///
/// Dropping the returned future aborts the call: its future is dropped, on its own thread,
/// when that thread next runs. A panic in the call is resumed where the future is awaited.
///
/// ```
/// use duet::layer::{Layer, Principal, Registry, Reply, RequestCx, ServerInfo, ToolResult, ToolSpec, local};
/// use std::cell::RefCell;
/// use std::rc::Rc;
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut registry = Registry::new(ServerInfo::new("local", "1.0.0"));
/// registry.tool(ToolSpec::new(
///     "words",
///     local(|_args, _cx| async move {
///         // `Rc<RefCell<…>>` is neither `Send` nor `Sync`, and it lives across awaits.
///         let words = Rc::new(RefCell::new(Vec::new()));
///         for word in ["one", "two", "three"] {
///             tokio::task::yield_now().await;
///             words.borrow_mut().push(word);
///         }
///         ToolResult::text(words.borrow().join(" "))
///     }),
/// ))?;
/// let cx = RequestCx::builder(Principal::local()).build();
/// let Reply::Complete(result) = registry.call_tool("words", Default::default(), cx.clone()).await? else { panic!() };
/// assert_eq!(result, ToolResult::text("one two three"));
/// # Ok(())
/// # }
/// ```
///
/// [`ToolSpec::new`]: super::ToolSpec::new
/// [`ToolSpec::typed`]: super::ToolSpec::typed
/// [`ResourceSpec::new`]: super::ResourceSpec::new
/// [`TemplateSpec::new`]: super::TemplateSpec::new
/// [`PromptSpec::new`]: super::PromptSpec::new
pub fn local<S, A, F, Fut>(handler: F) -> impl Fn(A, RequestCx<S>) -> LocalCall<Fut::Output> + Send + Sync + 'static
where
    S: Send + 'static,
    A: Send + 'static,
    F: Fn(A, RequestCx<S>) -> Fut + Send + Sync + 'static,
    Fut: Future + 'static,
    Fut::Output: Send + 'static,
{
    let handler = Arc::new(handler);
    move |args, cx| {
        // The call's thread reports to the caller's subscriber, inside the request's trace.
        let (handler, trace) = (handler.clone(), RequestTrace::current());
        let dispatch = tracing::dispatcher::get_default(Dispatch::clone);
        let task = pool().spawn_pinned(move || {
            let call = tracing::dispatcher::with_default(&dispatch, || trace.in_scope(|| handler(args, cx)));
            trace.instrument(call).with_subscriber(dispatch)
        });
        LocalCall(AbortOnDropHandle::new(task))
    }
}

/// A call of a [`local`] handler, running on its pool thread: resolves to the handler's
/// output, aborts the call when dropped, and resumes the call's panic when it panicked.
#[must_use = "dropping a LocalCall aborts the call"]
pub struct LocalCall<T>(AbortOnDropHandle<T>);

impl<T> Future for LocalCall<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match ready!(Pin::new(&mut self.0).poll(cx)) {
            Ok(output) => Poll::Ready(output),
            Err(error) => match error.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // Only this handle aborts the task, and it is being polled.
                Err(error) => panic!("a local handler's task ended without an output: {error}"),
            },
        }
    }
}

/// The process-wide pool of threads that local calls are pinned to.
fn pool() -> &'static LocalPoolHandle {
    static POOL: OnceLock<LocalPoolHandle> = OnceLock::new();
    POOL.get_or_init(|| LocalPoolHandle::new(std::thread::available_parallelism().map_or(1, NonZeroUsize::get)))
}
