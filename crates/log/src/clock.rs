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
