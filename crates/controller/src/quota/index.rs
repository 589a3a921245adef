//! Which quota applies to a client: Kafka's `DefaultQuotaCallback` over the client quotas of
//! the metadata image. For each quota kind the entities are split by level, so a request's
//! lookups borrow its user and client id instead of building keys.
//!
//! Kafka's precedence, most specific first: `/users/<user>/clients/<client-id>`,
//! `/users/<user>/clients/<default>`, `/users/<user>`, `/users/<default>/clients/<client-id>`,
//! `/users/<default>/clients/<default>`, `/users/<default>`, `/clients/<client-id>`,
//! `/clients/<default>`. Kafka resolves in two steps, and so does this: the level that matches
//! decides the *metric tags* (whose rate is measured: the user, the client id, or both, `""`
//! for a part left out), then the limit is looked up for those tags.

use std::collections::HashMap;

use super::{QuotaKind, QuotaTags};
use crate::control::quotas::{ENTITY_CLIENT_ID, ENTITY_USER};
use crate::image::ClientQuotasImage;

/// The quota values of one kind, by level. `None` in an entity part is its default.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Levels {
    user_client: HashMap<String, HashMap<String, f64>>,
    user_default_client: HashMap<String, f64>,
    user: HashMap<String, f64>,
    default_user_client: HashMap<String, f64>,
    default_user_default_client: Option<f64>,
    default_user: Option<f64>,
    client: HashMap<String, f64>,
    default_client: Option<f64>,
}

/// Kafka's `quotaTypesEnabled` bits: which entity shapes hold a quota of this kind.
const CLIENT_ID_QUOTA_ENABLED: u8 = 1;
const USER_QUOTA_ENABLED: u8 = 2;
const USER_CLIENT_ID_QUOTA_ENABLED: u8 = 4;

impl Levels {
    fn insert(&mut self, user: Option<Option<&str>>, client: Option<Option<&str>>, value: f64) {
        let own = |s: &str| s.to_string();
        match (user, client) {
            (Some(Some(u)), Some(Some(c))) => {
                self.user_client
                    .entry(own(u))
                    .or_default()
                    .insert(own(c), value);
            }
            (Some(Some(u)), Some(None)) => {
                self.user_default_client.insert(own(u), value);
            }
            (Some(Some(u)), None) => {
                self.user.insert(own(u), value);
            }
            (Some(None), Some(Some(c))) => {
                self.default_user_client.insert(own(c), value);
            }
            (Some(None), Some(None)) => self.default_user_default_client = Some(value),
            (Some(None), None) => self.default_user = Some(value),
            (None, Some(Some(c))) => {
                self.client.insert(own(c), value);
            }
            (None, Some(None)) => self.default_client = Some(value),
            (None, None) => {}
        }
    }

    fn is_empty(&self) -> bool {
        self.enabled_bits() == 0
    }

    /// Kafka's `quotaTypesEnabled` for this kind.
    fn enabled_bits(&self) -> u8 {
        let mut bits = 0;
        if !self.client.is_empty() || self.default_client.is_some() {
            bits |= CLIENT_ID_QUOTA_ENABLED;
        }
        if !self.user.is_empty() || self.default_user.is_some() {
            bits |= USER_QUOTA_ENABLED;
        }
        if !self.user_client.is_empty()
            || !self.user_default_client.is_empty()
            || !self.default_user_client.is_empty()
            || self.default_user_default_client.is_some()
        {
            bits |= USER_CLIENT_ID_QUOTA_ENABLED;
        }
        bits
    }

    /// Kafka's `DefaultQuotaCallback.quotaMetricTags`: one level enabled takes a shortcut
    /// (the same tags for everyone), several walk the precedence.
    fn metric_tags(&self, user: &str, client_id: &str) -> QuotaTags {
        let both = || QuotaTags::new(user, client_id);
        let user_only = || QuotaTags::new(user, "");
        let client_only = || QuotaTags::new("", client_id);
        match self.enabled_bits() {
            0 | CLIENT_ID_QUOTA_ENABLED => client_only(),
            USER_QUOTA_ENABLED => user_only(),
            USER_CLIENT_ID_QUOTA_ENABLED => both(),
            _ => {
                if self
                    .user_client
                    .get(user)
                    .is_some_and(|c| c.contains_key(client_id))
                    || self.user_default_client.contains_key(user)
                {
                    both()
                } else if self.user.contains_key(user) {
                    user_only()
                } else if self.default_user_client.contains_key(client_id)
                    || self.default_user_default_client.is_some()
                {
                    both()
                } else if self.default_user.is_some() {
                    user_only()
                } else {
                    client_only()
                }
            }
        }
    }

    /// Kafka's `DefaultQuotaCallback.quotaLimit`: the limit for a sensor's tags, `None`
    /// when no level holds one (unlimited).
    fn limit(&self, tags: &QuotaTags) -> Option<f64> {
        let (user, client) = (tags.user.as_str(), tags.client_id.as_str());
        match (user.is_empty(), client.is_empty()) {
            (false, false) => self
                .user_client
                .get(user)
                .and_then(|c| c.get(client))
                .or_else(|| self.user_default_client.get(user))
                .or_else(|| self.default_user_client.get(client))
                .copied()
                .or(self.default_user_default_client),
            (false, true) => self.user.get(user).copied().or(self.default_user),
            (true, false) => self.client.get(client).copied().or(self.default_client),
            (true, true) => None,
        }
    }
}

/// Every client quota of the image, by kind and level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuotaIndex {
    kinds: [Levels; 4],
}

impl QuotaIndex {
    /// The index of `image`'s client quotas. Entities naming an ip (connection quotas) or an
    /// entity type Kafka's client quotas do not know are left out.
    pub fn from_image(image: &ClientQuotasImage) -> QuotaIndex {
        let mut index = QuotaIndex::default();
        for (entity, values) in image.iter() {
            let parts = &entity.0;
            if parts
                .keys()
                .any(|k| k != ENTITY_USER && k != ENTITY_CLIENT_ID)
            {
                continue;
            }
            let user = parts.get(ENTITY_USER).map(Option::as_deref);
            let client = parts.get(ENTITY_CLIENT_ID).map(Option::as_deref);
            for kind in QuotaKind::ALL {
                if let Some(value) = values.get(kind.config_key()) {
                    index.kinds[kind.index()].insert(user, client, *value);
                }
            }
        }
        index
    }

    /// Whether any entity holds a quota of `kind`.
    pub fn enabled(&self, kind: QuotaKind) -> bool {
        !self.kinds[kind.index()].is_empty()
    }

    /// The tags of the sensor measuring `user`'s requests with `client_id` for `kind`.
    pub fn metric_tags(&self, kind: QuotaKind, user: &str, client_id: &str) -> QuotaTags {
        self.kinds[kind.index()].metric_tags(user, client_id)
    }

    /// The limit of the sensor with `tags`, `None` for unlimited.
    pub fn limit(&self, kind: QuotaKind, tags: &QuotaTags) -> Option<f64> {
        self.kinds[kind.index()].limit(tags)
    }

    /// The limit that applies to `user` with `client_id`, with the tags it is measured under.
    pub fn resolve(
        &self,
        kind: QuotaKind,
        user: &str,
        client_id: &str,
    ) -> (QuotaTags, Option<f64>) {
        let tags = self.metric_tags(kind, user, client_id);
        let limit = self.limit(kind, &tags);
        (tags, limit)
    }
}
