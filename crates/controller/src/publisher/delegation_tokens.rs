//! `DelegationTokenPublisher` and the `DelegationTokenCache` it feeds, as Kafka's
//! `DelegationTokenPublisher` and `DelegationTokenCache`: for every token of the image, its
//! owner, expiry and the SCRAM credentials (SCRAM-SHA-256 and -512) whose password is the
//! token's HMAC in base64 (Kafka's `DelegationTokenManager.updateToken`). A SASL/SCRAM login
//! with `tokenauth=true` checks its proof against them and runs as the owner.
//!
//! Each node derives the credentials itself from `delegation.token.secret.key`: the metadata
//! log carries no HMAC. The salt is derived from the secret and the token id rather than
//! drawn at random (Kafka draws it), so the publisher stays deterministic; a salt need not
//! be secret, only distinct per credential.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use imbl::OrdMap;
use kraftd_net::sasl::{ScramCredentialData, ScramHash, TokenCredential};

use super::scram::CredentialProvider;
use super::{is_full_reload, MetadataPublisher, Published};
use crate::control::delegation_tokens::DelegationTokenConfig;
use crate::control::scram::SCRAM_MIN_ITERATIONS;
use crate::image::delta::MetadataDelta;
use crate::image::{MetadataImage, TokenInformation};

/// Feeds a [`DelegationTokenCache`] from the metadata log.
#[derive(Debug)]
pub struct DelegationTokenPublisher {
    cache: DelegationTokenCache,
}

/// A cheap, shareable view of every token's login credentials; every clone sees every
/// update. Empty while tokens are off (no secret key).
#[derive(Debug, Clone)]
pub struct DelegationTokenCache {
    config: Arc<DelegationTokenConfig>,
    inner: Arc<Published<Tokens>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Tokens {
    by_id: OrdMap<String, Arc<CachedToken>>,
}

/// What a login with one token needs.
#[derive(Debug, PartialEq, Eq)]
struct CachedToken {
    info: Arc<TokenInformation>,
    sha256: ScramCredentialData,
    sha512: ScramCredentialData,
}

/// The SCRAM lookup of a node's SASL listeners: users' credentials from the
/// [`CredentialProvider`], tokens' from the [`DelegationTokenCache`].
#[derive(Debug, Clone)]
pub struct SaslCredentials {
    pub scram: CredentialProvider,
    pub tokens: DelegationTokenCache,
}

impl DelegationTokenPublisher {
    pub fn new(cache: DelegationTokenCache) -> Self {
        DelegationTokenPublisher { cache }
    }
}

impl MetadataPublisher for DelegationTokenPublisher {
    fn name(&self) -> &str {
        "DelegationTokenPublisher"
    }

    fn on_metadata_update(&mut self, delta: &MetadataDelta, image: &MetadataImage) {
        if !self.cache.config.enabled() {
            return;
        }
        let config = &self.cache.config;
        if is_full_reload(delta) {
            self.cache.inner.update(|current| {
                let mut by_id = OrdMap::new();
                for info in image.delegation_tokens.iter() {
                    let cached = match current.by_id.get(&info.token_id) {
                        Some(c) if c.info == *info => Arc::clone(c),
                        _ => Arc::new(CachedToken::derive(config, info)),
                    };
                    by_id.insert(info.token_id.clone(), cached);
                }
                if current.by_id == by_id {
                    return false;
                }
                current.by_id = by_id;
                true
            });
            return;
        }
        let changed = &delta.changes().changed_delegation_tokens;
        if changed.is_empty() {
            return;
        }
        self.cache.inner.update(|current| {
            for token_id in changed {
                match image.delegation_tokens.get(token_id) {
                    Some(info) => {
                        let cached = match current.by_id.get(token_id) {
                            // A renewal: same id, same HMAC, same credentials.
                            Some(c) => CachedToken {
                                info: Arc::clone(info),
                                sha256: c.sha256.clone(),
                                sha512: c.sha512.clone(),
                            },
                            None => CachedToken::derive(config, info),
                        };
                        current.by_id.insert(token_id.clone(), Arc::new(cached));
                    }
                    None => {
                        current.by_id.remove(token_id);
                    }
                }
                tracing::debug!(token = %token_id, "delegation token changed");
            }
            true
        });
    }
}

impl CachedToken {
    /// The token's SCRAM credentials: password the base64 HMAC, Kafka's minimum iterations.
    fn derive(config: &DelegationTokenConfig, info: &Arc<TokenInformation>) -> CachedToken {
        let hmac = config
            .hmac(&info.token_id)
            .expect("the publisher runs only with tokens enabled");
        let password = B64.encode(hmac);
        let salt_source = config
            .hmac(&format!("scram-salt:{}", info.token_id))
            .expect("tokens are enabled");
        let salt = &salt_source[..16];
        CachedToken {
            info: Arc::clone(info),
            sha256: ScramHash::Sha256.credential(&password, salt, SCRAM_MIN_ITERATIONS),
            sha512: ScramHash::Sha512.credential(&password, salt, SCRAM_MIN_ITERATIONS),
        }
    }
}

impl DelegationTokenCache {
    /// A cache for `config`: empty, and staying so, unless its secret key is set.
    pub fn new(config: DelegationTokenConfig) -> Self {
        DelegationTokenCache {
            config: Arc::new(config),
            inner: Arc::default(),
        }
    }

    /// The `delegation.token.*` settings the cache derives credentials with.
    pub fn config(&self) -> &DelegationTokenConfig {
        &self.config
    }

    /// Token `token_id`'s credential for `hash`, its owner, and its time left at `now_ms`
    /// (Kafka's `DelegationTokenCache.credential` and `owner`).
    pub fn credential(
        &self,
        token_id: &str,
        hash: ScramHash,
        now_ms: i64,
    ) -> Option<TokenCredential> {
        let tokens = self.inner.load();
        let token = tokens.by_id.get(token_id)?;
        let credential = match hash {
            ScramHash::Sha256 => token.sha256.clone(),
            ScramHash::Sha512 => token.sha512.clone(),
        };
        Some(TokenCredential {
            credential,
            owner: token.info.owner.name.clone(),
            lifetime_ms: token.info.expiry_timestamp.saturating_sub(now_ms),
        })
    }
}

impl Default for DelegationTokenCache {
    fn default() -> Self {
        DelegationTokenCache::new(DelegationTokenConfig::default())
    }
}

/// Looked up live on every login, so a token created, renewed or expired counts from the
/// next one.
impl kraftd_net::sasl::ScramCredentialLookup for SaslCredentials {
    fn scram_credential(&self, user: &str, hash: ScramHash) -> Option<ScramCredentialData> {
        self.scram.scram_credential(user, hash)
    }

    fn token_credential(&self, token_id: &str, hash: ScramHash) -> Option<TokenCredential> {
        self.tokens
            .credential(token_id, hash, kraftd_log::clock::unix_ms())
    }
}
