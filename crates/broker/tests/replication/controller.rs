//! The real controller logic, sans IO: the cluster and replication control managers and the
//! heartbeat manager, with the records they return replayed into a [`MetadataImage`] (as the
//! QuorumController does once they commit). Brokers register, heartbeat, go silent (session
//! expiry fences them) and restart cleanly or not; leaders' AlterPartitions are sent as
//! built from their [`IsrChange`]s; the committed [`PartitionRegistration`] is what the
//! brokers apply.

use std::collections::BTreeMap;

use kraftd_broker::replica::partition::{IsrChange, PartitionState};
use kraftd_controller::control::{
    BrokerHeartbeatManager, ClusterControlConfig, ClusterControlManager, ControllerResult,
    ReplicationConfig, ReplicationControlManager, BROKER_SESSION_TIMEOUT_MS_DEFAULT,
};
use kraftd_controller::image::PartitionRegistration;
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::alter_partition_request::{BrokerState, PartitionData, TopicData};
use kraftd_protocol::messages::broker_registration_request::Listener;
use kraftd_protocol::messages::{
    AlterPartitionRequest, BrokerHeartbeatRequest, BrokerHeartbeatResponse,
    BrokerRegistrationRequest, BrokerRegistrationResponse,
};
use kraftd_protocol::metadata::{ConfigRecord, FeatureLevelRecord, PartitionRecord, TopicRecord};
use kraftd_protocol::{ErrorCode, MetadataRecord};

use super::{Cluster, TOPIC, TOPIC_ID};

const CLUSTER_ID: &str = "kraftd-replication-test";
const METADATA_VERSION: i16 = 25;

pub struct Controller {
    pub image: MetadataImage,
    /// The offset the next record gets (a registration's offset is the broker epoch).
    pub next_offset: i64,
    pub now_ms: u64,
    heartbeats: BrokerHeartbeatManager,
    cluster: ClusterControlManager,
    replication: ReplicationControlManager,
    incarnations: BTreeMap<i32, u8>,
}

fn feature(name: &str, level: i16) -> MetadataRecord {
    MetadataRecord::FeatureLevel(FeatureLevelRecord {
        name: name.into(),
        feature_level: level,
        ..Default::default()
    })
}

impl Controller {
    /// metadata.version 25, ELR on if `elr`, the topic with `min.insync.replicas`.
    pub fn new(elr: bool, min_isr: usize) -> Controller {
        let replication = ReplicationControlManager::new(ReplicationConfig::default());
        let cluster = ClusterControlManager::new(
            ClusterControlConfig {
                cluster_id: CLUSTER_ID.into(),
                broker_session_timeout_ms: BROKER_SESSION_TIMEOUT_MS_DEFAULT,
            },
            replication.clone(),
        );
        let mut c = Controller {
            image: MetadataImage::empty(),
            next_offset: 0,
            now_ms: 1_000_000,
            heartbeats: BrokerHeartbeatManager::new(BROKER_SESSION_TIMEOUT_MS_DEFAULT),
            cluster,
            replication,
            incarnations: BTreeMap::new(),
        };
        let mut bootstrap = vec![feature("metadata.version", METADATA_VERSION)];
        if elr {
            bootstrap.push(feature("eligible.leader.replicas.version", 1));
        }
        bootstrap.push(MetadataRecord::Topic(TopicRecord {
            name: TOPIC.into(),
            topic_id: TOPIC_ID,
            ..Default::default()
        }));
        bootstrap.push(MetadataRecord::Config(ConfigRecord {
            resource_type: 2,
            resource_name: TOPIC.into(),
            name: "min.insync.replicas".into(),
            value: Some(min_isr.to_string()),
            ..Default::default()
        }));
        c.replay(&bootstrap);
        c
    }

    fn replay(&mut self, records: &[MetadataRecord]) {
        self.image = self
            .image
            .replay_all(records)
            .unwrap_or_else(|e| panic!("replay failed: {e}"));
        self.image.check_invariants().unwrap();
        self.next_offset += records.len() as i64;
    }

    fn apply<T>(&mut self, result: ControllerResult<T>) -> T {
        self.replay(&result.records);
        result.response
    }

    pub fn epoch(&self, broker: i32) -> i64 {
        self.image.cluster.broker(broker).expect("registered").epoch
    }

    pub fn fenced(&self, broker: i32) -> bool {
        self.image
            .cluster
            .broker(broker)
            .expect("registered")
            .fenced
    }

    fn registration_request(
        &mut self,
        id: i32,
        previous_broker_epoch: i64,
    ) -> BrokerRegistrationRequest {
        let incarnation = self.incarnations.entry(id).or_insert(0);
        *incarnation += 1;
        let mut incarnation_id = TOPIC_ID;
        incarnation_id.0[0] = 0xB0;
        incarnation_id.0[1] = id as u8;
        incarnation_id.0[2] = *incarnation;
        BrokerRegistrationRequest {
            broker_id: id,
            cluster_id: CLUSTER_ID.into(),
            incarnation_id,
            listeners: vec![Listener {
                name: "PLAINTEXT".into(),
                host: "localhost".into(),
                port: 9092 + id as u16,
                security_protocol: 0,
                ..Default::default()
            }],
            // What a real broker of this build registers with.
            features: kraftd_broker::server::supported_features(),
            rack: None,
            previous_broker_epoch,
            ..Default::default()
        }
    }

    /// BrokerRegistration v3 with this PreviousBrokerEpoch (-1: no clean-shutdown marker).
    pub fn register(&mut self, id: i32, previous_broker_epoch: i64) -> BrokerRegistrationResponse {
        let request = self.registration_request(id, previous_broker_epoch);
        let result = self.cluster.register_broker(
            &self.image,
            &self.heartbeats,
            3,
            &request,
            self.next_offset,
            self.now_ms,
        );
        let response = self.apply(result);
        if response.error_code == 0 {
            self.heartbeats.register(id, self.now_ms);
        }
        response
    }

    pub fn restart_clean(&mut self, id: i32) -> BrokerRegistrationResponse {
        let previous = self.epoch(id);
        self.register(id, previous)
    }

    pub fn restart_unclean(&mut self, id: i32) -> BrokerRegistrationResponse {
        self.register(id, -1)
    }

    /// A heartbeat carrying `epoch`, caught up with the metadata log.
    pub fn heartbeat_at(&mut self, id: i32, epoch: i64) -> BrokerHeartbeatResponse {
        let request = BrokerHeartbeatRequest {
            broker_id: id,
            broker_epoch: epoch,
            current_metadata_offset: self.next_offset - 1,
            ..Default::default()
        };
        let register_offset = self.image.cluster.broker(id).map_or(i64::MAX, |b| b.epoch);
        let result = self.cluster.broker_heartbeat(
            &self.image,
            &mut self.heartbeats,
            &request,
            register_offset,
            self.next_offset,
            self.now_ms,
        );
        self.apply(result)
    }

    pub fn heartbeat(&mut self, id: i32) -> BrokerHeartbeatResponse {
        let epoch = self.epoch(id);
        self.heartbeat_at(id, epoch)
    }

    pub fn start_brokers(&mut self, ids: &[i32]) {
        for id in ids {
            assert_eq!(self.register(*id, -1).error_code, 0);
        }
        for id in ids {
            assert!(!self.heartbeat(*id).is_fenced, "broker {id} unfenced");
        }
    }

    /// `dead` stop heartbeating: the session timeout passes while the other live brokers
    /// heartbeat, and expired sessions are fenced.
    pub fn go_offline(&mut self, dead: &[i32]) {
        self.now_ms += BROKER_SESSION_TIMEOUT_MS_DEFAULT + 1;
        let alive: Vec<i32> = self
            .image
            .cluster
            .brokers()
            .filter(|b| !b.fenced && !dead.contains(&b.id))
            .map(|b| b.id)
            .collect();
        for id in alive {
            self.heartbeat(id);
        }
        let mut fenced = Vec::new();
        loop {
            let result = self.cluster.maybe_fence_one_stale_broker(
                &self.image,
                &self.heartbeats,
                self.now_ms,
            );
            match self.apply(result) {
                Some(id) => fenced.push(id),
                None => break,
            }
        }
        fenced.sort();
        let mut dead = dead.to_vec();
        dead.sort();
        assert_eq!(fenced, dead, "brokers fenced by session expiry");
    }

    /// Partition 0 with every replica in the ISR, the first leading at epoch 0.
    pub fn create_partition(&mut self, replicas: &[i32]) {
        self.create_partition_with_isr(replicas, replicas);
    }

    pub fn create_partition_with_isr(&mut self, replicas: &[i32], isr: &[i32]) {
        self.replay(&[MetadataRecord::Partition(PartitionRecord {
            partition_id: 0,
            topic_id: TOPIC_ID,
            replicas: replicas.to_vec(),
            isr: isr.to_vec(),
            leader: isr[0],
            leader_epoch: 0,
            partition_epoch: 0,
            eligible_leader_replicas: Some(vec![]),
            last_known_elr: Some(vec![]),
            ..Default::default()
        })]);
    }

    pub fn partition(&self) -> PartitionRegistration {
        PartitionRegistration::clone(self.image.topics.partition(&TOPIC_ID, 0).unwrap())
    }

    /// The committed partition as brokers learn it from the metadata.
    pub fn partition_state(&self) -> PartitionState {
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

    /// (ISR sorted, ELR sorted, leader).
    pub fn isr_elr_leader(&self) -> (Vec<i32>, Vec<i32>, i32) {
        let p = self.partition();
        let mut isr = p.isr.clone();
        isr.sort();
        let mut elr = p.elr.clone();
        elr.sort();
        (isr, elr, p.leader)
    }

    /// Registered, unfenced, not shutting down brokers and their epochs (what a leader's
    /// metadata cache says may join an ISR).
    pub fn eligible(&self) -> BTreeMap<i32, i64> {
        self.image
            .cluster
            .brokers()
            .filter(|b| !b.fenced && !b.in_controlled_shutdown)
            .map(|b| (b.id, b.epoch))
            .collect()
    }

    /// Sends a leader's ISR change as AlterPartition v3: the partition's error and, when
    /// committed, (leader epoch, partition epoch, ISR) as the response carries them.
    pub fn alter_partition(
        &mut self,
        leader: i32,
        change: &IsrChange,
    ) -> Result<(i32, i32, Vec<i32>), ErrorCode> {
        let epoch = self.epoch(leader);
        self.alter_partition_as(leader, epoch, change)
    }

    /// [`Self::alter_partition`] with the leader's broker epoch as given.
    pub fn alter_partition_as(
        &mut self,
        leader: i32,
        leader_broker_epoch: i64,
        change: &IsrChange,
    ) -> Result<(i32, i32, Vec<i32>), ErrorCode> {
        let request = AlterPartitionRequest {
            broker_id: leader,
            broker_epoch: leader_broker_epoch,
            topics: vec![TopicData {
                topic_id: TOPIC_ID,
                partitions: vec![PartitionData {
                    partition_index: 0,
                    leader_epoch: change.leader_epoch,
                    new_isr_with_epochs: change
                        .new_isr
                        .iter()
                        .map(|(id, epoch)| BrokerState {
                            broker_id: *id,
                            broker_epoch: *epoch,
                            ..Default::default()
                        })
                        .collect(),
                    leader_recovery_state: change.leader_recovery_state,
                    partition_epoch: change.partition_epoch,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let result = self.replication.alter_partition(&self.image, 3, &request);
        let response = self.apply(result);
        if response.error_code != 0 {
            return Err(ErrorCode::from_code(response.error_code).unwrap());
        }
        let p = &response.topics[0].partitions[0];
        if p.error_code != 0 {
            return Err(ErrorCode::from_code(p.error_code).unwrap());
        }
        Ok((p.leader_epoch, p.partition_epoch, p.isr.clone()))
    }

    /// Gives every cluster broker its registration's epoch (sent in its fetches and ISR
    /// changes).
    pub fn sync_broker_epochs(&self, cluster: &mut Cluster) {
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

    /// Publishes the committed state to every running replica and refreshes who may join
    /// an ISR.
    pub fn publish(&self, cluster: &mut Cluster) {
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

    /// Sends every queued ISR change, completes it on its leader, publishes the result;
    /// returns the errors, in order.
    pub fn send_isr_changes(&mut self, cluster: &mut Cluster) -> Vec<ErrorCode> {
        let mut codes = Vec::new();
        for (leader, change) in std::mem::take(&mut cluster.alter_partitions) {
            let result = self.alter_partition(leader, &change);
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
