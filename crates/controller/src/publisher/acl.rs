//! `AclPublisher` and the `StandardAuthorizer` it feeds, as Kafka's `AclPublisher`,
//! `StandardAuthorizer`, `StandardAuthorizerData` and `AclCache`. Every request a broker or
//! controller serves is authorized against the ACLs of the metadata log; this keeps an index
//! of them that answers a check without scanning every ACL, and changes it as ACL records
//! are replayed, so a CreateAcls or DeleteAcls takes effect on the next request.
//!
//! Kafka's semantics, which clients and operators rely on:
//! - `super.users` are allowed everything, ACLs or not;
//! - an ACL applies when its resource pattern matches (LITERAL: the same name or the `*`
//!   wildcard; PREFIXED: a prefix of the name), its principal is the caller's or `User:*`,
//!   its host the caller's or `*`, and its operation the requested one or ALL;
//! - an ALLOW of READ, WRITE, DELETE or ALTER also allows DESCRIBE, and an ALLOW of
//!   ALTER_CONFIGS also allows DESCRIBE_CONFIGS (DENY ACLs imply nothing);
//! - any applicable DENY wins over every ALLOW;
//! - when no ACL at all names the resource, `allow.everyone.if.no.acl.found` decides; when
//!   some do but none applies, the answer is no.
//!
//! Codes are Kafka's numbers as the records carry them (see [`crate::control::acl`] for
//! resource, pattern and permission types; the operations it lacks are here).

use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;

use imbl::OrdMap;
use kraftd_protocol::Uuid;

use super::{is_full_reload, MetadataPublisher, Published};
use crate::control::acl::cidr::host_in_range;
use crate::control::acl::{
    OPERATION_ALL, OPERATION_READ, OPERATION_WRITE, PATTERN_TYPE_LITERAL, PERMISSION_ALLOW,
    WILDCARD_RESOURCE,
};
use crate::image::delta::MetadataDelta;
use crate::image::{MetadataImage, StandardAcl};

/// Kafka's property naming the principals allowed everything, separated by `;`.
pub const SUPER_USERS_CONFIG: &str = "super.users";
/// Kafka's property deciding a check on a resource no ACL names.
pub const ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG: &str = "allow.everyone.if.no.acl.found";
/// The principal of an ACL that applies to every caller.
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// The host of an ACL that applies from every address.
pub const WILDCARD_HOST: &str = "*";

/// Whether an ACL's host applies to a client at `host`: `*`, the same address, or (KIP-1276)
/// a CIDR block holding it, as Kafka 4.4's `StandardAuthorizerData.findResult` matches.
pub fn acl_host_matches(acl_host: &str, host: &str) -> bool {
    acl_host == WILDCARD_HOST || acl_host == host || host_in_range(host, acl_host)
}

/// Kafka's `ResourceType` ids not defined by the ACL control manager.
pub const RESOURCE_TYPE_TRANSACTIONAL_ID: i8 = 5;
pub const RESOURCE_TYPE_DELEGATION_TOKEN: i8 = 6;
/// Kafka's `AclOperation` ids not defined by the ACL control manager.
pub const OPERATION_CREATE: i8 = 5;
pub const OPERATION_DELETE: i8 = 6;
pub const OPERATION_ALTER: i8 = 7;
pub const OPERATION_DESCRIBE: i8 = 8;
pub const OPERATION_CLUSTER_ACTION: i8 = 9;
pub const OPERATION_DESCRIBE_CONFIGS: i8 = 10;
pub const OPERATION_ALTER_CONFIGS: i8 = 11;
pub const OPERATION_IDEMPOTENT_WRITE: i8 = 12;
pub const OPERATION_CREATE_TOKENS: i8 = 13;
pub const OPERATION_DESCRIBE_TOKENS: i8 = 14;
pub const OPERATION_TWO_PHASE_COMMIT: i8 = 15;

/// The static part of authorization: Kafka reads it from the node's properties.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// `authorizer.class.name` names the StandardAuthorizer: requests are authorized
    /// ([`crate::auth::AuthHelper`]). Off (Kafka's default, no class): every request is
    /// allowed and the ACL APIs answer SECURITY_DISABLED; the ACLs are still kept current.
    pub enabled: bool,
    /// `super.users`: principals as `Type:name` (`User:admin`).
    pub super_users: BTreeSet<String>,
    /// `allow.everyone.if.no.acl.found` (Kafka's default: false).
    pub allow_everyone_if_no_acl_found: bool,
}

/// Feeds a [`StandardAuthorizer`] from the metadata log.
#[derive(Debug)]
pub struct AclPublisher {
    authorizer: StandardAuthorizer,
}

/// A cheap, shareable authorizer; every clone sees every ACL update.
#[derive(Debug, Clone)]
pub struct StandardAuthorizer {
    config: Arc<AuthorizerConfig>,
    acls: Arc<Published<AclCache>>,
}

/// Why a check came out as it did, as Kafka's `MatchingRule` (for audit logs and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthorizationRule {
    /// The principal is in `super.users`.
    SuperUser,
    /// This ALLOW ACL applies and no DENY ACL does.
    Allow(Arc<StandardAcl>),
    /// This DENY ACL applies.
    Deny(Arc<StandardAcl>),
    /// ACLs name the resource but none applies to this principal, host and operation.
    NoMatchingAcl,
    /// No ACL names the resource; `allow.everyone.if.no.acl.found` gave `allowed`.
    NoAclFound { allowed: bool },
}

/// Every ACL at one point of the log, indexed for checks. Immutable and cheap to clone:
/// persistent maps share what an update leaves untouched.
#[derive(Debug, Clone, Default)]
pub struct AclCache {
    version: u64,
    by_id: OrdMap<Uuid, Arc<StandardAcl>>,
    by_resource_type: OrdMap<i8, ResourceTypeAcls>,
}

/// The ACLs of one resource type, grouped by pattern name: LITERAL ones are found by exact
/// name (and `*`), PREFIXED ones by walking the ordered names down from the resource name.
#[derive(Debug, Clone, Default)]
struct ResourceTypeAcls {
    literal: OrdMap<String, AclGroup>,
    prefixed: OrdMap<String, AclGroup>,
}

/// The ACLs sharing one resource pattern, by id.
type AclGroup = OrdMap<Uuid, Arc<StandardAcl>>;

/// What the ACLs seen so far say, as Kafka's `MatchingRuleBuilder`.
#[derive(Default)]
struct Matching {
    has_resource_acls: bool,
    allow: Option<Arc<StandardAcl>>,
}

/// One check's request, so the matching helpers take one argument for it.
struct Action<'a> {
    principal: &'a str,
    host: &'a str,
    operation: i8,
}

/// Allowed operations that imply DESCRIBE, as Kafka's `IMPLIES_DESCRIBE`.
const IMPLIES_DESCRIBE: [i8; 5] = [
    OPERATION_DESCRIBE,
    OPERATION_READ,
    OPERATION_WRITE,
    OPERATION_DELETE,
    OPERATION_ALTER,
];
/// Allowed operations that imply DESCRIBE_CONFIGS, as Kafka's `IMPLIES_DESCRIBE_CONFIGS`.
const IMPLIES_DESCRIBE_CONFIGS: [i8; 2] = [OPERATION_DESCRIBE_CONFIGS, OPERATION_ALTER_CONFIGS];

impl AuthorizerConfig {
    /// Parses `super.users` as Kafka does: `;`-separated, blanks trimmed, empties dropped.
    pub fn parse_super_users(value: &str) -> BTreeSet<String> {
        value
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }
}

impl AclPublisher {
    pub fn new(authorizer: StandardAuthorizer) -> Self {
        AclPublisher { authorizer }
    }

    /// The authorizer this publisher feeds.
    pub fn authorizer(&self) -> &StandardAuthorizer {
        &self.authorizer
    }
}

impl MetadataPublisher for AclPublisher {
    fn name(&self) -> &str {
        "AclPublisher"
    }

    fn on_metadata_update(&mut self, delta: &MetadataDelta, image: &MetadataImage) {
        if is_full_reload(delta) {
            let mut fresh = AclCache::default();
            for (id, acl) in image.acls.iter() {
                fresh.insert(*id, acl.clone());
            }
            let reloaded = self.authorizer.acls.update(|cache| {
                if cache.by_id == fresh.by_id {
                    return false;
                }
                fresh.version = cache.version + 1;
                *cache = fresh;
                true
            });
            if reloaded {
                tracing::info!(acls = image.acls.len(), "ACLs reloaded");
            }
            return;
        }
        let changed = &delta.changes().changed_acls;
        if changed.is_empty() {
            return;
        }
        self.authorizer.acls.update(|cache| {
            let mut any = false;
            for id in changed {
                any |= match image.acls.get(id) {
                    Some(acl) => cache.insert(*id, acl.clone()),
                    None => cache.remove(id),
                };
            }
            if any {
                cache.version += 1;
            }
            any
        });
    }
}

impl StandardAuthorizer {
    /// An authorizer with no ACLs yet: until a publisher feeds it, only super users and
    /// `allow.everyone.if.no.acl.found` let anything through.
    pub fn new(config: AuthorizerConfig) -> Self {
        StandardAuthorizer {
            config: Arc::new(config),
            acls: Arc::new(Published::new(AclCache::default())),
        }
    }

    pub fn config(&self) -> &AuthorizerConfig {
        &self.config
    }

    /// Whether `principal` (`User:alice`) connected from `host` may perform `operation` on
    /// the resource `resource_type`/`resource_name` (a literal name, as Kafka's actions).
    pub fn authorize(
        &self,
        principal: &str,
        host: &str,
        operation: i8,
        resource_type: i8,
        resource_name: &str,
    ) -> bool {
        self.authorize_rule(principal, host, operation, resource_type, resource_name)
            .allowed()
    }

    /// The rule that decides [`authorize`](Self::authorize).
    pub fn authorize_rule(
        &self,
        principal: &str,
        host: &str,
        operation: i8,
        resource_type: i8,
        resource_name: &str,
    ) -> AuthorizationRule {
        if self.config.super_users.contains(principal) {
            return AuthorizationRule::SuperUser;
        }
        let action = Action {
            principal,
            host,
            operation,
        };
        let cache = self.acls.load();
        let mut matching = Matching::default();
        if let Some(deny) = cache.find_deny(&action, resource_type, resource_name, &mut matching) {
            return AuthorizationRule::Deny(deny);
        }
        match matching {
            Matching {
                allow: Some(acl), ..
            } => AuthorizationRule::Allow(acl),
            Matching {
                has_resource_acls: true,
                ..
            } => AuthorizationRule::NoMatchingAcl,
            Matching {
                has_resource_acls: false,
                ..
            } => AuthorizationRule::NoAclFound {
                allowed: self.config.allow_everyone_if_no_acl_found,
            },
        }
    }

    /// The current ACLs, for describing them or several checks against one state.
    pub fn acls(&self) -> Arc<AclCache> {
        self.acls.load()
    }

    /// Grows by one with every update that changed an ACL.
    pub fn version(&self) -> u64 {
        self.acls.load().version
    }
}

impl AuthorizationRule {
    pub fn allowed(&self) -> bool {
        match self {
            AuthorizationRule::SuperUser | AuthorizationRule::Allow(_) => true,
            AuthorizationRule::Deny(_) | AuthorizationRule::NoMatchingAcl => false,
            AuthorizationRule::NoAclFound { allowed } => *allowed,
        }
    }
}

impl AclCache {
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn get(&self, id: &Uuid) -> Option<&Arc<StandardAcl>> {
        self.by_id.get(id)
    }

    /// ACLs in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&Uuid, &Arc<StandardAcl>)> {
        self.by_id.iter()
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// Adds or replaces ACL `id`; returns whether anything changed.
    fn insert(&mut self, id: Uuid, acl: Arc<StandardAcl>) -> bool {
        if let Some(old) = self.by_id.get(&id) {
            if **old == *acl {
                return false;
            }
            self.remove(&id);
        }
        self.by_id.insert(id, acl.clone());
        let by_type = self.by_resource_type.entry(acl.resource_type).or_default();
        by_type
            .groups_mut(acl.pattern_type)
            .entry(acl.resource_name.clone())
            .or_default()
            .insert(id, acl);
        true
    }

    /// Removes ACL `id`; returns whether it was there.
    fn remove(&mut self, id: &Uuid) -> bool {
        let Some(acl) = self.by_id.remove(id) else {
            return false;
        };
        let by_type = self
            .by_resource_type
            .get_mut(&acl.resource_type)
            .unwrap_or_else(|| panic!("ACL {id:?} is missing from the resource type index"));
        let groups = by_type.groups_mut(acl.pattern_type);
        let group = groups
            .get_mut(acl.resource_name.as_str())
            .unwrap_or_else(|| panic!("ACL {id:?} is missing from the resource name index"));
        let removed = group.remove(id);
        assert!(removed.is_some(), "ACL {id:?} is missing from its group");
        if group.is_empty() {
            groups.remove(acl.resource_name.as_str());
        }
        if by_type.literal.is_empty() && by_type.prefixed.is_empty() {
            self.by_resource_type.remove(&acl.resource_type);
        }
        true
    }

    /// Feeds every ACL whose pattern matches the resource to `matching`, stopping at the
    /// first applicable DENY, which it returns.
    fn find_deny(
        &self,
        action: &Action<'_>,
        resource_type: i8,
        resource_name: &str,
        matching: &mut Matching,
    ) -> Option<Arc<StandardAcl>> {
        let by_type = self.by_resource_type.get(&resource_type)?;
        let exact = by_type.literal.get(resource_name);
        let wildcard = match resource_name {
            WILDCARD_RESOURCE => None,
            _ => by_type.literal.get(WILDCARD_RESOURCE),
        };
        exact
            .and_then(|group| matching.check(action, group))
            .or_else(|| by_type.find_prefixed_deny(action, resource_name, matching))
            .or_else(|| wildcard.and_then(|group| matching.check(action, group)))
    }
}

impl ResourceTypeAcls {
    /// Where ACLs of `pattern_type` live. Only LITERAL is matched by exact name; anything
    /// else is matched as a prefix, as Kafka's scan does (the ACL control manager lets
    /// only LITERAL and PREFIXED into records).
    fn groups_mut(&mut self, pattern_type: i8) -> &mut OrdMap<String, AclGroup> {
        if pattern_type == PATTERN_TYPE_LITERAL {
            &mut self.literal
        } else {
            &mut self.prefixed
        }
    }

    /// Visits the PREFIXED groups whose name is a prefix of `resource_name` (itself
    /// included), longest first, touching O(prefixes + length) entries rather than every
    /// group: from the greatest name not after the cursor, a match moves the cursor just
    /// below it; a miss sharing only `n` leading bytes with the resource moves it to the
    /// resource's first `n` bytes, since no prefix of the resource lies between the two.
    fn find_prefixed_deny(
        &self,
        action: &Action<'_>,
        resource_name: &str,
        matching: &mut Matching,
    ) -> Option<Arc<StandardAcl>> {
        let mut cursor = Bound::Included(resource_name);
        while let Some((name, group)) = self
            .prefixed
            .range::<_, str>((Bound::Unbounded, cursor))
            .next_back()
        {
            if resource_name.starts_with(name.as_str()) {
                if let Some(deny) = matching.check(action, group) {
                    return Some(deny);
                }
                cursor = Bound::Excluded(name.as_str());
            } else {
                let mut shared = name
                    .bytes()
                    .zip(resource_name.bytes())
                    .take_while(|(a, b)| a == b)
                    .count();
                while !resource_name.is_char_boundary(shared) {
                    shared -= 1;
                }
                debug_assert!(shared < name.len(), "{name:?} is a prefix after all");
                cursor = Bound::Included(&resource_name[..shared]);
            }
        }
        None
    }
}

impl Matching {
    /// Notes the group's ACLs (they name the resource); returns the first applicable DENY.
    fn check(&mut self, action: &Action<'_>, group: &AclGroup) -> Option<Arc<StandardAcl>> {
        self.has_resource_acls |= !group.is_empty();
        for acl in group.values() {
            match action.result(acl) {
                Some(true) => {
                    self.allow.get_or_insert_with(|| acl.clone());
                }
                Some(false) => return Some(acl.clone()),
                None => {}
            }
        }
        None
    }
}

impl Action<'_> {
    /// Whether `acl`, whose pattern matches the resource, applies to this action: `None`
    /// when it does not, else whether it allows, as Kafka's `findResult`. Any permission
    /// but ALLOW counts as DENY, so an unexpected code fails closed.
    fn result(&self, acl: &StandardAcl) -> Option<bool> {
        if acl.principal != self.principal && acl.principal != WILDCARD_PRINCIPAL {
            return None;
        }
        if !acl_host_matches(&acl.host, self.host) {
            return None;
        }
        let allow = acl.permission_type == PERMISSION_ALLOW;
        if acl.operation != OPERATION_ALL {
            let applies = match self.operation {
                // Only ALLOW ACLs imply: a DENY of READ does not deny DESCRIBE.
                OPERATION_DESCRIBE if allow => IMPLIES_DESCRIBE.contains(&acl.operation),
                OPERATION_DESCRIBE_CONFIGS if allow => {
                    IMPLIES_DESCRIBE_CONFIGS.contains(&acl.operation)
                }
                operation => operation == acl.operation,
            };
            if !applies {
                return None;
            }
        }
        Some(allow)
    }
}
