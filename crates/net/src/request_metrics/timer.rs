//! The phases of one request, marked by whoever reaches them (Kafka's `RequestChannel.Request`
//! timestamps: `requestDequeueTimeNanos`, `apiLocalCompleteTimeNanos`,
//! `apiRemoteCompleteTimeNanos`, `responseCompleteTimeNanos`). The server starts the timer
//! when a whole frame has been read and marks the network side itself; a handler marks the
//! middle, from wherever it runs: through the [`RequestTimer`] its request carries, or, deep
//! inside code that never sees the request (a fetch about to park, a forward about to wait),
//! through [`mark_local_complete`], which reaches the request of the current task
//! ([`RequestTimer::scope`]).
//!
//! Each mark keeps its first value. What a handler leaves unmarked the server fills in as
//! Kafka does: dequeued when the handler was called; local complete when the handler's
//! `dispatch` returned (Kafka: when `handle()` returned, later work being remote) unless
//! the handler marked its own dequeue (it runs on a task of its own), then as remote
//! complete; remote complete as response complete; response complete when the connection's
//! writer received the response.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

tokio::task_local! {
    /// The request the current task is handling (see [`RequestTimer::scope`]).
    static CURRENT: RequestTimer;
}

/// Marks the current task's request (if any) as locally complete: what follows is waiting
/// on others (a fetch parked until data arrives, a request forwarded to the controller).
pub fn mark_local_complete() {
    let _ = CURRENT.try_with(RequestTimer::local_complete);
}

/// One request's timestamps; cheap to clone. Without request metrics it holds nothing and
/// every mark is a no-op.
#[derive(Debug, Clone, Default)]
pub struct RequestTimer(Option<Arc<Marks>>);

/// Nanoseconds since `start`, plus one (0: not marked).
#[derive(Debug)]
pub(crate) struct Marks {
    pub(crate) start: Instant,
    dequeued: AtomicU64,
    local: AtomicU64,
    remote: AtomicU64,
    complete: AtomicU64,
}

impl Marks {
    fn mark(&self, slot: &AtomicU64) {
        let nanos = self.start.elapsed().as_nanos() as u64 + 1;
        let _ = slot.compare_exchange(0, nanos, Ordering::Relaxed, Ordering::Relaxed);
    }

    fn read(slot: &AtomicU64) -> Option<u64> {
        match slot.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n - 1),
        }
    }
}

/// The marks as read when the response has been sent, in nanoseconds since the start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Marked {
    pub dequeued: Option<u64>,
    pub local: Option<u64>,
    pub remote: Option<u64>,
    pub complete: Option<u64>,
}

impl RequestTimer {
    /// A timer started at `start` (the moment the request's frame was read).
    pub(crate) fn started(start: Instant) -> Self {
        RequestTimer(Some(Arc::new(Marks {
            start,
            dequeued: AtomicU64::new(0),
            local: AtomicU64::new(0),
            remote: AtomicU64::new(0),
            complete: AtomicU64::new(0),
        })))
    }

    /// A timer that records nothing (request metrics off, or a request built in a test).
    pub fn disabled() -> Self {
        RequestTimer(None)
    }

    pub(crate) fn marks(&self) -> Option<&Marks> {
        self.0.as_deref()
    }

    fn mark(&self, pick: impl Fn(&Marks) -> &AtomicU64) {
        if let Some(m) = &self.0 {
            m.mark(pick(m));
        }
    }

    /// A handler's task starts on the request (Kafka's request dequeue).
    pub fn dequeued(&self) {
        self.mark(|m| &m.dequeued);
    }

    /// The handler's own work is done; what remains is waiting on others.
    pub fn local_complete(&self) {
        self.mark(|m| &m.local);
    }

    /// The wait on others is over (the response is built; a throttle may still hold it).
    pub fn remote_complete(&self) {
        self.mark(|m| &m.remote);
    }

    /// The response is handed to the connection.
    pub fn response_complete(&self) {
        self.mark(|m| &m.complete);
    }

    /// Runs `f` with this request as the task's current one, for [`mark_local_complete`].
    pub fn scope<F: Future>(&self, f: F) -> impl Future<Output = F::Output> {
        CURRENT.scope(self.clone(), f)
    }

    pub(crate) fn read(&self) -> Marked {
        match &self.0 {
            None => Marked::default(),
            Some(m) => Marked {
                dequeued: Marks::read(&m.dequeued),
                local: Marks::read(&m.local),
                remote: Marks::read(&m.remote),
                complete: Marks::read(&m.complete),
            },
        }
    }
}
