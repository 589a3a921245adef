//! Which partitions of a coordinator's topic this broker leads, from committed metadata
//! (Kafka's `BrokerMetadataPublisher` calling `onElection` / `onResignation`), and the
//! topics KIP-848 groups assign from, with the groups' dynamic configs (ConfigResource GROUP,
//! which the group coordinator applies per group, as Kafka's `GroupConfigManager`). Runs after the ReplicaManager's publisher, so a
//! partition is already leader in the data plane when its shard starts loading.

use std::collections::BTreeMap;
use std::sync::Arc;

use kraftd_controller::image::ConfigResourceType;
use kraftd_controller::publisher::MetadataPublisher;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_coordinator::context::TopicMetadata;
use kraftd_protocol::Uuid;

use super::runtime::{Event, RuntimeHandle};
use kraftd_coordinator::shard::CoordinatorShard;

/// The cluster's topics as a shard sees them, over one metadata image.
#[derive(Debug, Clone)]
pub struct ImageTopics(pub MetadataImage);

impl TopicMetadata for ImageTopics {
    fn topic_by_name(&self, name: &str) -> Option<(Uuid, i32)> {
        self.0
            .topics
            .get_by_name(name)
            .map(|t| (t.id, t.partitions.len() as i32))
    }

    fn topic_by_id(&self, id: Uuid) -> Option<(String, i32)> {
        self.0
            .topics
            .get(&id)
            .map(|t| (t.name.clone(), t.partitions.len() as i32))
    }

    fn topic_names(&self) -> Vec<String> {
        self.0.topics.names().map(|(n, _)| n.clone()).collect()
    }

    fn partition_racks(&self, topic: &str, partition: i32) -> Vec<String> {
        let Some(p) = self
            .0
            .topics
            .get_by_name(topic)
            .and_then(|t| t.partitions.get(&partition))
        else {
            return Vec::new();
        };
        p.replicas
            .iter()
            .filter_map(|id| self.0.cluster.broker(*id))
            .filter_map(|b| b.rack.clone())
            .collect()
    }

    fn feature_level(&self, name: &str) -> i16 {
        self.0.features.level(name)
    }

    fn group_configs(&self) -> Vec<(String, BTreeMap<String, String>)> {
        self.0
            .configs
            .of_type(ConfigResourceType::Group)
            .map(|(r, m)| {
                let configs = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                (r.name.clone(), configs)
            })
            .collect()
    }
}

/// Feeds a runtime the leadership changes of its coordinator's topic and topic metadata.
pub struct CoordinatorPublisher<S: CoordinatorShard> {
    node_id: i32,
    runtime: RuntimeHandle<S>,
    /// Partition → (topic id, leader epoch) this broker leads, as last published.
    led: BTreeMap<i32, (Uuid, i32)>,
}

impl<S: CoordinatorShard> std::fmt::Debug for CoordinatorPublisher<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CoordinatorPublisher")
            .field("topic", &S::TOPIC)
            .field("led", &self.led)
            .finish()
    }
}

impl<S: CoordinatorShard> CoordinatorPublisher<S> {
    pub fn new(node_id: i32, runtime: RuntimeHandle<S>) -> Self {
        CoordinatorPublisher {
            node_id,
            runtime,
            led: BTreeMap::new(),
        }
    }
}

impl<S: CoordinatorShard> MetadataPublisher for CoordinatorPublisher<S> {
    fn name(&self) -> &str {
        "CoordinatorPublisher"
    }

    fn on_metadata_update(&mut self, delta: &MetadataDelta, image: &MetadataImage) {
        let changes = delta.changes();
        let full = delta.image().is_empty();
        if !full
            && changes.changed_topics.is_empty()
            && changes.deleted_topics.is_empty()
            && !changes.features_changed
            && !changes
                .changed_configs
                .iter()
                .any(|r| r.resource_type == ConfigResourceType::Group)
        {
            return;
        }
        let mut led = BTreeMap::new();
        if let Some(topic) = image.topics.get_by_name(S::TOPIC) {
            for (&p, reg) in topic.partitions.iter() {
                if reg.leader == self.node_id {
                    led.insert(p, (topic.id, reg.leader_epoch));
                }
            }
        }
        for &p in self.led.keys() {
            if !led.contains_key(&p) {
                self.runtime.send(Event::Resigned { partition: p });
            }
        }
        for (&p, &(topic_id, epoch)) in led.iter() {
            if self.led.get(&p) != Some(&(topic_id, epoch)) {
                self.runtime.send(Event::Elected {
                    partition: p,
                    topic_id,
                    leader_epoch: epoch,
                });
            }
        }
        self.led = led;
        let topics: Arc<dyn TopicMetadata> = Arc::new(ImageTopics(image.clone()));
        self.runtime.send(Event::Metadata(topics));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kraftd_protocol::metadata::ConfigRecord;
    use kraftd_protocol::MetadataRecord;

    fn config(resource_type: ConfigResourceType, name: &str, key: &str) -> MetadataRecord {
        MetadataRecord::Config(ConfigRecord {
            resource_type: resource_type.code(),
            resource_name: name.to_string(),
            name: key.to_string(),
            value: Some("1".to_string()),
            ..Default::default()
        })
    }

    /// The shards see every group's configs and nothing else's.
    #[test]
    fn image_topics_hand_the_group_configs_only() {
        let image = MetadataImage::empty()
            .replay_all(&[
                config(ConfigResourceType::Broker, "", "log.retention.ms"),
                config(ConfigResourceType::Group, "b", "share.delivery.count.limit"),
                config(ConfigResourceType::Group, "a", "share.isolation.level"),
                config(ConfigResourceType::Group, "a", "share.auto.offset.reset"),
            ])
            .unwrap();
        let groups = ImageTopics(image).group_configs();
        let names: Vec<(&str, Vec<&str>)> = groups
            .iter()
            .map(|(g, c)| (g.as_str(), c.keys().map(String::as_str).collect()))
            .collect();
        assert_eq!(
            names,
            vec![
                (
                    "a",
                    vec!["share.auto.offset.reset", "share.isolation.level"]
                ),
                ("b", vec!["share.delivery.count.limit"]),
            ]
        );
    }
}
