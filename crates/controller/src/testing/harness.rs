//! A driver for the pure control managers: it holds the image, the metadata log's next
//! offset, the heartbeat manager and a clock, sends requests to the managers and replays the
//! records they return (as the QuorumController does once they commit), so tests state
//! events ("b3 goes offline") and assert the image.

use std::collections::BTreeMap;

use kraftd_protocol::messages::alter_partition_request::{BrokerState, PartitionData, TopicData};
use kraftd_protocol::messages::alter_partition_response;
use kraftd_protocol::messages::broker_registration_request::{Feature, Listener};
use kraftd_protocol::messages::{
    AlterPartitionRequest, BrokerHeartbeatRequest, BrokerHeartbeatResponse,
    BrokerRegistrationRequest, BrokerRegistrationResponse,
};
use kraftd_protocol::metadata::PartitionRecord;
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};

use super::records::{config, feature, topic, uuid};
use crate::control::{
    BrokerHeartbeatManager, ClusterControlConfig, ClusterControlManager, ControllerResult,
    ReplicationConfig, ReplicationControlManager, BROKER_SESSION_TIMEOUT_MS_DEFAULT,
};
use crate::image::PartitionRegistration;
use crate::MetadataImage;

pub const CLUSTER_ID: &str = "kraftd-test-cluster";
/// The harness's one topic; its partition 0 is the one the partition helpers work on.
pub const TOPIC: &str = "t";
pub const TOPIC_ID: Uuid = uuid(1);
pub const METADATA_VERSION: i16 = 25;

/// BrokerRegistration v3 for broker `id`: one PLAINTEXT listener on localhost:`9092 + id`,
/// no rack.
pub fn broker_registration(
    id: i32,
    incarnation_id: Uuid,
    features: Vec<Feature>,
    previous_broker_epoch: i64,
) -> BrokerRegistrationRequest {
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
        features,
        rack: None,
        previous_broker_epoch,
        ..Default::default()
    }
}

#[derive(Debug)]
pub struct ControlHarness {
    pub image: MetadataImage,
    /// The offset the next record will get (a registration's offset is the broker epoch).
    pub next_offset: i64,
    pub now_ms: u64,
    pub heartbeats: BrokerHeartbeatManager,
    pub cluster: ClusterControlManager,
    pub replication: ReplicationControlManager,
    /// The features every broker registers with: metadata.version 1 to 25 and ELR 0 to 1
    /// unless set.
    pub features: Vec<Feature>,
    /// The quorum's `kraft.version` a registration is checked against (0 unless set: a
    /// static quorum).
    pub kraft_version: i16,
    /// Each broker's incarnation counter, so a restart gets a new incarnation id.
    incarnations: BTreeMap<i32, u8>,
}

impl ControlHarness {
    /// A cluster at metadata.version 25, with ELR on if `elr`, and one topic whose
    /// `min.insync.replicas` is `min_isr`.
    pub fn new(elr: bool, min_isr: i32) -> Self {
        let replication = ReplicationControlManager::new(ReplicationConfig::default());
        let cluster = ClusterControlManager::new(
            ClusterControlConfig {
                cluster_id: CLUSTER_ID.into(),
                broker_session_timeout_ms: BROKER_SESSION_TIMEOUT_MS_DEFAULT,
                ..Default::default()
            },
            replication.clone(),
        );
        let mut h = ControlHarness {
            // Managers run against the controller's images, as in the QuorumController.
            image: MetadataImage::empty().with_controller_indexes(),
            next_offset: 0,
            now_ms: 1_000_000,
            heartbeats: BrokerHeartbeatManager::new(BROKER_SESSION_TIMEOUT_MS_DEFAULT),
            cluster,
            replication,
            features: vec![
                Feature {
                    name: "metadata.version".into(),
                    min_supported_version: 1,
                    max_supported_version: METADATA_VERSION,
                    ..Default::default()
                },
                Feature {
                    name: "eligible.leader.replicas.version".into(),
                    min_supported_version: 0,
                    max_supported_version: 1,
                    ..Default::default()
                },
            ],
            kraft_version: 0,
            incarnations: Default::default(),
        };
        let mut bootstrap = vec![feature("metadata.version", METADATA_VERSION)];
        if elr {
            bootstrap.push(feature("eligible.leader.replicas.version", 1));
        }
        bootstrap.push(topic(TOPIC, TOPIC_ID));
        bootstrap.push(config(
            2,
            TOPIC,
            "min.insync.replicas",
            Some(&min_isr.to_string()),
        ));
        h.replay(&bootstrap);
        h
    }

    pub fn replay(&mut self, records: &[MetadataRecord]) {
        self.image = self
            .image
            .replay_all(records)
            .unwrap_or_else(|e| panic!("replay failed: {e}"));
        self.image.check_invariants().unwrap();
        self.next_offset += records.len() as i64;
    }

    /// Replays a result's records (as the controller does once they commit) and returns the
    /// response.
    pub fn apply<T>(&mut self, result: ControllerResult<T>) -> T {
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

    /// Broker `id`'s next registration (a new incarnation id each time).
    pub fn registration_request(
        &mut self,
        id: i32,
        previous_broker_epoch: i64,
    ) -> BrokerRegistrationRequest {
        let incarnation = self.incarnations.entry(id).or_insert(0);
        *incarnation += 1;
        let mut incarnation_id = uuid(0);
        incarnation_id.0[1] = id as u8;
        incarnation_id.0[2] = *incarnation;
        broker_registration(
            id,
            incarnation_id,
            self.features.clone(),
            previous_broker_epoch,
        )
    }

    /// Registers broker `id` (BrokerRegistration v3) with this PreviousBrokerEpoch (-1: no
    /// clean-shutdown marker).
    pub fn register(&mut self, id: i32, previous_broker_epoch: i64) -> BrokerRegistrationResponse {
        let request = self.registration_request(id, previous_broker_epoch);
        self.send_registration(&request)
    }

    pub fn send_registration(
        &mut self,
        request: &BrokerRegistrationRequest,
    ) -> BrokerRegistrationResponse {
        let result = self.cluster.register_broker(
            &self.image,
            &self.heartbeats,
            3,
            request,
            self.kraft_version,
            self.next_offset,
            self.now_ms,
        );
        assert!(result.is_atomic || result.records.is_empty());
        let response = self.apply(result);
        if response.error_code == 0 {
            self.heartbeats.register(request.broker_id, self.now_ms);
        }
        response
    }

    /// A clean restart: the broker's marker names its last epoch.
    pub fn restart_clean(&mut self, id: i32) -> BrokerRegistrationResponse {
        let previous = self.epoch(id);
        self.register(id, previous)
    }

    /// An unclean restart: no clean-shutdown marker.
    pub fn restart_unclean(&mut self, id: i32) -> BrokerRegistrationResponse {
        self.register(id, -1)
    }

    /// A heartbeat carrying `epoch`, caught up with everything written so far.
    pub fn heartbeat_request(&self, id: i32, epoch: i64) -> BrokerHeartbeatRequest {
        BrokerHeartbeatRequest {
            broker_id: id,
            broker_epoch: epoch,
            current_metadata_offset: self.next_offset - 1,
            ..Default::default()
        }
    }

    pub fn send_heartbeat(&mut self, request: &BrokerHeartbeatRequest) -> BrokerHeartbeatResponse {
        // The broker's registration record is at its epoch.
        let register_offset = self
            .image
            .cluster
            .broker(request.broker_id)
            .map_or(i64::MAX, |b| b.epoch);
        let result = self.cluster.broker_heartbeat(
            &self.image,
            &mut self.heartbeats,
            request,
            register_offset,
            self.next_offset,
            self.now_ms,
        );
        self.apply(result)
    }

    /// A caught-up heartbeat carrying `epoch`.
    pub fn heartbeat_at(&mut self, id: i32, epoch: i64) -> BrokerHeartbeatResponse {
        let request = self.heartbeat_request(id, epoch);
        self.send_heartbeat(&request)
    }

    /// A caught-up heartbeat at the broker's current epoch.
    pub fn heartbeat(&mut self, id: i32) -> BrokerHeartbeatResponse {
        let epoch = self.epoch(id);
        self.heartbeat_at(id, epoch)
    }

    /// Registers and unfences brokers (each catches up at once).
    pub fn start_brokers(&mut self, ids: &[i32]) {
        for id in ids {
            let response = self.register(*id, -1);
            assert_eq!(response.error_code, 0);
        }
        for id in ids {
            let response = self.heartbeat(*id);
            assert!(!response.is_fenced, "broker {id} should be unfenced");
        }
    }

    /// Brokers `dead` stop heartbeating: time passes beyond the session timeout while every
    /// other live broker keeps heartbeating, then expired sessions are fenced one at a time.
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
        assert_eq!(fenced, dead, "the brokers fenced by session expiry");
    }

    /// Creates partition 0 of the topic with every replica in the ISR (leader the first
    /// replica, epochs 0).
    pub fn create_partition(&mut self, replicas: &[i32]) {
        self.create_partition_with_isr(replicas, replicas);
    }

    /// Creates partition 0 of the topic (leader the first of `isr`, epochs 0).
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

    pub fn topic_id(&self) -> Uuid {
        TOPIC_ID
    }

    /// An AlterPartition (v3) from the current leader for partition 0 with the given ISR,
    /// each member at the epoch given (None: its current epoch).
    pub fn alter_partition_request(&self, isr: &[(i32, Option<i64>)]) -> AlterPartitionRequest {
        let p = self.partition();
        let isr: Vec<(i32, i64)> = isr
            .iter()
            .map(|(id, epoch)| (*id, epoch.unwrap_or_else(|| self.epoch(*id))))
            .collect();
        alter_partition_request(
            p.leader,
            self.epoch(p.leader),
            p.leader_epoch,
            p.partition_epoch,
            0,
            &isr,
        )
    }

    /// Sends an AlterPartition and replays its records; partition 0's answer, or its error.
    pub fn alter_partition(
        &mut self,
        request: &AlterPartitionRequest,
    ) -> Result<alter_partition_response::PartitionData, ErrorCode> {
        let result = self.replication.alter_partition(&self.image, 3, request);
        let mut response = self.apply(result);
        if response.error_code != 0 {
            return Err(ErrorCode::from_code(response.error_code).unwrap());
        }
        let p = response.topics.swap_remove(0).partitions.swap_remove(0);
        if p.error_code != 0 {
            return Err(ErrorCode::from_code(p.error_code).unwrap());
        }
        Ok(p)
    }

    /// Sends an AlterPartition and replays its records; the partition's error.
    pub fn send_alter_partition(&mut self, request: &AlterPartitionRequest) -> ErrorCode {
        self.alter_partition(request)
            .err()
            .unwrap_or(ErrorCode::None)
    }

    /// The leader asks for this ISR, every member at its current epoch.
    pub fn alter_isr(&mut self, isr: &[i32]) -> ErrorCode {
        let members: Vec<(i32, Option<i64>)> = isr.iter().map(|id| (*id, None)).collect();
        let request = self.alter_partition_request(&members);
        self.send_alter_partition(&request)
    }

    /// ISR (sorted), ELR and leader of partition 0.
    pub fn state(&self) -> (Vec<i32>, Vec<i32>, i32) {
        let p = self.partition();
        let mut isr = p.isr.clone();
        isr.sort();
        (isr, p.elr.clone(), p.leader)
    }
}

/// An AlterPartition (v3) for partition 0 of the topic from `leader` at `leader_broker_epoch`,
/// asking for `isr` (members with their broker epochs).
pub fn alter_partition_request(
    leader: i32,
    leader_broker_epoch: i64,
    leader_epoch: i32,
    partition_epoch: i32,
    leader_recovery_state: i8,
    isr: &[(i32, i64)],
) -> AlterPartitionRequest {
    AlterPartitionRequest {
        broker_id: leader,
        broker_epoch: leader_broker_epoch,
        topics: vec![TopicData {
            topic_id: TOPIC_ID,
            partitions: vec![PartitionData {
                partition_index: 0,
                leader_epoch,
                new_isr_with_epochs: isr
                    .iter()
                    .map(|(id, epoch)| BrokerState {
                        broker_id: *id,
                        broker_epoch: *epoch,
                        ..Default::default()
                    })
                    .collect(),
                leader_recovery_state,
                partition_epoch,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}
