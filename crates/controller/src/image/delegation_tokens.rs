//! Delegation tokens in the metadata image, as Kafka's `DelegationTokenImage`: for each token
//! id its owner, requester, renewers and timestamps (Kafka's `TokenInformation`). Never the
//! HMAC: every node derives it from the token id and `delegation.token.secret.key`, so the
//! metadata log holds nothing a client could log in with.

use std::sync::Arc;

use imbl::OrdMap;
use kraftd_net::KafkaPrincipal;
use kraftd_protocol::metadata::DelegationTokenRecord;

/// All delegation tokens by id. Cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DelegationTokenImage {
    pub(crate) tokens: OrdMap<String, Arc<TokenInformation>>,
}

/// Kafka's `TokenInformation`: who a token is for and how long it lives (epoch ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInformation {
    pub token_id: String,
    pub owner: KafkaPrincipal,
    pub requester: KafkaPrincipal,
    pub renewers: Vec<KafkaPrincipal>,
    pub issue_timestamp: i64,
    pub max_timestamp: i64,
    pub expiry_timestamp: i64,
}

impl DelegationTokenImage {
    pub fn get(&self, token_id: &str) -> Option<&Arc<TokenInformation>> {
        self.tokens.get(token_id)
    }

    /// Tokens in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<TokenInformation>> {
        self.tokens.values()
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

impl TokenInformation {
    /// Kafka's `DelegationTokenData.fromRecord`; `None` when a principal does not parse as
    /// `Type:name`.
    pub fn from_record(r: &DelegationTokenRecord) -> Option<TokenInformation> {
        Some(TokenInformation {
            token_id: r.token_id.clone(),
            owner: KafkaPrincipal::parse(&r.owner)?,
            requester: KafkaPrincipal::parse(&r.requester)?,
            renewers: r
                .renewers
                .iter()
                .map(|p| KafkaPrincipal::parse(p))
                .collect::<Option<Vec<_>>>()?,
            issue_timestamp: r.issue_timestamp,
            max_timestamp: r.max_timestamp,
            expiry_timestamp: r.expiration_timestamp,
        })
    }

    /// Kafka's `DelegationTokenData.toRecord`.
    pub fn to_record(&self) -> DelegationTokenRecord {
        DelegationTokenRecord {
            owner: self.owner.to_string(),
            requester: self.requester.to_string(),
            renewers: self.renewers.iter().map(ToString::to_string).collect(),
            issue_timestamp: self.issue_timestamp,
            max_timestamp: self.max_timestamp,
            expiration_timestamp: self.expiry_timestamp,
            token_id: self.token_id.clone(),
            ..Default::default()
        }
    }

    /// Kafka's `TokenInformation.ownerOrRenewer`.
    pub fn owner_or_renewer(&self, principal: &KafkaPrincipal) -> bool {
        self.owner == *principal || self.renewers.contains(principal)
    }

    /// Whether the token is past its expiry or its maximum lifetime at `now_ms`.
    pub fn expired_at(&self, now_ms: i64) -> bool {
        self.max_timestamp < now_ms || self.expiry_timestamp < now_ms
    }
}
