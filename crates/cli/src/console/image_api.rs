//! The console's answers that the node's own metadata image holds: the cluster summary
//! (features, brokers with their state and leader counts, partition counts by health), a
//! page of topics, and one topic's partitions (leader, replicas, ISR, ELR) with its
//! configuration overrides. Pure functions of a `MetadataImage`, so they are unit-tested
//! without a node; the offsets (log start, HW, LSO) that only each leader knows are added
//! by `client.rs`.
//!
//! Cost: [`Summary::of`] walks every partition once (O(partitions)); the console keeps it
//! per image (`mod.rs`), so it is recomputed once per metadata change, not per page poll.
//! [`topics_page`] skips to its page through the name index and reads `page_size` topics;
//! [`topic`] reads one topic's partitions, a page of them.

use std::collections::BTreeMap;

use kraftd_controller::image::{ConfigResource, ConfigResourceType, PartitionRegistration};
use kraftd_controller::MetadataImage;
use serde_json::{json, Value};

/// Topics per page of `/api/topics` and partitions per page of `/api/topics/<name>`: a
/// page's cost does not grow with the cluster.
pub const PAGE_SIZE: usize = 50;

/// What the overview counts, from one walk over every partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub topics: usize,
    pub partitions: usize,
    /// No leader (leader -1): unavailable to clients.
    pub offline: usize,
    /// ISR smaller than the replica set.
    pub under_replicated: usize,
    /// ISR smaller than the topic's `min.insync.replicas`: acks=all produces fail.
    pub under_min_isr: usize,
    /// Partitions led, by broker id.
    pub leaders: BTreeMap<i32, usize>,
    /// Replicas hosted, by broker id.
    pub replicas: BTreeMap<i32, usize>,
}

impl Summary {
    /// One walk over the image's partitions.
    pub fn of(image: &MetadataImage) -> Summary {
        Summary::of_visible(image, &|_| true)
    }

    /// One walk over the partitions of the topics `visible` admits (those a signed-in
    /// principal may describe).
    pub fn of_visible(image: &MetadataImage, visible: &dyn Fn(&str) -> bool) -> Summary {
        let mut s = Summary::default();
        let default_min_isr = broker_default_min_isr(image);
        for topic in image.topics.iter().filter(|t| visible(&t.name)) {
            s.topics += 1;
            let min_isr = topic_min_isr(image, &topic.name).unwrap_or(default_min_isr);
            for p in topic.partitions.values() {
                s.partitions += 1;
                if !p.has_leader() {
                    s.offline += 1;
                } else {
                    *s.leaders.entry(p.leader).or_default() += 1;
                }
                if p.isr.len() < p.replicas.len() {
                    s.under_replicated += 1;
                }
                if p.isr.len() < min_isr {
                    s.under_min_isr += 1;
                }
                for r in &p.replicas {
                    *s.replicas.entry(*r).or_default() += 1;
                }
            }
        }
        s
    }
}

/// The cluster-wide `min.insync.replicas` (the default broker resource), else Kafka's 1.
fn broker_default_min_isr(image: &MetadataImage) -> usize {
    image
        .configs
        .value(
            &ConfigResource::new(ConfigResourceType::Broker, ""),
            "min.insync.replicas",
        )
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

fn topic_min_isr(image: &MetadataImage, topic: &str) -> Option<usize> {
    image
        .configs
        .value(&ConfigResource::topic(topic), "min.insync.replicas")
        .and_then(|v| v.parse().ok())
}

/// The cluster part of `/api/overview`: id, features, brokers and the partition counts.
pub fn overview(cluster_id: &str, image: &MetadataImage, summary: &Summary) -> Value {
    let brokers: Vec<Value> = image
        .cluster
        .brokers()
        .map(|b| {
            let state = if b.fenced {
                "fenced"
            } else if b.in_controlled_shutdown {
                "shutting down"
            } else {
                "running"
            };
            json!({
                "id": b.id,
                "state": state,
                "rack": b.rack,
                "epoch": b.epoch,
                "endpoints": b.listeners.values()
                    .map(|e| format!("{}://{}:{}", e.name, e.host, e.port))
                    .collect::<Vec<_>>(),
                "leaders": summary.leaders.get(&b.id).copied().unwrap_or(0),
                "replicas": summary.replicas.get(&b.id).copied().unwrap_or(0),
            })
        })
        .collect();
    let controllers: Vec<i32> = image.cluster.controllers().map(|c| c.id).collect();
    json!({
        "cluster_id": cluster_id,
        "metadata_version": image.features.metadata_version,
        "features": image.features.finalized,
        "brokers": brokers,
        "registered_controllers": controllers,
        "topics": summary.topics,
        "partitions": summary.partitions,
        "offline_partitions": summary.offline,
        "under_replicated_partitions": summary.under_replicated,
        "under_min_isr_partitions": summary.under_min_isr,
    })
}

/// `page` (from 0) of the topics `visible` admits, in name order, with their partition
/// counts, replication factors and unhealthy partitions. Internal topics
/// (`__consumer_offsets`...) included, as `kafka-topics --list` shows them.
pub fn topics_page(image: &MetadataImage, page: usize, visible: &dyn Fn(&str) -> bool) -> Value {
    let total = image
        .topics
        .names()
        .filter(|(name, _)| visible(name))
        .count();
    let default_min_isr = broker_default_min_isr(image);
    let topics: Vec<Value> = image
        .topics
        .names()
        .filter(|(name, _)| visible(name))
        .skip(page.saturating_mul(PAGE_SIZE))
        .take(PAGE_SIZE)
        .filter_map(|(_, id)| image.topics.get(id))
        .map(|t| {
            let min_isr = topic_min_isr(image, &t.name).unwrap_or(default_min_isr);
            let mut under_replicated = 0;
            let mut offline = 0;
            let mut under_min_isr = 0;
            let mut replication = 0;
            for p in t.partitions.values() {
                replication = replication.max(p.replicas.len());
                under_replicated += usize::from(p.isr.len() < p.replicas.len());
                offline += usize::from(!p.has_leader());
                under_min_isr += usize::from(p.isr.len() < min_isr);
            }
            json!({
                "name": t.name,
                "id": t.id.to_string(),
                "partitions": t.partitions.len(),
                "replication_factor": replication,
                "under_replicated": under_replicated,
                "offline": offline,
                "under_min_isr": under_min_isr,
            })
        })
        .collect();
    json!({
        "page": page,
        "page_size": PAGE_SIZE,
        "total": total,
        "topics": topics,
    })
}

/// One partition as the image has it.
pub fn partition(index: i32, p: &PartitionRegistration) -> Value {
    json!({
        "partition": index,
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "replicas": p.replicas,
        "isr": p.isr,
        "elr": p.elr,
        "adding": p.adding_replicas,
        "removing": p.removing_replicas,
        "under_replicated": p.isr.len() < p.replicas.len(),
    })
}

/// Page `page` of topic `name`'s partitions and its config overrides (source
/// DYNAMIC_TOPIC_CONFIG, as `kafka-configs --describe` names them); `None` if no such topic.
pub fn topic(image: &MetadataImage, name: &str, page: usize) -> Option<Value> {
    let t = image.topics.get_by_name(name)?;
    let partitions: Vec<Value> = t
        .partitions
        .iter()
        .skip(page.saturating_mul(PAGE_SIZE))
        .take(PAGE_SIZE)
        .map(|(i, p)| partition(*i, p))
        .collect();
    let configs: Vec<Value> = image
        .configs
        .get(&ConfigResource::topic(name))
        .map(|c| {
            c.iter()
                .map(|(k, v)| json!({"name": k, "value": v, "source": "DYNAMIC_TOPIC_CONFIG"}))
                .collect()
        })
        .unwrap_or_default();
    Some(json!({
        "name": t.name,
        "id": t.id.to_string(),
        "page": page,
        "page_size": PAGE_SIZE,
        "total": t.partitions.len(),
        "partitions": partitions,
        "configs": configs,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kraftd_controller::testing::records::{
        config, partition, register_broker, topic as topic_record, uuid,
    };

    #[test]
    fn the_summary_counts_unhealthy_partitions_and_leaders() {
        let id = uuid(1);
        let records = vec![
            register_broker(1, 10, false),
            register_broker(2, 11, false),
            register_broker(3, 12, true),
            topic_record("t", id),
            partition(id, 0, &[1, 2, 3], &[1, 2, 3], 1),
            partition(id, 1, &[2, 3, 1], &[2, 1], 2),
            partition(id, 2, &[3, 1, 2], &[1], 1),
            partition(id, 3, &[1, 2, 3], &[1, 2, 3], 1),
            config(2, "t", "min.insync.replicas", Some("2")),
        ];
        let image = MetadataImage::empty().replay_all(&records).unwrap();
        let s = Summary::of(&image);
        assert_eq!(s.topics, 1);
        assert_eq!(s.partitions, 4);
        assert_eq!(s.offline, 0);
        assert_eq!(s.under_replicated, 2);
        assert_eq!(s.under_min_isr, 1);
        assert_eq!(s.leaders.get(&1), Some(&3));
        assert_eq!(s.leaders.get(&2), Some(&1));
        assert_eq!(s.replicas.values().sum::<usize>(), 12);
        let o = overview("c", &image, &s);
        assert_eq!(o["brokers"][2]["state"], "fenced");
        assert_eq!(o["brokers"][0]["leaders"], 3);
        let page = topics_page(&image, 0, &|_| true);
        assert_eq!(page["total"], 1);
        assert_eq!(page["topics"][0]["partitions"], 4);
        assert_eq!(page["topics"][0]["replication_factor"], 3);
        assert_eq!(page["topics"][0]["under_replicated"], 2);
        assert_eq!(
            topics_page(&image, 1, &|_| true)["topics"]
                .as_array()
                .unwrap()
                .len(),
            0
        );
        // A viewer who may describe no topic sees none, counted nowhere.
        let hidden = topics_page(&image, 0, &|name| name != "t");
        assert_eq!(hidden["total"], 0);
        assert_eq!(hidden["topics"], json!([]));
        let s = Summary::of_visible(&image, &|name| name != "t");
        assert_eq!((s.topics, s.partitions, s.under_replicated), (0, 0, 0));
        let t = topic(&image, "t", 0).unwrap();
        assert_eq!(t["partitions"].as_array().unwrap().len(), 4);
        assert_eq!(t["partitions"][2]["isr"], json!([1]));
        assert_eq!(t["configs"][0]["name"], "min.insync.replicas");
        assert!(topic(&image, "missing", 0).is_none());
    }
}
