//! ACLs in the metadata image, by the uuid their `AccessControlEntryRecord` gave them, as
//! Kafka's `AclsImage`. Codes stay Kafka's raw bytes (resource type, pattern type, operation,
//! permission): checking them is the ACL control manager's job, before records are written.

use std::sync::Arc;

use imbl::OrdMap;
use kraftd_protocol::metadata::AccessControlEntryRecord;
use kraftd_protocol::Uuid;

/// All ACLs. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AclsImage {
    pub(crate) acls: OrdMap<Uuid, Arc<StandardAcl>>,
}

/// One ACL, as Kafka's `StandardAcl`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StandardAcl {
    pub resource_type: i8,
    pub resource_name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission_type: i8,
}

impl AclsImage {
    pub fn get(&self, id: &Uuid) -> Option<&Arc<StandardAcl>> {
        self.acls.get(id)
    }

    /// ACLs in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&Uuid, &Arc<StandardAcl>)> {
        self.acls.iter()
    }

    pub fn len(&self) -> usize {
        self.acls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.acls.is_empty()
    }
}

impl StandardAcl {
    pub fn from_record(record: &AccessControlEntryRecord) -> Self {
        StandardAcl {
            resource_type: record.resource_type,
            resource_name: record.resource_name.clone(),
            pattern_type: record.pattern_type,
            principal: record.principal.clone(),
            host: record.host.clone(),
            operation: record.operation,
            permission_type: record.permission_type,
        }
    }
}
