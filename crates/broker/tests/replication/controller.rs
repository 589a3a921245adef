//! The real controller logic, sans IO: [`ControlHarness`] (the control managers with their
//! records replayed into a `MetadataImage`, as the QuorumController does once they commit)
//! with the broker's side added. Brokers register with this build's supported features;
//! leaders' AlterPartitions are sent as built from their [`IsrChange`]s; the committed
//! [`PartitionState`] is what the brokers apply.

use kraftd_broker::replica::partition::{IsrChange, PartitionState};
use kraftd_controller::testing::{alter_partition_request, ControlHarness};
use kraftd_protocol::ErrorCode;

use super::Cluster;

pub type Controller = ControlHarness;

/// metadata.version 25, ELR on if `elr`, the topic with `min.insync.replicas`; brokers
/// register with what a real broker of this build registers with.
pub fn controller(elr: bool, min_isr: usize) -> Controller {
    let mut c = ControlHarness::new(elr, i32::try_from(min_isr).unwrap());
    c.features = kraftd_broker::server::supported_features();
    c
}

/// What the brokers under test need of the controller.
pub trait ControllerExt {
    /// The committed partition as brokers learn it from the metadata.
    fn partition_state(&self) -> PartitionState;

    /// (ISR sorted, ELR sorted, leader).
    fn isr_elr_leader(&self) -> (Vec<i32>, Vec<i32>, i32);

    /// Sends a leader's ISR change as AlterPartition v3: the partition's error and, when
    /// committed, (leader epoch, partition epoch, ISR) as the response carries them.
    fn send_isr_change(
        &mut self,
        leader: i32,
        change: &IsrChange,
    ) -> Result<(i32, i32, Vec<i32>), ErrorCode>;

    /// [`Self::send_isr_change`] with the leader's broker epoch as given.
    fn send_isr_change_as(
        &mut self,
        leader: i32,
        leader_broker_epoch: i64,
        change: &IsrChange,
    ) -> Result<(i32, i32, Vec<i32>), ErrorCode>;

    /// Gives every cluster broker its registration's epoch (sent in its fetches and ISR
    /// changes).
    fn sync_broker_epochs(&self, cluster: &mut Cluster);

    /// Publishes the committed state to every running replica and refreshes who may join
    /// an ISR.
    fn publish(&self, cluster: &mut Cluster);

    /// Sends every queued ISR change, completes it on its leader, publishes the result;
    /// returns the errors, in order.
    fn send_isr_changes(&mut self, cluster: &mut Cluster) -> Vec<ErrorCode>;
}

impl ControllerExt for ControlHarness {
    fn partition_state(&self) -> PartitionState {
        let p = self.partition();
        PartitionState {
            leader: p.leader,
            leader_epoch: p.leader_epoch,
            partition_epoch: p.partition_epoch,
            replicas: p.replicas.clone(),
            isr: p.isr.clone(),
            elr: p.elr.clone(),
            leader_recovery_state: p.leader_recovery_state.code(),
        }
    }

    fn isr_elr_leader(&self) -> (Vec<i32>, Vec<i32>, i32) {
        let (isr, mut elr, leader) = self.state();
        elr.sort();
        (isr, elr, leader)
    }

    fn send_isr_change(
        &mut self,
        leader: i32,
        change: &IsrChange,
    ) -> Result<(i32, i32, Vec<i32>), ErrorCode> {
        let epoch = self.epoch(leader);
        self.send_isr_change_as(leader, epoch, change)
    }

    fn send_isr_change_as(
        &mut self,
        leader: i32,
        leader_broker_epoch: i64,
        change: &IsrChange,
    ) -> Result<(i32, i32, Vec<i32>), ErrorCode> {
        let request = alter_partition_request(
            leader,
            leader_broker_epoch,
            change.leader_epoch,
            change.partition_epoch,
            change.leader_recovery_state,
            &change.new_isr,
        );
        let p = self.alter_partition(&request)?;
        Ok((p.leader_epoch, p.partition_epoch, p.isr))
    }

    fn sync_broker_epochs(&self, cluster: &mut Cluster) {
        let ids: Vec<i32> = cluster.nodes.keys().copied().collect();
        for id in ids {
            let Some(b) = self.image.cluster.broker(id) else {
                continue;
            };
            cluster.nodes.get_mut(&id).unwrap().broker_epoch = b.epoch;
            if cluster.is_up(id) {
                cluster.pm(id).set_local_broker_epoch(b.epoch);
            }
        }
    }

    fn publish(&self, cluster: &mut Cluster) {
        self.sync_broker_epochs(cluster);
        let s = self.partition_state();
        let eligible = self.eligible();
        cluster.eligible = Some(eligible.clone());
        cluster.apply(&s);
        // As the leader's metadata cache would: who may join an ISR changed.
        if s.leader >= 0 && cluster.is_up(s.leader) {
            let now = cluster.now_ms;
            let check = move |broker: i32, epoch: i64| eligible.get(&broker) == Some(&epoch);
            cluster.pm(s.leader).update_isr_eligibility(&check, now);
        }
    }

    fn send_isr_changes(&mut self, cluster: &mut Cluster) -> Vec<ErrorCode> {
        let mut codes = Vec::new();
        for (leader, change) in std::mem::take(&mut cluster.alter_partitions) {
            let result = self.send_isr_change(leader, &change);
            codes.push(result.as_ref().err().copied().unwrap_or(ErrorCode::None));
            let now = cluster.now_ms;
            if cluster.is_up(leader) {
                cluster.pm(leader).complete_isr_change(result, now);
            }
            self.publish(cluster);
        }
        codes
    }
}
