//! KIP-951's `NodeEndpoints`: a Produce, Fetch, ShareFetch or ShareAcknowledge answer that
//! tells a client a partition's leadership moved (NOT_LEADER_OR_FOLLOWER, and for the reads
//! FENCED_LEADER_EPOCH) names the new leader in the partition's `CurrentLeader` and that
//! leader's endpoint on the request's listener in the response, so the client goes there
//! without a Metadata round trip (Kafka's `KafkaApis.getCurrentLeader`, collected per
//! response). A leader that is not an unfenced broker with the listener is named without an
//! endpoint, as Kafka's `getAliveBrokerNode` leaves it out.

use std::collections::BTreeMap;

use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::{
    fetch_response, produce_response, share_acknowledge_response, share_fetch_response,
    FetchResponse, ProduceResponse, ShareAcknowledgeResponse, ShareFetchResponse,
};
use kraftd_protocol::{ErrorCode, Uuid};

use crate::kafka_apis::endpoint;

/// The first Produce and Fetch versions with `NodeEndpoints` (ShareFetch and
/// ShareAcknowledge have them in every version).
const PRODUCE_NODE_ENDPOINTS_VERSION: i16 = 10;
const FETCH_NODE_ENDPOINTS_VERSION: i16 = 16;

/// The leaders named so far and their endpoints, in node id order.
struct Leaders<'a> {
    image: &'a MetadataImage,
    listener: &'a str,
    endpoints: BTreeMap<i32, (String, i32, Option<String>)>,
}

impl<'a> Leaders<'a> {
    fn new(image: &'a MetadataImage, listener: &'a str) -> Self {
        Leaders {
            image,
            listener,
            endpoints: BTreeMap::new(),
        }
    }

    /// Fills an unknown `(leader id, epoch)` from the image, and records the leader's
    /// endpoint.
    fn name(&mut self, topic_id: Option<Uuid>, partition: i32, leader: &mut (i32, i32)) {
        if leader.0 < 0 {
            if let Some(p) = topic_id.and_then(|id| self.image.topics.partition(&id, partition)) {
                *leader = (p.leader, p.leader_epoch);
            }
        }
        if leader.0 < 0 || self.endpoints.contains_key(&leader.0) {
            return;
        }
        let Some(broker) = self.image.cluster.broker(leader.0).filter(|b| !b.fenced) else {
            return;
        };
        if let Some(e) = endpoint(broker, self.listener) {
            self.endpoints.insert(
                leader.0,
                (e.host.clone(), i32::from(e.port), broker.rack.clone()),
            );
        }
    }
}

fn moved(code: i16, fenced_epoch_too: bool) -> bool {
    code == ErrorCode::NotLeaderOrFollower.code()
        || (fenced_epoch_too && code == ErrorCode::FencedLeaderEpoch.code())
}

/// Names the new leader of every partition of `$response` whose error says leadership
/// moved, then sets the response's `NodeEndpoints` (of `$module`'s type).
macro_rules! name_leaders {
    ($module:ident, $leaders:expr, $response:expr, $partitions:ident, $index:ident,
     $fenced_epoch_too:expr, |$t:ident| $topic_id:expr) => {{
        let mut leaders = $leaders;
        for $t in &mut $response.responses {
            let topic_id = $topic_id;
            for p in &mut $t.$partitions {
                if moved(p.error_code, $fenced_epoch_too) {
                    let mut l = (p.current_leader.leader_id, p.current_leader.leader_epoch);
                    leaders.name(topic_id, p.$index, &mut l);
                    (p.current_leader.leader_id, p.current_leader.leader_epoch) = l;
                }
            }
        }
        $response.node_endpoints = leaders
            .endpoints
            .into_iter()
            .map(|(node_id, (host, port, rack))| $module::NodeEndpoint {
                node_id,
                host,
                port,
                rack,
                ..Default::default()
            })
            .collect();
    }};
}

/// Produce v10+: partitions refused with NOT_LEADER_OR_FOLLOWER.
pub fn produce(
    image: &MetadataImage,
    listener: &str,
    version: i16,
    response: &mut ProduceResponse,
) {
    if version < PRODUCE_NODE_ENDPOINTS_VERSION {
        return;
    }
    name_leaders!(
        produce_response,
        Leaders::new(image, listener),
        response,
        partition_responses,
        index,
        false,
        |t| if t.topic_id == Uuid::ZERO {
            image.topics.get_by_name(&t.name).map(|t| t.id)
        } else {
            Some(t.topic_id)
        }
    );
}

/// Fetch v16+: partitions answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH.
pub fn fetch(image: &MetadataImage, listener: &str, version: i16, response: &mut FetchResponse) {
    if version < FETCH_NODE_ENDPOINTS_VERSION {
        return;
    }
    name_leaders!(
        fetch_response,
        Leaders::new(image, listener),
        response,
        partitions,
        partition_index,
        true,
        |t| Some(t.topic_id)
    );
}

/// ShareFetch: partitions answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH.
pub fn share_fetch(image: &MetadataImage, listener: &str, response: &mut ShareFetchResponse) {
    name_leaders!(
        share_fetch_response,
        Leaders::new(image, listener),
        response,
        partitions,
        partition_index,
        true,
        |t| Some(t.topic_id)
    );
}

/// ShareAcknowledge: partitions answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH.
pub fn share_acknowledge(
    image: &MetadataImage,
    listener: &str,
    response: &mut ShareAcknowledgeResponse,
) {
    name_leaders!(
        share_acknowledge_response,
        Leaders::new(image, listener),
        response,
        partitions,
        partition_index,
        true,
        |t| Some(t.topic_id)
    );
}
