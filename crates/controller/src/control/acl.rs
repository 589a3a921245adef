//! `AclControlManager`: ACLs of the standard authorizer, as Kafka's
//! `org.apache.kafka.controller.AclControlManager`. CreateAcls validates each binding and
//! writes an `AccessControlEntryRecord` (an identical ACL that exists already succeeds without
//! a record); DeleteAcls matches each filter against the image, as Kafka's
//! `AclBindingFilter.matches`, and writes one `RemoveAccessControlEntryRecord` per matched ACL;
//! DescribeAcls reads the image with the same filter rules.
//!
//! Pure: new ACL ids are an input (the caller's random source); nothing changes until the
//! records are replayed.

pub mod cidr;

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::messages::create_acls_request::AclCreation;
use kraftd_protocol::messages::create_acls_response::AclCreationResult;
use kraftd_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kraftd_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kraftd_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kraftd_protocol::metadata::{AccessControlEntryRecord, RemoveAccessControlEntryRecord};
use kraftd_protocol::{ErrorCode, MetadataRecord, Uuid};

use crate::control::result::ControllerResult;
use crate::image::{MetadataImage, StandardAcl};

/// Kafka's `ResourceType` ids.
pub const RESOURCE_TYPE_ANY: i8 = 1;
pub const RESOURCE_TYPE_TOPIC: i8 = 2;
pub const RESOURCE_TYPE_GROUP: i8 = 3;
pub const RESOURCE_TYPE_CLUSTER: i8 = 4;
pub const RESOURCE_TYPE_USER: i8 = 7;
/// Kafka's `PatternType` ids.
pub const PATTERN_TYPE_ANY: i8 = 1;
pub const PATTERN_TYPE_MATCH: i8 = 2;
pub const PATTERN_TYPE_LITERAL: i8 = 3;
pub const PATTERN_TYPE_PREFIXED: i8 = 4;
/// Kafka's `AclOperation` ids: ANY is 1, ALL 2, then READ 3 … TWO_PHASE_COMMIT 15 (Kafka 4.1+).
pub const OPERATION_ANY: i8 = 1;
pub const OPERATION_ALL: i8 = 2;
pub const OPERATION_READ: i8 = 3;
pub const OPERATION_WRITE: i8 = 4;
const OPERATION_MAX: i8 = 15;
/// Kafka's `AclPermissionType` ids.
pub const PERMISSION_ANY: i8 = 1;
pub const PERMISSION_DENY: i8 = 2;
pub const PERMISSION_ALLOW: i8 = 3;
/// The one name of the CLUSTER resource.
pub const CLUSTER_RESOURCE_NAME: &str = "kafka-cluster";
/// The wildcard resource name of a LITERAL pattern.
pub const WILDCARD_RESOURCE: &str = "*";

/// Creates, deletes and describes ACLs. Holds nothing: all state is the image.
#[derive(Debug, Clone, Default)]
pub struct AclControlManager;

/// Kafka's `AclBindingFilter`: `None` fields and ANY ids match everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: i8,
    pub resource_name: Option<String>,
    pub pattern_type: i8,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: i8,
    pub permission_type: i8,
}

impl AclControlManager {
    pub fn new() -> Self {
        AclControlManager
    }

    /// CreateAcls: one result per creation, in order. `next_acl_id` supplies fresh ids; an id
    /// that is zero or in use is drawn again.
    pub fn create_acls(
        &self,
        image: &MetadataImage,
        request: &CreateAclsRequest,
        mut next_acl_id: impl FnMut() -> Uuid,
    ) -> ControllerResult<CreateAclsResponse> {
        let existing: BTreeSet<&StandardAcl> = image.acls.iter().map(|(_, a)| a.as_ref()).collect();
        let mut created: BTreeSet<StandardAcl> = BTreeSet::new();
        let mut used_ids = BTreeSet::new();
        let mut records = Vec::new();
        let mut response = CreateAclsResponse::default();
        let cidr_supported = image.features.version().is_cidr_acl_supported();
        for creation in &request.creations {
            let acl = standard_acl(creation);
            let mut result = AclCreationResult {
                error_message: None,
                ..Default::default()
            };
            match validate_new_acl(&acl, cidr_supported) {
                Err((code, message)) => {
                    result.error_code = code.code();
                    result.error_message = Some(message);
                }
                Ok(()) => {
                    if !existing.contains(&acl) && created.insert(acl.clone()) {
                        let id = loop {
                            let id = next_acl_id();
                            if id != Uuid::ZERO
                                && image.acls.get(&id).is_none()
                                && used_ids.insert(id)
                            {
                                break id;
                            }
                        };
                        records.push(MetadataRecord::AccessControlEntry(
                            AccessControlEntryRecord {
                                id,
                                resource_type: acl.resource_type,
                                resource_name: acl.resource_name,
                                pattern_type: acl.pattern_type,
                                principal: acl.principal,
                                host: acl.host,
                                operation: acl.operation,
                                permission_type: acl.permission_type,
                                ..Default::default()
                            },
                        ));
                    }
                }
            }
            response.results.push(result);
        }
        ControllerResult::atomic_of(records, response)
    }

    /// DeleteAcls: each filter lists the ACLs it matches; an ACL matched by several filters is
    /// listed by each and removed once.
    pub fn delete_acls(
        &self,
        image: &MetadataImage,
        request: &DeleteAclsRequest,
    ) -> ControllerResult<DeleteAclsResponse> {
        let mut removed = BTreeSet::new();
        let mut records = Vec::new();
        let mut response = DeleteAclsResponse::default();
        for f in &request.filters {
            let filter = AclFilter {
                resource_type: f.resource_type_filter,
                resource_name: f.resource_name_filter.clone(),
                pattern_type: f.pattern_type_filter,
                principal: f.principal_filter.clone(),
                host: f.host_filter.clone(),
                operation: f.operation,
                permission_type: f.permission_type,
            };
            let mut result = DeleteAclsFilterResult {
                error_message: None,
                ..Default::default()
            };
            if let Err(message) = filter.validate() {
                result.error_code = ErrorCode::InvalidRequest.code();
                result.error_message = Some(message);
                response.filter_results.push(result);
                continue;
            }
            for (id, acl) in image.acls.iter() {
                if !filter.matches(acl) {
                    continue;
                }
                if removed.insert(*id) {
                    records.push(MetadataRecord::RemoveAccessControlEntry(
                        RemoveAccessControlEntryRecord {
                            id: *id,
                            ..Default::default()
                        },
                    ));
                }
                result.matching_acls.push(DeleteAclsMatchingAcl {
                    error_code: 0,
                    error_message: None,
                    resource_type: acl.resource_type,
                    resource_name: acl.resource_name.clone(),
                    pattern_type: acl.pattern_type,
                    principal: acl.principal.clone(),
                    host: acl.host.clone(),
                    operation: acl.operation,
                    permission_type: acl.permission_type,
                    ..Default::default()
                });
            }
            response.filter_results.push(result);
        }
        ControllerResult::atomic_of(records, response)
    }

    /// DescribeAcls: the matching ACLs grouped by resource pattern.
    pub fn describe_acls(
        &self,
        image: &MetadataImage,
        request: &DescribeAclsRequest,
    ) -> DescribeAclsResponse {
        let filter = AclFilter {
            resource_type: request.resource_type_filter,
            resource_name: request.resource_name_filter.clone(),
            pattern_type: request.pattern_type_filter,
            principal: request.principal_filter.clone(),
            host: request.host_filter.clone(),
            operation: request.operation,
            permission_type: request.permission_type,
        };
        let mut response = DescribeAclsResponse {
            error_message: None,
            ..Default::default()
        };
        if let Err(message) = filter.validate() {
            response.error_code = ErrorCode::InvalidRequest.code();
            response.error_message = Some(message);
            return response;
        }
        let mut by_resource: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
        for (_, acl) in image.acls.iter() {
            if filter.matches(acl) {
                by_resource
                    .entry((
                        acl.resource_type,
                        acl.resource_name.clone(),
                        acl.pattern_type,
                    ))
                    .or_default()
                    .push(AclDescription {
                        principal: acl.principal.clone(),
                        host: acl.host.clone(),
                        operation: acl.operation,
                        permission_type: acl.permission_type,
                        ..Default::default()
                    });
            }
        }
        response.resources = by_resource
            .into_iter()
            .map(
                |((resource_type, resource_name, pattern_type), acls)| DescribeAclsResource {
                    resource_type,
                    resource_name,
                    pattern_type,
                    acls,
                    ..Default::default()
                },
            )
            .collect();
        response
    }
}

impl AclFilter {
    /// Kafka's `AclControlManager.validateFilter`: UNKNOWN (0) or out-of-range ids are refused.
    pub fn validate(&self) -> Result<(), String> {
        if !(RESOURCE_TYPE_ANY..=RESOURCE_TYPE_USER).contains(&self.resource_type) {
            return Err("Unknown resourceType.".into());
        }
        if !(PATTERN_TYPE_ANY..=PATTERN_TYPE_PREFIXED).contains(&self.pattern_type) {
            return Err("Unknown patternFilter.".into());
        }
        if !(OPERATION_ANY..=OPERATION_MAX).contains(&self.operation) {
            return Err("Unknown operation.".into());
        }
        if !(PERMISSION_ANY..=PERMISSION_ALLOW).contains(&self.permission_type) {
            return Err("Unknown permissionType.".into());
        }
        Ok(())
    }

    /// Kafka's `AclBindingFilter.matches`: the resource pattern filter, then the entry filter.
    pub fn matches(&self, acl: &StandardAcl) -> bool {
        if self.resource_type != RESOURCE_TYPE_ANY && self.resource_type != acl.resource_type {
            return false;
        }
        let any_pattern = self.pattern_type == PATTERN_TYPE_ANY;
        if !any_pattern
            && self.pattern_type != PATTERN_TYPE_MATCH
            && self.pattern_type != acl.pattern_type
        {
            return false;
        }
        if let Some(name) = &self.resource_name {
            let matched = if any_pattern || self.pattern_type == acl.pattern_type {
                *name == acl.resource_name
            } else {
                // MATCH: the ACL patterns that would apply to a resource named `name`.
                match acl.pattern_type {
                    PATTERN_TYPE_LITERAL => {
                        *name == acl.resource_name || acl.resource_name == WILDCARD_RESOURCE
                    }
                    PATTERN_TYPE_PREFIXED => name.starts_with(&acl.resource_name),
                    _ => false,
                }
            };
            if !matched {
                return false;
            }
        }
        if self.principal.as_ref().is_some_and(|p| *p != acl.principal) {
            return false;
        }
        if self.host.as_ref().is_some_and(|h| *h != acl.host) {
            return false;
        }
        if self.operation != OPERATION_ANY && self.operation != acl.operation {
            return false;
        }
        self.permission_type == PERMISSION_ANY || self.permission_type == acl.permission_type
    }
}

fn standard_acl(c: &AclCreation) -> StandardAcl {
    StandardAcl {
        resource_type: c.resource_type,
        resource_name: c.resource_name.clone(),
        pattern_type: c.resource_pattern_type,
        principal: c.principal.clone(),
        host: c.host.clone(),
        operation: c.operation,
        permission_type: c.permission_type,
    }
}

/// Kafka's `AclControlManager.validateNewAcl`: concrete ids only (no ANY, MATCH or UNKNOWN),
/// a non-empty name, the cluster resource named `kafka-cluster`, a `Type:name` principal,
/// and a host that is `*`, an address or (from 4.4-IV1, KIP-1276) a valid CIDR block.
/// INVALID_REQUEST with Kafka's message, UNSUPPORTED_VERSION for a CIDR block below 4.4-IV1.
fn validate_new_acl(acl: &StandardAcl, cidr_supported: bool) -> Result<(), (ErrorCode, String)> {
    let invalid = |message: String| Err((ErrorCode::InvalidRequest, message));
    if !(RESOURCE_TYPE_TOPIC..=RESOURCE_TYPE_USER).contains(&acl.resource_type) {
        return invalid(format!("Invalid resourceType {}", acl.resource_type));
    }
    if acl.pattern_type != PATTERN_TYPE_LITERAL && acl.pattern_type != PATTERN_TYPE_PREFIXED {
        return invalid(format!("Invalid patternType {}", acl.pattern_type));
    }
    if !(OPERATION_ALL..=OPERATION_MAX).contains(&acl.operation) {
        return invalid(format!("Invalid operation {}", acl.operation));
    }
    if acl.permission_type != PERMISSION_ALLOW && acl.permission_type != PERMISSION_DENY {
        return invalid(format!("Invalid permissionType {}", acl.permission_type));
    }
    if acl.resource_name.is_empty() {
        return invalid("Resource name should not be empty".into());
    }
    if acl.resource_type == RESOURCE_TYPE_CLUSTER && acl.resource_name != CLUSTER_RESOURCE_NAME {
        return invalid(format!(
            "The only valid name for the CLUSTER resource is {CLUSTER_RESOURCE_NAME}"
        ));
    }
    match acl.principal.split_once(':') {
        Some((kind, name)) if !kind.is_empty() && !name.is_empty() => {}
        _ => {
            return invalid(format!(
                "Could not parse principal from `{}` (no colon is present separating the \
                 principal type from the principal name)",
                acl.principal
            ))
        }
    }
    validate_host_pattern(&acl.host, cidr_supported)
}

/// Kafka's `AclControlManager.validateHostPattern`: any non-empty host; one with a `/` is a
/// CIDR block, which needs `metadata.version` 4.4-IV1 and must parse.
fn validate_host_pattern(host: &str, cidr_supported: bool) -> Result<(), (ErrorCode, String)> {
    if host.is_empty() {
        return Err((
            ErrorCode::InvalidRequest,
            "Host pattern cannot be null or empty".into(),
        ));
    }
    if host == "*" || !host.contains('/') {
        return Ok(());
    }
    if !cidr_supported {
        return Err((
            ErrorCode::UnsupportedVersion,
            format!(
                "CIDR-based ACL host patterns require metadata version {} or higher.",
                kraftd_protocol::metadata_version::MetadataVersion::IBP_4_4_IV1
            ),
        ));
    }
    cidr::Cidr::parse(host).map(|_| ()).map_err(|e| {
        (
            ErrorCode::InvalidRequest,
            format!("Invalid CIDR notation '{host}': {e}"),
        )
    })
}
