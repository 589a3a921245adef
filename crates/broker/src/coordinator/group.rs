//! The group coordinator on the runtime (Kafka's `GroupCoordinatorService`): the generic
//! [`CoordinatorService`] over the group shard, which routes each group to the shard of its
//! `__consumer_offsets` partition, and what only the group coordinator does.

use super::service::CoordinatorService;
use kraftd_coordinator::group::GroupCoordinatorShard;

/// The broker's group coordinator (started with [`CoordinatorService::start`], no work).
pub type GroupCoordinatorService = CoordinatorService<GroupCoordinatorShard>;

impl CoordinatorService<GroupCoordinatorShard> {
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
