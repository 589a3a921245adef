//! Error answers of a request's own type (Kafka's `AbstractRequest.getErrorResponse`): a
//! request a node cannot run (this controller is not active, the event queue is full, the
//! forwarding to the controller timed out) still gets a response of its own type, with the
//! error code on every element a client reads. The controller's listener and the broker's
//! forwarding both answer with it, so it lives below both. A client that sees
//! NOT_CONTROLLER in a topic result retries against the controller it learns next.

use crate::messages::{
    alter_client_quotas_response, alter_configs_response, alter_partition_reassignments_response,
    alter_user_scram_credentials_response, create_acls_response, create_partitions_response,
    create_topics_response, delete_acls_response, delete_topics_response, elect_leaders_response,
    incremental_alter_configs_response, AllocateProducerIdsResponse, AlterClientQuotasResponse,
    AlterConfigsResponse, AlterPartitionReassignmentsResponse, AlterPartitionResponse,
    AlterUserScramCredentialsResponse, BrokerHeartbeatResponse, BrokerRegistrationResponse,
    CreateAclsResponse, CreatePartitionsResponse, CreateTopicsResponse, DeleteAclsResponse,
    DeleteTopicsResponse, DescribeAclsResponse, DescribeClientQuotasResponse,
    DescribeUserScramCredentialsResponse, ElectLeadersResponse, IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsResponse, UnregisterBrokerResponse, UpdateFeaturesResponse,
};
use crate::messages::{
    AssignReplicasToDirsResponse, ControllerRegistrationResponse, UnregisterControllerResponse,
};
use crate::{ErrorCode, RequestBody, ResponseBody};

/// The response to `request` failing as a whole with `code`; `None` for APIs that have no
/// error answer here yet (add one with the API's handler).
pub fn error_response(request: &RequestBody, code: ErrorCode) -> Option<ResponseBody> {
    let error_code = code.code();
    let message = || Some(code.to_string());
    Some(match request {
        RequestBody::BrokerRegistration(_) => {
            ResponseBody::BrokerRegistration(BrokerRegistrationResponse {
                error_code,
                broker_epoch: -1,
                ..Default::default()
            })
        }
        RequestBody::BrokerHeartbeat(_) => ResponseBody::BrokerHeartbeat(BrokerHeartbeatResponse {
            error_code,
            is_caught_up: false,
            is_fenced: true,
            should_shut_down: false,
            ..Default::default()
        }),
        RequestBody::UnregisterBroker(_) => {
            ResponseBody::UnregisterBroker(UnregisterBrokerResponse {
                error_code,
                error_message: message(),
                ..Default::default()
            })
        }
        RequestBody::ControllerRegistration(_) => {
            ResponseBody::ControllerRegistration(ControllerRegistrationResponse {
                error_code,
                error_message: message(),
                ..Default::default()
            })
        }
        RequestBody::UnregisterController(_) => {
            ResponseBody::UnregisterController(UnregisterControllerResponse {
                error_code,
                error_message: message(),
                ..Default::default()
            })
        }
        RequestBody::AlterPartition(_) => ResponseBody::AlterPartition(AlterPartitionResponse {
            error_code,
            ..Default::default()
        }),
        RequestBody::AssignReplicasToDirs(_) => {
            ResponseBody::AssignReplicasToDirs(AssignReplicasToDirsResponse {
                error_code,
                ..Default::default()
            })
        }
        RequestBody::AllocateProducerIds(_) => {
            ResponseBody::AllocateProducerIds(AllocateProducerIdsResponse {
                error_code,
                producer_id_start: -1,
                producer_id_len: 0,
                ..Default::default()
            })
        }
        // Kafka's `AlterPartitionReassignmentsRequest.getErrorResponse`: the error on the
        // whole response and on every partition.
        RequestBody::AlterPartitionReassignments(r) => {
            ResponseBody::AlterPartitionReassignments(AlterPartitionReassignmentsResponse {
                error_code,
                error_message: message(),
                allow_replication_factor_change: r.allow_replication_factor_change,
                responses: r
                    .topics
                    .iter()
                    .map(|t| alter_partition_reassignments_response::ReassignableTopicResponse {
                        name: t.name.clone(),
                        partitions: t
                            .partitions
                            .iter()
                            .map(|p| {
                                alter_partition_reassignments_response::ReassignablePartitionResponse {
                                    partition_index: p.partition_index,
                                    error_code,
                                    error_message: message(),
                                    ..Default::default()
                                }
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
        }
        RequestBody::ListPartitionReassignments(_) => {
            ResponseBody::ListPartitionReassignments(ListPartitionReassignmentsResponse {
                error_code,
                error_message: message(),
                ..Default::default()
            })
        }
        // Kafka's `ElectLeadersRequest.getErrorResponse`: the error on every partition asked
        // about, and on the whole from v1 ([`fit_to_version`] clears it for v0).
        RequestBody::ElectLeaders(r) => ResponseBody::ElectLeaders(ElectLeadersResponse {
            error_code,
            replica_election_results: r
                .topic_partitions
                .iter()
                .flatten()
                .map(|t| elect_leaders_response::ReplicaElectionResult {
                    topic: t.topic.clone(),
                    partition_result: t
                        .partitions
                        .iter()
                        .map(|&partition_id| elect_leaders_response::PartitionResult {
                            partition_id,
                            error_code,
                            error_message: message(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::UpdateFeatures(_) => ResponseBody::UpdateFeatures(UpdateFeaturesResponse {
            error_code,
            error_message: message(),
            ..Default::default()
        }),
        RequestBody::DescribeAcls(_) => ResponseBody::DescribeAcls(DescribeAclsResponse {
            error_code,
            error_message: message(),
            ..Default::default()
        }),
        RequestBody::DescribeUserScramCredentials(_) => {
            ResponseBody::DescribeUserScramCredentials(DescribeUserScramCredentialsResponse {
                error_code,
                error_message: message(),
                ..Default::default()
            })
        }
        RequestBody::DescribeClientQuotas(_) => {
            ResponseBody::DescribeClientQuotas(DescribeClientQuotasResponse {
                error_code,
                error_message: message(),
                ..Default::default()
            })
        }
        RequestBody::CreateTopics(r) => ResponseBody::CreateTopics(CreateTopicsResponse {
            topics: r
                .topics
                .iter()
                .map(|t| create_topics_response::CreatableTopicResult {
                    name: t.name.clone(),
                    error_code,
                    error_message: message(),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::DeleteTopics(r) => {
            let mut responses: Vec<_> = r
                .topic_names
                .iter()
                .map(|name| delete_topics_response::DeletableTopicResult {
                    name: Some(name.clone()),
                    error_code,
                    error_message: message(),
                    ..Default::default()
                })
                .collect();
            responses.extend(r.topics.iter().map(|t| {
                delete_topics_response::DeletableTopicResult {
                    name: t.name.clone(),
                    topic_id: t.topic_id,
                    error_code,
                    error_message: message(),
                    ..Default::default()
                }
            }));
            ResponseBody::DeleteTopics(DeleteTopicsResponse {
                responses,
                ..Default::default()
            })
        }
        RequestBody::CreatePartitions(r) => {
            ResponseBody::CreatePartitions(CreatePartitionsResponse {
                results: r
                    .topics
                    .iter()
                    .map(
                        |t| create_partitions_response::CreatePartitionsTopicResult {
                            name: t.name.clone(),
                            error_code,
                            error_message: message(),
                            ..Default::default()
                        },
                    )
                    .collect(),
                ..Default::default()
            })
        }
        RequestBody::IncrementalAlterConfigs(r) => {
            ResponseBody::IncrementalAlterConfigs(IncrementalAlterConfigsResponse {
                responses: r
                    .resources
                    .iter()
                    .map(
                        |res| incremental_alter_configs_response::AlterConfigsResourceResponse {
                            error_code,
                            error_message: message(),
                            resource_type: res.resource_type,
                            resource_name: res.resource_name.clone(),
                            ..Default::default()
                        },
                    )
                    .collect(),
                ..Default::default()
            })
        }
        RequestBody::AlterConfigs(r) => ResponseBody::AlterConfigs(AlterConfigsResponse {
            responses: r
                .resources
                .iter()
                .map(|res| alter_configs_response::AlterConfigsResourceResponse {
                    error_code,
                    error_message: message(),
                    resource_type: res.resource_type,
                    resource_name: res.resource_name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::AlterUserScramCredentials(r) => {
            let users = r
                .deletions
                .iter()
                .map(|d| d.name.clone())
                .chain(r.upsertions.iter().map(|u| u.name.clone()));
            ResponseBody::AlterUserScramCredentials(AlterUserScramCredentialsResponse {
                results: users
                    .map(|user| {
                        alter_user_scram_credentials_response::AlterUserScramCredentialsResult {
                            user,
                            error_code,
                            error_message: message(),
                            ..Default::default()
                        }
                    })
                    .collect(),
                ..Default::default()
            })
        }
        RequestBody::CreateAcls(r) => ResponseBody::CreateAcls(CreateAclsResponse {
            results: r
                .creations
                .iter()
                .map(|_| create_acls_response::AclCreationResult {
                    error_code,
                    error_message: message(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::DeleteAcls(r) => ResponseBody::DeleteAcls(DeleteAclsResponse {
            filter_results: r
                .filters
                .iter()
                .map(|_| delete_acls_response::DeleteAclsFilterResult {
                    error_code,
                    error_message: message(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::AlterClientQuotas(r) => {
            ResponseBody::AlterClientQuotas(AlterClientQuotasResponse {
                entries: r
                    .entries
                    .iter()
                    .map(|e| alter_client_quotas_response::EntryData {
                        error_code,
                        error_message: message(),
                        entity: e
                            .entity
                            .iter()
                            .map(|en| alter_client_quotas_response::EntityData {
                                entity_type: en.entity_type.clone(),
                                entity_name: en.entity_name.clone(),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
        }
        _ => return node_error_response(request, code),
    })
}

/// The Raft RPCs, DescribeQuorum, DescribeCluster and Envelope failing as a whole (a
/// principal refused on the controller listener): the top-level error code only.
fn node_error_response(request: &RequestBody, code: ErrorCode) -> Option<ResponseBody> {
    use crate::messages::{
        BeginQuorumEpochResponse, DescribeClusterResponse, DescribeQuorumResponse,
        EndQuorumEpochResponse, EnvelopeResponse, FetchResponse, FetchSnapshotResponse,
        VoteResponse,
    };
    let error_code = code.code();
    Some(match request {
        RequestBody::Vote(_) => ResponseBody::Vote(VoteResponse {
            error_code,
            ..Default::default()
        }),
        RequestBody::BeginQuorumEpoch(_) => {
            ResponseBody::BeginQuorumEpoch(BeginQuorumEpochResponse {
                error_code,
                ..Default::default()
            })
        }
        RequestBody::EndQuorumEpoch(_) => ResponseBody::EndQuorumEpoch(EndQuorumEpochResponse {
            error_code,
            ..Default::default()
        }),
        // Kafka's FetchRequest.getErrorResponse: the top-level error, no partitions.
        RequestBody::Fetch(_) => ResponseBody::Fetch(FetchResponse {
            error_code,
            session_id: 0,
            ..Default::default()
        }),
        RequestBody::FetchSnapshot(_) => ResponseBody::FetchSnapshot(FetchSnapshotResponse {
            error_code,
            ..Default::default()
        }),
        RequestBody::DescribeQuorum(_) => ResponseBody::DescribeQuorum(DescribeQuorumResponse {
            error_code,
            error_message: Some(code.to_string()),
            ..Default::default()
        }),
        RequestBody::DescribeCluster(r) => ResponseBody::DescribeCluster(DescribeClusterResponse {
            error_code,
            error_message: Some(code.to_string()),
            endpoint_type: r.endpoint_type,
            controller_id: -1,
            ..Default::default()
        }),
        RequestBody::Envelope(_) => ResponseBody::Envelope(EnvelopeResponse {
            response_data: None,
            error_code,
            ..Default::default()
        }),
        RequestBody::AddRaftVoter(_) => {
            ResponseBody::AddRaftVoter(crate::messages::AddRaftVoterResponse {
                error_code,
                error_message: Some(code.to_string()),
                ..Default::default()
            })
        }
        RequestBody::RemoveRaftVoter(_) => {
            ResponseBody::RemoveRaftVoter(crate::messages::RemoveRaftVoterResponse {
                error_code,
                error_message: Some(code.to_string()),
                ..Default::default()
            })
        }
        RequestBody::UpdateRaftVoter(_) => {
            ResponseBody::UpdateRaftVoter(crate::messages::UpdateRaftVoterResponse {
                error_code,
                ..Default::default()
            })
        }
        _ => return group_error_response(request, code),
    })
}

/// The group coordinator's APIs failing as a whole (not the coordinator, loading, not
/// available): every group, member, topic and partition the request names gets `code`.
fn group_error_response(request: &RequestBody, code: ErrorCode) -> Option<ResponseBody> {
    use crate::messages::{
        consumer_group_describe_response, delete_groups_response, describe_groups_response,
        leave_group_response, offset_commit_response, offset_delete_response,
        offset_fetch_response, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatResponse,
        DeleteGroupsResponse, DescribeGroupsResponse, HeartbeatResponse, JoinGroupResponse,
        LeaveGroupResponse, ListGroupsResponse, OffsetCommitResponse, OffsetDeleteResponse,
        OffsetFetchResponse, SyncGroupResponse,
    };
    let error_code = code.code();
    Some(match request {
        RequestBody::JoinGroup(r) => ResponseBody::JoinGroup(JoinGroupResponse {
            error_code,
            generation_id: -1,
            // Null from v7 ([`fit_to_version`]); empty before, where it is not nullable.
            protocol_name: None,
            member_id: r.member_id.clone(),
            ..Default::default()
        }),
        RequestBody::SyncGroup(_) => ResponseBody::SyncGroup(SyncGroupResponse {
            error_code,
            ..Default::default()
        }),
        RequestBody::Heartbeat(_) => ResponseBody::Heartbeat(HeartbeatResponse {
            error_code,
            ..Default::default()
        }),
        RequestBody::LeaveGroup(r) => ResponseBody::LeaveGroup(LeaveGroupResponse {
            error_code,
            members: r
                .members
                .iter()
                .map(|m| leave_group_response::MemberResponse {
                    member_id: m.member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    error_code,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::OffsetCommit(r) => ResponseBody::OffsetCommit(OffsetCommitResponse {
            topics: r
                .topics
                .iter()
                .map(|t| offset_commit_response::OffsetCommitResponseTopic {
                    name: t.name.clone(),
                    topic_id: t.topic_id,
                    partitions: t
                        .partitions
                        .iter()
                        .map(|p| offset_commit_response::OffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::OffsetFetch(r) => ResponseBody::OffsetFetch(OffsetFetchResponse {
            error_code,
            groups: r
                .groups
                .iter()
                .map(|g| offset_fetch_response::OffsetFetchResponseGroup {
                    group_id: g.group_id.clone(),
                    error_code,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::OffsetDelete(_) => ResponseBody::OffsetDelete(OffsetDeleteResponse {
            error_code,
            topics: Vec::<offset_delete_response::OffsetDeleteResponseTopic>::new(),
            ..Default::default()
        }),
        RequestBody::DescribeGroups(r) => ResponseBody::DescribeGroups(DescribeGroupsResponse {
            groups: r
                .groups
                .iter()
                .map(|g| describe_groups_response::DescribedGroup {
                    group_id: g.clone(),
                    error_code,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::ListGroups(_) => ResponseBody::ListGroups(ListGroupsResponse {
            error_code,
            ..Default::default()
        }),
        RequestBody::DeleteGroups(r) => ResponseBody::DeleteGroups(DeleteGroupsResponse {
            results: r
                .groups_names
                .iter()
                .map(|g| delete_groups_response::DeletableGroupResult {
                    group_id: g.clone(),
                    error_code,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::ConsumerGroupHeartbeat(_) => {
            ResponseBody::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse {
                error_code,
                error_message: Some(code.to_string()),
                ..Default::default()
            })
        }
        RequestBody::ConsumerGroupDescribe(r) => {
            ResponseBody::ConsumerGroupDescribe(ConsumerGroupDescribeResponse {
                groups: r
                    .group_ids
                    .iter()
                    .map(|g| consumer_group_describe_response::DescribedGroup {
                        group_id: g.clone(),
                        error_code,
                        error_message: Some(code.to_string()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            })
        }
        _ => return None,
    })
}

/// What a response may hold at `version` where Kafka's response constructors adjust it for the
/// version it is sent at: JoinGroup's protocol name, not nullable before v7, where Kafka
/// sends it empty (and null for empty from v7); ElectLeaders' top-level error, which v0
/// cannot carry (its partitions carry it). `None` when `body` is already right for `version`.
pub fn fit_to_version(body: &ResponseBody, version: i16) -> Option<ResponseBody> {
    match body {
        ResponseBody::JoinGroup(r) if version < 7 && r.protocol_name.is_none() => {
            let mut r = r.clone();
            r.protocol_name = Some(String::new());
            Some(ResponseBody::JoinGroup(r))
        }
        ResponseBody::JoinGroup(r) if version >= 7 && r.protocol_name.as_deref() == Some("") => {
            let mut r = r.clone();
            r.protocol_name = None;
            Some(ResponseBody::JoinGroup(r))
        }
        ResponseBody::ElectLeaders(r) if version < 1 && r.error_code != 0 => {
            let mut r = r.clone();
            r.error_code = 0;
            Some(ResponseBody::ElectLeaders(r))
        }
        _ => None,
    }
}
