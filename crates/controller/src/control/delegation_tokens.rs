//! `DelegationTokenControlManager`: delegation tokens (KIP-48) as Kafka 4.4's
//! `org.apache.kafka.controller.DelegationTokenControlManager` creates, renews and expires
//! them, and sweeps the expired ones (`delegation.token.expiry.check.interval.ms`); plus what
//! every node derives from a token (its HMAC, Kafka's `DelegationTokenManager.createHmac`)
//! and DescribeDelegationToken's filter (`DelegationTokenManager.filterToken`), which a
//! broker answers from its image.
//!
//! A token's HMAC is HMAC-SHA512 of its id under `delegation.token.secret.key`; it is the
//! token's password, so it is never written to the metadata log: each node recomputes it
//! from the id. Tokens are off unless the secret key is set (DELEGATION_TOKEN_AUTH_DISABLED)
//! and need `metadata.version` 3.6-IV2 (UNSUPPORTED_VERSION below it).
//!
//! Pure: reads the image, is handed the time and the new token's id, returns records.

use std::fmt;

use bytes::Bytes;
use hmac::{Hmac, Mac};
use kraftd_net::KafkaPrincipal;
use kraftd_protocol::messages::describe_delegation_token_response::{
    DescribedDelegationToken, DescribedDelegationTokenRenewer,
};
use kraftd_protocol::messages::{
    CreateDelegationTokenRequest, CreateDelegationTokenResponse, ExpireDelegationTokenRequest,
    ExpireDelegationTokenResponse, RenewDelegationTokenRequest, RenewDelegationTokenResponse,
};
use kraftd_protocol::metadata::RemoveDelegationTokenRecord;
use kraftd_protocol::{ErrorCode, MetadataRecord};
use sha2::Sha512;
use subtle::ConstantTimeEq;

use crate::control::result::ControllerResult;
use crate::image::{MetadataImage, TokenInformation};

/// Kafka's `delegation.token.max.lifetime.ms` default: 7 days.
pub const DELEGATION_TOKEN_MAX_LIFETIME_MS_DEFAULT: i64 = 7 * 24 * 60 * 60 * 1000;
/// Kafka's `delegation.token.expiry.time.ms` default: 1 day.
pub const DELEGATION_TOKEN_EXPIRY_TIME_MS_DEFAULT: i64 = 24 * 60 * 60 * 1000;
/// Kafka's `delegation.token.expiry.check.interval.ms` default: 1 hour.
pub const DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS_DEFAULT: i64 = 60 * 60 * 1000;
/// Kafka's `MAX_RECORDS_PER_EXPIRATION`: the most tokens one sweep removes.
pub const MAX_RECORDS_PER_EXPIRATION: usize = 1000;
/// Kafka's `DelegationTokenManager.ERROR_TIMESTAMP`.
pub const ERROR_TIMESTAMP: i64 = -1;

/// Kafka's `DelegationTokenManagerConfigs`, shared by the controller (which issues tokens)
/// and every node (which derives their HMACs and SCRAM credentials).
#[derive(Clone, PartialEq, Eq)]
pub struct DelegationTokenConfig {
    /// `delegation.token.secret.key`; `None` (or empty in the file) disables tokens.
    pub secret_key: Option<String>,
    /// `delegation.token.max.lifetime.ms`.
    pub max_lifetime_ms: i64,
    /// `delegation.token.expiry.time.ms`: the renew period.
    pub expiry_time_ms: i64,
    /// `delegation.token.expiry.check.interval.ms`: how often the controller sweeps.
    pub expiry_check_interval_ms: i64,
}

/// Creates, renews and expires tokens. Holds only its configuration: all state is the image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DelegationTokenControlManager {
    config: DelegationTokenConfig,
}

impl Default for DelegationTokenConfig {
    fn default() -> Self {
        DelegationTokenConfig {
            secret_key: None,
            max_lifetime_ms: DELEGATION_TOKEN_MAX_LIFETIME_MS_DEFAULT,
            expiry_time_ms: DELEGATION_TOKEN_EXPIRY_TIME_MS_DEFAULT,
            expiry_check_interval_ms: DELEGATION_TOKEN_EXPIRY_CHECK_INTERVAL_MS_DEFAULT,
        }
    }
}

impl fmt::Debug for DelegationTokenConfig {
    // The secret key stays out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelegationTokenConfig")
            .field("secret_key", &self.secret_key.as_ref().map(|_| "[hidden]"))
            .field("max_lifetime_ms", &self.max_lifetime_ms)
            .field("expiry_time_ms", &self.expiry_time_ms)
            .field("expiry_check_interval_ms", &self.expiry_check_interval_ms)
            .finish()
    }
}

impl DelegationTokenConfig {
    /// Kafka's `DelegationTokenManager.isEnabled`: a non-empty secret key.
    pub fn enabled(&self) -> bool {
        self.secret().is_some()
    }

    fn secret(&self) -> Option<&str> {
        self.secret_key.as_deref().filter(|k| !k.is_empty())
    }

    /// The token's HMAC (its password), or `None` with tokens off.
    pub fn hmac(&self, token_id: &str) -> Option<Vec<u8>> {
        self.secret().map(|secret| token_hmac(secret, token_id))
    }

    /// The token whose HMAC is `hmac` (Kafka's `tokenCache.tokenForHmac`), compared in
    /// constant time.
    pub fn token_for_hmac<'a>(
        &self,
        image: &'a MetadataImage,
        hmac: &[u8],
    ) -> Option<&'a TokenInformation> {
        let secret = self.secret()?;
        image
            .delegation_tokens
            .iter()
            .find(|t| bool::from(token_hmac(secret, &t.token_id).ct_eq(hmac)))
            .map(|t| t.as_ref())
    }
}

/// Kafka's `DelegationTokenManager.createHmac`: HMAC-SHA512 of the token id's UTF-8 bytes
/// under the secret key's UTF-8 bytes.
pub fn token_hmac(secret_key: &str, token_id: &str) -> Vec<u8> {
    let mut mac =
        Hmac::<Sha512>::new_from_slice(secret_key.as_bytes()).expect("HMAC takes any key length");
    mac.update(token_id.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Kafka's saturating `sum(now, duration)`.
fn sum(now: i64, duration: i64) -> i64 {
    now.saturating_add(duration)
}

impl DelegationTokenControlManager {
    pub fn new(config: DelegationTokenConfig) -> Self {
        DelegationTokenControlManager { config }
    }

    pub fn config(&self) -> &DelegationTokenConfig {
        &self.config
    }

    /// The error that refuses every token mutation before its own checks: tokens off, or
    /// `metadata.version` below 3.6-IV2.
    fn refusal(&self, image: &MetadataImage) -> Option<ErrorCode> {
        if !self.config.enabled() {
            return Some(ErrorCode::DelegationTokenAuthDisabled);
        }
        if !image.features.version().is_delegation_token_supported() {
            return Some(ErrorCode::UnsupportedVersion);
        }
        None
    }

    /// CreateDelegationToken by `requester` at `now_ms`, the new token named `token_id`
    /// (fresh: the caller draws it). The owner is the request's (v3) or the requester.
    pub fn create(
        &self,
        image: &MetadataImage,
        requester: &KafkaPrincipal,
        request: &CreateDelegationTokenRequest,
        now_ms: i64,
        token_id: String,
    ) -> ControllerResult<CreateDelegationTokenResponse> {
        let owner = request_owner(request, requester);
        let mut response = CreateDelegationTokenResponse {
            principal_type: owner.principal_type.clone(),
            principal_name: owner.name.clone(),
            token_requester_principal_type: requester.principal_type.clone(),
            token_requester_principal_name: requester.name.clone(),
            ..Default::default()
        };
        if let Some(code) = self.refusal(image) {
            response.error_code = code.code();
            return ControllerResult::atomic_of(Vec::new(), response);
        }
        let max_lifetime = if request.max_lifetime_ms > 0 {
            self.config.max_lifetime_ms.min(request.max_lifetime_ms)
        } else {
            self.config.max_lifetime_ms
        };
        let max_timestamp = sum(now_ms, max_lifetime);
        let expiry_timestamp = max_timestamp.min(sum(now_ms, self.config.expiry_time_ms));
        let mut renewers = Vec::with_capacity(request.renewers.len());
        for r in &request.renewers {
            if r.principal_type != KafkaPrincipal::USER_TYPE {
                response.error_code = ErrorCode::InvalidPrincipalType.code();
                return ControllerResult::atomic_of(Vec::new(), response);
            }
            renewers.push(KafkaPrincipal::user(r.principal_name.clone()));
        }
        let hmac = self.config.hmac(&token_id).expect("tokens are enabled");
        let token = TokenInformation {
            token_id: token_id.clone(),
            owner,
            requester: requester.clone(),
            renewers,
            issue_timestamp: now_ms,
            max_timestamp,
            expiry_timestamp,
        };
        response.issue_timestamp_ms = now_ms;
        response.expiry_timestamp_ms = expiry_timestamp;
        response.max_timestamp_ms = max_timestamp;
        response.token_id = token_id;
        response.hmac = Bytes::from(hmac);
        tracing::info!(token = %token.token_id, owner = %token.owner, "delegation token created");
        ControllerResult::atomic_of(
            vec![MetadataRecord::DelegationToken(token.to_record())],
            response,
        )
    }

    /// RenewDelegationToken by `renewer` (the owner or a named renewer) at `now_ms`.
    pub fn renew(
        &self,
        image: &MetadataImage,
        renewer: &KafkaPrincipal,
        request: &RenewDelegationTokenRequest,
        now_ms: i64,
    ) -> ControllerResult<RenewDelegationTokenResponse> {
        let fail = |code: ErrorCode| {
            ControllerResult::atomic_of(
                Vec::new(),
                RenewDelegationTokenResponse {
                    error_code: code.code(),
                    ..Default::default()
                },
            )
        };
        if let Some(code) = self.refusal(image) {
            return fail(code);
        }
        let Some(token) = self.config.token_for_hmac(image, &request.hmac) else {
            return fail(ErrorCode::DelegationTokenNotFound);
        };
        if token.expired_at(now_ms) {
            return fail(ErrorCode::DelegationTokenExpired);
        }
        if !token.owner_or_renewer(renewer) {
            return fail(ErrorCode::DelegationTokenOwnerMismatch);
        }
        let renew_lifetime = if request.renew_period_ms > 0 {
            self.config.expiry_time_ms.min(request.renew_period_ms)
        } else {
            self.config.expiry_time_ms
        };
        let expiry_timestamp = token.max_timestamp.min(sum(now_ms, renew_lifetime));
        let mut record = token.to_record();
        record.expiration_timestamp = expiry_timestamp;
        ControllerResult::atomic_of(
            vec![MetadataRecord::DelegationToken(record)],
            RenewDelegationTokenResponse {
                error_code: 0,
                expiry_timestamp_ms: expiry_timestamp,
                ..Default::default()
            },
        )
    }

    /// ExpireDelegationToken by the owner or a renewer at `now_ms`: a negative period
    /// removes the token at once, else its expiry moves to `now + period` (within its
    /// maximum lifetime).
    pub fn expire(
        &self,
        image: &MetadataImage,
        principal: &KafkaPrincipal,
        request: &ExpireDelegationTokenRequest,
        now_ms: i64,
    ) -> ControllerResult<ExpireDelegationTokenResponse> {
        let fail = |code: ErrorCode| {
            ControllerResult::atomic_of(
                Vec::new(),
                ExpireDelegationTokenResponse {
                    error_code: code.code(),
                    ..Default::default()
                },
            )
        };
        if let Some(code) = self.refusal(image) {
            return fail(code);
        }
        let Some(token) = self.config.token_for_hmac(image, &request.hmac) else {
            return fail(ErrorCode::DelegationTokenNotFound);
        };
        if !token.owner_or_renewer(principal) {
            return fail(ErrorCode::DelegationTokenOwnerMismatch);
        }
        if request.expiry_time_period_ms < 0 {
            tracing::info!(token = %token.token_id, "delegation token expired on request");
            return ControllerResult::atomic_of(
                vec![MetadataRecord::RemoveDelegationToken(
                    RemoveDelegationTokenRecord {
                        token_id: token.token_id.clone(),
                        ..Default::default()
                    },
                )],
                ExpireDelegationTokenResponse {
                    error_code: 0,
                    expiry_timestamp_ms: now_ms,
                    ..Default::default()
                },
            );
        }
        if token.expired_at(now_ms) {
            return fail(ErrorCode::DelegationTokenExpired);
        }
        let expiry_timestamp = token
            .max_timestamp
            .min(sum(now_ms, request.expiry_time_period_ms));
        let mut record = token.to_record();
        record.expiration_timestamp = expiry_timestamp;
        ControllerResult::atomic_of(
            vec![MetadataRecord::DelegationToken(record)],
            ExpireDelegationTokenResponse {
                error_code: 0,
                expiry_timestamp_ms: expiry_timestamp,
                ..Default::default()
            },
        )
    }

    /// Kafka's `sweepExpiredDelegationTokens`: removes the tokens past their expiry or
    /// maximum lifetime at `now_ms`, at most [`MAX_RECORDS_PER_EXPIRATION`]; the response
    /// says whether more remain.
    pub fn sweep_expired(&self, image: &MetadataImage, now_ms: i64) -> ControllerResult<bool> {
        let mut records = Vec::new();
        for token in image.delegation_tokens.iter() {
            if !token.expired_at(now_ms) {
                continue;
            }
            if records.len() == MAX_RECORDS_PER_EXPIRATION {
                return ControllerResult::of(records, true);
            }
            tracing::info!(token = %token.token_id, owner = %token.owner, "Delegation token expired");
            records.push(MetadataRecord::RemoveDelegationToken(
                RemoveDelegationTokenRecord {
                    token_id: token.token_id.clone(),
                    ..Default::default()
                },
            ));
        }
        ControllerResult::of(records, false)
    }
}

/// The owner a CreateDelegationToken names (v3 `owner_principal_*`), else the requester.
pub fn request_owner(
    request: &CreateDelegationTokenRequest,
    requester: &KafkaPrincipal,
) -> KafkaPrincipal {
    match request.owner_principal_name.as_deref() {
        Some(name) if !name.is_empty() => KafkaPrincipal {
            principal_type: request.owner_principal_type.clone().unwrap_or_default(),
            name: name.to_string(),
            token_authenticated: false,
        },
        _ => requester.clone(),
    }
}

/// Kafka's `allowTokenRequests`: no token API for a session that logged in with a token,
/// nor on a PLAINTEXT connection or a one-way SSL one (anonymous). `protocol` is the
/// connection's, `None` for a request a broker forwarded (its broker checked the client's
/// connection; only the principal's token flag travels in the Envelope).
pub fn token_requests_allowed(
    principal: &KafkaPrincipal,
    protocol: Option<kraftd_net::SecurityProtocol>,
) -> bool {
    use kraftd_net::SecurityProtocol as P;
    if principal.token_authenticated {
        return false;
    }
    match protocol {
        Some(P::Plaintext) => false,
        Some(P::Ssl) => *principal != KafkaPrincipal::anonymous(),
        _ => true,
    }
}

/// A token API's refusal as a whole, as Kafka builds it: CreateDelegationToken names the
/// owner and requester (Kafka's `CreateDelegationTokenResponse.prepareResponse`), Renew and
/// Expire carry the error timestamp, Describe no token. `None` for other APIs.
pub fn token_api_refused(
    body: &kraftd_protocol::RequestBody,
    requester: &KafkaPrincipal,
    code: ErrorCode,
) -> Option<kraftd_protocol::ResponseBody> {
    use kraftd_protocol::messages::DescribeDelegationTokenResponse;
    use kraftd_protocol::{RequestBody as B, ResponseBody as R};
    Some(match body {
        B::CreateDelegationToken(r) => {
            let owner = request_owner(r, requester);
            R::CreateDelegationToken(CreateDelegationTokenResponse {
                error_code: code.code(),
                principal_type: owner.principal_type,
                principal_name: owner.name,
                token_requester_principal_type: requester.principal_type.clone(),
                token_requester_principal_name: requester.name.clone(),
                ..Default::default()
            })
        }
        B::RenewDelegationToken(_) => R::RenewDelegationToken(RenewDelegationTokenResponse {
            error_code: code.code(),
            expiry_timestamp_ms: ERROR_TIMESTAMP,
            ..Default::default()
        }),
        B::ExpireDelegationToken(_) => R::ExpireDelegationToken(ExpireDelegationTokenResponse {
            error_code: code.code(),
            expiry_timestamp_ms: ERROR_TIMESTAMP,
            ..Default::default()
        }),
        B::DescribeDelegationToken(_) => {
            R::DescribeDelegationToken(DescribeDelegationTokenResponse {
                error_code: code.code(),
                ..Default::default()
            })
        }
        _ => return None,
    })
}

/// The check before a CreateDelegationToken runs, after [`token_requests_allowed`]: a
/// token for someone else needs CREATE_TOKENS on that user (`authorize_owner`, given the
/// owner as `Type:name`), else DELEGATION_TOKEN_AUTHORIZATION_FAILED.
pub fn create_refusal(
    request: &CreateDelegationTokenRequest,
    requester: &KafkaPrincipal,
    authorize_owner: impl FnOnce(&str) -> bool,
) -> Option<ErrorCode> {
    let owner = request_owner(request, requester);
    (owner != *requester && !authorize_owner(&owner.to_string()))
        .then_some(ErrorCode::DelegationTokenAuthorizationFailed)
}

/// DescribeDelegationToken's tokens (Kafka's `DelegationTokenManager.getTokens` with
/// `filterToken`): with `owners` named, only tokens one of them owns or renews; of those,
/// the requester sees the ones it owns or renews, and others when `authorize_token` (DESCRIBE
/// on the token) or `authorize_owner` (DESCRIBE_TOKENS on the owner) allows. Needs tokens on.
pub fn describe_tokens(
    config: &DelegationTokenConfig,
    image: &MetadataImage,
    requester: &KafkaPrincipal,
    owners: Option<&[KafkaPrincipal]>,
    mut authorize_token: impl FnMut(&str) -> bool,
    mut authorize_owner: impl FnMut(&KafkaPrincipal) -> bool,
) -> Vec<DescribedDelegationToken> {
    let mut out = Vec::new();
    for token in image.delegation_tokens.iter() {
        if owners.is_some_and(|owners| !owners.iter().any(|o| token.owner_or_renewer(o))) {
            continue;
        }
        let eligible = token.owner_or_renewer(requester)
            || authorize_token(&token.token_id)
            || authorize_owner(&token.owner);
        if !eligible {
            continue;
        }
        let Some(hmac) = config.hmac(&token.token_id) else {
            continue;
        };
        out.push(DescribedDelegationToken {
            principal_type: token.owner.principal_type.clone(),
            principal_name: token.owner.name.clone(),
            token_requester_principal_type: token.requester.principal_type.clone(),
            token_requester_principal_name: token.requester.name.clone(),
            issue_timestamp: token.issue_timestamp,
            expiry_timestamp: token.expiry_timestamp,
            max_timestamp: token.max_timestamp,
            token_id: token.token_id.clone(),
            hmac: Bytes::from(hmac),
            renewers: token
                .renewers
                .iter()
                .map(|r| DescribedDelegationTokenRenewer {
                    principal_type: r.principal_type.clone(),
                    principal_name: r.name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
    }
    out
}

#[cfg(test)]
mod tests;
