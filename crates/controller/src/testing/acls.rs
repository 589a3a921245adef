//! ACLs for authorization tests: a [`StandardAuthorizer`] fed real AccessControlEntry records
//! through its [`AclPublisher`], so tests check what a node would enforce.

use kraftd_protocol::metadata::AccessControlEntryRecord;
use kraftd_protocol::MetadataRecord;

use super::records::uuid;
use crate::control::acl::{
    PATTERN_TYPE_LITERAL, PATTERN_TYPE_PREFIXED, PERMISSION_ALLOW, PERMISSION_DENY,
};
use crate::publisher::{AclPublisher, AuthorizerConfig, MetadataPublisher, StandardAuthorizer};
use crate::{MetadataDelta, MetadataImage};

/// One ACL as a test states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestAcl {
    pub resource_type: i8,
    pub name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission_type: i8,
}

impl TestAcl {
    /// ALLOW `operation` on the LITERAL resource for `principal` from any host.
    pub fn allow(resource_type: i8, name: &str, principal: &str, operation: i8) -> TestAcl {
        TestAcl {
            resource_type,
            name: name.into(),
            pattern_type: PATTERN_TYPE_LITERAL,
            principal: principal.into(),
            host: "*".into(),
            operation,
            permission_type: PERMISSION_ALLOW,
        }
    }

    /// DENY `operation` on the LITERAL resource for `principal` from any host.
    pub fn deny(resource_type: i8, name: &str, principal: &str, operation: i8) -> TestAcl {
        TestAcl {
            permission_type: PERMISSION_DENY,
            ..TestAcl::allow(resource_type, name, principal, operation)
        }
    }

    /// The same ACL with a PREFIXED pattern.
    pub fn prefixed(mut self) -> TestAcl {
        self.pattern_type = PATTERN_TYPE_PREFIXED;
        self
    }

    /// The same ACL from `host` only.
    pub fn from_host(mut self, host: &str) -> TestAcl {
        self.host = host.into();
        self
    }

    fn record(&self, n: u8) -> MetadataRecord {
        MetadataRecord::AccessControlEntry(AccessControlEntryRecord {
            id: uuid(n),
            resource_type: self.resource_type,
            resource_name: self.name.clone(),
            pattern_type: self.pattern_type,
            principal: self.principal.clone(),
            host: self.host.clone(),
            operation: self.operation,
            permission_type: self.permission_type,
            ..Default::default()
        })
    }
}

/// An authorizer with `config` enabled and `acls` published (ids `uuid(1)`, `uuid(2)`, ...).
pub fn authorizer_with(config: AuthorizerConfig, acls: &[TestAcl]) -> StandardAuthorizer {
    let authorizer = StandardAuthorizer::new(AuthorizerConfig {
        enabled: true,
        ..config
    });
    let mut publisher = AclPublisher::new(authorizer.clone());
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    for (i, acl) in acls.iter().enumerate() {
        let n = u8::try_from(i + 1).expect("at most 255 test ACLs");
        delta.replay(&acl.record(n)).expect("a test ACL replays");
    }
    let image = delta.apply();
    publisher.on_metadata_update(&delta, &image);
    authorizer
}
