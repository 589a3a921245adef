//! What the controller listener checks before it runs a request, as Kafka's
//! `ControllerApis` does: the nodes' own APIs (registration, heartbeats, AlterPartition,
//! producer id blocks, Raft's RPCs, Envelope) need CLUSTER_ACTION on the cluster, so only
//! the cluster's own principals (normally super users) get in; a client's request (sent
//! directly, or forwarded by a broker in an Envelope and checked again as the client) needs
//! what Kafka requires of it, with Kafka's errors per topic or resource where Kafka answers
//! per topic or resource. Without an authorizer everything passes and the ACL APIs answer
//! SECURITY_DISABLED.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::error_response::error_response;
use kraftd_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kraftd_protocol::messages::create_topics_response::CreatableTopicResult;
use kraftd_protocol::messages::delete_topics_response::DeletableTopicResult;
use kraftd_protocol::messages::{alter_configs_response, incremental_alter_configs_response};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};

use crate::auth::{default_message, security_disabled, RequestAuth};
use crate::control::acl::{RESOURCE_TYPE_TOPIC, RESOURCE_TYPE_USER};
use crate::image::ConfigResourceType;
use crate::publisher::{
    OPERATION_ALTER, OPERATION_ALTER_CONFIGS, OPERATION_CLUSTER_ACTION, OPERATION_CREATE,
    OPERATION_CREATE_TOKENS, OPERATION_DELETE, OPERATION_DESCRIBE, OPERATION_DESCRIBE_CONFIGS,
};
use crate::MetadataImage;

/// The metadata log, which CreateTopics refuses by itself whoever asks.
const CLUSTER_METADATA_TOPIC: &str = "__cluster_metadata";
/// Kafka's message for CreateTopics' refused names.
const CREATE_REFUSED_MESSAGE: &str = "Authorization failed.";

/// Puts the answers for the entries a check took out back into the response.
pub(crate) type Merge = Box<dyn FnOnce(ResponseBody) -> ResponseBody + Send>;

/// The outcome of checking one controller request.
pub(crate) enum Checked {
    /// Refused (or answered) as a whole: this is the response.
    Answer(ResponseBody),
    /// Run this request (the allowed part of the original), then merge.
    Run(RequestBody, Option<Merge>),
}

/// The check of a Raft RPC or DescribeQuorum on the controller listener: the refusal, if
/// any.
pub(crate) fn check_raft(auth: &RequestAuth, body: &RequestBody) -> Option<ResponseBody> {
    let operation = match body {
        RequestBody::DescribeQuorum(_) => OPERATION_DESCRIBE,
        // Kafka: ALTER on the cluster for an operator's voter change.
        RequestBody::AddRaftVoter(_) | RequestBody::RemoveRaftVoter(_) => OPERATION_ALTER,
        _ => OPERATION_CLUSTER_ACTION,
    };
    (!auth.authorize_cluster(operation)).then(|| cluster_refused(body))
}

/// The whole-request CLUSTER_AUTHORIZATION_FAILED answer of `body`'s own type.
pub(crate) fn cluster_refused(body: &RequestBody) -> ResponseBody {
    error_response(body, ErrorCode::ClusterAuthorizationFailed)
        .expect("every controller API has an error response")
}

/// Checks a controller API request (one of `CONTROLLER_API_KEYS`) as `auth`. `image` names
/// topics a request gives by id.
pub(crate) fn check(auth: &RequestAuth, image: &MetadataImage, body: RequestBody) -> Checked {
    use RequestBody as B;
    let cluster = |operation: i8, body: RequestBody| {
        if auth.authorize_cluster(operation) {
            Checked::Run(body, None)
        } else {
            Checked::Answer(cluster_refused(&body))
        }
    };
    match body {
        B::BrokerRegistration(_)
        | B::ControllerRegistration(_)
        | B::BrokerHeartbeat(_)
        | B::AlterPartition(_)
        | B::AssignReplicasToDirs(_)
        | B::AllocateProducerIds(_) => cluster(OPERATION_CLUSTER_ACTION, body),
        B::UnregisterBroker(_)
        | B::UnregisterController(_)
        | B::ElectLeaders(_)
        | B::UpdateFeatures(_)
        | B::AlterUserScramCredentials(_)
        | B::AlterPartitionReassignments(_) => cluster(OPERATION_ALTER, body),
        B::DescribeUserScramCredentials(_) | B::ListPartitionReassignments(_) => {
            cluster(OPERATION_DESCRIBE, body)
        }
        B::AlterClientQuotas(_) => cluster(OPERATION_ALTER_CONFIGS, body),
        B::CreateAcls(_) | B::DeleteAcls(_) | B::DescribeAcls(_) => acl_api(auth, body),
        B::CreateTopics(r) => create_topics(auth, r),
        B::DeleteTopics(r) => delete_topics(auth, image, r),
        B::CreatePartitions(r) => create_partitions(auth, r),
        B::AlterConfigs(r) => alter_configs(auth, r),
        B::IncrementalAlterConfigs(r) => incremental_alter_configs(auth, r),
        other => Checked::Run(other, None),
    }
}

/// The delegation token APIs' checks before they run, as Kafka's `ControllerApis`: none
/// from a token-authenticated session or (sent directly) a PLAINTEXT or one-way SSL
/// connection (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); a token for another owner needs
/// CREATE_TOKENS on that user (DELEGATION_TOKEN_AUTHORIZATION_FAILED). The refusal, if any.
pub(crate) fn check_token_api(
    auth: &RequestAuth,
    body: &RequestBody,
    protocol: Option<kraftd_net::SecurityProtocol>,
) -> Option<ResponseBody> {
    use crate::control::delegation_tokens::{
        create_refusal, token_api_refused, token_requests_allowed,
    };
    let requester = auth.kafka_principal();
    let code = if !token_requests_allowed(requester, protocol) {
        ErrorCode::DelegationTokenRequestNotAllowed
    } else if let RequestBody::CreateDelegationToken(r) = body {
        create_refusal(r, requester, |owner| {
            auth.authorize(OPERATION_CREATE_TOKENS, RESOURCE_TYPE_USER, owner)
        })?
    } else {
        return None;
    };
    token_api_refused(body, requester, code)
}

/// The ACL APIs: ALTER (DESCRIBE to describe) on the cluster, then SECURITY_DISABLED with
/// Kafka's messages when no authorizer runs.
fn acl_api(auth: &RequestAuth, body: RequestBody) -> Checked {
    let operation = match body {
        RequestBody::DescribeAcls(_) => OPERATION_DESCRIBE,
        _ => OPERATION_ALTER,
    };
    if !auth.authorize_cluster(operation) {
        return Checked::Answer(cluster_refused(&body));
    }
    if auth.is_enabled() {
        return Checked::Run(body, None);
    }
    Checked::Answer(security_disabled(&body).unwrap_or_else(|| cluster_refused(&body)))
}

/// Names that occur once in `names`: Kafka leaves duplicates to the request's own
/// validation (INVALID_REQUEST) and checks only the others.
fn unique<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeSet<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for name in names {
        *counts.entry(name).or_default() += 1;
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n == 1)
        .map(|(name, _)| name.to_string())
        .collect()
}

/// CreateTopics: CREATE on the cluster or on each topic (TOPIC_AUTHORIZATION_FAILED
/// "Authorization failed." for the others); a created topic the principal may not
/// DESCRIBE_CONFIGS is answered without its configs and counts, TOPIC_AUTHORIZATION_FAILED
/// as its config error.
fn create_topics(
    auth: &RequestAuth,
    mut r: kraftd_protocol::messages::CreateTopicsRequest,
) -> Checked {
    let names = unique(r.topics.iter().map(|t| t.name.as_str()));
    let checked = names
        .iter()
        .map(String::as_str)
        .filter(|n| *n != CLUSTER_METADATA_TOPIC);
    let creatable: BTreeSet<String> = if auth.authorize_cluster(OPERATION_CREATE) {
        checked.clone().map(str::to_string).collect()
    } else {
        auth.filter(OPERATION_CREATE, RESOURCE_TYPE_TOPIC, checked.clone())
    };
    let describable = auth.filter(OPERATION_DESCRIBE_CONFIGS, RESOURCE_TYPE_TOPIC, checked);
    let refused: Vec<String> = names
        .into_iter()
        .filter(|n| n != CLUSTER_METADATA_TOPIC && !creatable.contains(n))
        .collect();
    r.topics.retain(|t| !refused.contains(&t.name));
    let merge: Merge = Box::new(move |response| match response {
        ResponseBody::CreateTopics(mut response) => {
            for topic in &mut response.topics {
                if topic.error_code == 0 && !describable.contains(&topic.name) {
                    topic.configs = Some(Vec::new());
                    topic.num_partitions = -1;
                    topic.replication_factor = -1;
                    topic.topic_config_error_code = ErrorCode::TopicAuthorizationFailed.code();
                }
            }
            response
                .topics
                .extend(refused.into_iter().map(|name| CreatableTopicResult {
                    name,
                    error_code: ErrorCode::TopicAuthorizationFailed.code(),
                    error_message: Some(CREATE_REFUSED_MESSAGE.into()),
                    ..Default::default()
                }));
            ResponseBody::CreateTopics(response)
        }
        other => other,
    });
    Checked::Run(RequestBody::CreateTopics(r), Some(merge))
}

/// DeleteTopics: DELETE on the cluster or on each topic. A name the principal may not
/// DESCRIBE is refused without saying whether it exists; a topic given by id is refused
/// with its name only when the principal may describe it.
fn delete_topics(
    auth: &RequestAuth,
    image: &MetadataImage,
    mut r: kraftd_protocol::messages::DeleteTopicsRequest,
) -> Checked {
    let all = auth.authorize_cluster(OPERATION_DELETE);
    let mut describe = auth.memo(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC);
    let mut delete = auth.memo(OPERATION_DELETE, RESOURCE_TYPE_TOPIC);
    let mut refused: Vec<DeletableTopicResult> = Vec::new();
    let mut refuse = |name: Option<String>, topic_id: Uuid| {
        refused.push(DeletableTopicResult {
            name,
            topic_id,
            error_code: ErrorCode::TopicAuthorizationFailed.code(),
            error_message: Some(default_message(ErrorCode::TopicAuthorizationFailed)),
            ..Default::default()
        })
    };
    let mut allowed = |name: &str, describe: &mut crate::auth::AuthMemo<'_>| -> (bool, bool) {
        if all {
            (true, true)
        } else {
            (describe.allowed(name), delete.allowed(name))
        }
    };
    let unique_names = unique(
        r.topic_names
            .iter()
            .map(String::as_str)
            .chain(r.topics.iter().filter_map(|t| t.name.as_deref())),
    );
    r.topic_names.retain(|name| {
        if !unique_names.contains(name.as_str()) {
            return true;
        }
        let ok = allowed(name, &mut describe) == (true, true);
        if !ok {
            refuse(Some(name.clone()), Uuid::ZERO);
        }
        ok
    });
    r.topics.retain(|t| match (&t.name, t.topic_id) {
        (Some(name), id) if id == Uuid::ZERO => {
            if !unique_names.contains(name.as_str()) {
                return true;
            }
            let ok = allowed(name, &mut describe) == (true, true);
            if !ok {
                refuse(Some(name.clone()), Uuid::ZERO);
            }
            ok
        }
        (None, id) if id != Uuid::ZERO => match image.topics.get(&id) {
            // An unknown id is the request's own error (UNKNOWN_TOPIC_ID).
            None => true,
            Some(topic) => match allowed(&topic.name, &mut describe) {
                (_, true) => true,
                (true, false) => {
                    refuse(Some(topic.name.clone()), id);
                    false
                }
                (false, false) => {
                    refuse(None, id);
                    false
                }
            },
        },
        // Both or neither: INVALID_REQUEST from the request's own validation.
        _ => true,
    });
    let merge: Merge = Box::new(move |response| match response {
        ResponseBody::DeleteTopics(mut response) => {
            response.responses.extend(refused);
            ResponseBody::DeleteTopics(response)
        }
        other => other,
    });
    Checked::Run(RequestBody::DeleteTopics(r), Some(merge))
}

/// CreatePartitions: ALTER on each topic.
fn create_partitions(
    auth: &RequestAuth,
    mut r: kraftd_protocol::messages::CreatePartitionsRequest,
) -> Checked {
    let names = unique(r.topics.iter().map(|t| t.name.as_str()));
    let alterable = auth.filter(
        OPERATION_ALTER,
        RESOURCE_TYPE_TOPIC,
        names.iter().map(String::as_str),
    );
    let refused: Vec<String> = names
        .into_iter()
        .filter(|n| !alterable.contains(n))
        .collect();
    r.topics.retain(|t| !refused.contains(&t.name));
    let merge: Merge = Box::new(move |response| match response {
        ResponseBody::CreatePartitions(mut response) => {
            response
                .results
                .extend(refused.into_iter().map(|name| CreatePartitionsTopicResult {
                    name,
                    error_code: ErrorCode::TopicAuthorizationFailed.code(),
                    error_message: None,
                    ..Default::default()
                }));
            ResponseBody::CreatePartitions(response)
        }
        other => other,
    });
    Checked::Run(RequestBody::CreatePartitions(r), Some(merge))
}

/// Kafka 4.4's `ControllerApis` check of one resource an AlterConfigs names
/// (`authorizeAlterResource`): ALTER_CONFIGS on it, by the mapping every config request uses
/// ([`RequestAuth::config_resource_refusal`]). A broker logger is not checked: AlterConfigs
/// never alters loggers, so whoever asks gets the request's own INVALID_REQUEST, as in Kafka.
fn alter_refusal(auth: &RequestAuth, resource_type: i8, name: &str) -> Option<ErrorCode> {
    if resource_type == ConfigResourceType::BrokerLogger.code() {
        return None;
    }
    auth.config_resource_refusal(OPERATION_ALTER_CONFIGS, resource_type, name)
}

/// The same check for IncrementalAlterConfigs, except that a broker logger needs
/// CLUSTER_ACTION on the cluster: Kafka 4.4's `ControllerApis` hands loggers to its
/// `RuntimeLoggerManager`, which refuses CLUSTER_AUTHORIZATION_FAILED without it.
fn incremental_alter_refusal(
    auth: &RequestAuth,
    resource_type: i8,
    name: &str,
) -> Option<ErrorCode> {
    let operation = if resource_type == ConfigResourceType::BrokerLogger.code() {
        OPERATION_CLUSTER_ACTION
    } else {
        OPERATION_ALTER_CONFIGS
    };
    auth.config_resource_refusal(operation, resource_type, name)
}

/// The resources (type, name) named once in a config request.
fn unique_resources<'a>(resources: impl Iterator<Item = (i8, &'a str)>) -> BTreeSet<(i8, String)> {
    let mut counts: BTreeMap<(i8, &str), usize> = BTreeMap::new();
    for r in resources {
        *counts.entry(r).or_default() += 1;
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n == 1)
        .map(|((t, name), _)| (t, name.to_string()))
        .collect()
}

/// AlterConfigs: ALTER_CONFIGS on each resource ([`alter_refusal`]).
fn alter_configs(
    auth: &RequestAuth,
    mut r: kraftd_protocol::messages::AlterConfigsRequest,
) -> Checked {
    let once = unique_resources(
        r.resources
            .iter()
            .map(|res| (res.resource_type, res.resource_name.as_str())),
    );
    let mut refused = Vec::new();
    r.resources.retain(|res| {
        if !once.contains(&(res.resource_type, res.resource_name.clone())) {
            return true;
        }
        match alter_refusal(auth, res.resource_type, &res.resource_name) {
            None => true,
            Some(code) => {
                refused.push(alter_configs_response::AlterConfigsResourceResponse {
                    error_code: code.code(),
                    error_message: Some(default_message(code)),
                    resource_type: res.resource_type,
                    resource_name: res.resource_name.clone(),
                    ..Default::default()
                });
                false
            }
        }
    });
    let merge: Merge = Box::new(move |response| match response {
        ResponseBody::AlterConfigs(mut response) => {
            response.responses.extend(refused);
            ResponseBody::AlterConfigs(response)
        }
        other => other,
    });
    Checked::Run(RequestBody::AlterConfigs(r), Some(merge))
}

/// IncrementalAlterConfigs: as AlterConfigs, loggers apart ([`incremental_alter_refusal`]).
fn incremental_alter_configs(
    auth: &RequestAuth,
    mut r: kraftd_protocol::messages::IncrementalAlterConfigsRequest,
) -> Checked {
    let once = unique_resources(
        r.resources
            .iter()
            .map(|res| (res.resource_type, res.resource_name.as_str())),
    );
    let mut refused = Vec::new();
    r.resources.retain(|res| {
        if !once.contains(&(res.resource_type, res.resource_name.clone())) {
            return true;
        }
        match incremental_alter_refusal(auth, res.resource_type, &res.resource_name) {
            None => true,
            Some(code) => {
                refused.push(
                    incremental_alter_configs_response::AlterConfigsResourceResponse {
                        error_code: code.code(),
                        error_message: Some(default_message(code)),
                        resource_type: res.resource_type,
                        resource_name: res.resource_name.clone(),
                        ..Default::default()
                    },
                );
                false
            }
        }
    });
    let merge: Merge = Box::new(move |response| match response {
        ResponseBody::IncrementalAlterConfigs(mut response) => {
            response.responses.extend(refused);
            ResponseBody::IncrementalAlterConfigs(response)
        }
        other => other,
    });
    Checked::Run(RequestBody::IncrementalAlterConfigs(r), Some(merge))
}
