//! Integration tests of kraftd-protocol: round trips of every generated message, differential
//! tests against the `kafka-protocol` crate, coordinator record framing, malformed input,
//! captured client frames and record batches.

mod alloc_probe;
mod captured;
mod coordinator_record;
mod differential;
mod error_responses;
mod malformed;
mod record_batch;
mod round_trip;
