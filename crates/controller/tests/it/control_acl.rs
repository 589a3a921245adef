//! AclControlManager: CreateAcls validation and idempotence, DeleteAcls filters (LITERAL,
//! PREFIXED, MATCH, ANY) with their matching ACLs, DescribeAcls, with records replayed.

use kraftd_controller::control::acl::*;
use kraftd_controller::control::AclControlManager;
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::create_acls_request::AclCreation;
use kraftd_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kraftd_protocol::messages::{CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest};
use kraftd_protocol::{ErrorCode, Uuid};

use kraftd_controller::testing::records::uuid;

fn ids() -> impl FnMut() -> Uuid {
    let mut n = 0u8;
    move || {
        n += 1;
        uuid(n)
    }
}

fn acl(resource_type: i8, name: &str, pattern: i8, principal: &str, op: i8) -> AclCreation {
    AclCreation {
        resource_type,
        resource_name: name.into(),
        resource_pattern_type: pattern,
        principal: principal.into(),
        host: "*".into(),
        operation: op,
        permission_type: PERMISSION_ALLOW,
        ..Default::default()
    }
}

fn create(image: &MetadataImage, creations: Vec<AclCreation>) -> (MetadataImage, Vec<i16>, usize) {
    let request = CreateAclsRequest {
        creations,
        ..Default::default()
    };
    let result = AclControlManager::new().create_acls(image, &request, ids());
    let next = image.replay_all(&result.records).unwrap();
    let codes = result
        .response
        .results
        .iter()
        .map(|r| r.error_code)
        .collect();
    (next, codes, result.records.len())
}

fn seeded() -> MetadataImage {
    let (image, codes, n) = create(
        &MetadataImage::empty(),
        vec![
            acl(
                RESOURCE_TYPE_TOPIC,
                "orders",
                PATTERN_TYPE_LITERAL,
                "User:alice",
                OPERATION_READ,
            ),
            acl(
                RESOURCE_TYPE_TOPIC,
                "ord",
                PATTERN_TYPE_PREFIXED,
                "User:bob",
                OPERATION_WRITE,
            ),
            acl(
                RESOURCE_TYPE_TOPIC,
                "*",
                PATTERN_TYPE_LITERAL,
                "User:carol",
                OPERATION_READ,
            ),
            acl(
                RESOURCE_TYPE_GROUP,
                "g",
                PATTERN_TYPE_LITERAL,
                "User:alice",
                OPERATION_READ,
            ),
        ],
    );
    assert_eq!(codes, vec![0; 4]);
    assert_eq!(n, 4);
    image
}

#[test]
fn create_validates_and_is_idempotent() {
    let image = seeded();
    assert_eq!(image.acls.len(), 4);
    let (next, codes, n) = create(
        &image,
        vec![
            // Already there: success, no record.
            acl(
                RESOURCE_TYPE_TOPIC,
                "orders",
                PATTERN_TYPE_LITERAL,
                "User:alice",
                OPERATION_READ,
            ),
            acl(
                RESOURCE_TYPE_ANY,
                "x",
                PATTERN_TYPE_LITERAL,
                "User:a",
                OPERATION_READ,
            ),
            acl(
                RESOURCE_TYPE_TOPIC,
                "x",
                PATTERN_TYPE_MATCH,
                "User:a",
                OPERATION_READ,
            ),
            acl(
                RESOURCE_TYPE_TOPIC,
                "x",
                PATTERN_TYPE_LITERAL,
                "alice",
                OPERATION_READ,
            ),
            acl(
                RESOURCE_TYPE_TOPIC,
                "x",
                PATTERN_TYPE_LITERAL,
                "User:a",
                OPERATION_ANY,
            ),
            acl(
                RESOURCE_TYPE_TOPIC,
                "",
                PATTERN_TYPE_LITERAL,
                "User:a",
                OPERATION_READ,
            ),
            acl(
                RESOURCE_TYPE_CLUSTER,
                "c",
                PATTERN_TYPE_LITERAL,
                "User:a",
                OPERATION_ALL,
            ),
            acl(
                RESOURCE_TYPE_CLUSTER,
                CLUSTER_RESOURCE_NAME,
                PATTERN_TYPE_LITERAL,
                "User:a",
                OPERATION_ALL,
            ),
            // Twice in one request: one record.
            acl(
                RESOURCE_TYPE_USER,
                "u",
                PATTERN_TYPE_LITERAL,
                "User:a",
                OPERATION_ALL,
            ),
            acl(
                RESOURCE_TYPE_USER,
                "u",
                PATTERN_TYPE_LITERAL,
                "User:a",
                OPERATION_ALL,
            ),
        ],
    );
    let bad = ErrorCode::InvalidRequest.code();
    assert_eq!(codes, vec![0, bad, bad, bad, bad, bad, bad, 0, 0, 0]);
    assert_eq!(n, 2);
    assert_eq!(next.acls.len(), 6);
}

fn filter(resource_type: i8, name: Option<&str>, pattern: i8) -> DeleteAclsFilter {
    DeleteAclsFilter {
        resource_type_filter: resource_type,
        resource_name_filter: name.map(str::to_string),
        pattern_type_filter: pattern,
        principal_filter: None,
        host_filter: None,
        operation: OPERATION_ANY,
        permission_type: PERMISSION_ANY,
        ..Default::default()
    }
}

#[test]
fn delete_matches_filters() {
    let image = seeded();
    let manager = AclControlManager::new();
    let request = DeleteAclsRequest {
        filters: vec![
            // MATCH "orders": the literal, the prefix "ord" and the wildcard.
            filter(RESOURCE_TYPE_TOPIC, Some("orders"), PATTERN_TYPE_MATCH),
            // LITERAL "orders" only.
            filter(RESOURCE_TYPE_TOPIC, Some("orders"), PATTERN_TYPE_LITERAL),
            filter(0, None, PATTERN_TYPE_ANY),
        ],
        ..Default::default()
    };
    let result = manager.delete_acls(&image, &request);
    let r = &result.response.filter_results;
    assert_eq!(r[0].error_code, 0);
    let mut principals: Vec<&str> = r[0]
        .matching_acls
        .iter()
        .map(|m| m.principal.as_str())
        .collect();
    principals.sort();
    assert_eq!(principals, vec!["User:alice", "User:bob", "User:carol"]);
    assert_eq!(r[1].matching_acls.len(), 1);
    assert_eq!(r[2].error_code, ErrorCode::InvalidRequest.code());
    // The ACL matched twice is removed once.
    assert_eq!(result.records.len(), 3);
    let next = image.replay_all(&result.records).unwrap();
    assert_eq!(next.acls.len(), 1);

    // Principal filter, everything else ANY.
    let mut by_principal = filter(RESOURCE_TYPE_ANY, None, PATTERN_TYPE_ANY);
    by_principal.principal_filter = Some("User:alice".into());
    let result = manager.delete_acls(
        &image,
        &DeleteAclsRequest {
            filters: vec![by_principal],
            ..Default::default()
        },
    );
    assert_eq!(result.response.filter_results[0].matching_acls.len(), 2);
    assert_eq!(result.records.len(), 2);
}

#[test]
fn describe_groups_by_resource() {
    let image = seeded();
    let request = DescribeAclsRequest {
        resource_type_filter: RESOURCE_TYPE_TOPIC,
        resource_name_filter: None,
        pattern_type_filter: PATTERN_TYPE_ANY,
        principal_filter: None,
        host_filter: None,
        operation: OPERATION_ANY,
        permission_type: PERMISSION_ANY,
        ..Default::default()
    };
    let response = AclControlManager::new().describe_acls(&image, &request);
    assert_eq!(response.error_code, 0);
    let names: Vec<&str> = response
        .resources
        .iter()
        .map(|r| r.resource_name.as_str())
        .collect();
    assert_eq!(names, vec!["*", "ord", "orders"]);
    let bad = DescribeAclsRequest {
        operation: 0,
        ..request
    };
    let response = AclControlManager::new().describe_acls(&image, &bad);
    assert_eq!(response.error_code, ErrorCode::InvalidRequest.code());
}
