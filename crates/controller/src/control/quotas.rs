//! `ClientQuotaControlManager`: client quotas (KIP-546), as Kafka's
//! `org.apache.kafka.controller.ClientQuotaControlManager`. AlterClientQuotas validates each
//! entity (user, client-id, user + client-id, or ip; a null name is the default entity) and
//! each key with Kafka's quota config names and types, and writes a `ClientQuotaRecord` per
//! value that really changes; DescribeClientQuotas filters the image as Kafka's
//! `ClientQuotasImage.describe`.
//!
//! Pure: reads the image, returns records; each entry succeeds or fails on its own.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use kraftd_protocol::messages::{
    alter_client_quotas_response, describe_client_quotas_response, AlterClientQuotasRequest,
    AlterClientQuotasResponse, DescribeClientQuotasRequest, DescribeClientQuotasResponse,
};
use kraftd_protocol::metadata::{client_quota_record, ClientQuotaRecord};
use kraftd_protocol::{ErrorCode, MetadataRecord};

use crate::control::result::ControllerResult;
use crate::image::{ClientQuotaEntity, MetadataImage};

/// Kafka's `ClientQuotaEntity` types.
pub const ENTITY_USER: &str = "user";
pub const ENTITY_CLIENT_ID: &str = "client-id";
pub const ENTITY_IP: &str = "ip";

/// DescribeClientQuotas match types.
pub const MATCH_TYPE_EXACT: i8 = 0;
pub const MATCH_TYPE_DEFAULT: i8 = 1;
pub const MATCH_TYPE_SPECIFIED: i8 = 2;

/// The value type of a quota key (Kafka's `QuotaConfig` definitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum QuotaType {
    Long,
    Int,
    Double,
}

/// Quota keys for user and client-id entities.
const CLIENT_QUOTA_KEYS: &[(&str, QuotaType)] = &[
    ("producer_byte_rate", QuotaType::Long),
    ("consumer_byte_rate", QuotaType::Long),
    ("request_percentage", QuotaType::Double),
    ("controller_mutation_rate", QuotaType::Double),
];
/// Quota keys for ip entities.
const IP_QUOTA_KEYS: &[(&str, QuotaType)] = &[("connection_creation_rate", QuotaType::Int)];

/// Alters and describes client quotas. Holds nothing: all state is the image.
#[derive(Debug, Clone, Default)]
pub struct ClientQuotaControlManager;

/// An error for one entry or request: the code and Kafka's message.
type QuotaError = (ErrorCode, String);

impl ClientQuotaControlManager {
    pub fn new() -> Self {
        ClientQuotaControlManager
    }

    /// AlterClientQuotas: one result per entry, in order.
    pub fn alter_client_quotas(
        &self,
        image: &MetadataImage,
        request: &AlterClientQuotasRequest,
    ) -> ControllerResult<AlterClientQuotasResponse> {
        let mut records = Vec::new();
        let mut response = AlterClientQuotasResponse::default();
        for entry in &request.entries {
            let pairs: Vec<(String, Option<String>)> = entry
                .entity
                .iter()
                .map(|e| (e.entity_type.clone(), e.entity_name.clone()))
                .collect();
            let ops: Vec<(&str, f64, bool)> = entry
                .ops
                .iter()
                .map(|o| (o.key.as_str(), o.value, o.remove))
                .collect();
            let outcome =
                validate_entity(&pairs).and_then(|entity| alter_entry(image, &entity, &ops));
            let (error_code, error_message) = match outcome {
                Ok(entry_records) => {
                    if !request.validate_only {
                        records.extend(entry_records.into_iter().map(MetadataRecord::ClientQuota));
                    }
                    (0, None)
                }
                Err((code, message)) => (code.code(), Some(message)),
            };
            response
                .entries
                .push(alter_client_quotas_response::EntryData {
                    error_code,
                    error_message,
                    entity: entry
                        .entity
                        .iter()
                        .map(|e| alter_client_quotas_response::EntityData {
                            entity_type: e.entity_type.clone(),
                            entity_name: e.entity_name.clone(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                });
        }
        ControllerResult::atomic_of(records, response)
    }

    /// DescribeClientQuotas: the entities matching every component (and, if `strict`, no
    /// other entity types), with their quotas.
    pub fn describe_client_quotas(
        &self,
        image: &MetadataImage,
        request: &DescribeClientQuotasRequest,
    ) -> DescribeClientQuotasResponse {
        match describe(image, request) {
            Ok(entries) => DescribeClientQuotasResponse {
                error_message: None,
                entries: Some(entries),
                ..Default::default()
            },
            Err((code, message)) => DescribeClientQuotasResponse {
                error_code: code.code(),
                error_message: Some(message),
                entries: None,
                ..Default::default()
            },
        }
    }
}

/// Kafka's `validateEntity`: known types, each once, and only the combinations Kafka allows.
fn validate_entity(pairs: &[(String, Option<String>)]) -> Result<ClientQuotaEntity, QuotaError> {
    let invalid = |m: String| Err((ErrorCode::InvalidRequest, m));
    if pairs.is_empty() {
        return invalid("Invalid empty client quota entity".into());
    }
    let mut entity = BTreeMap::new();
    for (entity_type, name) in pairs {
        if ![ENTITY_USER, ENTITY_CLIENT_ID, ENTITY_IP].contains(&entity_type.as_str()) {
            return invalid(format!("Unhandled client quota entity type: {entity_type}"));
        }
        if entity.insert(entity_type.clone(), name.clone()).is_some() {
            return invalid(format!(
                "Duplicate {entity_type} entity in client quota entity"
            ));
        }
    }
    if let Some(ip) = entity.get(ENTITY_IP) {
        if entity.len() > 1 {
            return invalid(
                "Invalid quota entity combination, IP entity should not be combined with User \
                 or ClientId"
                    .into(),
            );
        }
        if let Some(ip) = ip {
            if ip.parse::<IpAddr>().is_err() {
                return invalid(format!("{ip} is not a valid IP or resolvable host."));
            }
        }
    }
    Ok(ClientQuotaEntity(entity))
}

/// The records for one entry's operations, or its error.
fn alter_entry(
    image: &MetadataImage,
    entity: &ClientQuotaEntity,
    ops: &[(&str, f64, bool)],
) -> Result<Vec<ClientQuotaRecord>, QuotaError> {
    let keys = if entity.0.contains_key(ENTITY_IP) {
        IP_QUOTA_KEYS
    } else {
        CLIENT_QUOTA_KEYS
    };
    let current = image.client_quotas.get(entity);
    let mut seen = BTreeSet::new();
    let mut records = Vec::new();
    for &(key, value, remove) in ops {
        if !seen.insert(key) {
            return Err((
                ErrorCode::InvalidRequest,
                format!("Duplicate quota key {key} not updating quota for this entity"),
            ));
        }
        let Some((_, quota_type)) = keys.iter().find(|(k, _)| *k == key) else {
            return Err((
                ErrorCode::InvalidRequest,
                format!("Invalid configuration key {key}"),
            ));
        };
        let existing = current.and_then(|m| m.get(key)).copied();
        if remove {
            if existing.is_some() {
                records.push(quota_record(entity, key, 0.0, true));
            }
            continue;
        }
        let whole = value.is_finite() && value.fract() == 0.0;
        match quota_type {
            QuotaType::Long if !whole => {
                return Err((
                    ErrorCode::InvalidRequest,
                    format!("Configuration {key} must be a Long value"),
                ))
            }
            QuotaType::Int if !whole || value.abs() > f64::from(i32::MAX) => {
                return Err((
                    ErrorCode::InvalidRequest,
                    format!("Configuration {key} must be an Integer value"),
                ))
            }
            QuotaType::Double if !value.is_finite() => {
                return Err((
                    ErrorCode::InvalidRequest,
                    format!("Configuration {key} must be a Double value"),
                ))
            }
            _ => {}
        }
        if existing != Some(value) {
            records.push(quota_record(entity, key, value, false));
        }
    }
    Ok(records)
}

fn quota_record(
    entity: &ClientQuotaEntity,
    key: &str,
    value: f64,
    remove: bool,
) -> ClientQuotaRecord {
    ClientQuotaRecord {
        entity: entity
            .0
            .iter()
            .map(|(t, n)| client_quota_record::EntityData {
                entity_type: t.clone(),
                entity_name: n.clone(),
                ..Default::default()
            })
            .collect(),
        key: key.to_string(),
        value,
        remove,
        ..Default::default()
    }
}

fn describe(
    image: &MetadataImage,
    request: &DescribeClientQuotasRequest,
) -> Result<Vec<describe_client_quotas_response::EntryData>, QuotaError> {
    let invalid = |m: String| Err((ErrorCode::InvalidRequest, m));
    let mut exact: BTreeMap<&str, Option<&str>> = BTreeMap::new();
    let mut specified: BTreeSet<&str> = BTreeSet::new();
    for c in &request.components {
        let t = c.entity_type.as_str();
        if t.is_empty() {
            return invalid("Invalid empty entity type.".into());
        }
        if exact.contains_key(t) || specified.contains(t) {
            return invalid(format!(
                "Entity type {t} cannot appear more than once in the filter."
            ));
        }
        if ![ENTITY_USER, ENTITY_CLIENT_ID, ENTITY_IP].contains(&t) {
            return Err((
                ErrorCode::UnsupportedVersion,
                format!("Unsupported entity type {t}"),
            ));
        }
        match c.match_type {
            MATCH_TYPE_EXACT => match &c.r#match {
                None => {
                    return invalid(
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                    )
                }
                Some(m) => {
                    exact.insert(t, Some(m.as_str()));
                }
            },
            MATCH_TYPE_DEFAULT | MATCH_TYPE_SPECIFIED if c.r#match.is_some() => {
                return invalid(format!(
                    "Request specified match type {}, but also specified a match string.",
                    c.match_type
                ))
            }
            MATCH_TYPE_DEFAULT => {
                exact.insert(t, None);
            }
            MATCH_TYPE_SPECIFIED => {
                specified.insert(t);
            }
            other => {
                return Err((
                    ErrorCode::UnsupportedVersion,
                    format!("Unknown match type {other}"),
                ))
            }
        }
    }
    let has = |t: &str| exact.contains_key(t) || specified.contains(t);
    if has(ENTITY_IP) && (has(ENTITY_USER) || has(ENTITY_CLIENT_ID)) {
        return invalid(
            "Invalid entity filter component combination. IP filter component should not be \
             used with user or clientId filter component."
                .into(),
        );
    }
    let mut entries = Vec::new();
    for (entity, quotas) in image.client_quotas.iter() {
        let map = &entity.0;
        if request.strict && map.len() != exact.len() + specified.len() {
            continue;
        }
        let exact_ok = exact
            .iter()
            .all(|(t, v)| map.get(*t).is_some_and(|name| name.as_deref() == *v));
        let specified_ok = specified
            .iter()
            .all(|t| map.get(*t).is_some_and(|name| name.is_some()));
        if !exact_ok || !specified_ok {
            continue;
        }
        entries.push(describe_client_quotas_response::EntryData {
            entity: map
                .iter()
                .map(|(t, n)| describe_client_quotas_response::EntityData {
                    entity_type: t.clone(),
                    entity_name: n.clone(),
                    ..Default::default()
                })
                .collect(),
            values: quotas
                .iter()
                .map(|(k, v)| describe_client_quotas_response::ValueData {
                    key: k.clone(),
                    value: *v,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
    }
    Ok(entries)
}
