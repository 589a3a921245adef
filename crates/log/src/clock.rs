//! The wall clock, read in one place. Kafka's timestamps (record batches, snapshots,
//! `replica.lag.time.max.ms`, metadata lag) are Unix milliseconds; the deterministic cores
//! never call this, they are handed the time by the edges that do.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch; 0 if the system clock reads before it.
pub fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Nanoseconds since the Unix epoch (truncated to 64 bits): entropy for per-incarnation
/// seeds, not a timestamp.
pub fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Wall-clock Unix ms read once, then advanced by the monotonic clock: a clock for deadlines
/// that a step of the wall clock (an NTP step, an operator's `date -s`) must not move, while
/// its values still read as Unix ms. Kafka's coordinators schedule their timeouts (session,
/// rebalance, heartbeat) on `SystemTimer`, which counts `Time.hiResClockMs()` (monotonic), so
/// a wall clock jumping hours ahead on a coordinator's broker expires no member; a loop that
/// compared its deadlines with [`unix_ms`] would expire every session at once. The monotonic
/// clock is slewed by NTP as the wall clock is, so the two part only by steps, until the
/// process restarts.
#[derive(Debug, Clone, Copy)]
pub struct SteadyClock {
    base_ms: i64,
    started: std::time::Instant,
}

impl SteadyClock {
    /// A clock reading the wall clock now.
    pub fn start() -> Self {
        SteadyClock {
            base_ms: unix_ms(),
            started: std::time::Instant::now(),
        }
    }

    /// Unix ms: the wall clock at [`SteadyClock::start`] plus the monotonic time since.
    pub fn now_ms(&self) -> i64 {
        self.base_ms + self.started.elapsed().as_millis() as i64
    }
}
