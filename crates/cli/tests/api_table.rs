//! `docs/api-table.md`: every API of Kafka 4.4's schemas, where Kafka serves it, the versions
//! kraftd serves on its broker and controller listeners, and the test that covers it.
//! Generated here from the code (the listeners' ApiVersions tables and [`COVERAGE`]) and
//! compared with the file; `UPDATE_API_TABLE=1` rewrites it. The ApiKey list is generated
//! from the 4.4.0 schemas, so an API the schemas hold and the table lacks cannot pass; every
//! API kraftd serves must name a test file that exists and mentions it (the evidence string),
//! and every API it does not serve says why ([`NOT_SERVED`]). Whether the versions equal what
//! Kafka 4.4.0 itself advertises is `api_versions_kafka.rs`'s check, against a running Kafka.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use kraftd_broker::server::apis::KafkaApis;
use kraftd_controller::node::ControllerApis;
use kraftd_protocol::api_versions::ApiVersionsTable;
use kraftd_protocol::ApiKey;

/// Each served API's covering test: (key, file under the repository root, a string the file
/// contains that shows it exercises the API — its name, or the tool or client call that
/// sends it).
#[rustfmt::skip]
const COVERAGE: &[(ApiKey, &str, &str)] = &[
    (ApiKey::Produce, "crates/cli/tests/stock_data_plane.rs", "produce"),
    (ApiKey::Fetch, "crates/cli/tests/stock_data_plane.rs", "consume"),
    (ApiKey::ListOffsets, "crates/cli/tests/stock_acls.rs", "ListOffsets"),
    (ApiKey::Metadata, "crates/broker/tests/kafka_apis.rs", "MetadataRequest"),
    (ApiKey::OffsetCommit, "crates/broker/tests/group_offsets.rs", "OffsetCommit"),
    (ApiKey::OffsetFetch, "crates/broker/tests/group_offsets.rs", "OffsetFetch"),
    (ApiKey::FindCoordinator, "crates/cli/tests/stock_groups_hostile.rs", "FindCoordinator"),
    (ApiKey::JoinGroup, "crates/cli/tests/stock_groups_hostile.rs", "JoinGroup"),
    (ApiKey::Heartbeat, "crates/cli/tests/stock_groups_hostile.rs", "Heartbeat"),
    (ApiKey::LeaveGroup, "crates/cli/tests/python/groups.py", "close"),
    (ApiKey::SyncGroup, "crates/cli/tests/stock_groups_hostile.rs", "SyncGroup"),
    (ApiKey::DescribeGroups, "crates/cli/tests/stock_acls.rs", "DescribeGroups"),
    (ApiKey::ListGroups, "crates/cli/tests/share_groups_raw.rs", "ListGroups"),
    (ApiKey::SaslHandshake, "crates/net/tests/network/sasl.rs", "SaslHandshake"),
    (ApiKey::ApiVersions, "crates/cli/tests/api_versions_kafka.rs", "ApiVersions"),
    (ApiKey::CreateTopics, "crates/controller/tests/it/control_topics.rs", "CreateTopics"),
    (ApiKey::DeleteTopics, "crates/cli/tests/stock_topic_deletion.rs", "delete"),
    (ApiKey::DeleteRecords, "crates/cli/tests/stock_delete_records.rs", "delete_records"),
    (ApiKey::InitProducerId, "crates/cli/tests/stock_acls.rs", "InitProducerId"),
    (ApiKey::OffsetForLeaderEpoch, "crates/broker/tests/replication_scenarios.rs", "OffsetForLeaderEpoch"),
    (ApiKey::AddPartitionsToTxn, "crates/cli/tests/stock_txn_verification.rs", "AddPartitionsToTxn"),
    (ApiKey::AddOffsetsToTxn, "crates/cli/tests/stock_acls.rs", "AddOffsetsToTxn"),
    (ApiKey::EndTxn, "crates/cli/tests/stock_txn_verification.rs", "EndTxn"),
    (ApiKey::WriteTxnMarkers, "crates/cli/tests/stock_transactions.rs", "abort"),
    (ApiKey::TxnOffsetCommit, "crates/cli/tests/stock_txn_verification.rs", "TxnOffsetCommit"),
    (ApiKey::DescribeAcls, "crates/controller/tests/it/node_authz.rs", "DescribeAcls"),
    (ApiKey::CreateAcls, "crates/controller/tests/it/node_authz.rs", "CreateAcls"),
    (ApiKey::DeleteAcls, "crates/controller/tests/it/node_authz.rs", "DeleteAcls"),
    (ApiKey::DescribeConfigs, "crates/broker/tests/kafka_apis.rs", "DescribeConfigs"),
    (ApiKey::AlterConfigs, "crates/controller/tests/it/control_configuration.rs", "AlterConfigs"),
    (ApiKey::AlterReplicaLogDirs, "crates/cli/tests/stock_log_dirs.rs", "alter"),
    (ApiKey::DescribeLogDirs, "crates/cli/tests/stock_log_dirs.rs", "describe"),
    (ApiKey::SaslAuthenticate, "crates/net/tests/network/sasl.rs", "SaslAuthenticate"),
    (ApiKey::CreatePartitions, "crates/controller/tests/it/control_topics.rs", "CreatePartitions"),
    (ApiKey::DeleteGroups, "crates/cli/tests/share_groups_raw.rs", "DeleteGroups"),
    (ApiKey::ElectLeaders, "crates/controller/tests/it/control_replication.rs", "ElectLeaders"),
    (ApiKey::IncrementalAlterConfigs, "crates/controller/tests/it/control_configuration.rs", "IncrementalAlterConfigs"),
    (ApiKey::AlterPartitionReassignments, "crates/cli/tests/stock_reassign.rs", "reassign"),
    (ApiKey::ListPartitionReassignments, "crates/controller/tests/it/control_reassignment.rs", "ListPartitionReassignments"),
    (ApiKey::OffsetDelete, "crates/broker/tests/group_offsets.rs", "OffsetDelete"),
    (ApiKey::DescribeClientQuotas, "crates/controller/tests/it/control_quotas.rs", "DescribeClientQuotas"),
    (ApiKey::AlterClientQuotas, "crates/controller/tests/it/control_quotas.rs", "AlterClientQuotas"),
    (ApiKey::DescribeUserScramCredentials, "crates/controller/tests/it/control_scram.rs", "DescribeUserScramCredentials"),
    (ApiKey::AlterUserScramCredentials, "crates/cli/tests/controller_quorum.rs", "AlterUserScramCredentials"),
    (ApiKey::Vote, "crates/raft/tests/sim/core_rules.rs", "Vote"),
    (ApiKey::BeginQuorumEpoch, "crates/raft/tests/sim/core_rules.rs", "BeginQuorumEpoch"),
    (ApiKey::EndQuorumEpoch, "crates/raft/tests/sim/core_rules.rs", "EndQuorumEpoch"),
    (ApiKey::DescribeQuorum, "crates/cli/tests/kafka_metadata_quorum_dynamic.rs", "describe"),
    (ApiKey::AlterPartition, "crates/broker/tests/alter_partition_manager.rs", "AlterPartition"),
    (ApiKey::UpdateFeatures, "crates/controller/tests/it/control_features.rs", "UpdateFeatures"),
    (ApiKey::Envelope, "crates/controller/tests/it/node_authz.rs", "Envelope"),
    (ApiKey::FetchSnapshot, "crates/raft/tests/sim/core_rules.rs", "FetchSnapshot"),
    (ApiKey::DescribeCluster, "crates/broker/tests/kafka_apis.rs", "DescribeCluster"),
    (ApiKey::DescribeProducers, "crates/cli/tests/stock_acls.rs", "DescribeProducers"),
    (ApiKey::BrokerRegistration, "crates/controller/tests/it/node.rs", "BrokerRegistration"),
    (ApiKey::BrokerHeartbeat, "crates/cli/tests/stock_cordoned_log_dirs.rs", "BrokerHeartbeat v2"),
    (ApiKey::UnregisterBroker, "crates/cli/tests/kafka_metadata_quorum_dynamic.rs", "UnregisterBroker"),
    (ApiKey::DescribeTransactions, "crates/cli/tests/stock_txn_verification.rs", "DescribeTransactions"),
    (ApiKey::ListTransactions, "crates/cli/tests/stock_txn_delayed.rs", "list"),
    (ApiKey::AllocateProducerIds, "crates/controller/tests/it/control_producer_ids.rs", "AllocateProducerIds"),
    (ApiKey::ConsumerGroupHeartbeat, "crates/cli/tests/python/groups.py", "consumer"),
    (ApiKey::ConsumerGroupDescribe, "crates/cli/tests/stock_groups_kafka_tools.rs", "describe"),
    (ApiKey::ControllerRegistration, "crates/cli/tests/controller_registration.rs", "registration"),
    (ApiKey::DescribeTopicPartitions, "crates/cli/tests/stock_log_dirs.rs", "DescribeTopicPartitions"),
    (ApiKey::ShareGroupHeartbeat, "crates/cli/tests/share_groups_raw.rs", "ShareGroupHeartbeat"),
    (ApiKey::ShareGroupDescribe, "crates/cli/tests/share_groups_raw.rs", "ShareGroupDescribe"),
    (ApiKey::ShareFetch, "crates/cli/tests/stock_share_groups_hostile.rs", "ShareFetch"),
    (ApiKey::ShareAcknowledge, "crates/cli/tests/stock_share_groups_hostile.rs", "ShareAcknowledge"),
    (ApiKey::AddRaftVoter, "crates/cli/tests/kafka_metadata_quorum_dynamic.rs", "add-controller"),
    (ApiKey::RemoveRaftVoter, "crates/cli/tests/kafka_metadata_quorum_dynamic.rs", "remove-controller"),
    (ApiKey::UpdateRaftVoter, "crates/raft/tests/network/membership.rs", "UpdateRaftVoter"),
    (ApiKey::InitializeShareGroupState, "crates/cli/tests/share_coordinator.rs", "InitializeShareGroupState"),
    (ApiKey::ReadShareGroupState, "crates/cli/tests/share_coordinator.rs", "ReadShareGroupState"),
    (ApiKey::WriteShareGroupState, "crates/cli/tests/share_coordinator.rs", "WriteShareGroupState"),
    (ApiKey::DeleteShareGroupState, "crates/cli/tests/share_coordinator.rs", "DeleteShareGroupState"),
    (ApiKey::ReadShareGroupStateSummary, "crates/cli/tests/share_coordinator.rs", "ReadShareGroupStateSummary"),
    (ApiKey::DescribeShareGroupOffsets, "crates/cli/tests/share_group_offsets_raw.rs", "DescribeShareGroupOffsets"),
    (ApiKey::AlterShareGroupOffsets, "crates/cli/tests/share_group_offsets_raw.rs", "AlterShareGroupOffsets"),
    (ApiKey::DeleteShareGroupOffsets, "crates/cli/tests/share_group_offsets_raw.rs", "DeleteShareGroupOffsets"),
    (ApiKey::UnregisterController, "crates/cli/tests/controller_registration.rs", "UnregisterController"),
    (ApiKey::GetTelemetrySubscriptions, "crates/cli/tests/stock_client_telemetry.rs", "GetTelemetrySubscriptions"),
    (ApiKey::PushTelemetry, "crates/cli/tests/stock_client_telemetry.rs", "PushTelemetry"),
    (ApiKey::ListConfigResources, "crates/cli/tests/stock_client_telemetry.rs", "ListConfigResources"),
    (ApiKey::StreamsGroupHeartbeat, "crates/cli/tests/streams_groups_raw.rs", "StreamsGroupHeartbeat"),
    (ApiKey::StreamsGroupDescribe, "crates/cli/tests/streams_groups_raw.rs", "StreamsGroupDescribe"),
    (ApiKey::StreamsGroupTopologyDescriptionUpdate, "crates/cli/tests/streams_groups_raw.rs", "StreamsGroupTopologyDescriptionUpdate"),
    (ApiKey::CreateDelegationToken, "crates/cli/tests/stock_delegation_tokens.rs", "--create"),
    (ApiKey::RenewDelegationToken, "crates/cli/tests/stock_delegation_tokens.rs", "--renew"),
    (ApiKey::ExpireDelegationToken, "crates/cli/tests/stock_delegation_tokens.rs", "--expire"),
    (ApiKey::DescribeDelegationToken, "crates/cli/tests/stock_delegation_tokens.rs", "--describe"),
    (ApiKey::AssignReplicasToDirs, "crates/cli/tests/stock_jbod.rs", "AssignReplicasToDirs"),
];

/// The APIs of Kafka 4.4's schemas kraftd does not serve on any listener, and why.
#[rustfmt::skip]
const NOT_SERVED: &[(ApiKey, &str)] = &[];

fn range(table: &ApiVersionsTable, key: ApiKey) -> Option<String> {
    table.range(key).map(|r| format!("{}–{}", r.min, r.max))
}

/// The table's markdown.
fn render() -> String {
    let broker =
        kraftd_net::sasl::listener_table(Arc::new(KafkaApis::api_versions_with_share_fetch()));
    let controller =
        kraftd_net::sasl::listener_table(Arc::new(ControllerApis::api_versions_table()));
    let coverage: BTreeMap<ApiKey, (&str, &str)> =
        COVERAGE.iter().map(|(k, f, e)| (*k, (*f, *e))).collect();
    let not_served: BTreeMap<ApiKey, &str> = NOT_SERVED.iter().copied().collect();
    let mut out = String::from(
        "# Kafka 4.4's APIs in kraftd\n\n\
         Generated by `crates/cli/tests/api_table.rs` from the code (`UPDATE_API_TABLE=1 cargo test \
         -p kraftd-cli --test api_table` rewrites it); the list of APIs is Kafka 4.4.0's schemas'. \
         Versions are the stable ones of the schemas (Kafka's advertised range may start lower: \
         Produce from 0, see `protocol/src/api_versions.rs`); `crates/cli/tests/api_versions_kafka.rs` \
         compares kraftd's ApiVersions answers with a running Kafka 4.4.0's on both listeners. A \
         broker forwards the controller's mutations to it in an Envelope (`broker/src/server/api_keys.rs`).\n\n\
         | Key | API | Kafka's listeners | Schema versions | kraftd broker | kraftd controller | Covered by |\n\
         |---:|---|---|---|---|---|---|\n",
    );
    for key in ApiKey::ALL {
        let valid = key.valid_versions();
        let stable_max = if key.latest_version_unstable() {
            valid.max - 1
        } else {
            valid.max
        };
        let schema = format!("{}–{stable_max}", valid.min);
        let b = range(&broker, *key);
        let c = range(&controller, *key);
        let covered = match (
            b.is_some() || c.is_some(),
            coverage.get(key),
            not_served.get(key),
        ) {
            (true, Some((file, _)), _) => format!("`{}`", file.trim_start_matches("crates/")),
            (false, _, Some(why)) => format!("not served: {why}"),
            _ => "**missing**".to_string(),
        };
        out.push_str(&format!(
            "| {} | {} | {} | {schema} | {} | {} | {covered} |\n",
            key.code(),
            key.name(),
            key.listeners().join(", "),
            b.unwrap_or_else(|| "—".into()),
            c.unwrap_or_else(|| "—".into()),
        ));
    }
    out
}

fn repo_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

#[test]
fn every_api_is_served_with_a_covering_test_or_says_why_not() {
    let broker =
        kraftd_net::sasl::listener_table(Arc::new(KafkaApis::api_versions_with_share_fetch()));
    let controller =
        kraftd_net::sasl::listener_table(Arc::new(ControllerApis::api_versions_table()));
    let mut problems = Vec::new();
    for key in ApiKey::ALL {
        let served = broker.range(*key).is_some() || controller.range(*key).is_some();
        let covered = COVERAGE.iter().find(|(k, _, _)| k == key);
        let excused = NOT_SERVED.iter().any(|(k, _)| k == key);
        match (served, covered, excused) {
            (true, Some((_, file, evidence)), false) => {
                match std::fs::read_to_string(repo_root().join(file)) {
                    Ok(text) if text.contains(evidence) => {}
                    Ok(_) => problems.push(format!(
                        "{}: {file} does not mention {evidence:?}",
                        key.name()
                    )),
                    Err(e) => problems.push(format!("{}: {file}: {e}", key.name())),
                }
            }
            (true, None, _) => problems.push(format!(
                "{} is served but names no covering test",
                key.name()
            )),
            (true, _, true) => {
                problems.push(format!("{} is served but listed in NOT_SERVED", key.name()))
            }
            (false, _, false) => problems.push(format!(
                "{} is not served and NOT_SERVED does not say why",
                key.name()
            )),
            (false, Some(_), true) => problems.push(format!(
                "{} is not served but has a COVERAGE entry",
                key.name()
            )),
            (false, None, true) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn docs_api_table_is_the_code_rendered() {
    let path = repo_root().join("docs/api-table.md");
    let rendered = render();
    if std::env::var_os("UPDATE_API_TABLE").is_some() {
        std::fs::write(&path, &rendered).expect("writing docs/api-table.md");
        return;
    }
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        doc == rendered,
        "docs/api-table.md differs from the code; rerun with UPDATE_API_TABLE=1 \
         cargo test -p kraftd-cli --test api_table"
    );
}
