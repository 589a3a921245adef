//! `throttle_time_ms` on a response, and who honours it (KIP-219).
//!
//! Every response type that carries a throttle time carries it from some version on (most
//! from their first); [`set_throttle_time_ms`] sets it only where the version has it, by
//! match over kraftd's generated responses, so a throttled request of any API tells its
//! client how long it was throttled.
//!
//! Since KIP-219 (Kafka 2.0) a client whose request version is recent enough stops sending
//! to the broker for the throttle time it is told, and the broker answers at once and mutes
//! the connection; an older client does not, so its response itself is held back for the
//! throttle time. [`client_throttles`] is Kafka's `AbstractResponse.shouldClientThrottle`:
//! the first version of each API whose clients throttle themselves.

use kraftd_protocol::{ApiKey, ResponseBody};

/// Generates the two accessors over every response type with a throttle time, from the
/// first version that has it.
macro_rules! throttle_field {
    ($($min:literal => [$($variant:ident),* $(,)?]),* $(,)?) => {
        /// The response's throttle field and the first version that has it.
        fn field_mut(body: &mut ResponseBody) -> Option<(&mut i32, i16)> {
            match body {
                $($(ResponseBody::$variant(r) => Some((&mut r.throttle_time_ms, $min)),)*)*
                _ => None,
            }
        }

        fn field(body: &ResponseBody) -> Option<(i32, i16)> {
            match body {
                $($(ResponseBody::$variant(r) => Some((r.throttle_time_ms, $min)),)*)*
                _ => None,
            }
        }
    };
}

throttle_field! {
    0 => [
        AddOffsetsToTxn,
        AddPartitionsToTxn,
        AddRaftVoter,
        AllocateProducerIds,
        AlterClientQuotas,
        AlterConfigs,
        AlterPartitionReassignments,
        AlterPartition,
        AlterReplicaLogDirs,
        AlterShareGroupOffsets,
        AlterUserScramCredentials,
        AssignReplicasToDirs,
        BrokerHeartbeat,
        BrokerRegistration,
        ConsumerGroupDescribe,
        ConsumerGroupHeartbeat,
        ControllerRegistration,
        CreateAcls,
        CreateDelegationToken,
        CreatePartitions,
        DeleteAcls,
        DeleteGroups,
        DeleteRecords,
        DeleteShareGroupOffsets,
        DescribeAcls,
        DescribeClientQuotas,
        DescribeCluster,
        DescribeConfigs,
        DescribeDelegationToken,
        DescribeLogDirs,
        DescribeProducers,
        DescribeShareGroupOffsets,
        DescribeTopicPartitions,
        DescribeTransactions,
        DescribeUserScramCredentials,
        ElectLeaders,
        EndTxn,
        ExpireDelegationToken,
        FetchSnapshot,
        GetTelemetrySubscriptions,
        IncrementalAlterConfigs,
        InitProducerId,
        ListConfigResources,
        ListPartitionReassignments,
        ListTransactions,
        OffsetDelete,
        PushTelemetry,
        RemoveRaftVoter,
        RenewDelegationToken,
        ShareAcknowledge,
        ShareFetch,
        ShareGroupDescribe,
        ShareGroupHeartbeat,
        StreamsGroupDescribe,
        StreamsGroupHeartbeat,
        StreamsGroupTopologyDescriptionUpdate,
        TxnOffsetCommit,
        UnregisterBroker,
        UnregisterController,
        UpdateFeatures,
        UpdateRaftVoter,
    ],
    1 => [
        ApiVersions,
        DeleteTopics,
        DescribeGroups,
        Fetch,
        FindCoordinator,
        Heartbeat,
        LeaveGroup,
        ListGroups,
        Produce,
        SyncGroup,
    ],
    2 => [
        CreateTopics,
        JoinGroup,
        ListOffsets,
        OffsetForLeaderEpoch,
    ],
    3 => [
        Metadata,
        OffsetCommit,
        OffsetFetch,
    ],
}

/// Sets the response's `throttle_time_ms` to `ms` when its type and `version` carry one;
/// returns whether it did.
pub fn set_throttle_time_ms(body: &mut ResponseBody, version: i16, ms: i32) -> bool {
    match field_mut(body) {
        Some((field, min)) if version >= min => {
            *field = ms;
            true
        }
        _ => false,
    }
}

/// The response's `throttle_time_ms`, 0 when its type or `version` has none.
pub fn throttle_time_ms(body: &ResponseBody, version: i16) -> i32 {
    match field(body) {
        Some((ms, min)) if version >= min => ms,
        _ => 0,
    }
}

/// Kafka's `AbstractResponse.shouldClientThrottle`: whether a client sending `api` at
/// `version` throttles itself on the throttle time of the response (KIP-219). APIs not
/// listed never did (Kafka's default), so their responses are held back instead.
pub fn client_throttles(api: ApiKey, version: i16) -> bool {
    let first = match api {
        ApiKey::Produce => 6,
        ApiKey::Fetch => 8,
        ApiKey::ListOffsets => 3,
        ApiKey::Metadata => 6,
        ApiKey::OffsetCommit | ApiKey::OffsetFetch => 4,
        ApiKey::FindCoordinator => 2,
        ApiKey::JoinGroup => 3,
        ApiKey::Heartbeat
        | ApiKey::LeaveGroup
        | ApiKey::SyncGroup
        | ApiKey::DescribeGroups
        | ApiKey::ListGroups
        | ApiKey::ApiVersions => 2,
        ApiKey::CreateTopics => 3,
        ApiKey::DeleteTopics => 2,
        ApiKey::DescribeConfigs => 2,
        ApiKey::DeleteRecords
        | ApiKey::InitProducerId
        | ApiKey::AddPartitionsToTxn
        | ApiKey::AddOffsetsToTxn
        | ApiKey::EndTxn
        | ApiKey::TxnOffsetCommit
        | ApiKey::DescribeAcls
        | ApiKey::CreateAcls
        | ApiKey::DeleteAcls
        | ApiKey::AlterConfigs
        | ApiKey::AlterReplicaLogDirs
        | ApiKey::DescribeLogDirs
        | ApiKey::CreatePartitions
        | ApiKey::CreateDelegationToken
        | ApiKey::RenewDelegationToken
        | ApiKey::ExpireDelegationToken
        | ApiKey::DescribeDelegationToken
        | ApiKey::DeleteGroups => 1,
        ApiKey::ElectLeaders
        | ApiKey::IncrementalAlterConfigs
        | ApiKey::AlterPartitionReassignments
        | ApiKey::ListPartitionReassignments
        | ApiKey::OffsetDelete
        | ApiKey::DescribeUserScramCredentials
        | ApiKey::AlterUserScramCredentials
        | ApiKey::UnregisterBroker
        | ApiKey::DescribeTopicPartitions => 0,
        _ => return false,
    };
    version >= first
}
