//! `AssignmentsManager` (KIP-858, Kafka's `org.apache.kafka.server.AssignmentsManager`):
//! tells the active controller in which log directory each replica of this broker lives,
//! with AssignReplicasToDirs, so that the partitions' `Directories` in the metadata name
//! the real directory (a new replica on a broker with several `log.dirs` starts UNASSIGNED;
//! a replica moved by AlterReplicaLogDirs changes directory). The replica layer reports
//! through [`DirectoryEventHandler`]; this is the server's implementation, over a
//! [`ControllerChannel`] of its own.
//!
//! As Kafka's:
//! - an assignment waits in `ready`, one per partition: a newer one for the same partition
//!   replaces it (deduplicated);
//! - one request is in flight at a time, with at most [`MAX_ASSIGNMENTS_PER_REQUEST`]
//!   assignments; those whose partition is gone, or no longer has a replica here in the
//!   metadata, are dropped before sending (`Assignment.valid`);
//! - a send waits [`ASSIGNMENTS_INITIAL_BACKOFF`] after the first assignment so that those
//!   of one metadata delta go together, at once when more than a request's worth wait, and
//!   after a request that got no usable answer (timeout, top-level error) the backoff
//!   doubles per consecutive failure up to [`ASSIGNMENTS_MAX_BACKOFF`]
//!   (`AssignmentsManagerDeadlineFunction` over `ExponentialBackoff(100 ms, 2, 10 s)`);
//! - the assignments of a failed request, and each one answered with an error, go back to
//!   `ready` unless a newer one for the partition came meanwhile.
//!
//! Unlike Kafka's, the backoff has no 2% jitter (one broker's single request stream does
//! not need decorrelating), and nothing is sent before the broker has registered (its epoch
//! would be -1, which the controller refuses as stale).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::assign_replicas_to_dirs_request::{
    DirectoryData, PartitionData, TopicData,
};
use kraftd_protocol::messages::{AssignReplicasToDirsRequest, AssignReplicasToDirsResponse};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::controller_channel::ControllerChannel;
use crate::metadata::MetadataCache;

/// The most assignments one request carries (Kafka's
/// `AssignReplicasToDirsRequest.MAX_ASSIGNMENTS_PER_REQUEST`).
pub const MAX_ASSIGNMENTS_PER_REQUEST: usize = 2250;
/// The batching delay, and the first backoff after a failure (Kafka's `STANDARD_BACKOFF`
/// initial interval).
pub const ASSIGNMENTS_INITIAL_BACKOFF: Duration = Duration::from_millis(100);
/// The longest backoff after consecutive failures.
pub const ASSIGNMENTS_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// How long one request (with the channel's own NOT_CONTROLLER retries) may take before it
/// counts as failed (`request.timeout.ms`'s default).
const ASSIGNMENTS_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(30);
/// Failures of one assignment are logged once it has waited this long (Kafka's
/// `MIN_NOISY_FAILURE_INTERVAL_NS`); before, at debug level.
const MIN_NOISY_FAILURE_INTERVAL: Duration = Duration::from_secs(120);

type PartitionKey = (Uuid, i32);

/// One replica's directory, waiting to be sent.
#[derive(Debug, Clone)]
struct Assignment {
    directory_id: Uuid,
    submitted: Instant,
}

/// What the handle and the sending task share.
#[derive(Debug, Default)]
struct Shared {
    ready: Mutex<HashMap<PartitionKey, Assignment>>,
    in_flight: Mutex<usize>,
    queued: Notify,
}

impl Shared {
    fn ready(&self) -> std::sync::MutexGuard<'_, HashMap<PartitionKey, Assignment>> {
        self.ready.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running assignments manager; dropping it stops the sender.
#[derive(Debug)]
pub struct AssignmentsManager {
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl AssignmentsManager {
    /// Starts the sender. `broker_epoch` is the epoch of the broker's current registration
    /// (-1 until registered); `cache` the metadata the assignments are checked against.
    pub fn start(
        broker_id: i32,
        broker_epoch: watch::Receiver<i64>,
        channel: ControllerChannel,
        cache: MetadataCache,
    ) -> Arc<Self> {
        let shared = Arc::new(Shared::default());
        let sender = Sender {
            broker_id,
            broker_epoch,
            channel,
            cache,
            shared: Arc::clone(&shared),
        };
        Arc::new(AssignmentsManager {
            shared,
            task: tokio::spawn(sender.run()),
        })
    }

    /// Assignments queued or in flight (Kafka's `QueuedReplicaToDirAssignments`).
    pub fn num_pending(&self) -> usize {
        let in_flight = *self
            .shared
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        self.shared.ready().len() + in_flight
    }
}

impl AssignmentsManager {
    /// Queues the replica's directory for the controller (the assignment half of the
    /// broker's [`DirectoryEventHandler`](crate::replica::directory_events::DirectoryEventHandler),
    /// `lifecycle::BrokerDirectoryEvents`).
    pub fn handle_assignment(
        &self,
        topic_id: Uuid,
        partition: i32,
        directory_id: Uuid,
        reason: &str,
    ) {
        debug!(%topic_id, partition, %directory_id, reason, "replica directory queued for the controller");
        self.shared.ready().insert(
            (topic_id, partition),
            Assignment {
                directory_id,
                submitted: Instant::now(),
            },
        );
        self.shared.queued.notify_one();
    }
}

impl Drop for AssignmentsManager {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The pause before the next send (Kafka's `AssignmentsManagerDeadlineFunction`): the full
/// backoff after failures, none when more than a request's worth waits, else the batching
/// delay.
fn send_delay(previous_global_failures: u32, num_ready: usize) -> Duration {
    if previous_global_failures > 0 {
        let factor = 2u32.saturating_pow(previous_global_failures.min(16));
        ASSIGNMENTS_INITIAL_BACKOFF
            .saturating_mul(factor)
            .min(ASSIGNMENTS_MAX_BACKOFF)
    } else if num_ready > MAX_ASSIGNMENTS_PER_REQUEST {
        Duration::ZERO
    } else {
        ASSIGNMENTS_INITIAL_BACKOFF
    }
}

/// Whether an assignment still means something (Kafka's `Assignment.valid`): the partition
/// exists and this broker is one of its replicas.
fn valid(image: &MetadataImage, broker_id: i32, key: PartitionKey) -> bool {
    image
        .topics
        .partition(&key.0, key.1)
        .is_some_and(|p| p.replicas.contains(&broker_id))
}

/// The request for `batch`, grouped by directory then topic (Kafka's `buildRequestData`),
/// in a stable order.
fn build_request(
    broker_id: i32,
    broker_epoch: i64,
    batch: &BTreeMap<PartitionKey, Assignment>,
) -> AssignReplicasToDirsRequest {
    let mut by_dir: BTreeMap<Uuid, BTreeMap<Uuid, Vec<i32>>> = BTreeMap::new();
    for ((topic_id, partition), a) in batch {
        by_dir
            .entry(a.directory_id)
            .or_default()
            .entry(*topic_id)
            .or_default()
            .push(*partition);
    }
    AssignReplicasToDirsRequest {
        broker_id,
        broker_epoch,
        directories: by_dir
            .into_iter()
            .map(|(id, topics)| DirectoryData {
                id,
                topics: topics
                    .into_iter()
                    .map(|(topic_id, partitions)| TopicData {
                        topic_id,
                        partitions: partitions
                            .into_iter()
                            .map(|partition_index| PartitionData {
                                partition_index,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// The task that sends the ready assignments, one request at a time.
struct Sender {
    broker_id: i32,
    broker_epoch: watch::Receiver<i64>,
    channel: ControllerChannel,
    cache: MetadataCache,
    shared: Arc<Shared>,
}

impl Sender {
    async fn run(mut self) {
        let mut previous_global_failures = 0u32;
        loop {
            // Register interest before looking, so an assignment in between is not missed.
            let queued = self.shared.queued.notified();
            if self.shared.ready().is_empty() {
                queued.await;
                continue;
            }
            drop(queued);
            let num_ready = self.shared.ready().len();
            tokio::time::sleep(send_delay(previous_global_failures, num_ready)).await;
            let epoch = match self.broker_epoch.wait_for(|e| *e >= 0).await {
                Ok(e) => *e,
                Err(_) => return, // the lifecycle manager is gone: so is the broker
            };
            let batch = self.take_batch();
            if batch.is_empty() {
                continue;
            }
            self.set_in_flight(batch.len());
            let succeeded = self.send(epoch, &batch).await;
            self.set_in_flight(0);
            previous_global_failures = if succeeded {
                0
            } else {
                previous_global_failures.saturating_add(1)
            };
        }
    }

    fn set_in_flight(&self, n: usize) {
        *self
            .shared
            .in_flight
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = n;
    }

    /// Up to a request's worth of ready assignments, less those no longer valid.
    fn take_batch(&self) -> BTreeMap<PartitionKey, Assignment> {
        let image = self.cache.image();
        let mut ready = self.shared.ready();
        let mut keys: Vec<PartitionKey> = ready.keys().copied().collect();
        keys.sort_unstable_by_key(|(t, p)| (t.0, *p));
        let mut batch = BTreeMap::new();
        let mut invalid = 0usize;
        for key in keys {
            if batch.len() >= MAX_ASSIGNMENTS_PER_REQUEST {
                break;
            }
            let Some(assignment) = ready.remove(&key) else {
                continue;
            };
            if valid(&image, self.broker_id, key) {
                batch.insert(key, assignment);
            } else {
                invalid += 1;
            }
        }
        info!(
            sending = batch.len(),
            invalidated = invalid,
            "sending replica directory assignments"
        );
        batch
    }

    /// Puts an assignment back unless a newer one for its partition came meanwhile.
    fn requeue(&self, key: PartitionKey, assignment: &Assignment) {
        self.shared
            .ready()
            .entry(key)
            .or_insert_with(|| assignment.clone());
    }

    /// Sends one request; false when it got no usable answer (a global failure).
    async fn send(&self, broker_epoch: i64, batch: &BTreeMap<PartitionKey, Assignment>) -> bool {
        let request = build_request(self.broker_id, broker_epoch, batch);
        let deadline = Instant::now() + ASSIGNMENTS_ATTEMPT_TIMEOUT;
        let not_controller = |r: &ResponseBody| {
            matches!(r, ResponseBody::AssignReplicasToDirs(a)
                if a.error_code == ErrorCode::NotController.code())
        };
        let answer = self
            .channel
            .send(
                None,
                RequestBody::AssignReplicasToDirs(request),
                deadline,
                not_controller,
            )
            .await;
        let response = match answer {
            Ok(ResponseBody::AssignReplicasToDirs(r)) if r.error_code == 0 => r,
            other => {
                let error = match other {
                    Ok(ResponseBody::AssignReplicasToDirs(r)) => format!(
                        "Response-level error: {:?}",
                        ErrorCode::from_code(r.error_code)
                    ),
                    Ok(_) => "unexpected response type".to_string(),
                    Err(e) => e.to_string(),
                };
                warn!(
                    assignments = batch.len(),
                    error, "replica directory assignments failed; retrying"
                );
                for (key, assignment) in batch {
                    self.requeue(*key, assignment);
                }
                return false;
            }
        };
        self.handle_response(batch, response);
        true
    }

    /// Each partition's answer: done, or back to `ready` after an error. A partition the
    /// controller left out is sent again too.
    fn handle_response(
        &self,
        batch: &BTreeMap<PartitionKey, Assignment>,
        response: AssignReplicasToDirsResponse,
    ) {
        let mut answered: HashMap<PartitionKey, i16> = HashMap::new();
        for dir in &response.directories {
            for topic in &dir.topics {
                for p in &topic.partitions {
                    answered.insert((topic.topic_id, p.partition_index), p.error_code);
                }
            }
        }
        let now = Instant::now();
        for (key, assignment) in batch {
            match answered.get(key) {
                Some(0) => {}
                error => {
                    let error = error.map(|c| ErrorCode::from_code(*c));
                    if now.duration_since(assignment.submitted) > MIN_NOISY_FAILURE_INTERVAL {
                        warn!(topic_id = %key.0, partition = key.1, ?error, "assigning a replica's directory failed; retrying");
                    } else {
                        debug!(topic_id = %key.0, partition = key.1, ?error, "assigning a replica's directory failed; retrying");
                    }
                    self.requeue(*key, assignment);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment(dir: u8) -> Assignment {
        Assignment {
            directory_id: Uuid([dir; 16]),
            submitted: Instant::now(),
        }
    }

    #[test]
    fn the_delay_batches_then_backs_off_exponentially() {
        assert_eq!(send_delay(0, 1), ASSIGNMENTS_INITIAL_BACKOFF);
        assert_eq!(
            send_delay(0, MAX_ASSIGNMENTS_PER_REQUEST + 1),
            Duration::ZERO
        );
        assert_eq!(send_delay(1, 1), Duration::from_millis(200));
        assert_eq!(send_delay(3, 1), Duration::from_millis(800));
        assert_eq!(send_delay(1, 10_000), Duration::from_millis(200));
        assert_eq!(send_delay(40, 1), ASSIGNMENTS_MAX_BACKOFF);
    }

    #[test]
    fn a_request_groups_partitions_by_directory_then_topic() {
        let (t1, t2) = (Uuid([1; 16]), Uuid([2; 16]));
        let batch: BTreeMap<PartitionKey, Assignment> = [
            ((t1, 0), assignment(7)),
            ((t1, 1), assignment(8)),
            ((t2, 0), assignment(7)),
            ((t1, 2), assignment(7)),
        ]
        .into_iter()
        .collect();
        let request = build_request(3, 42, &batch);
        assert_eq!((request.broker_id, request.broker_epoch), (3, 42));
        type Shape = Vec<(Uuid, Vec<(Uuid, Vec<i32>)>)>;
        let shape: Shape = request
            .directories
            .iter()
            .map(|d| {
                let topics = d
                    .topics
                    .iter()
                    .map(|t| {
                        let ps = t.partitions.iter().map(|p| p.partition_index).collect();
                        (t.topic_id, ps)
                    })
                    .collect();
                (d.id, topics)
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (Uuid([7; 16]), vec![(t1, vec![0, 2]), (t2, vec![0])]),
                (Uuid([8; 16]), vec![(t1, vec![1])]),
            ]
        );
    }
}
