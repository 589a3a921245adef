//! Integration tests of kraftd-protocol: round trips of every generated message, differential
//! tests against the `kafka-protocol` crate, malformed input, captured client frames and
//! record batches.

mod alloc_probe;
mod captured;
mod differential;
mod malformed;
mod record_batch;
mod round_trip;
