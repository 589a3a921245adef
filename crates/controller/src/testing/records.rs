//! Metadata record builders, so a test states only the fields it is about and the rest take
//! Kafka's defaults.

use kraftd_protocol::metadata::*;
use kraftd_protocol::{MetadataRecord, Uuid};

/// A test id: `A0 00 … 00 n`.
pub const fn uuid(n: u8) -> Uuid {
    let mut b = [0u8; 16];
    b[0] = 0xA0;
    b[15] = n;
    Uuid(b)
}

pub fn topic(name: &str, id: Uuid) -> MetadataRecord {
    MetadataRecord::Topic(TopicRecord {
        name: name.into(),
        topic_id: id,
        ..Default::default()
    })
}

/// A partition with leader epoch 0 and partition epoch 0.
pub fn partition(id: Uuid, p: i32, replicas: &[i32], isr: &[i32], leader: i32) -> MetadataRecord {
    MetadataRecord::Partition(PartitionRecord {
        partition_id: p,
        topic_id: id,
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
        leader,
        leader_epoch: 0,
        partition_epoch: 0,
        ..Default::default()
    })
}

/// A change that touches nothing but what the caller sets afterwards.
pub fn change(id: Uuid, p: i32) -> PartitionChangeRecord {
    PartitionChangeRecord {
        partition_id: p,
        topic_id: id,
        ..Default::default()
    }
}

pub fn register_broker(id: i32, epoch: i64, fenced: bool) -> MetadataRecord {
    MetadataRecord::RegisterBroker(RegisterBrokerRecord {
        broker_id: id,
        broker_epoch: epoch,
        incarnation_id: uuid(100 + id as u8),
        end_points: vec![register_broker_record::BrokerEndpoint {
            name: "PLAINTEXT".into(),
            host: "localhost".into(),
            port: 9092 + id as u16,
            security_protocol: 0,
            ..Default::default()
        }],
        rack: Some(format!("rack{}", id % 2)),
        fenced,
        ..Default::default()
    })
}

pub fn fence(id: i32, epoch: i64) -> MetadataRecord {
    MetadataRecord::FenceBroker(FenceBrokerRecord {
        id,
        epoch,
        ..Default::default()
    })
}

pub fn unfence(id: i32, epoch: i64) -> MetadataRecord {
    MetadataRecord::UnfenceBroker(UnfenceBrokerRecord {
        id,
        epoch,
        ..Default::default()
    })
}

pub fn config(resource_type: i8, resource: &str, key: &str, value: Option<&str>) -> MetadataRecord {
    MetadataRecord::Config(ConfigRecord {
        resource_type,
        resource_name: resource.into(),
        name: key.into(),
        value: value.map(str::to_string),
        ..Default::default()
    })
}

pub fn feature(name: &str, level: i16) -> MetadataRecord {
    MetadataRecord::FeatureLevel(FeatureLevelRecord {
        name: name.into(),
        feature_level: level,
        ..Default::default()
    })
}
