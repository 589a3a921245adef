//! Which APIs a broker listener forwards to the controller and which it answers itself: the
//! dispatcher (`apis.rs`) routes by them, ApiVersions advertises them, and the quotas
//! (`quota/`) exempt a forwarded request from the broker's own request quota. A leaf, so the
//! quotas need not import the handlers' context that holds them.

use kraftd_protocol::ApiKey;

/// Mutations a broker forwards to the controller in an Envelope.
pub const FORWARDED_API_KEYS: [ApiKey; 20] = [
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::CreatePartitions,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::AlterConfigs,
    ApiKey::CreateAcls,
    ApiKey::DeleteAcls,
    ApiKey::AlterUserScramCredentials,
    ApiKey::AlterClientQuotas,
    ApiKey::ElectLeaders,
    ApiKey::UpdateFeatures,
    ApiKey::AlterPartitionReassignments,
    ApiKey::ListPartitionReassignments,
    ApiKey::UnregisterController,
    ApiKey::UnregisterBroker,
    // KIP-853's voter changes, as Kafka's brokers forward them (`kafka-metadata-quorum
    // --bootstrap-server add-controller`); the controller's Raft driver runs them.
    ApiKey::AddRaftVoter,
    ApiKey::RemoveRaftVoter,
    ApiKey::CreateDelegationToken,
    ApiKey::RenewDelegationToken,
    ApiKey::ExpireDelegationToken,
];

/// Requests a broker answers itself: reads of its metadata and the data plane.
pub const LOCAL_API_KEYS: [ApiKey; 14] = [
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::DeleteRecords,
    ApiKey::OffsetForLeaderEpoch,
    ApiKey::InitProducerId,
    ApiKey::Metadata,
    ApiKey::DescribeCluster,
    ApiKey::DescribeConfigs,
    ApiKey::DescribeAcls,
    ApiKey::DescribeUserScramCredentials,
    ApiKey::DescribeClientQuotas,
    ApiKey::DescribeDelegationToken,
    ApiKey::ListConfigResources,
];
