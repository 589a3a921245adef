//! Write and read operations for the QuorumController, and the control managers they run
//! against. A [`WriteOp`] is a closure over a [`WriteContext`] returning a
//! [`ControllerResult`]: the controller runs it against the latest (possibly uncommitted)
//! image, proposes its records and replies once they commit. Helpers build the operations
//! that need controller-supplied inputs (the next offset, the clock, fresh ids).

use kraftd_net::KafkaPrincipal;
use kraftd_protocol::messages::{
    AllocateProducerIdsRequest, AllocateProducerIdsResponse, AlterClientQuotasRequest,
    AlterClientQuotasResponse, AlterConfigsRequest, AlterConfigsResponse,
    AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, AlterPartitionRequest,
    AlterPartitionResponse, AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    AssignReplicasToDirsRequest, AssignReplicasToDirsResponse, BrokerHeartbeatRequest,
    BrokerHeartbeatResponse, BrokerRegistrationRequest, BrokerRegistrationResponse,
    ControllerRegistrationRequest, CreateAclsRequest, CreateAclsResponse,
    CreateDelegationTokenRequest, CreateDelegationTokenResponse, CreatePartitionsRequest,
    CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse, DeleteAclsRequest,
    DeleteAclsResponse, DeleteTopicsRequest, DeleteTopicsResponse, DescribeAclsRequest,
    DescribeAclsResponse, DescribeClientQuotasRequest, DescribeClientQuotasResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, ElectLeadersRequest,
    ElectLeadersResponse, ExpireDelegationTokenRequest, ExpireDelegationTokenResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
    RenewDelegationTokenRequest, RenewDelegationTokenResponse, UpdateFeaturesRequest,
    UpdateFeaturesResponse,
};
use kraftd_protocol::{ErrorCode, Uuid};

use crate::control::config_defs::GroupConfigBounds;
use crate::control::{
    AclControlManager, BrokerHeartbeatManager, ClientQuotaControlManager, ClusterControlConfig,
    ClusterControlManager, ConfigurationControlManager, ControllerResult, DelegationTokenConfig,
    DelegationTokenControlManager, FeatureControlConfig, FeatureControlManager, PlacementSeed,
    ProducerIdControlManager, ReplicationConfig, ReplicationControlManager, ScramControlManager,
    TopicConfig, TopicControlManager,
};
use crate::quota::ControllerMutationQuota;
use crate::MetadataImage;

/// The configuration of every control manager.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagersConfig {
    pub cluster: ClusterControlConfig,
    pub replication: ReplicationConfig,
    pub topics: TopicConfig,
    pub features: FeatureControlConfig,
    /// Seeds the deterministic source of topic ids and placement starts.
    pub seed: u64,
    /// Seeds a separate source of ids (topic, ACL and delegation-token ids) when set: a
    /// controller process sets it at random so that ids never come back after a restart
    /// (`ControllerNodeConfig::new`); unset (simulations, tests), ids come from `seed`'s source.
    pub id_seed: Option<u64>,
    /// This node's `group.*` bounds, which group configs must lie within.
    pub group_bounds: GroupConfigBounds,
    /// `delegation.token.*`.
    pub delegation_tokens: DelegationTokenConfig,
}

/// The pure control managers plus the active controller's soft state (broker sessions and
/// the id source). Only the heartbeat manager and the id source change, and neither is
/// part of the image: a newly active controller rebuilds sessions from the image.
#[derive(Debug, Clone)]
pub struct Managers {
    pub cluster: ClusterControlManager,
    pub replication: ReplicationControlManager,
    pub topics: TopicControlManager,
    pub configuration: ConfigurationControlManager,
    pub scram: ScramControlManager,
    pub acl: AclControlManager,
    pub features: FeatureControlManager,
    pub producer_ids: ProducerIdControlManager,
    pub quotas: ClientQuotaControlManager,
    pub delegation_tokens: DelegationTokenControlManager,
    pub heartbeats: BrokerHeartbeatManager,
    rng: u64,
    id_rng: Option<u64>,
}

/// What a write operation sees.
#[derive(Debug)]
pub struct WriteContext<'a> {
    /// The latest image, including records proposed but not yet committed.
    pub image: &'a MetadataImage,
    pub managers: &'a mut Managers,
    /// The offset the operation's first record will get.
    pub next_offset: i64,
    pub now_ms: u64,
}

/// The boxed body of a write operation.
pub type WriteFn<R> = Box<dyn FnOnce(&mut WriteContext<'_>) -> ControllerResult<R> + Send>;

/// A queued write: runs only on the active controller.
pub struct WriteOp<R>(pub(crate) WriteFn<R>);

/// A queued read: answered from the committed image.
pub struct ReadOp<R>(pub(crate) Box<dyn FnOnce(&MetadataImage) -> R + Send>);

impl Managers {
    pub fn new(config: ManagersConfig) -> Self {
        let replication = ReplicationControlManager::new(config.replication.clone());
        let session_timeout_ms = config.cluster.broker_session_timeout_ms;
        Managers {
            cluster: ClusterControlManager::new(config.cluster, replication.clone()),
            replication,
            topics: TopicControlManager::new(config.topics),
            configuration: ConfigurationControlManager::with_group_bounds(config.group_bounds),
            scram: ScramControlManager::new(),
            acl: AclControlManager::new(),
            features: FeatureControlManager::new(config.features),
            producer_ids: ProducerIdControlManager::new(),
            quotas: ClientQuotaControlManager::new(),
            delegation_tokens: DelegationTokenControlManager::new(config.delegation_tokens),
            heartbeats: BrokerHeartbeatManager::new(session_timeout_ms),
            rng: config.seed,
            id_rng: config.id_seed,
        }
    }

    /// The next value of a splitmix64 sequence: deterministic for a seed, so simulated runs
    /// replay exactly.
    pub fn next_random(&mut self) -> u64 {
        splitmix64(&mut self.rng)
    }

    /// A fresh random id (topic, ACL, delegation token): from the id source when the
    /// process has one, else from the main sequence.
    pub fn next_uuid(&mut self) -> Uuid {
        let mut draw = || match self.id_rng.as_mut() {
            Some(state) => splitmix64(state),
            None => splitmix64(&mut self.rng),
        };
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&draw().to_be_bytes());
        bytes[8..].copy_from_slice(&draw().to_be_bytes());
        Uuid(bytes)
    }
}

impl<R: 'static> WriteOp<R> {
    pub fn new(
        f: impl FnOnce(&mut WriteContext<'_>) -> ControllerResult<R> + Send + 'static,
    ) -> Self {
        WriteOp(Box::new(f))
    }

    /// The same operation with its response converted (into a caller's response enum).
    pub fn map<U: 'static>(self, f: impl FnOnce(R) -> U + Send + 'static) -> WriteOp<U> {
        let inner = self.0;
        WriteOp::new(move |ctx| inner(ctx).map(f))
    }
}

impl<R> std::fmt::Debug for WriteOp<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteOp")
    }
}

impl<R> std::fmt::Debug for ReadOp<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadOp")
    }
}

impl<R: 'static> ReadOp<R> {
    pub fn new(f: impl FnOnce(&MetadataImage) -> R + Send + 'static) -> Self {
        ReadOp(Box::new(f))
    }

    /// The same read with its response converted.
    pub fn map<U: 'static>(self, f: impl FnOnce(R) -> U + Send + 'static) -> ReadOp<U> {
        let inner = self.0;
        ReadOp::new(move |image| f(inner(image)))
    }
}

/// BrokerRegistration: the new broker epoch is the offset of the registration record,
/// which the controller predicts as the next write offset and Raft guarantees (the
/// proposal names its required base offset). `kraft_version`: the quorum's, as the Raft
/// layer had it when the request arrived (the broker must support it).
pub fn register_broker(
    request_version: i16,
    request: BrokerRegistrationRequest,
    kraft_version: i16,
) -> WriteOp<BrokerRegistrationResponse> {
    WriteOp::new(move |ctx| {
        let result = ctx.managers.cluster.register_broker(
            ctx.image,
            &ctx.managers.heartbeats,
            request_version,
            &request,
            kraft_version,
            ctx.next_offset,
            ctx.now_ms,
        );
        if result.response.error_code == 0 {
            ctx.managers
                .heartbeats
                .register(request.broker_id, ctx.now_ms);
        }
        result
    })
}

/// BrokerHeartbeat: the broker's registration record sits at its epoch.
pub fn broker_heartbeat(request: BrokerHeartbeatRequest) -> WriteOp<BrokerHeartbeatResponse> {
    WriteOp::new(move |ctx| {
        let register_offset = ctx
            .image
            .cluster
            .broker(request.broker_id)
            .map_or(i64::MAX, |b| b.epoch);
        ctx.managers.cluster.broker_heartbeat(
            ctx.image,
            &mut ctx.managers.heartbeats,
            &request,
            register_offset,
            ctx.next_offset,
            ctx.now_ms,
        )
    })
}

/// CreateTopics with topic ids and the placement start drawn from the managers' seeded
/// source.
pub fn create_topics(request: CreateTopicsRequest) -> WriteOp<CreateTopicsResponse> {
    create_topics_with_quota(request, ControllerMutationQuota::unbounded())
}

/// CreateTopics, each valid topic charged to the request's controller mutation quota.
pub fn create_topics_with_quota(
    request: CreateTopicsRequest,
    mut quota: ControllerMutationQuota,
) -> WriteOp<CreateTopicsResponse> {
    WriteOp::new(move |ctx| {
        let seed = PlacementSeed::from_u64(ctx.managers.next_random());
        let topics = ctx.managers.topics.clone();
        let managers = &mut *ctx.managers;
        topics.create_topics_with_quota(
            ctx.image,
            &request,
            || managers.next_uuid(),
            seed,
            &mut quota,
        )
    })
}

/// UnregisterBroker; the broker's heartbeat session is forgotten.
pub fn unregister_broker(broker_id: i32) -> WriteOp<ErrorCode> {
    WriteOp::new(move |ctx| {
        let result = ctx.managers.cluster.unregister_broker(ctx.image, broker_id);
        if result.response == ErrorCode::None {
            ctx.managers.heartbeats.remove(broker_id);
        }
        result
    })
}

/// ControllerRegistration (KIP-919): the RegisterControllerRecord.
pub fn register_controller(
    request: ControllerRegistrationRequest,
) -> WriteOp<crate::control::controller_registration::Outcome> {
    WriteOp::new(move |ctx| {
        crate::control::controller_registration::register_controller(ctx.image, &request)
    })
}

/// UnregisterController (KIP-1312): the UnregisterControllerRecord; never this controller.
pub fn unregister_controller(
    controller_id: i32,
) -> WriteOp<crate::control::controller_registration::Outcome> {
    WriteOp::new(move |ctx| {
        let active = ctx.managers.cluster.config().node_id;
        crate::control::controller_registration::unregister_controller(
            ctx.image,
            controller_id,
            active,
        )
    })
}

/// DeleteTopics.
pub fn delete_topics(request: DeleteTopicsRequest) -> WriteOp<DeleteTopicsResponse> {
    delete_topics_with_quota(request, ControllerMutationQuota::unbounded())
}

/// DeleteTopics, each topic charged to the request's controller mutation quota.
pub fn delete_topics_with_quota(
    request: DeleteTopicsRequest,
    mut quota: ControllerMutationQuota,
) -> WriteOp<DeleteTopicsResponse> {
    WriteOp::new(move |ctx| {
        ctx.managers
            .topics
            .delete_topics_with_quota(ctx.image, &request, &mut quota)
    })
}

/// CreatePartitions, with the placement start drawn from the seeded source.
pub fn create_partitions(request: CreatePartitionsRequest) -> WriteOp<CreatePartitionsResponse> {
    create_partitions_with_quota(request, ControllerMutationQuota::unbounded())
}

/// CreatePartitions, each topic's new partitions charged to the request's controller
/// mutation quota.
pub fn create_partitions_with_quota(
    request: CreatePartitionsRequest,
    mut quota: ControllerMutationQuota,
) -> WriteOp<CreatePartitionsResponse> {
    WriteOp::new(move |ctx| {
        let seed = PlacementSeed::from_u64(ctx.managers.next_random());
        ctx.managers
            .topics
            .create_partitions_with_quota(ctx.image, &request, seed, &mut quota)
    })
}

/// AlterPartition from a partition leader.
pub fn alter_partition(
    request_version: i16,
    request: AlterPartitionRequest,
) -> WriteOp<AlterPartitionResponse> {
    WriteOp::new(move |ctx| {
        ctx.managers
            .replication
            .alter_partition(ctx.image, request_version, &request)
    })
}

/// AssignReplicasToDirs from a broker (KIP-858).
pub fn assign_replicas_to_dirs(
    request: AssignReplicasToDirsRequest,
) -> WriteOp<AssignReplicasToDirsResponse> {
    WriteOp::new(move |ctx| {
        ctx.managers
            .replication
            .assign_replicas_to_dirs(ctx.image, &request)
    })
}

/// ElectLeaders (preferred or unclean).
pub fn elect_leaders(request: ElectLeadersRequest) -> WriteOp<ElectLeadersResponse> {
    WriteOp::new(move |ctx| ctx.managers.replication.elect_leaders(ctx.image, &request))
}

/// AlterPartitionReassignments (start, replace or cancel reassignments).
pub fn alter_partition_reassignments(
    request: AlterPartitionReassignmentsRequest,
) -> WriteOp<AlterPartitionReassignmentsResponse> {
    WriteOp::new(move |ctx| {
        ctx.managers
            .replication
            .alter_partition_reassignments(ctx.image, &request)
    })
}

/// ListPartitionReassignments, from the committed image.
pub fn list_partition_reassignments(
    request: ListPartitionReassignmentsRequest,
) -> ReadOp<ListPartitionReassignmentsResponse> {
    ReadOp::new(move |image| {
        ReplicationControlManager::list_partition_reassignments(image, &request)
    })
}

/// IncrementalAlterConfigs; `forwarded` by a broker (an Envelope) or sent here directly.
pub fn incremental_alter_configs(
    request: IncrementalAlterConfigsRequest,
    forwarded: bool,
) -> WriteOp<IncrementalAlterConfigsResponse> {
    WriteOp::new(move |ctx| {
        ctx.managers
            .configuration
            .incremental_alter_configs_from(ctx.image, &request, forwarded)
    })
}

/// AlterConfigs (the legacy, whole-resource form); `forwarded` as above.
pub fn alter_configs(
    request: AlterConfigsRequest,
    forwarded: bool,
) -> WriteOp<AlterConfigsResponse> {
    WriteOp::new(move |ctx| {
        ctx.managers
            .configuration
            .legacy_alter_configs_from(ctx.image, &request, forwarded)
    })
}

/// AlterUserScramCredentials.
pub fn alter_user_scram_credentials(
    request: AlterUserScramCredentialsRequest,
) -> WriteOp<AlterUserScramCredentialsResponse> {
    WriteOp::new(move |ctx| ctx.managers.scram.alter_credentials(ctx.image, &request))
}

/// CreateDelegationToken by `requester`: the token id is a fresh Kafka `Uuid` string from
/// the seeded source (seeded at random per controller process, so ids do not come back
/// after a restart), drawn again while it names a token of the image or starts with `-`
/// (Kafka's `Uuid.randomUuid` avoids those too).
pub fn create_delegation_token(
    requester: KafkaPrincipal,
    request: CreateDelegationTokenRequest,
) -> WriteOp<CreateDelegationTokenResponse> {
    WriteOp::new(move |ctx| {
        let token_id = loop {
            let id = ctx.managers.next_uuid().to_string();
            if !id.starts_with('-') && ctx.image.delegation_tokens.get(&id).is_none() {
                break id;
            }
        };
        ctx.managers.delegation_tokens.create(
            ctx.image,
            &requester,
            &request,
            ctx.now_ms as i64,
            token_id,
        )
    })
}

/// RenewDelegationToken by `renewer`.
pub fn renew_delegation_token(
    renewer: KafkaPrincipal,
    request: RenewDelegationTokenRequest,
) -> WriteOp<RenewDelegationTokenResponse> {
    WriteOp::new(move |ctx| {
        ctx.managers
            .delegation_tokens
            .renew(ctx.image, &renewer, &request, ctx.now_ms as i64)
    })
}

/// ExpireDelegationToken by `principal`.
pub fn expire_delegation_token(
    principal: KafkaPrincipal,
    request: ExpireDelegationTokenRequest,
) -> WriteOp<ExpireDelegationTokenResponse> {
    WriteOp::new(move |ctx| {
        ctx.managers
            .delegation_tokens
            .expire(ctx.image, &principal, &request, ctx.now_ms as i64)
    })
}

/// CreateAcls, with ACL ids drawn from the seeded source.
pub fn create_acls(request: CreateAclsRequest) -> WriteOp<CreateAclsResponse> {
    WriteOp::new(move |ctx| {
        let acl = ctx.managers.acl.clone();
        let managers = &mut *ctx.managers;
        acl.create_acls(ctx.image, &request, || managers.next_uuid())
    })
}

/// DeleteAcls.
pub fn delete_acls(request: DeleteAclsRequest) -> WriteOp<DeleteAclsResponse> {
    WriteOp::new(move |ctx| ctx.managers.acl.delete_acls(ctx.image, &request))
}

/// AllocateProducerIds (a block of 1000).
pub fn allocate_producer_ids(
    request: AllocateProducerIdsRequest,
) -> WriteOp<AllocateProducerIdsResponse> {
    WriteOp::new(move |ctx| {
        ctx.managers
            .producer_ids
            .allocate_producer_ids(ctx.image, &request)
    })
}

/// UpdateFeatures.
pub fn update_features(request: UpdateFeaturesRequest) -> WriteOp<UpdateFeaturesResponse> {
    WriteOp::new(move |ctx| ctx.managers.features.update_features(ctx.image, &request))
}

/// AlterClientQuotas.
pub fn alter_client_quotas(
    request: AlterClientQuotasRequest,
) -> WriteOp<AlterClientQuotasResponse> {
    WriteOp::new(move |ctx| ctx.managers.quotas.alter_client_quotas(ctx.image, &request))
}

/// DescribeAcls, from the committed image.
pub fn describe_acls(request: DescribeAclsRequest) -> ReadOp<DescribeAclsResponse> {
    ReadOp::new(move |image| AclControlManager::new().describe_acls(image, &request))
}

/// DescribeUserScramCredentials, from the committed image.
pub fn describe_user_scram_credentials(
    request: DescribeUserScramCredentialsRequest,
) -> ReadOp<DescribeUserScramCredentialsResponse> {
    ReadOp::new(move |image| ScramControlManager::new().describe_credentials(image, &request))
}

/// DescribeClientQuotas, from the committed image.
pub fn describe_client_quotas(
    request: DescribeClientQuotasRequest,
) -> ReadOp<DescribeClientQuotasResponse> {
    ReadOp::new(move |image| {
        ClientQuotaControlManager::new().describe_client_quotas(image, &request)
    })
}

/// One step of splitmix64 over `state`.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
