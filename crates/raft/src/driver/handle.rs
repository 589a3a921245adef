//! [`RaftHandle`]: how a node's state machines (the controller, and a broker sharing this Raft
//! client) talk to a running driver, as Kafka's callers use its `RaftClient`: propose, schedule
//! an atomic append, resign, read committed data, create a snapshot, subscribe to
//! [`RaftEvent`]s and watch [`RaftMetrics`]. The handle only queues [`Command`]s and
//! [`Scheduled`] appends; the driver loop (`driver_loop.rs`) acts on them.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use kraftd_log::SnapshotId;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::time::Instant;

use super::metrics::RaftMetrics;
use super::raft_driver::DriverError;
use crate::core::log::LogError;
use crate::core::{CommittedBatch, ProposeError, VoterChangeError};

/// What subscribers see, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum RaftEvent {
    /// A batch below the high watermark.
    Committed(CommittedBatch),
    /// The epoch or its leader changed. `log_end_offset` is the log's end when the event
    /// was sent: on a new leader, just past its epoch-start record, where its state machine's
    /// first write will land.
    LeaderChange {
        epoch: i32,
        leader_id: Option<i32>,
        log_end_offset: i64,
    },
    /// This node, leader in `epoch`, appended control records of its own (a voter change's
    /// VotersRecord, the `kraft.version` upgrade) at `base_offset..end_offset`, right after
    /// the state machine's last append. A state machine that predicts its offsets
    /// (`schedule_atomic_append`) writes after them; Kafka's asks the Raft client for the
    /// offset instead, which amounts to the same.
    LeaderAppended {
        epoch: i32,
        base_offset: i64,
        end_offset: i64,
    },
    /// Load this committed snapshot first: the batches below its end offset are gone
    /// (KIP-630); `Committed` batches continue from its end offset.
    Snapshot { id: SnapshotId, bytes: Bytes },
}

/// Talks to a running driver; cheap to clone.
#[derive(Debug, Clone)]
pub struct RaftHandle {
    pub(super) node_id: i32,
    pub(super) commands: mpsc::Sender<Command>,
    /// [`RaftHandle::schedule_atomic_append`]s, in order. Unbounded so the controller's
    /// synchronous event loop never blocks on it; the controller bounds it by its own queue.
    pub(super) atomic: mpsc::UnboundedSender<Scheduled>,
    /// Weak: the driver loop holds the only strong sender, so the channel closes when it
    /// stops.
    pub(super) events: broadcast::WeakSender<RaftEvent>,
    pub(super) metrics: watch::Receiver<RaftMetrics>,
    /// Why the driver loop stopped on its own, set before the event channel closes.
    pub(super) stop_reason: Arc<OnceLock<String>>,
}

#[derive(Debug)]
pub(super) enum Command {
    Propose {
        records: Vec<Bytes>,
        /// Answer once committed rather than once appended.
        wait_for_commit: bool,
        reply: oneshot::Sender<Result<(i64, i64), ProposeError>>,
    },
    ReadCommitted {
        from: i64,
        max_bytes: usize,
        reply: oneshot::Sender<Bytes>,
    },
    CreateSnapshot {
        id: SnapshotId,
        bytes: Bytes,
        reply: oneshot::Sender<Result<i64, LogError>>,
    },
    UpgradeKRaftVersion {
        version: i16,
        validate_only: bool,
        reply: oneshot::Sender<Result<bool, VoterChangeError>>,
    },
    Shutdown,
}

/// What the controller's synchronous event loop hands the driver, in order.
#[derive(Debug)]
pub(super) enum Scheduled {
    Append(AtomicAppend),
    /// Give up leadership of this epoch (Kafka's `RaftClient.resign`).
    Resign(i32),
}

/// A batch that must land at exactly `base_offset` in `epoch` (Kafka's
/// `scheduleAtomicAppend`), or not at all.
#[derive(Debug)]
pub(super) struct AtomicAppend {
    pub(super) epoch: i32,
    pub(super) base_offset: i64,
    pub(super) records: Vec<Bytes>,
    /// Told when the append is refused; success is seen as the batch committing.
    pub(super) on_refused: mpsc::UnboundedSender<AtomicAppendRefused>,
}

/// An atomic append the driver refused: the proposer must give up leadership of `epoch`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("append at {base_offset} in epoch {epoch} refused: {reason}")]
pub struct AtomicAppendRefused {
    pub epoch: i32,
    pub base_offset: i64,
    pub reason: String,
}

impl RaftHandle {
    pub fn node_id(&self) -> i32 {
        self.node_id
    }

    /// Appends `records` as one batch if this node leads; returns its first and last
    /// offset. Committed once the high watermark passes the last one.
    pub async fn propose(&self, records: Vec<Bytes>) -> Result<(i64, i64), DriverError> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::Propose {
                records,
                wait_for_commit: false,
                reply,
            })
            .await
            .map_err(|_| DriverError::Stopped)?;
        Ok(rx.await.map_err(|_| DriverError::Stopped)??)
    }

    /// [`RaftHandle::propose`], answered once the batch is committed (the leader's high
    /// watermark passed it). If this node stops leading first, the answer is
    /// [`ProposeError::NotLeader`]: the batch may still commit under the next leader, or be
    /// truncated, as a Kafka controller's pending write is after a leader change.
    pub async fn propose_committed(&self, records: Vec<Bytes>) -> Result<(i64, i64), DriverError> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::Propose {
                records,
                wait_for_commit: true,
                reply,
            })
            .await
            .map_err(|_| DriverError::Stopped)?;
        Ok(rx.await.map_err(|_| DriverError::Stopped)??)
    }

    /// Whole committed batches from `from` (a batch boundary), up to about `max_bytes`
    /// (at least one batch when any is committed there).
    pub async fn read_committed(&self, from: i64, max_bytes: usize) -> Result<Bytes, DriverError> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::ReadCommitted {
                from,
                max_bytes,
                reply,
            })
            .await
            .map_err(|_| DriverError::Stopped)?;
        rx.await.map_err(|_| DriverError::Stopped)
    }

    /// Appends `records` as one batch at exactly `base_offset` in `epoch`, without waiting
    /// (Kafka's `scheduleAtomicAppend`): the QuorumController predicts its offsets (a broker
    /// epoch is the offset of its registration record) and proposes from a synchronous event
    /// loop. Appends are applied in call order; one that cannot land where asked (another
    /// epoch, another end offset, not the leader) is refused whole and reported on
    /// `on_refused`, and so is everything after it in that epoch, since its base offset no
    /// longer matches. Returns the batch's predicted first and last offset.
    pub fn schedule_atomic_append(
        &self,
        epoch: i32,
        base_offset: i64,
        records: Vec<Bytes>,
        on_refused: mpsc::UnboundedSender<AtomicAppendRefused>,
    ) -> Result<(i64, i64), DriverError> {
        if records.is_empty() {
            return Err(ProposeError::BadRecordCount(0).into());
        }
        let last = base_offset + records.len() as i64 - 1;
        self.atomic
            .send(Scheduled::Append(AtomicAppend {
                epoch,
                base_offset,
                records,
                on_refused,
            }))
            .map_err(|_| DriverError::Stopped)?;
        Ok((base_offset, last))
    }

    /// Resigns leadership of `epoch` if this node still holds it (Kafka's `resign`): the
    /// controller gives up after a refused append; the voters elect again.
    pub fn resign(&self, epoch: i32) {
        let _ = self.atomic.send(Scheduled::Resign(epoch));
    }

    /// Stores a snapshot of the state machine after every committed record below
    /// `id.end_offset` (KIP-630) and deletes the log before it; returns the new log start
    /// offset. Fetchers below it are then sent the snapshot.
    pub async fn create_snapshot(&self, id: SnapshotId, bytes: Bytes) -> Result<i64, DriverError> {
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::CreateSnapshot { id, bytes, reply })
            .await
            .map_err(|_| DriverError::Stopped)?;
        rx.await
            .map_err(|_| DriverError::Stopped)?
            .map_err(DriverError::Snapshot)
    }

    /// Upgrades `kraft.version` (KIP-853, Kafka 4.1+'s `RaftClient.upgradeKRaftVersion`):
    /// as the leader, appends KRaftVersionRecord `version` and a VotersRecord of the static
    /// voters with the directory ids their fetches carried. `Ok(false)`: nothing appended
    /// (already at `version`, or `validate_only`); refused with Kafka's error while a voter's
    /// directory id is unknown, on a downgrade, or when this node does not lead.
    pub async fn upgrade_kraft_version(
        &self,
        version: i16,
        validate_only: bool,
    ) -> Result<bool, VoterChangeError> {
        let stopped = || VoterChangeError {
            code: kraftd_protocol::ErrorCode::NotLeaderOrFollower,
            message: "the raft driver has stopped".to_string(),
        };
        let (reply, rx) = oneshot::channel();
        self.commands
            .send(Command::UpgradeKRaftVersion {
                version,
                validate_only,
                reply,
            })
            .await
            .map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }

    /// Committed batches and leader changes from now on; once the driver stopped, a
    /// receiver that is closed already.
    pub fn subscribe(&self) -> broadcast::Receiver<RaftEvent> {
        match self.events.upgrade() {
            Some(events) => events.subscribe(),
            None => broadcast::channel(1).1,
        }
    }

    /// Why the driver stopped on its own (a disk failure of the metadata log naming the
    /// directory and operation, or a fatal core error); `None` while it runs and after an
    /// orderly shutdown or a kill. Set before the event channel closes, so a subscriber
    /// that sees it close can read it.
    pub fn stop_reason(&self) -> Option<String> {
        self.stop_reason.get().cloned()
    }

    /// The latest metrics snapshot, and a way to wait for changes.
    pub fn metrics(&self) -> watch::Receiver<RaftMetrics> {
        self.metrics.clone()
    }

    /// Waits until `condition` holds for the metrics, or `deadline` passes (`false`).
    pub async fn wait_for(
        &self,
        deadline: Instant,
        mut condition: impl FnMut(&RaftMetrics) -> bool,
    ) -> bool {
        let mut rx = self.metrics.clone();
        tokio::time::timeout_at(deadline, async {
            loop {
                if condition(&rx.borrow_and_update()) {
                    return true;
                }
                if rx.changed().await.is_err() {
                    return false;
                }
            }
        })
        .await
        .unwrap_or(false)
    }
}
