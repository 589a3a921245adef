//! AlterPartition to the active controller (Kafka's `DefaultAlterPartitionManager`): the
//! server's implementation of the replica layer's
//! [`AlterPartitionManager`](crate::replica::alter_partition::AlterPartitionManager), over the
//! [`ControllerChannel`].
//!
//! A partition leader that shrinks or expands its ISR cannot write the change itself: it asks
//! the active controller, which commits a `PartitionChangeRecord` and answers with the state
//! it committed. As in Kafka:
//!
//! - at most one change per partition is pending (queued or in flight); a second submit is
//!   refused at once with OPERATION_NOT_ATTEMPTED, because the leader must learn the outcome
//!   of the first (its partition epoch) before it can propose the next;
//! - one AlterPartition request is in flight at a time, and it carries every change queued
//!   when it is sent: changes submitted while one is in flight go together in the next, so a
//!   burst of ISR changes (a broker dying leaves hundreds of partitions) costs few requests;
//! - a partition the response leaves out stays queued and is sent again;
//! - NOT_CONTROLLER and lost connections are retried by the [`ControllerChannel`]; a request
//!   that still got no answer (timeout, REQUEST_TIMED_OUT, NETWORK_EXCEPTION) is sent again
//!   after a backoff, with whatever was queued meanwhile.
//!
//! One difference on purpose: Kafka keeps the items queued and retries every 50 ms after any
//! other top-level error (STALE_BROKER_EPOCH, CLUSTER_AUTHORIZATION_FAILED, ...). Here those
//! fail every item of the request with that code: the partition that submitted the change
//! decides whether it still makes sense (its state may have moved on with the metadata in
//! the meantime) and resubmits it if so, and a permanent error is not retried forever.
//!
//! The request goes at the highest AlterPartition version both sides speak (v3: topic ids,
//! and each ISR member's broker epoch in `NewIsrWithEpochs`, which lets the controller refuse
//! a replica that restarted since the leader saw it caught up, KIP-903). Nothing is sent
//! before the broker has registered: its epoch would be -1, which the controller answers
//! STALE_BROKER_EPOCH.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::alter_partition_request::{BrokerState, PartitionData, TopicData};
use kraftd_protocol::messages::{AlterPartitionRequest, AlterPartitionResponse};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};
use tokio::sync::{oneshot, watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::controller_channel::ControllerChannel;
use crate::replica::alter_partition::{
    AlterPartitionItem, AlterPartitionManager, AlterPartitionResult, CommittedPartitionState,
};

/// The first pause before sending again after a request got no usable answer (Kafka's
/// fixed 50 ms); it doubles up to [`ALTER_PARTITION_MAX_BACKOFF`] while failures last.
pub const ALTER_PARTITION_RETRY_BACKOFF: Duration = Duration::from_millis(50);
/// The longest pause between two attempts.
pub const ALTER_PARTITION_MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How long one attempt (with the channel's own NOT_CONTROLLER retries) may take before the
/// manager backs off and sends again (Kafka's `request.timeout.ms` default). Kafka never
/// gives up on an AlterPartition; neither do we: the items stay queued.
pub const ALTER_PARTITION_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);

/// The AlterPartition version used: the highest stable one, which the controller
/// advertises too (both are built from the same schemas).
fn alter_partition_version() -> i16 {
    supported_range(ApiKey::AlterPartition).max
}

type PartitionKey = (Uuid, i32);

/// A change waiting for its answer: queued, or part of the request in flight.
struct Pending {
    item: AlterPartitionItem,
    reply: oneshot::Sender<AlterPartitionResult>,
}

/// What `submit` and the sending task share. The map is Kafka's `unsentIsrUpdates`: an
/// item leaves it only when its answer is delivered.
struct Shared {
    pending: Mutex<HashMap<PartitionKey, Pending>>,
    queued: Notify,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PartitionKey, Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running AlterPartition manager; dropping it stops the sender, and every pending
/// receiver sees its sender dropped.
#[derive(Debug)]
pub struct DefaultAlterPartitionManager {
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("pending", &self.lock().len())
            .finish()
    }
}

impl DefaultAlterPartitionManager {
    /// Starts the sender. `broker_epoch` is the epoch of the broker's current registration
    /// (-1 until registered), read afresh for every request.
    pub fn start(
        broker_id: i32,
        broker_epoch: watch::Receiver<i64>,
        channel: ControllerChannel,
    ) -> Self {
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            queued: Notify::new(),
        });
        let sender = Sender {
            broker_id,
            broker_epoch,
            channel,
            shared: Arc::clone(&shared),
        };
        DefaultAlterPartitionManager {
            shared,
            task: tokio::spawn(sender.run()),
        }
    }

    /// How many changes wait for an answer (queued or in flight).
    pub fn pending(&self) -> usize {
        self.shared.lock().len()
    }
}

impl AlterPartitionManager for DefaultAlterPartitionManager {
    /// Queues one partition's ISR change; at most one in flight per partition (a second
    /// submit for a partition with one pending returns Err(OPERATION_NOT_ATTEMPTED)
    /// immediately, as Kafka). Changes submitted close together go in one AlterPartition
    /// request (Kafka batches everything queued while one request is in flight). The
    /// returned receiver gets that partition's result.
    fn submit(&self, item: AlterPartitionItem) -> oneshot::Receiver<AlterPartitionResult> {
        let (reply, rx) = oneshot::channel();
        let key = (item.topic_id, item.partition);
        {
            let mut pending = self.shared.lock();
            if pending.contains_key(&key) {
                let _ = reply.send(Err(ErrorCode::OperationNotAttempted));
                return rx;
            }
            pending.insert(key, Pending { item, reply });
        }
        self.shared.queued.notify_one();
        rx
    }
}

impl Drop for DefaultAlterPartitionManager {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The task that sends the queued changes, one request at a time.
struct Sender {
    broker_id: i32,
    broker_epoch: watch::Receiver<i64>,
    channel: ControllerChannel,
    shared: Arc<Shared>,
}

/// What became of one request.
enum Outcome {
    /// Answered (per partition, or as a whole with a final error): send what is left now.
    Answered,
    /// No usable answer: back off, then send again.
    Retry,
}

impl Sender {
    async fn run(mut self) {
        let mut backoff = ALTER_PARTITION_RETRY_BACKOFF;
        loop {
            // Register interest before looking, so a submit in between is not missed.
            let queued = self.shared.queued.notified();
            if self.shared.lock().is_empty() {
                queued.await;
                continue;
            }
            drop(queued);
            // No request before registration: the controller would refuse epoch -1.
            let epoch = match self.broker_epoch.wait_for(|e| *e >= 0).await {
                Ok(e) => *e,
                Err(_) => return, // the lifecycle manager is gone: so is the broker
            };
            // Everything queued now goes, in a stable order (by topic id, then partition).
            let items: Vec<AlterPartitionItem> = {
                let pending = self.shared.lock();
                let mut items: Vec<_> = pending.values().map(|p| p.item.clone()).collect();
                items.sort_by_key(|i| (i.topic_id.0, i.partition));
                items
            };
            match self.send(epoch, &items).await {
                Outcome::Answered => backoff = ALTER_PARTITION_RETRY_BACKOFF,
                Outcome::Retry => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(ALTER_PARTITION_MAX_BACKOFF);
                }
            }
        }
    }

    async fn send(&self, broker_epoch: i64, items: &[AlterPartitionItem]) -> Outcome {
        let version = alter_partition_version();
        let request = build_request(self.broker_id, broker_epoch, version, items);
        debug!(
            broker = self.broker_id,
            partitions = items.len(),
            "sending AlterPartition"
        );
        let deadline = Instant::now() + ALTER_PARTITION_ATTEMPT_TIMEOUT;
        let not_controller = |r: &ResponseBody| matches!(r, ResponseBody::AlterPartition(a) if a.error_code == ErrorCode::NotController.code());
        let response = match self
            .channel
            .send(
                Some(version),
                RequestBody::AlterPartition(request),
                deadline,
                not_controller,
            )
            .await
        {
            Ok(ResponseBody::AlterPartition(r)) => r,
            Ok(other) => {
                warn!(?other, "unexpected answer to AlterPartition; retrying");
                return Outcome::Retry;
            }
            Err(e) => {
                warn!(broker = self.broker_id, error = %e, "AlterPartition got no answer; retrying");
                return Outcome::Retry;
            }
        };
        self.complete(items, response)
    }

    /// Delivers the answers of one response and removes the answered items from the queue.
    fn complete(&self, items: &[AlterPartitionItem], response: AlterPartitionResponse) -> Outcome {
        let top =
            ErrorCode::from_code(response.error_code).unwrap_or(ErrorCode::UnknownServerError);
        if response.error_code != 0 {
            if matches!(
                top,
                ErrorCode::NotController | ErrorCode::RequestTimedOut | ErrorCode::NetworkException
            ) {
                debug!(code = ?top, "AlterPartition not handled; retrying");
                return Outcome::Retry;
            }
            warn!(broker = self.broker_id, code = ?top, "AlterPartition refused as a whole");
            let mut pending = self.shared.lock();
            for item in items {
                if let Some(p) = pending.remove(&(item.topic_id, item.partition)) {
                    let _ = p.reply.send(Err(top));
                }
            }
            return Outcome::Answered;
        }
        let mut answers: HashMap<PartitionKey, AlterPartitionResult> = HashMap::new();
        for topic in response.topics {
            for p in topic.partitions {
                let answer = match ErrorCode::from_code(p.error_code) {
                    _ if p.error_code == 0 && valid_recovery_state(p.leader_recovery_state) => {
                        Ok(CommittedPartitionState {
                            leader_id: p.leader_id,
                            leader_epoch: p.leader_epoch,
                            isr: p.isr,
                            leader_recovery_state: p.leader_recovery_state,
                            partition_epoch: p.partition_epoch,
                        })
                    }
                    _ if p.error_code == 0 => {
                        warn!(
                            state = p.leader_recovery_state,
                            "controller answered an unknown leader recovery state"
                        );
                        Err(ErrorCode::UnknownServerError)
                    }
                    Some(code) => Err(code),
                    None => Err(ErrorCode::UnknownServerError),
                };
                answers.insert((topic.topic_id, p.partition_index), answer);
            }
        }
        // Go by what was sent, not what came back: a partition left out stays queued and is
        // sent again with the next request.
        let mut pending = self.shared.lock();
        let mut left_out = false;
        for item in items {
            let key = (item.topic_id, item.partition);
            match answers.remove(&key) {
                Some(answer) => {
                    if let Some(p) = pending.remove(&key) {
                        let _ = p.reply.send(answer);
                    }
                }
                None => {
                    left_out = true;
                    warn!(
                        topic_id = ?item.topic_id,
                        partition = item.partition,
                        "partition sent but not in the AlterPartition response; sending again"
                    );
                }
            }
        }
        // Kafka resends a left-out partition at once; a controller that keeps leaving it out
        // would make that a busy loop, so it waits for the backoff first.
        if left_out {
            Outcome::Retry
        } else {
            Outcome::Answered
        }
    }
}

/// Kafka's `LeaderRecoveryState`: 0 recovered, 1 recovering.
fn valid_recovery_state(state: i8) -> bool {
    matches!(state, 0 | 1)
}

/// The request for `items`, grouped by topic. From v3 the ISR carries broker epochs
/// (`NewIsrWithEpochs`); before, only ids (`NewIsr`).
fn build_request(
    broker_id: i32,
    broker_epoch: i64,
    version: i16,
    items: &[AlterPartitionItem],
) -> AlterPartitionRequest {
    let mut topics: BTreeMap<[u8; 16], TopicData> = BTreeMap::new();
    for item in items {
        let topic = topics.entry(item.topic_id.0).or_insert_with(|| TopicData {
            topic_id: item.topic_id,
            ..Default::default()
        });
        let mut partition = PartitionData {
            partition_index: item.partition,
            leader_epoch: item.leader_epoch,
            leader_recovery_state: item.leader_recovery_state,
            partition_epoch: item.partition_epoch,
            ..Default::default()
        };
        if version >= 3 {
            partition.new_isr_with_epochs = item
                .new_isr
                .iter()
                .map(|&(broker_id, broker_epoch)| BrokerState {
                    broker_id,
                    broker_epoch,
                    ..Default::default()
                })
                .collect();
        } else {
            partition.new_isr = item.new_isr.iter().map(|&(id, _)| id).collect();
        }
        topic.partitions.push(partition);
    }
    AlterPartitionRequest {
        broker_id,
        broker_epoch,
        topics: topics.into_values().collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(topic: u8, partition: i32) -> AlterPartitionItem {
        AlterPartitionItem {
            topic_id: Uuid([topic; 16]),
            partition,
            leader_epoch: 3,
            new_isr: vec![(1, 10), (2, -1)],
            leader_recovery_state: 0,
            partition_epoch: 7,
        }
    }

    #[test]
    fn request_groups_by_topic_and_carries_broker_epochs_from_v3() {
        let items = [item(1, 0), item(2, 0), item(1, 1)];
        let r = build_request(5, 42, 3, &items);
        assert_eq!((r.broker_id, r.broker_epoch), (5, 42));
        assert_eq!(r.topics.len(), 2);
        assert_eq!(r.topics[0].partitions.len(), 2);
        let p = &r.topics[0].partitions[0];
        assert!(p.new_isr.is_empty());
        assert_eq!(
            p.new_isr_with_epochs
                .iter()
                .map(|b| (b.broker_id, b.broker_epoch))
                .collect::<Vec<_>>(),
            vec![(1, 10), (2, -1)]
        );
        let v2 = build_request(5, 42, 2, &items);
        assert_eq!(v2.topics[0].partitions[0].new_isr, vec![1, 2]);
        assert!(v2.topics[0].partitions[0].new_isr_with_epochs.is_empty());
    }
}
