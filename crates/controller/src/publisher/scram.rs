//! `ScramPublisher` and the `CredentialProvider` it feeds, as Kafka's `ScramPublisher` and
//! `CredentialProvider`. SASL/SCRAM authentication looks a user's credential up on every
//! handshake; this keeps those lookups off the image and lets a credential created, changed
//! or deleted through AlterUserScramCredentials take effect on the next handshake.
//!
//! The provider holds what the image holds (salt, stored key, server key, iterations), never
//! a password.

use std::sync::Arc;

use imbl::OrdMap;

use super::{is_full_reload, MetadataPublisher, Published};
use crate::image::delta::MetadataDelta;
use crate::image::{MetadataImage, ScramCredential, ScramMechanism};

/// Feeds a [`CredentialProvider`] from the metadata log.
#[derive(Debug)]
pub struct ScramPublisher {
    provider: CredentialProvider,
}

/// A cheap, shareable view of every SCRAM credential; every clone sees every update.
#[derive(Debug, Clone, Default)]
pub struct CredentialProvider {
    inner: Arc<Published<Credentials>>,
}

/// Credentials by user, then mechanism, so a lookup borrows the user name instead of
/// building a key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Credentials {
    version: u64,
    by_user: OrdMap<String, OrdMap<ScramMechanism, ScramCredential>>,
}

impl ScramPublisher {
    pub fn new(provider: CredentialProvider) -> Self {
        ScramPublisher { provider }
    }

    /// The provider this publisher feeds.
    pub fn provider(&self) -> &CredentialProvider {
        &self.provider
    }
}

impl MetadataPublisher for ScramPublisher {
    fn name(&self) -> &str {
        "ScramPublisher"
    }

    fn on_metadata_update(&mut self, delta: &MetadataDelta, image: &MetadataImage) {
        if is_full_reload(delta) {
            let mut by_user: OrdMap<String, OrdMap<ScramMechanism, ScramCredential>> =
                OrdMap::new();
            for (key, credential) in image.scram.iter() {
                by_user
                    .entry(key.user.clone())
                    .or_default()
                    .insert(key.mechanism, credential.clone());
            }
            self.provider.inner.update(|current| {
                if current.by_user == by_user {
                    return false;
                }
                current.by_user = by_user;
                current.version += 1;
                true
            });
            return;
        }
        let changed = &delta.changes().changed_scram;
        if changed.is_empty() {
            return;
        }
        self.provider.inner.update(|current| {
            let mut any = false;
            for key in changed {
                let next = image.scram.get(&key.user, key.mechanism);
                let previous = match next {
                    Some(credential) => current
                        .by_user
                        .entry(key.user.clone())
                        .or_default()
                        .insert(key.mechanism, credential.clone()),
                    None => {
                        let removed = current
                            .by_user
                            .get_mut(&key.user)
                            .and_then(|mechanisms| mechanisms.remove(&key.mechanism));
                        if current.by_user.get(&key.user).is_some_and(OrdMap::is_empty) {
                            current.by_user.remove(&key.user);
                        }
                        removed
                    }
                };
                any |= previous.as_ref() != next;
                tracing::debug!(user = %key.user, mechanism = key.mechanism.mechanism_name(),
                    present = next.is_some(), "SCRAM credential changed");
            }
            if any {
                current.version += 1;
            }
            any
        });
    }
}

impl CredentialProvider {
    /// An empty provider: no user can authenticate until a publisher feeds it.
    pub fn new() -> Self {
        CredentialProvider::default()
    }

    /// The credential `user` holds for `mechanism`, as Kafka's
    /// `CredentialProvider.credential(username, mechanism)`.
    pub fn credential(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.inner
            .load()
            .by_user
            .get(user)
            .and_then(|mechanisms| mechanisms.get(&mechanism))
            .cloned()
    }

    /// Grows by one with every update that changed a credential.
    pub fn version(&self) -> u64 {
        self.inner.load().version
    }
}

/// The SASL/SCRAM server's lookup (kraftd-raft's transport) reads the provider live: a
/// credential altered through AlterUserScramCredentials counts from the next login.
impl kraftd_net::sasl::ScramCredentialLookup for CredentialProvider {
    fn scram_credential(
        &self,
        user: &str,
        hash: kraftd_net::sasl::ScramHash,
    ) -> Option<kraftd_net::sasl::ScramCredentialData> {
        use kraftd_net::sasl::ScramHash;
        let mechanism = match hash {
            ScramHash::Sha256 => ScramMechanism::ScramSha256,
            ScramHash::Sha512 => ScramMechanism::ScramSha512,
        };
        self.credential(user, mechanism)
            .map(|c| kraftd_net::sasl::ScramCredentialData {
                salt: c.salt.to_vec(),
                stored_key: c.stored_key.to_vec(),
                server_key: c.server_key.to_vec(),
                iterations: c.iterations,
            })
    }
}
