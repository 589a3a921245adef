//! Kafka's `LogFlushStats.LogFlushRateAndTimeMs`: every fdatasync of a segment is timed
//! (Kafka times `LogSegment.flush`, for partition logs and the metadata log alike, in one
//! JVM-wide timer). This crate holds no metrics of its own, so the process installs one
//! observer, once, that receives each flush's duration; without one, nothing is measured.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

static OBSERVER: OnceLock<fn(Duration)> = OnceLock::new();

/// Installs the process-wide flush observer; `false` if one was already installed (the
/// first stays).
pub fn observe_flushes(observer: fn(Duration)) -> bool {
    OBSERVER.set(observer).is_ok()
}

/// Runs `flush` (an fdatasync) and hands its duration to the observer, if any.
pub(crate) fn timed<T>(flush: impl FnOnce() -> T) -> T {
    let Some(observer) = OBSERVER.get() else {
        return flush();
    };
    let began = Instant::now();
    let result = flush();
    observer(began.elapsed());
    result
}
