//! Authorization of requests, as Kafka's `AuthHelper` over its `Option[Authorizer]`: the one
//! place broker and controller handlers ask "may this principal, from this address, do this
//! operation on this resource". [`AuthHelper`] is the node's authorizer (none when
//! `authorizer.class.name` is empty, Kafka's default: every request is allowed);
//! [`RequestAuth`] binds it to one request's principal and client address and answers
//! single checks, filters of many names, `authorized_operations` bit fields and Kafka's
//! `authorizeByResourceType` (idempotent producers may write when they may write any topic),
//! and which ACL resource guards each kind of config resource
//! ([`RequestAuth::config_resource_refusal`], for the broker's DescribeConfigs and the
//! controller's alters alike).
//!
//! The principal and address a check uses are the connection's, or for a request a broker
//! forwarded in an Envelope the client's, read back with [`deserialize_principal`] and
//! [`forwarded_address`] as Kafka's `EnvelopeUtils` does. Hosts are written as Java's
//! `InetAddress.getHostAddress` writes them, so an ACL's host means what it means in Kafka.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kraftd_net::KafkaPrincipal;
use kraftd_protocol::messages::create_acls_response::AclCreationResult;
use kraftd_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use kraftd_protocol::messages::{
    CreateAclsResponse, DefaultPrincipalData, DeleteAclsResponse, DescribeAclsResponse,
    DescribeDelegationTokenRequest, DescribeDelegationTokenResponse,
};
use kraftd_protocol::{ErrorCode, Message, RequestBody, ResponseBody};

use crate::control::acl::{
    CLUSTER_RESOURCE_NAME, OPERATION_ALL, OPERATION_READ, OPERATION_WRITE, PATTERN_TYPE_LITERAL,
    PATTERN_TYPE_PREFIXED, PERMISSION_ALLOW, PERMISSION_DENY, RESOURCE_TYPE_CLUSTER,
    RESOURCE_TYPE_GROUP, RESOURCE_TYPE_TOPIC, RESOURCE_TYPE_USER, WILDCARD_RESOURCE,
};
use crate::control::delegation_tokens::{describe_tokens, token_requests_allowed};
use crate::control::DelegationTokenConfig;
use crate::image::ConfigResourceType;
use crate::publisher::{
    acl_host_matches, StandardAuthorizer, OPERATION_ALTER, OPERATION_ALTER_CONFIGS,
    OPERATION_CLUSTER_ACTION, OPERATION_CREATE, OPERATION_CREATE_TOKENS, OPERATION_DELETE,
    OPERATION_DESCRIBE, OPERATION_DESCRIBE_CONFIGS, OPERATION_DESCRIBE_TOKENS,
    OPERATION_IDEMPOTENT_WRITE, OPERATION_TWO_PHASE_COMMIT, RESOURCE_TYPE_DELEGATION_TOKEN,
    RESOURCE_TYPE_TRANSACTIONAL_ID, WILDCARD_PRINCIPAL,
};
use crate::MetadataImage;

/// `authorizer.class.name` that turns authorization on.
pub const STANDARD_AUTHORIZER_CLASS: &str =
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer";
/// Kafka's property naming the authorizer.
pub const AUTHORIZER_CLASS_NAME_CONFIG: &str = "authorizer.class.name";

/// The name Kafka's default `authorizeByResourceType` checks first, so that super users and
/// wildcard ACLs answer without a scan.
const HARDCODED_RESOURCE: &str = "hardcode";

/// Kafka's `AclEntry.supportedOperations`: what `authorized_operations` reports, per
/// resource type (Kafka 4.4).
pub fn supported_operations(resource_type: i8) -> &'static [i8] {
    match resource_type {
        RESOURCE_TYPE_TOPIC => &[
            OPERATION_READ,
            OPERATION_WRITE,
            OPERATION_CREATE,
            OPERATION_DESCRIBE,
            OPERATION_DELETE,
            OPERATION_ALTER,
            OPERATION_DESCRIBE_CONFIGS,
            OPERATION_ALTER_CONFIGS,
        ],
        RESOURCE_TYPE_GROUP => &[
            OPERATION_READ,
            OPERATION_DESCRIBE,
            OPERATION_DELETE,
            OPERATION_DESCRIBE_CONFIGS,
            OPERATION_ALTER_CONFIGS,
        ],
        RESOURCE_TYPE_CLUSTER => &[
            OPERATION_CREATE,
            OPERATION_CLUSTER_ACTION,
            OPERATION_DESCRIBE_CONFIGS,
            OPERATION_ALTER_CONFIGS,
            OPERATION_IDEMPOTENT_WRITE,
            OPERATION_ALTER,
            OPERATION_DESCRIBE,
        ],
        RESOURCE_TYPE_TRANSACTIONAL_ID => &[
            OPERATION_DESCRIBE,
            OPERATION_WRITE,
            OPERATION_TWO_PHASE_COMMIT,
        ],
        RESOURCE_TYPE_DELEGATION_TOKEN => &[OPERATION_DESCRIBE],
        RESOURCE_TYPE_USER => &[OPERATION_CREATE_TOKENS, OPERATION_DESCRIBE_TOKENS],
        _ => &[],
    }
}

/// Kafka's `Utils.to32BitField`: bit `code` set for each operation.
pub fn operations_bit_field(operations: impl IntoIterator<Item = i8>) -> i32 {
    operations
        .into_iter()
        .filter(|op| (0..32).contains(op))
        .fold(0i32, |bits, op| bits | (1i32 << op))
}

/// Kafka's default message for the errors authorization answers (`Errors.message()`).
pub fn default_message(code: ErrorCode) -> String {
    match code {
        ErrorCode::TopicAuthorizationFailed => "Topic authorization failed.".into(),
        ErrorCode::GroupAuthorizationFailed => "Group authorization failed.".into(),
        ErrorCode::ClusterAuthorizationFailed => "Cluster authorization failed.".into(),
        ErrorCode::TransactionalIdAuthorizationFailed => {
            "Transactional Id authorization failed.".into()
        }
        ErrorCode::SecurityDisabled => "Security features are disabled.".into(),
        other => other.to_string(),
    }
}

/// Kafka's `AclApis` messages when no authorizer runs.
const NO_AUTHORIZER: &str = "No Authorizer is configured.";
const NO_AUTHORIZER_ON_BROKER: &str = "No Authorizer is configured on the broker";

/// What an ACL API answers when no authorizer runs, as Kafka's `AclApis`.
pub fn security_disabled(body: &RequestBody) -> Option<ResponseBody> {
    let code = ErrorCode::SecurityDisabled.code();
    Some(match body {
        RequestBody::DescribeAcls(_) => ResponseBody::DescribeAcls(DescribeAclsResponse {
            error_code: code,
            error_message: Some(NO_AUTHORIZER_ON_BROKER.into()),
            ..Default::default()
        }),
        RequestBody::CreateAcls(r) => ResponseBody::CreateAcls(CreateAclsResponse {
            results: r
                .creations
                .iter()
                .map(|_| AclCreationResult {
                    error_code: code,
                    error_message: Some(NO_AUTHORIZER.into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::DeleteAcls(r) => ResponseBody::DeleteAcls(DeleteAclsResponse {
            filter_results: r
                .filters
                .iter()
                .map(|_| DeleteAclsFilterResult {
                    error_code: code,
                    error_message: Some(NO_AUTHORIZER.into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        _ => return None,
    })
}

/// The node's authorizer: `None` when `authorizer.class.name` is empty.
#[derive(Debug, Clone, Default)]
pub struct AuthHelper {
    authorizer: Option<StandardAuthorizer>,
}

impl AuthHelper {
    /// The authorizer a node's publishers keep current, if its config turns it on.
    pub fn new(authorizer: &StandardAuthorizer) -> Self {
        AuthHelper {
            authorizer: authorizer.config().enabled.then(|| authorizer.clone()),
        }
    }

    /// No authorizer: everything is allowed.
    pub fn disabled() -> Self {
        AuthHelper { authorizer: None }
    }

    pub fn is_enabled(&self) -> bool {
        self.authorizer.is_some()
    }

    /// Checks for one request by `principal` connected from `address`. Without an
    /// authorizer nothing is checked, so the ACL forms of principal and host (only the
    /// authorizer reads them) are not written: every request pays for them otherwise.
    pub fn request(&self, principal: &KafkaPrincipal, address: IpAddr) -> RequestAuth {
        let (principal_text, host) = match self.authorizer {
            Some(_) => (principal.to_string(), host_address(address)),
            None => (String::new(), String::new()),
        };
        RequestAuth {
            authorizer: self.authorizer.clone(),
            kafka_principal: principal.clone(),
            principal: principal_text,
            host,
        }
    }
}

/// The checks of one request: who asks, from where, against the node's authorizer.
#[derive(Debug, Clone)]
pub struct RequestAuth {
    authorizer: Option<StandardAuthorizer>,
    kafka_principal: KafkaPrincipal,
    principal: String,
    host: String,
}

impl RequestAuth {
    /// Whether an authorizer runs (the ACL APIs answer SECURITY_DISABLED when none does).
    pub fn is_enabled(&self) -> bool {
        self.authorizer.is_some()
    }

    /// `Type:name` (empty without an authorizer).
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The principal, for an Envelope to carry.
    pub fn kafka_principal(&self) -> &KafkaPrincipal {
        &self.kafka_principal
    }

    /// The client's address as ACL hosts name it (empty without an authorizer).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Kafka's `AuthHelper.authorize`: `operation` on the literal resource
    /// `resource_type`/`name`; always true without an authorizer.
    pub fn authorize(&self, operation: i8, resource_type: i8, name: &str) -> bool {
        match &self.authorizer {
            None => true,
            Some(a) => a.authorize(&self.principal, &self.host, operation, resource_type, name),
        }
    }

    /// `operation` on the cluster resource (`kafka-cluster`).
    pub fn authorize_cluster(&self, operation: i8) -> bool {
        self.authorize(operation, RESOURCE_TYPE_CLUSTER, CLUSTER_RESOURCE_NAME)
    }

    /// `operation` on the config resource `resource_type`/`name` (Kafka's
    /// `ConfigResource.Type` ids), the one mapping DescribeConfigs on a broker and the
    /// alters on a controller both use, as Kafka 4.4's `ConfigHelper` and
    /// `ControllerApis.authorizeAlterResource` map it: a broker, a broker logger or client
    /// metrics is the cluster's (CLUSTER_AUTHORIZATION_FAILED), a topic its own
    /// (TOPIC_AUTHORIZATION_FAILED), a group its own (GROUP_AUTHORIZATION_FAILED). The
    /// refusal's error, or `None` when allowed — or when the type names no resource, which
    /// the request's own validation answers.
    pub fn config_resource_refusal(
        &self,
        operation: i8,
        resource_type: i8,
        name: &str,
    ) -> Option<ErrorCode> {
        let (allowed, code) = match ConfigResourceType::from_i8(resource_type)? {
            ConfigResourceType::Broker
            | ConfigResourceType::BrokerLogger
            | ConfigResourceType::ClientMetrics => (
                self.authorize_cluster(operation),
                ErrorCode::ClusterAuthorizationFailed,
            ),
            ConfigResourceType::Topic => (
                self.authorize(operation, RESOURCE_TYPE_TOPIC, name),
                ErrorCode::TopicAuthorizationFailed,
            ),
            ConfigResourceType::Group => (
                self.authorize(operation, RESOURCE_TYPE_GROUP, name),
                ErrorCode::GroupAuthorizationFailed,
            ),
        };
        (!allowed).then_some(code)
    }

    /// DescribeDelegationToken, as Kafka's `KafkaApis.handleDescribeTokensRequest` answers
    /// it, on a broker and (unlike Kafka 4.4's, which advertises the API but answers
    /// UNKNOWN_SERVER_ERROR) on a controller: every token (owners null) or those the named
    /// owners own or renew, of which the requester sees its own, those it renews, and others
    /// where it has DESCRIBE on the token or DESCRIBE_TOKENS on the owner. `protocol` is the
    /// connection's (no token API on PLAINTEXT, nor for a token-authenticated session).
    pub fn describe_delegation_tokens(
        &self,
        protocol: Option<kraftd_net::SecurityProtocol>,
        config: &DelegationTokenConfig,
        image: &MetadataImage,
        request: &DescribeDelegationTokenRequest,
    ) -> DescribeDelegationTokenResponse {
        let requester = self.kafka_principal();
        let refused = |code: ErrorCode| DescribeDelegationTokenResponse {
            error_code: code.code(),
            ..Default::default()
        };
        if !token_requests_allowed(requester, protocol) {
            return refused(ErrorCode::DelegationTokenRequestNotAllowed);
        }
        if !config.enabled() {
            return refused(ErrorCode::DelegationTokenAuthDisabled);
        }
        let owners: Option<Vec<KafkaPrincipal>> = request.owners.as_ref().map(|owners| {
            owners
                .iter()
                .map(|o| KafkaPrincipal {
                    principal_type: o.principal_type.clone(),
                    name: o.principal_name.clone(),
                    token_authenticated: false,
                })
                .collect()
        });
        let tokens = describe_tokens(
            config,
            image,
            requester,
            owners.as_deref(),
            |token_id| self.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_DELEGATION_TOKEN, token_id),
            |owner| {
                self.authorize(
                    OPERATION_DESCRIBE_TOKENS,
                    RESOURCE_TYPE_USER,
                    &owner.to_string(),
                )
            },
        );
        DescribeDelegationTokenResponse {
            error_code: 0,
            tokens,
            ..Default::default()
        }
    }

    /// Kafka's `filterByAuthorized`: the names (each checked once) that may have
    /// `operation`.
    pub fn filter<'n>(
        &self,
        operation: i8,
        resource_type: i8,
        names: impl IntoIterator<Item = &'n str>,
    ) -> BTreeSet<String> {
        let distinct: BTreeSet<&str> = names.into_iter().collect();
        distinct
            .into_iter()
            .filter(|name| self.authorize(operation, resource_type, name))
            .map(str::to_string)
            .collect()
    }

    /// A memo of checks of one operation on one resource type, for handlers that ask per
    /// partition.
    pub fn memo(&self, operation: i8, resource_type: i8) -> AuthMemo<'_> {
        AuthMemo {
            auth: self,
            operation,
            resource_type,
            seen: BTreeMap::new(),
        }
    }

    /// Kafka's `AuthHelper.authorizedOperations`: the bit field of the operations of the
    /// resource's type the principal may perform on it (all of them without an
    /// authorizer).
    pub fn authorized_operations(&self, resource_type: i8, name: &str) -> i32 {
        operations_bit_field(
            supported_operations(resource_type)
                .iter()
                .copied()
                .filter(|op| self.authorize(*op, resource_type, name)),
        )
    }

    /// Kafka's `Authorizer.authorizeByResourceType` (the interface's default, which the
    /// StandardAuthorizer keeps): whether `operation` is allowed on at least one resource of
    /// `resource_type`. A super user or a wildcard ALLOW passes; otherwise some LITERAL or
    /// PREFIXED ALLOW for the principal (or `User:*`) and host must not be covered by a DENY
    /// of the same literal name or of a prefix of it.
    pub fn authorize_by_resource_type(&self, operation: i8, resource_type: i8) -> bool {
        let Some(authorizer) = &self.authorizer else {
            return true;
        };
        if self.authorize(operation, resource_type, HARDCODED_RESOURCE) {
            return true;
        }
        let mut deny_literal = BTreeSet::new();
        let mut deny_prefixed = BTreeSet::new();
        let mut allow = Vec::new();
        let acls = authorizer.acls();
        for (_, acl) in acls.iter() {
            if acl.resource_type != resource_type
                || !acl_host_matches(&acl.host, &self.host)
                || (acl.principal != self.principal && acl.principal != WILDCARD_PRINCIPAL)
                || (acl.operation != operation && acl.operation != OPERATION_ALL)
            {
                continue;
            }
            let literal = acl.pattern_type == PATTERN_TYPE_LITERAL;
            let prefixed = acl.pattern_type == PATTERN_TYPE_PREFIXED;
            match acl.permission_type {
                PERMISSION_DENY if literal && acl.resource_name == WILDCARD_RESOURCE => {
                    return false
                }
                PERMISSION_DENY if literal => {
                    deny_literal.insert(acl.resource_name.clone());
                }
                PERMISSION_DENY if prefixed => {
                    deny_prefixed.insert(acl.resource_name.clone());
                }
                PERMISSION_ALLOW if literal && acl.resource_name == WILDCARD_RESOURCE => {
                    return true
                }
                PERMISSION_ALLOW if literal || prefixed => {
                    allow.push((literal, acl.resource_name.clone()));
                }
                _ => {}
            }
        }
        allow.iter().any(|(literal, name)| {
            if *literal && deny_literal.contains(name) {
                return false;
            }
            !name
                .char_indices()
                .map(|(i, c)| &name[..i + c.len_utf8()])
                .any(|prefix| deny_prefixed.contains(prefix))
        })
    }
}

/// Checks of one operation on one resource type, each name asked once.
#[derive(Debug)]
pub struct AuthMemo<'a> {
    auth: &'a RequestAuth,
    operation: i8,
    resource_type: i8,
    seen: BTreeMap<String, bool>,
}

impl AuthMemo<'_> {
    pub fn allowed(&mut self, name: &str) -> bool {
        if let Some(allowed) = self.seen.get(name) {
            return *allowed;
        }
        let allowed = self
            .auth
            .authorize(self.operation, self.resource_type, name);
        self.seen.insert(name.to_string(), allowed);
        allowed
    }
}

/// An address as Java's `InetAddress.getHostAddress` writes it: dotted IPv4 (an
/// IPv4-mapped IPv6 address counts as IPv4, as Java reads it), IPv6 as eight lowercase hex
/// groups without leading zeros and without `::` compression.
pub fn host_address(address: IpAddr) -> String {
    match address {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6
                .segments()
                .iter()
                .map(|s| format!("{s:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        },
    }
}

/// Kafka's `DefaultKafkaPrincipalBuilder.serialize`: the version (0), then
/// DefaultPrincipalData v0. What a broker puts in an Envelope.
pub fn serialize_principal(principal: &KafkaPrincipal) -> Bytes {
    let data = DefaultPrincipalData {
        r#type: principal.principal_type.clone(),
        name: principal.name.clone(),
        token_authenticated: principal.token_authenticated,
        ..Default::default()
    };
    let body = data.to_bytes(0).expect("DefaultPrincipalData v0 encodes");
    let mut out = BytesMut::with_capacity(2 + body.len());
    out.put_i16(0);
    out.extend_from_slice(&body);
    out.freeze()
}

/// Kafka's `DefaultKafkaPrincipalBuilder.deserialize`: an Envelope's principal, or
/// PRINCIPAL_DESERIALIZATION_FAILURE.
pub fn deserialize_principal(bytes: &Bytes) -> Result<KafkaPrincipal, ErrorCode> {
    let failed = ErrorCode::PrincipalDeserializationFailure;
    let mut buf = bytes.clone();
    if buf.remaining() < 2 {
        return Err(failed);
    }
    let version = buf.get_i16();
    let data = DefaultPrincipalData::decode(&mut buf, version).map_err(|_| failed)?;
    Ok(KafkaPrincipal {
        principal_type: data.r#type,
        name: data.name,
        token_authenticated: data.token_authenticated,
    })
}

/// Kafka's `EnvelopeUtils.parseForwardedClientAddress`: 4 or 16 address bytes, else
/// INVALID_REQUEST.
pub fn forwarded_address(bytes: &[u8]) -> Result<IpAddr, ErrorCode> {
    if let Ok(v4) = <[u8; 4]>::try_from(bytes) {
        return Ok(IpAddr::V4(Ipv4Addr::from(v4)));
    }
    if let Ok(v6) = <[u8; 16]>::try_from(bytes) {
        return Ok(IpAddr::V6(Ipv6Addr::from(v6)));
    }
    Err(ErrorCode::InvalidRequest)
}
