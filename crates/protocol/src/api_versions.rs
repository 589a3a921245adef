//! What a listener advertises in ApiVersions, kept apart from what the codecs can parse.
//!
//! The codecs cover every version in Kafka's schemas; a node advertises only what its handlers
//! really implement, per listener, and never a removed or unstable version. Handlers add their
//! API to the table as they arrive. An ApiVersions request at a version newer than the node
//! knows is answered at v0 with UNSUPPORTED_VERSION and the full list (KIP-511), so the
//! client can retry at a version both sides speak.

use crate::messages::api_versions_response::ApiVersion;
use crate::messages::{ApiVersionsRequest, ApiVersionsResponse};
use crate::{ApiKey, ErrorCode, VersionRange};
use std::collections::BTreeMap;

/// The kind of listener a table belongs to, as the schemas' `listeners` field names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListenerType {
    /// A client-facing broker listener.
    Broker,
    /// A `controller.listener.names` listener.
    Controller,
}

impl ListenerType {
    /// The schema's name of this listener type.
    pub fn name(self) -> &'static str {
        match self {
            ListenerType::Broker => "broker",
            ListenerType::Controller => "controller",
        }
    }
}

/// A version range that a table cannot advertise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiVersionsTableError {
    #[error("{} is not served on {} listeners (schema listeners: {:?})", .api_key.name(), .listener.name(), .api_key.listeners())]
    WrongListener {
        api_key: ApiKey,
        listener: ListenerType,
    },
    #[error("{} {}-{} is outside the codec's versions {}-{}", .api_key.name(), .range.min, .range.max, .valid.min, .valid.max)]
    OutsideCodec {
        api_key: ApiKey,
        range: VersionRange,
        valid: VersionRange,
    },
    #[error("{} v{} is unstable in Kafka's schema and must not be advertised", .api_key.name(), .version)]
    Unstable { api_key: ApiKey, version: i16 },
    #[error("{} range {}-{} is empty", .api_key.name(), .range.min, .range.max)]
    Empty {
        api_key: ApiKey,
        range: VersionRange,
    },
}

/// The APIs and versions one listener serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiVersionsTable {
    listener: ListenerType,
    apis: BTreeMap<ApiKey, VersionRange>,
}

impl ApiVersionsTable {
    /// A table serving only ApiVersions itself (every listener answers it).
    pub fn new(listener: ListenerType) -> Self {
        let mut apis = BTreeMap::new();
        apis.insert(ApiKey::ApiVersions, supported_range(ApiKey::ApiVersions));
        ApiVersionsTable { listener, apis }
    }

    pub fn listener(&self) -> ListenerType {
        self.listener
    }

    /// Advertises `api_key` at `range`, which must lie within the codec's stable versions
    /// and be an API the schema serves on this table's listener type.
    pub fn add(
        &mut self,
        api_key: ApiKey,
        range: VersionRange,
    ) -> Result<(), ApiVersionsTableError> {
        if !api_key.listeners().contains(&self.listener.name()) {
            return Err(ApiVersionsTableError::WrongListener {
                api_key,
                listener: self.listener,
            });
        }
        let valid = api_key.valid_versions();
        if range.min > range.max {
            return Err(ApiVersionsTableError::Empty { api_key, range });
        }
        if range.min < valid.min || range.max > valid.max {
            return Err(ApiVersionsTableError::OutsideCodec {
                api_key,
                range,
                valid,
            });
        }
        if api_key.latest_version_unstable() && range.max == valid.max {
            return Err(ApiVersionsTableError::Unstable {
                api_key,
                version: valid.max,
            });
        }
        self.apis.insert(api_key, range);
        Ok(())
    }

    /// The advertised range of `api_key`, if it is served here.
    pub fn range(&self, api_key: ApiKey) -> Option<VersionRange> {
        self.apis.get(&api_key).copied()
    }

    /// Whether a request of `api_key` at `version` may be handled here.
    pub fn supports(&self, api_key: ApiKey, version: i16) -> bool {
        self.range(api_key).is_some_and(|r| r.contains(version))
    }

    /// Every advertised API in key order.
    pub fn iter(&self) -> impl Iterator<Item = (ApiKey, VersionRange)> + '_ {
        self.apis.iter().map(|(k, r)| (*k, *r))
    }

    /// The ApiVersions answer to a request at `request_version`, and the version to encode
    /// it at: the same version when supported, else v0 with UNSUPPORTED_VERSION (KIP-511).
    pub fn response(&self, request_version: i16) -> (i16, ApiVersionsResponse) {
        let api_keys = self
            .iter()
            .map(|(k, r)| ApiVersion {
                api_key: k.code(),
                min_version: advertised_min(k, r),
                max_version: r.max,
                ..Default::default()
            })
            .collect();
        let mut response = ApiVersionsResponse {
            api_keys,
            ..Default::default()
        };
        if self.supports(ApiKey::ApiVersions, request_version) {
            (request_version, response)
        } else {
            response.error_code = ErrorCode::UnsupportedVersion.code();
            (0, response)
        }
    }
}

/// Why an ApiVersions request at `version` is refused before any table is sent, as Kafka's
/// `ApiVersionsRequest.isValid` and KIP-1242 decide: INVALID_REQUEST for a v3+ client
/// software name or version outside Kafka's pattern, or a v5 request naming only one of
/// ClusterId and NodeId; REBOOTSTRAP_REQUIRED for a v5 request naming another cluster or
/// node than `node` (`(cluster id, node id)`, given by brokers only: Kafka's controllers
/// do not check it). The client then bootstraps again instead of talking to a node that
/// is no longer the one it meant (a reused address).
pub fn request_error(
    version: i16,
    request: &ApiVersionsRequest,
    node: Option<(&str, i32)>,
) -> Option<ErrorCode> {
    let one_of_two = request.cluster_id.is_none() != (request.node_id == -1);
    if version >= 5 && one_of_two {
        return Some(ErrorCode::InvalidRequest);
    }
    if version >= 3
        && !(is_software_name_or_version(&request.client_software_name)
            && is_software_name_or_version(&request.client_software_version))
    {
        return Some(ErrorCode::InvalidRequest);
    }
    match (version >= 5, request.cluster_id.as_deref(), node) {
        (true, Some(cluster), Some((ours, node_id)))
            if cluster != ours || request.node_id != node_id =>
        {
            Some(ErrorCode::RebootstrapRequired)
        }
        _ => None,
    }
}

/// Kafka's `SOFTWARE_NAME_VERSION_PATTERN`, `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`:
/// alphanumerics, with dashes and dots inside.
pub fn is_software_name_or_version(s: &str) -> bool {
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
}

/// The answer to a refused ApiVersions request (`request_error`): the error alone, as
/// Kafka's `getErrorResponse` builds it for any error but UNSUPPORTED_VERSION.
pub fn error_response(code: ErrorCode) -> ApiVersionsResponse {
    ApiVersionsResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

/// The lowest Produce version Kafka 4.x advertises although it serves only v3+
/// (KAFKA-18659): librdkafka before 2.10 turns compression off when a broker's lowest Produce
/// version is above 0. A v0-2 request is still refused (its header does not decode, so the
/// connection closes), as Kafka 4.4 refuses it.
pub const PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION: i16 = 0;

/// The minimum version ApiVersions reports for `api_key` served at `range`.
fn advertised_min(api_key: ApiKey, range: VersionRange) -> i16 {
    if api_key == ApiKey::Produce {
        PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION.min(range.min)
    } else {
        range.min
    }
}

/// Versions the codecs parse but whose meaning kraftd does not implement yet, so it neither
/// advertises nor sends them: each entry is the newest version kraftd speaks (why, above it).
/// Empty now that BrokerHeartbeat v2's CordonedLogDirs (KIP-1066) is acted on.
const NOT_YET_IMPLEMENTED: [(ApiKey, i16); 0] = [];

/// The versions of `api_key` kraftd speaks: the codec's versions less an unstable newest one
/// and less the versions whose semantics are not implemented (`NOT_YET_IMPLEMENTED`).
pub fn supported_range(api_key: ApiKey) -> VersionRange {
    let mut r = api_key.valid_versions();
    if api_key.latest_version_unstable() {
        r.max -= 1;
    }
    if let Some((_, max)) = NOT_YET_IMPLEMENTED.iter().find(|(k, _)| *k == api_key) {
        r.max = r.max.min(*max);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Message;

    #[test]
    fn unsupported_api_versions_gets_v0_with_error_35() {
        let table = ApiVersionsTable::new(ListenerType::Broker);
        let (v, resp) = table.response(9);
        assert_eq!(v, 0);
        assert_eq!(resp.error_code, 35);
        assert_eq!(resp.api_keys.len(), 1);
        assert_eq!(resp.api_keys[0].api_key, ApiKey::ApiVersions.code());
        // The v0 body encodes.
        assert!(resp.to_bytes(0).is_ok());
        let (v, resp) = table.response(3);
        assert_eq!((v, resp.error_code), (3, 0));
    }

    #[test]
    fn table_refuses_versions_the_codec_lacks_or_that_are_unstable() {
        let mut table = ApiVersionsTable::new(ListenerType::Broker);
        let valid = ApiKey::Produce.valid_versions();
        assert!(table
            .add(
                ApiKey::Produce,
                VersionRange {
                    min: valid.min,
                    max: valid.max + 1
                }
            )
            .is_err());
        assert!(table
            .add(ApiKey::Produce, VersionRange { min: 3, max: 2 })
            .is_err());
        let unstable = ApiKey::ALL
            .iter()
            .copied()
            .find(|k| k.latest_version_unstable() && k.listeners().contains(&"broker"))
            .expect("the schemas mark at least one API unstable");
        assert!(matches!(
            table.add(unstable, unstable.valid_versions()),
            Err(ApiVersionsTableError::Unstable { .. })
        ));
        assert!(table.add(unstable, supported_range(unstable)).is_ok());
        assert!(table.supports(unstable, supported_range(unstable).max));
    }

    #[test]
    fn produce_is_advertised_from_v0_but_served_from_v3() {
        let mut table = ApiVersionsTable::new(ListenerType::Broker);
        table
            .add(ApiKey::Produce, supported_range(ApiKey::Produce))
            .unwrap();
        let (_, resp) = table.response(3);
        let produce = resp
            .api_keys
            .iter()
            .find(|k| k.api_key == ApiKey::Produce.code())
            .unwrap();
        assert_eq!(produce.min_version, 0);
        assert!(!table.supports(ApiKey::Produce, 2));
        assert!(table.supports(ApiKey::Produce, 3));
    }

    #[test]
    fn api_versions_requests_are_checked_as_kafka_checks_them() {
        let request = |name: &str, cluster: Option<&str>, node_id: i32| ApiVersionsRequest {
            client_software_name: name.into(),
            client_software_version: "2.10.1".into(),
            cluster_id: cluster.map(Into::into),
            node_id,
            ..Default::default()
        };
        let us = Some(("abc", 1));
        let ok = request("librdkafka", None, -1);
        assert_eq!(request_error(5, &ok, us), None);
        assert_eq!(
            request_error(3, &request("-bad", None, -1), us),
            Some(ErrorCode::InvalidRequest)
        );
        assert_eq!(
            request_error(3, &request("", None, -1), us),
            Some(ErrorCode::InvalidRequest)
        );
        // Before v3 the names are not sent, so not checked.
        assert_eq!(request_error(2, &request("", None, -1), us), None);
        assert_eq!(
            request_error(5, &request("a", Some("abc"), -1), us),
            Some(ErrorCode::InvalidRequest)
        );
        assert_eq!(
            request_error(5, &request("a", None, 1), us),
            Some(ErrorCode::InvalidRequest)
        );
        assert_eq!(request_error(5, &request("a", Some("abc"), 1), us), None);
        assert_eq!(
            request_error(5, &request("a", Some("abc"), 2), us),
            Some(ErrorCode::RebootstrapRequired)
        );
        assert_eq!(
            request_error(5, &request("a", Some("xyz"), 1), us),
            Some(ErrorCode::RebootstrapRequired)
        );
        // A controller does not check the identity.
        assert_eq!(request_error(5, &request("a", Some("xyz"), 1), None), None);
    }

    #[test]
    fn versions_not_implemented_yet_are_neither_advertised_nor_sent() {
        for (key, max) in NOT_YET_IMPLEMENTED {
            assert!(
                max < key.valid_versions().max,
                "{} cap is stale",
                key.name()
            );
            assert_eq!(supported_range(key).max, max);
        }
        let table = ApiVersionsTable::new(ListenerType::Broker);
        assert_eq!(table.range(ApiKey::ApiVersions).map(|r| r.max), Some(5));
        assert_eq!(table.response(6).1.error_code, 35);
        // KIP-1066: controllers act on CordonedLogDirs, so all of BrokerHeartbeat is served.
        assert_eq!(supported_range(ApiKey::BrokerHeartbeat).max, 2);
    }

    #[test]
    fn apis_are_advertised_only_on_their_schema_listeners() {
        let mut broker = ApiVersionsTable::new(ListenerType::Broker);
        let mut controller = ApiVersionsTable::new(ListenerType::Controller);
        let vote = supported_range(ApiKey::Vote);
        assert!(matches!(
            broker.add(ApiKey::Vote, vote),
            Err(ApiVersionsTableError::WrongListener { .. })
        ));
        assert!(controller.add(ApiKey::Vote, vote).is_ok());
        let produce = supported_range(ApiKey::Produce);
        assert!(controller.add(ApiKey::Produce, produce).is_err());
        assert!(broker.add(ApiKey::Produce, produce).is_ok());
    }
}
