//! The storage engine under both the Raft metadata log (`__cluster_metadata`) and every data
//! partition: segments of Kafka RecordBatch v2 bytes named by base offset, offset and time
//! indexes, the leader-epoch checkpoint, snapshots (`<end offset>-<epoch>.checkpoint`), the
//! clean-shutdown marker and crash recovery. It is the only crate that opens data files.
//!
//! Entry point: [`Log::open`]. A partition's directory looks like Kafka's:
//!
//! ```text
//! 00000000000000000000.log         RecordBatch v2 bytes, as appended
//! 00000000000000000000.index       offset index (relative offset u32 -> position u32)
//! 00000000000000000000.timeindex   time index (timestamp i64 -> relative offset u32)
//! 00000000000000001000.log         ... one triple per segment, named by base offset
//! leader-epoch-checkpoint          "0\n<count>\n<epoch> <start offset>\n..."
//! 00000000000000000900-0000000003.checkpoint   a snapshot (end offset, epoch)
//! ```
//!
//! and the log-directory root holds `.kafka_cleanshutdown` between an orderly shutdown and
//! the next start ([`write_clean_shutdown_marker`], [`take_clean_shutdown_marker`]).
//!
//! How the replication layers use it:
//!
//! - startup: [`take_clean_shutdown_marker`] for the log directory, then per log
//!   [`Log::open_after_clean_shutdown`] if it returned `Some` (no recovery scan), else
//!   [`Log::open`]; shutdown: [`Log::close`] every log, then [`write_clean_shutdown_marker`];
//! - leader: [`Log::append_as_leader`] (assigns offsets, stamps the epoch, validates);
//!   follower: [`Log::append_as_follower`] (checks contiguity and epochs), then
//!   [`Log::truncate_to`] on divergence, [`Log::end_offset_for_epoch`] to find it, and
//!   [`Log::truncate_fully_and_start_at`] after installing a snapshot;
//! - fetch: [`Log::read`], or [`Log::plan_read`] under the owner's lock and
//!   [`PendingRead::execute`] outside it; ListOffsets: [`Log::offset_for_timestamp`];
//! - durability: [`LogConfig::flush_messages`] / [`LogConfig::flush_ms`] per log
//!   ([`LogConfig::metadata_log`] flushes every append), [`Log::flush`] (or
//!   [`Log::plan_flush`], [`PendingFlush::execute`] on another thread, [`Log::complete_flush`]),
//!   [`Log::maybe_flush`] from a tick, [`Log::flushed_offset`];
//! - housekeeping: [`Log::apply_retention`], [`Log::delete_segments_before`],
//!   [`Log::roll`], [`Log::verify`]; snapshots: [`Log::create_snapshot`],
//!   [`Log::commit_snapshot`], [`Log::open_snapshot`],
//!   [`Log::delete_snapshots_before_log_start`].
//!
//! Invariants: segments are contiguous (each starts where the previous ends) and only the
//! active (last) one can hold unflushed data; leader-epoch cache entries describe batches
//! in the log (epochs increase, each entry starts below the log end offset); nothing read
//! from disk can make this crate panic: it is cut (the active segment's torn tail) or
//! reported ([`LogError::Corrupt`] with file and position). Everything is bounded: a batch
//! by `max.message.bytes`, a read by [`config::MAX_READ_BYTES`], the open segment files of
//! all logs by `log.segment.open.files.max` ([`handles::configure`],
//! [`config::DEFAULT_SEGMENT_OPEN_FILES_MAX`]).

pub mod checkpoint;
pub mod cleaner;
pub mod clock;
pub mod config;
pub mod epoch;
pub mod error;
pub mod flush_timer;
mod fsutil;
pub mod handles;
mod index;
mod log;
pub mod log_dir_failure;
pub mod log_manager;
pub mod producer_state;
pub mod quorum_state;
mod segment;
pub mod shutdown;
pub mod snapshot;

pub use config::{LogConfig, TopicCompression};
pub use epoch::{EpochEntry, LeaderEpochCache, LEADER_EPOCH_CHECKPOINT_FILE};
pub use error::{LogError, Result};
pub use log::{
    txn_marker_of, AppendInfo, CleanCommit, CompletedFlush, Log, LogStats, PendingFlush,
    PendingRead, ReadResult, TxnMarker,
};
pub use log_dir_failure::LogDirFailureChannel;
pub use segment::{encode_aborted_txn, ABORTED_TXN_ENTRY_BYTES, TXN_INDEX_FILE_SUFFIX};
pub use shutdown::{take_clean_shutdown_marker, write_clean_shutdown_marker, CLEAN_SHUTDOWN_FILE};
pub use snapshot::{RawSnapshotReader, RawSnapshotWriter, SnapshotId};
