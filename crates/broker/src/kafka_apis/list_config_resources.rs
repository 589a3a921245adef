//! The ListConfigResources answer (api key 74), as Kafka's
//! `KafkaApis.handleListConfigResources`: v0 lists the client-metrics subscriptions (it was
//! ListClientMetricsResources), v1 takes the resource types wanted (none: every type it
//! knows) and lists groups with configs, client-metrics subscriptions, the brokers with an
//! endpoint on the request's listener (as BROKER_LOGGER and as BROKER resources) and every
//! topic. A type the version does not know makes the whole answer UNSUPPORTED_VERSION.
//! CLUSTER DESCRIBE_CONFIGS is checked by the caller.

use kraftd_controller::image::ConfigResourceType;
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::list_config_resources_response::ConfigResource;
use kraftd_protocol::messages::{ListConfigResourcesRequest, ListConfigResourcesResponse};
use kraftd_protocol::ErrorCode;

use super::endpoint;

/// Kafka's `ListConfigResourcesRequest.supportedResourceTypes` at `version`.
fn supported_types(version: i16) -> &'static [ConfigResourceType] {
    if version == 0 {
        &[ConfigResourceType::ClientMetrics]
    } else {
        &[
            ConfigResourceType::Topic,
            ConfigResourceType::Broker,
            ConfigResourceType::BrokerLogger,
            ConfigResourceType::ClientMetrics,
            ConfigResourceType::Group,
        ]
    }
}

/// Answers ListConfigResources at `version` from `image`, for a client on `listener`.
pub fn list_config_resources_response(
    image: &MetadataImage,
    request: &ListConfigResourcesRequest,
    version: i16,
    listener: &str,
) -> ListConfigResourcesResponse {
    let supported = supported_types(version);
    let mut wanted = Vec::new();
    if version == 0 || request.resource_types.is_empty() {
        wanted.extend_from_slice(supported);
    } else {
        for code in &request.resource_types {
            match ConfigResourceType::from_i8(*code).filter(|t| supported.contains(t)) {
                Some(t) => wanted.push(t),
                None => {
                    return ListConfigResourcesResponse {
                        error_code: ErrorCode::UnsupportedVersion.code(),
                        ..Default::default()
                    }
                }
            }
        }
    }
    let resource = |resource_type: ConfigResourceType, name: &str| ConfigResource {
        resource_name: name.to_string(),
        resource_type: resource_type.code(),
        ..Default::default()
    };
    let mut resources = Vec::new();
    // Kafka's order: groups, client metrics, broker loggers, brokers, topics.
    for t in [ConfigResourceType::Group, ConfigResourceType::ClientMetrics] {
        if wanted.contains(&t) {
            resources.extend(image.configs.of_type(t).map(|(r, _)| resource(t, &r.name)));
        }
    }
    for t in [ConfigResourceType::BrokerLogger, ConfigResourceType::Broker] {
        if wanted.contains(&t) {
            resources.extend(
                image
                    .cluster
                    .brokers()
                    .filter(|b| endpoint(b, listener).is_some())
                    .map(|b| resource(t, &b.id.to_string())),
            );
        }
    }
    if wanted.contains(&ConfigResourceType::Topic) {
        resources.extend(
            image
                .topics
                .names()
                .map(|(name, _)| resource(ConfigResourceType::Topic, name)),
        );
    }
    ListConfigResourcesResponse {
        config_resources: resources,
        ..Default::default()
    }
}
