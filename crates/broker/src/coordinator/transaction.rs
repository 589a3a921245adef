//! The transaction coordinator on the runtime (Kafka's `TransactionCoordinator`): the
//! generic [`CoordinatorService`] over the transaction shard, whose marker work goes to a
//! [`TransactionMarkerChannel`] — the broker's is `server/txn_marker_channel.rs` — and,
//! once every marker is written, back to the shard (`on_markers_written`), which writes
//! CompleteCommit / CompleteAbort.

use std::sync::Arc;

use super::publisher::CoordinatorPublisher;
use super::runtime::WorkHandler;
use super::service::CoordinatorService;
use crate::metadata::MetadataCache;
use crate::replica::replica_manager::ReplicaManager;
use kraftd_coordinator::transaction::{
    TransactionCoordinatorConfig, TransactionCoordinatorShard, TransactionMarkerChannel,
};

/// The broker's transaction coordinator.
pub type TransactionCoordinatorService = CoordinatorService<TransactionCoordinatorShard>;

impl CoordinatorService<TransactionCoordinatorShard> {
    /// Starts the transaction coordinator, its markers sent through `markers`; the returned
    /// publisher must run after the ReplicaManager's.
    pub fn start_with_markers(
        config: TransactionCoordinatorConfig,
        node_id: i32,
        replica_manager: Arc<ReplicaManager>,
        cache: MetadataCache,
        markers: Arc<dyn TransactionMarkerChannel>,
    ) -> (
        Arc<TransactionCoordinatorService>,
        CoordinatorPublisher<TransactionCoordinatorShard>,
    ) {
        let work: WorkHandler<TransactionCoordinatorShard> =
            Arc::new(move |partition, leader_epoch, marker, handle| {
                let (id, producer_id, producer_epoch) = (
                    marker.transactional_id.clone(),
                    marker.producer_id,
                    marker.producer_epoch,
                );
                markers.send(
                    marker,
                    Box::new(move || {
                        handle.run_on(
                            partition,
                            leader_epoch,
                            Box::new(move |shard, now| {
                                shard.on_markers_written(now, &id, producer_id, producer_epoch)
                            }),
                        );
                    }),
                );
            });
        Self::start(config, node_id, replica_manager, cache, Some(work))
    }
}
