//! The group coordinator on the runtime (Kafka's `GroupCoordinatorService`): the generic
//! [`CoordinatorService`] over the group shard, which routes each group to the shard of its
//! `__consumer_offsets` partition, and what only the group coordinator does: the share-group
//! state initialization a shard hands back as work goes to the share coordinator through the
//! [`Persister`], and its answer back to the shard (Kafka's `persisterInitialize`).

use std::sync::Arc;

use kraftd_coordinator::group::consumer::Partitions;
use kraftd_coordinator::group::{GroupCoordinatorConfig, GroupCoordinatorShard, GroupWork};
use kraftd_protocol::messages::{
    InitializeShareGroupStateRequest, InitializeShareGroupStateResponse,
};
use tracing::warn;

use super::publisher::CoordinatorPublisher;
use super::runtime::WorkHandler;
use super::service::CoordinatorService;
use crate::metadata::MetadataCache;
use crate::replica::replica_manager::ReplicaManager;
use crate::share::Persister;

/// The broker's group coordinator.
pub type GroupCoordinatorService = CoordinatorService<GroupCoordinatorShard>;

impl CoordinatorService<GroupCoordinatorShard> {
    /// Starts the group coordinator; share-group state is initialized through `persister`
    /// (without one, a share group's partitions stay uninitialized and unassigned). The
    /// returned publisher must run after the ReplicaManager's.
    pub fn start_with_persister(
        config: GroupCoordinatorConfig,
        node_id: i32,
        replica_manager: Arc<ReplicaManager>,
        cache: MetadataCache,
        persister: Option<Arc<dyn Persister>>,
    ) -> (
        Arc<GroupCoordinatorService>,
        CoordinatorPublisher<GroupCoordinatorShard>,
    ) {
        let work = persister.map(|persister| -> WorkHandler<GroupCoordinatorShard> {
            Arc::new(move |partition, leader_epoch, work, handle| match work {
                GroupWork::InitializeShareGroupState(request) => {
                    let persister = Arc::clone(&persister);
                    tokio::spawn(async move {
                        let group = request.group_id.clone();
                        let answer = persister.initialize_state(request.clone()).await;
                        let (initialized, failed) = initialize_outcome(&request, &answer);
                        if !failed.is_empty() {
                            warn!(%group, ?failed, "share-group state initialization failed");
                        }
                        handle.run_on(
                            partition,
                            leader_epoch,
                            Box::new(move |shard, now| {
                                shard.share_state_initialized(now, &group, &initialized, &failed)
                            }),
                        );
                    });
                }
            })
        });
        Self::start(config, node_id, replica_manager, cache, work)
    }

    /// AlterShareGroupOffsets' persister call initialized `initialized`: the group's shard
    /// moves them from initializing to initialized (Kafka's `handlePersisterInitializeResponse`
    /// after an alter, which the reply does not wait for).
    pub fn share_offsets_altered(&self, group_id: String, initialized: Partitions) {
        let partition = self.partition_for(&group_id);
        self.runtime().run_on(
            partition,
            -1,
            Box::new(move |shard, now| {
                shard.share_state_initialized(now, &group_id, &initialized, &Partitions::new())
            }),
        );
    }

    /// A transaction marker landed on `__consumer_offsets-<partition>` here: the
    /// producer's pending offsets there become committed or are dropped (Kafka's
    /// `onTransactionCompleted`). Loading replays the marker too, so a shard that is not
    /// loaded yet misses nothing.
    pub fn complete_transaction(&self, partition: i32, producer_id: i64, commit: bool) {
        self.runtime().run_on(
            partition,
            -1,
            Box::new(move |shard, _now| shard.complete_transaction(producer_id, commit)),
        );
    }
}

/// Which partitions of an initialization succeeded and which failed (Kafka's
/// `handlePersisterInitializeResponse`): a partition the answer does not name failed, and
/// when any partition failed the whole request counts as failed, as Kafka's does (it
/// uninitializes every partition of the request, so the next heartbeat asks again).
pub fn initialize_outcome(
    request: &InitializeShareGroupStateRequest,
    answer: &InitializeShareGroupStateResponse,
) -> (Partitions, Partitions) {
    let mut asked = Partitions::new();
    for t in &request.topics {
        asked
            .entry(t.topic_id)
            .or_default()
            .extend(t.partitions.iter().map(|p| p.partition));
    }
    let mut ok = Partitions::new();
    let mut any_error = false;
    for t in &answer.results {
        for p in &t.partitions {
            if p.error_code != 0 {
                any_error = true;
            } else if asked
                .get(&t.topic_id)
                .is_some_and(|s| s.contains(&p.partition))
            {
                ok.entry(t.topic_id).or_default().insert(p.partition);
            }
        }
    }
    if any_error || ok != asked {
        return (Partitions::new(), asked);
    }
    (ok, Partitions::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kraftd_protocol::messages::initialize_share_group_state_request::{
        InitializeStateData, PartitionData,
    };
    use kraftd_protocol::messages::initialize_share_group_state_response::{
        InitializeStateResult, PartitionResult,
    };
    use kraftd_protocol::Uuid;

    fn request(t: Uuid, parts: &[i32]) -> InitializeShareGroupStateRequest {
        InitializeShareGroupStateRequest {
            group_id: "g".into(),
            topics: vec![InitializeStateData {
                topic_id: t,
                partitions: parts
                    .iter()
                    .map(|p| PartitionData {
                        partition: *p,
                        state_epoch: 1,
                        start_offset: -1,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn answer(t: Uuid, parts: &[(i32, i16)]) -> InitializeShareGroupStateResponse {
        InitializeShareGroupStateResponse {
            results: vec![InitializeStateResult {
                topic_id: t,
                partitions: parts
                    .iter()
                    .map(|(p, e)| PartitionResult {
                        partition: *p,
                        error_code: *e,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn an_initialization_succeeds_whole_or_is_asked_again() {
        let t = Uuid([7; 16]);
        let req = request(t, &[0, 1]);
        let (ok, failed) = initialize_outcome(&req, &answer(t, &[(0, 0), (1, 0)]));
        assert_eq!(ok[&t].len(), 2);
        assert!(failed.is_empty());
        // One partition refused (COORDINATOR_NOT_AVAILABLE): both asked again.
        let (ok, failed) = initialize_outcome(&req, &answer(t, &[(0, 0), (1, 15)]));
        assert!(ok.is_empty());
        assert_eq!(failed[&t].len(), 2);
        // A partition not answered counts as failed.
        let (ok, failed) = initialize_outcome(&req, &answer(t, &[(0, 0)]));
        assert!(ok.is_empty());
        assert_eq!(failed[&t].len(), 2);
    }
}
