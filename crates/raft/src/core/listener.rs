//! What listeners (the state machine behind the driver) are told, and when: committed
//! batches in offset order, each once; the latest snapshot first when they are behind the
//! log start (KIP-630); leader changes, a new leader's own held back until listeners have
//! read up to its epoch's start. Kafka's `KafkaRaftClient.updateListenersProgress` and
//! `ListenerContext` (`fireHandleCommit`, `fireHandleSnapshot`, `maybeFireLeaderChange`).

use kraftd_protocol::records::RecordBatch;

use super::log::RaftLog;
use super::role::Role;
use super::{CommittedBatch, Output, RaftCore};

impl<L: RaftLog> RaftCore<L> {
    /// Tells listeners of a new epoch or leader. On the node that became leader the notice
    /// waits until listeners have read up to the epoch's start offset (Kafka's rule: a
    /// controller must have applied everything before its own epoch before acting as leader).
    pub(super) fn notice_leader(&mut self) {
        let notice = (self.epoch(), self.leader_id());
        if self.last_leader_notice == Some(notice) {
            return;
        }
        self.last_leader_notice = Some(notice);
        self.pending_leader_notice = None;
        if let Role::Leader(l) = self.quorum.role() {
            self.pending_leader_notice = Some((l.epoch, l.epoch_start_offset));
            self.maybe_release_leader_notice();
            return;
        }
        self.outputs.push_back(Output::LeaderChange {
            epoch: notice.0,
            leader_id: notice.1,
        });
    }

    pub(super) fn maybe_release_leader_notice(&mut self) {
        let Some((epoch, start)) = self.pending_leader_notice else {
            return;
        };
        if self.delivered_offset >= start {
            self.pending_leader_notice = None;
            self.outputs.push_back(Output::LeaderChange {
                epoch,
                leader_id: Some(self.node_id),
            });
        }
    }

    /// Hands listeners everything committed they have not had: the latest snapshot when the
    /// batches they need are gone, then each batch below the HW.
    pub(super) fn deliver_committed(&mut self) {
        if self.delivered_offset < self.log.start_offset() {
            // The batches listeners need are gone: they load the snapshot first.
            let Some(id) = self.log.latest_snapshot() else {
                return;
            };
            if id.end_offset > self.high_watermark || id.end_offset < self.log.start_offset() {
                return;
            }
            let Some((bytes, _)) = self.log.read_snapshot(id, 0, usize::MAX) else {
                return;
            };
            self.delivered_offset = id.end_offset;
            self.outputs.push_back(Output::Snapshot { id, bytes });
        }
        while self.delivered_offset < self.high_watermark {
            let bytes = self
                .log
                .read(self.delivered_offset, self.config.fetch_max_bytes);
            if bytes.is_empty() {
                return;
            }
            let mut progressed = false;
            for batch in kraftd_protocol::records::Batches::new(bytes) {
                let batch = match batch {
                    Ok(batch) => batch,
                    // A read may end inside a batch; the next round starts at its offset.
                    Err(_) if progressed => break,
                    Err(e) => {
                        // Our own committed log does not parse where listeners need it:
                        // stalling them silently would hide it, so the node stops.
                        let reason = format!(
                            "node {}: committed batch at {} does not parse: {e}",
                            self.node_id, self.delivered_offset
                        );
                        tracing::error!("{reason}");
                        self.fatal = Some(reason);
                        return;
                    }
                };
                if batch.next_offset() > self.high_watermark {
                    return;
                }
                self.deliver_batch(&batch);
                progressed = true;
            }
            if !progressed {
                return;
            }
        }
    }

    fn deliver_batch(&mut self, batch: &RecordBatch) {
        assert_eq!(
            batch.base_offset(),
            self.delivered_offset,
            "node {}: committed batches must be delivered in order",
            self.node_id
        );
        self.delivered_offset = batch.next_offset();
        self.outputs.push_back(Output::Committed(CommittedBatch {
            base_offset: batch.base_offset(),
            last_offset: batch.last_offset(),
            epoch: batch.partition_leader_epoch(),
            is_control: batch.is_control(),
            bytes: batch.as_bytes().clone(),
        }));
    }
}
