//! Metadata publishers, as Kafka's `org.apache.kafka.image.publisher.MetadataPublisher`: the
//! consumers of committed metadata that turn each new image into state the rest of a node
//! reads on its hot paths (dynamic configs, SCRAM credentials, ACLs, client quotas), so
//! request handling never walks the image or waits for the metadata log.
//!
//! A publisher is pure and synchronous: the loader calls it on its own thread with the delta
//! it replayed and the image that resulted, and the publisher swaps a new immutable snapshot
//! into a shared handle. Readers clone the handle cheaply and load a snapshot without waiting
//! for the publisher (the `arc-swap` pattern, with std only): a reader never sees half an
//! update, and an update never waits for a slow reader.
//!
//! Deltas are applied incrementally from [`DeltaChanges`](crate::DeltaChanges), except when
//! the delta starts from the empty image: that is a snapshot load (or the very start of the
//! log), whose delta lists what the snapshot holds but not what the publisher held before and
//! the snapshot dropped, so the publisher rebuilds its state from the image instead.

mod acl;
mod client_quota;
mod delegation_tokens;
mod dynamic_config;
mod scram;

pub use acl::{
    acl_host_matches, AclCache, AclPublisher, AuthorizationRule, AuthorizerConfig,
    StandardAuthorizer, ALLOW_EVERYONE_IF_NO_ACL_FOUND_CONFIG, OPERATION_ALTER,
    OPERATION_ALTER_CONFIGS, OPERATION_CLUSTER_ACTION, OPERATION_CREATE, OPERATION_CREATE_TOKENS,
    OPERATION_DELETE, OPERATION_DESCRIBE, OPERATION_DESCRIBE_CONFIGS, OPERATION_DESCRIBE_TOKENS,
    OPERATION_IDEMPOTENT_WRITE, OPERATION_TWO_PHASE_COMMIT, RESOURCE_TYPE_DELEGATION_TOKEN,
    RESOURCE_TYPE_TRANSACTIONAL_ID, SUPER_USERS_CONFIG, WILDCARD_HOST, WILDCARD_PRINCIPAL,
};
pub use client_quota::{ClientQuotaPublisher, ClientQuotas};
pub use delegation_tokens::{DelegationTokenCache, DelegationTokenPublisher, SaslCredentials};
pub use dynamic_config::{
    DynamicConfigPublisher, DynamicConfigSnapshot, DynamicConfigs, Reconfigurable,
};
pub use scram::{CredentialProvider, ScramPublisher};

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::image::delta::MetadataDelta;
use crate::image::MetadataImage;

/// Receives every committed change of the metadata, in log order, once the loader has caught
/// up with the high watermark.
pub trait MetadataPublisher {
    /// A name for logs and metrics, as Kafka's publishers have.
    fn name(&self) -> &str;

    /// Called with what was replayed since the previous call (`delta.changes()` says what
    /// changed) and the image that resulted. A delta whose base is the empty image may be a
    /// snapshot load: it does not list what the previous image held and the new one lacks.
    fn on_metadata_update(&mut self, delta: &MetadataDelta, image: &MetadataImage);
}

/// Whether a publisher must rebuild from the image rather than apply the delta's changes.
pub(crate) fn is_full_reload(delta: &MetadataDelta) -> bool {
    delta.image().is_empty()
}

/// The cell behind every publisher handle: readers load the current `Arc` under a read lock
/// held only for the clone; the publisher builds the next value beside it and swaps it in.
#[derive(Debug)]
pub(crate) struct Published<T> {
    current: RwLock<Arc<T>>,
    /// Serialises updates, so two publishers fed the same handle cannot lose each other's
    /// changes; readers never take it.
    update: Mutex<()>,
}

impl<T: Clone + Default> Default for Published<T> {
    fn default() -> Self {
        Published::new(T::default())
    }
}

impl<T: Clone> Published<T> {
    pub(crate) fn new(value: T) -> Self {
        Published {
            current: RwLock::new(Arc::new(value)),
            update: Mutex::new(()),
        }
    }

    /// The current snapshot. The lock is held only to clone the `Arc`; a poisoned lock still
    /// holds a whole value (the only write is one assignment), so poison is ignored.
    pub(crate) fn load(&self) -> Arc<T> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Runs `f` on a copy of the current value and publishes the copy if `f` says it
    /// changed anything; returns whether it did.
    pub(crate) fn update(&self, f: impl FnOnce(&mut T) -> bool) -> bool {
        let _writer = self.update.lock().unwrap_or_else(PoisonError::into_inner);
        let mut next = T::clone(&self.load());
        if !f(&mut next) {
            return false;
        }
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        true
    }
}

/// What every node's publishers feed — dynamic configs, SCRAM credentials, delegation
/// tokens, ACLs, client quotas — built the same way on controllers and brokers: the handles
/// request handling reads, and the publishers a loader drives.
#[derive(Debug, Clone)]
pub struct NodePublishers {
    pub dynamic_configs: DynamicConfigs,
    pub credentials: CredentialProvider,
    pub delegation_tokens: DelegationTokenCache,
    pub authorizer: StandardAuthorizer,
    pub client_quotas: ClientQuotas,
    /// The connection limits of this node's role, fed the `connection_creation_rate`
    /// quotas of entity type `ip` (`None`: no listener to limit, as in some tests).
    pub connection_quotas: Option<Arc<kraftd_net::connection_quotas::ConnectionQuotas>>,
}

impl NodePublishers {
    pub fn new(node_id: i32, authorizer: AuthorizerConfig) -> Self {
        NodePublishers {
            dynamic_configs: DynamicConfigs::new(node_id),
            credentials: CredentialProvider::default(),
            delegation_tokens: DelegationTokenCache::default(),
            authorizer: StandardAuthorizer::new(authorizer),
            client_quotas: ClientQuotas::new(),
            connection_quotas: None,
        }
    }

    /// These publishers feeding `quotas`, the connection limits of this node's listeners,
    /// with the address quotas (Kafka's `ClientQuotaMetadataManager` handing them to the
    /// socket server's `ConnectionQuotas`).
    pub fn with_connection_quotas(
        mut self,
        quotas: Arc<kraftd_net::connection_quotas::ConnectionQuotas>,
    ) -> Self {
        self.connection_quotas = Some(quotas);
        self
    }

    /// These publishers with delegation tokens per `config` (`delegation.token.*`): with a
    /// secret key, token logins work on this node.
    pub fn with_delegation_tokens(mut self, config: crate::control::DelegationTokenConfig) -> Self {
        self.delegation_tokens = DelegationTokenCache::new(config);
        self
    }

    /// What this node's SASL listeners look SCRAM logins up in: users and tokens.
    pub fn sasl_credentials(&self) -> SaslCredentials {
        SaslCredentials {
            scram: self.credentials.clone(),
            tokens: self.delegation_tokens.clone(),
        }
    }

    /// The publishers that keep the handles current, for a loader to drive.
    pub fn publishers(&self) -> Vec<Box<dyn MetadataPublisher + Send>> {
        vec![
            Box::new(DynamicConfigPublisher::new(self.dynamic_configs.clone())),
            Box::new(ScramPublisher::new(self.credentials.clone())),
            Box::new(DelegationTokenPublisher::new(
                self.delegation_tokens.clone(),
            )),
            Box::new(AclPublisher::new(self.authorizer.clone())),
            Box::new(ClientQuotaPublisher::new(
                self.client_quotas.clone(),
                self.connection_quotas.clone(),
            )),
        ]
    }
}
