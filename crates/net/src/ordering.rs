//! Requests take effect in the order a connection sent them (Kafka's guarantee: its broker
//! mutes a connection from reading a request until the previous one is answered, so
//! librdkafka's async commits, idempotent producers and admin clients issuing
//! create-then-alter rely on it without knowing).
//!
//! The server reads a connection's next request once the handler's
//! [`RequestHandler::dispatch`](super::RequestHandler::dispatch) resolved. A handler keeps
//! order by resolving it only once the request's effect is *sequenced*: done, or placed in
//! a queue that applies effects in arrival order (a coordinator shard's event loop, the
//! QuorumController's queue, a partition's log). What remains after that point is waiting
//! (acks=all replication, a fetch's long poll, a coordinator's commit wait) and may run
//! beside the connection's next requests.
//!
//! [`run_until_sequenced`] is that split for a handler written as one future: it polls the
//! future where the reader runs until the future completes or calls [`mark_sequenced`]
//! (from anywhere inside, as deep as the code that enqueues), and only then moves the rest
//! to a task of its own. A handler that never marks runs to its end before the next
//! request is read — Kafka's behaviour, the safe default for every API.
//!
//! What "sequenced" covers: the mark is read when the future next returns `Pending`, so
//! everything it did before that (every enqueue in the same poll) is ordered; effects after
//! a later `.await` are not.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;

tokio::task_local! {
    /// The flag of the request the current task is handling (see [`run_until_sequenced`]).
    static SEQUENCED: Arc<AtomicBool>;
}

/// The current request's effect is sequenced: the connection's next request may be read
/// (and handled) while this one waits for the rest. A no-op outside
/// [`run_until_sequenced`].
pub fn mark_sequenced() {
    let _ = SEQUENCED.try_with(|flag| flag.store(true, Ordering::Relaxed));
}

/// Whether the current request has called [`mark_sequenced`] (false outside
/// [`run_until_sequenced`]).
#[cfg(test)]
fn is_sequenced() -> bool {
    SEQUENCED
        .try_with(|flag| flag.load(Ordering::Relaxed))
        .unwrap_or(false)
}

/// Runs `handler` until it completes or marks its effect sequenced ([`mark_sequenced`]);
/// the rest, if any, continues on a task of its own. Resolves once the connection's next
/// request may be read.
pub async fn run_until_sequenced<F>(handler: F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let flag = Arc::new(AtomicBool::new(false));
    let mut handler = Box::pin(SEQUENCED.scope(Arc::clone(&flag), handler));
    let finished = std::future::poll_fn(|cx| match handler.as_mut().poll(cx) {
        Poll::Ready(()) => Poll::Ready(true),
        Poll::Pending if flag.load(Ordering::Relaxed) => Poll::Ready(false),
        Poll::Pending => Poll::Pending,
    });
    if !pin!(finished).await {
        tokio::spawn(handler);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use tokio::sync::oneshot;

    #[tokio::test]
    async fn an_unmarked_handler_runs_to_its_end_first() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = Arc::clone(&log);
        run_until_sequenced(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            l.lock().unwrap().push("first done");
        })
        .await;
        log.lock().unwrap().push("next read");
        assert_eq!(*log.lock().unwrap(), ["first done", "next read"]);
    }

    #[tokio::test]
    async fn a_marked_handler_waits_on_its_own_task() {
        let (release, wait) = oneshot::channel::<()>();
        let (done_tx, done) = oneshot::channel();
        run_until_sequenced(async move {
            assert!(!is_sequenced());
            // The effect is queued, then the mark: what follows is waiting.
            mark_sequenced();
            assert!(is_sequenced());
            let _ = wait.await;
            let _ = done_tx.send("answered");
        })
        .await;
        // Returned while the handler still waits: the next request may be read.
        let _ = release.send(());
        assert_eq!(done.await.unwrap(), "answered");
    }

    #[tokio::test]
    async fn the_mark_reaches_nested_code_and_stays_with_its_request() {
        async fn enqueue() {
            mark_sequenced();
        }
        let (release, wait) = oneshot::channel::<()>();
        run_until_sequenced(async move {
            enqueue().await;
            let _ = wait.await;
        })
        .await;
        // Another request's flag is its own.
        run_until_sequenced(async { assert!(!is_sequenced()) }).await;
        let _ = release.send(());
        assert!(!is_sequenced(), "no request outside the scope");
    }
}
