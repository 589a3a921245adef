//! The tokio edge of the Raft crate: [`RaftDriver`] runs one [`RaftCore`] over the metadata
//! log in `crates/log` ([`log::MetadataLog`]), the Kafka-protocol [`kraftd_net`] and
//! tokio timers, following the core's call order (see [`crate::core`]): feed an input, drain
//! every output in order, sleep until the next deadline or input.
//!
//! - Durability first: a [`Output::PersistQuorumState`] is written (temp file, fsync,
//!   rename) before the outputs after it are acted on, so no vote or epoch is promised on
//!   the wire before it is on disk; a failed write stops the node.
//! - Network: one [`Channel`] per destination voter, and per bootstrap server that names no
//!   voter (its negative id, [`bootstrap`]) (client id `raft-client-<node.id>`,
//!   `controller.quorum.request.timeout.ms`, reconnect backoff), and the controller
//!   listener ([`serve`]) answering ApiVersions and DescribeQuorum (from v2 with the
//!   voters' endpoints under [`DriverConfig::controller_listener_name`], as Kafka's
//!   `Nodes`) and routing Vote,
//!   BeginQuorumEpoch, EndQuorumEpoch and Fetch into the core. A request that times out or
//!   cannot be sent is reported to the core ([`RaftCore::handle_request_failed`]); the core
//!   keeps at most one Fetch in flight.
//! - Time: the core's `now_ms` is the Unix time read at start plus monotonic time since, so
//!   it never goes back and DescribeQuorum's timestamps read as Unix milliseconds.
//! - The loop runs on one tokio task and does the log's disk I/O inline (the core calls the
//!   log synchronously, as Kafka's single Raft I/O thread does): run it on a multi-thread
//!   runtime. The leader's fsync ([`Output::Flush`]) is the exception: it runs on a blocking
//!   thread ([`MetadataLog::plan_flush`]) while the loop goes on answering fetches and
//!   taking proposals, so it overlaps replication; when it completes, the core's flush
//!   counts the leader's end offset toward the HW only as far as the fsync covered. A
//!   node that sends a Fetch (a follower, or a leader that stepped down) first flushes
//!   whatever it holds unflushed, so an end offset a voter reports is always durable.
//! - [`RaftHandle`] proposes records, reads committed data, subscribes to committed batches
//!   and leader changes ([`RaftEvent`], in order, exactly once per incarnation unless the
//!   subscriber lags behind [`EVENT_CHANNEL_CAPACITY`]) and watches [`RaftMetrics`].
//! - A disk failure of the metadata log ([`log::LogFailure`]) is fatal, as in Kafka: the
//!   driver checks the log after every call into the core, before acting on anything the
//!   core queued, and stops with the failure (directory and operation) as its error
//!   ([`DriverError::Fatal`], [`RaftHandle::stop_reason`]); so does a fatal core error. The
//!   loop holds the only strong sender of the event channel, so when it stops, for any
//!   reason, subscribers see the channel close after the events already sent.
//! - [`RaftDriver::shutdown`] resigns first (EndQuorumEpoch to the voters, bounded by the
//!   request timeout), then stops; [`RaftDriver::kill`] stops at once, as a crash would.
//!
//! # Where the code is
//!
//! - `raft_driver.rs` — [`RaftDriver`] (Kafka's `KafkaRaftManager`): start, with its
//!   [`DriverConfig`] and [`DriverError`], graceful shutdown and kill;
//! - `quorum_config.rs` — [`QuorumConfig`], the voters, bootstrap servers,
//!   `controller.quorum.*` and metadata log directory that the broker's and the controller's
//!   configs hold and the driver starts from;
//! - `driver_loop.rs` — the event loop (Kafka's `KafkaRaftClientDriver`): feeds the core,
//!   drains its outputs, sends requests over one [`Channel`] per destination, flushes,
//!   settles the proposals the high watermark passed;
//! - `handle.rs` — [`RaftHandle`], what callers use (Kafka's `RaftClient`), and the
//!   [`RaftEvent`]s they subscribe to;
//! - `router.rs` — [`RaftRequestRouter`], the controller listener's Raft requests into the
//!   loop, and the conversions between wire bodies and core messages;
//! - [`metrics`] — [`RaftMetrics`] and its publishing after every event, over the windowed
//!   stats of [`stats`] (`kraftd_net::stats`, re-exported: the connection quotas of the
//!   transport measure with them too);
//! - [`log`] — [`log::MetadataLog`], the core's `RaftLog` on `crates/log`, and the
//!   `quorum-state` file;
//! - [`voters`] and [`bootstrap`] — `controller.quorum.voters` and
//!   `controller.quorum.bootstrap.servers`;
//! - `voter_changes.rs` — KIP-853's AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter into
//!   the core and their answers, DescribeQuorum v2's `Nodes` from the voter set.
//!
//! [`RaftCore`]: crate::core::RaftCore
//! [`RaftCore::handle_request_failed`]: crate::core::RaftCore::handle_request_failed
//! [`Output::PersistQuorumState`]: crate::core::Output::PersistQuorumState
//! [`Output::Flush`]: crate::core::Output::Flush
//! [`Channel`]: kraftd_net::Channel
//! [`serve`]: kraftd_net::serve
//! [`MetadataLog::plan_flush`]: log::MetadataLog::plan_flush

pub mod bootstrap;
mod driver_loop;
mod handle;
pub mod log;
pub mod metrics;
pub mod percentiles;
mod quorum_config;
mod raft_driver;
mod router;
/// Kafka's windowed statistics, at home in `kraftd_net` (its connection quotas use them).
pub use kraftd_net::stats;
mod voter_changes;
pub mod voters;

pub use self::bootstrap::{parse_bootstrap_servers, BootstrapServersParseError};
pub use self::handle::{AtomicAppendRefused, RaftEvent, RaftHandle};
pub use self::metrics::{DestinationMetrics, RaftMetrics};
pub use self::quorum_config::QuorumConfig;
pub use self::raft_driver::{
    DriverConfig, DriverError, RaftDriver, COMMAND_CHANNEL_CAPACITY,
    DEFAULT_CONTROLLER_LISTENER_NAME, EVENT_CHANNEL_CAPACITY, NETWORK_CHANNEL_CAPACITY,
    RECONNECT_BACKOFF_MAX_MS, RECONNECT_BACKOFF_MS,
};
pub use self::router::RaftRequestRouter;
pub use self::voters::{parse_voters, VoterEndpoint, VotersParseError};
