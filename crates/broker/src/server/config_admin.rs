//! Kafka's `ConfigAdminManager.preprocess`: what a broker checks in AlterConfigs and
//! IncrementalAlterConfigs before forwarding them. A BROKER resource naming one broker must
//! name this one (the admin clients send it there), and a change to this broker's own configs
//! or to the cluster-wide defaults must be one its live components can take: the new overrides, over the cluster default,
//! are validated against every [`Reconfigurable`](kraftd_controller::publisher::Reconfigurable)
//! (a listener's new keystore must load and keep its certificate's subject...), and
//! `cordoned.log.dirs` must name this broker's log dirs (KIP-1066). A refused
//! resource is answered here with INVALID_REQUEST, as Kafka answers a `ConfigException` of
//! `DynamicBrokerConfig.validate`, and left out of the forwarded request; the controller's
//! answers for the rest are merged back in request order.
//!
//! Only a caller allowed ALTER_CONFIGS on the cluster gets this far: without it the
//! controller refuses the resource, and no file is read on its behalf.

use kraftd_controller::auth::RequestAuth;
use kraftd_controller::control::apply_config_ops;
use kraftd_controller::control::configuration::OP_SET;
use kraftd_controller::image::ConfigResourceType;
use kraftd_controller::publisher::OPERATION_ALTER_CONFIGS;
use kraftd_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsResponse,
    IncrementalAlterConfigsResponse,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};

use super::apis_context::BrokerApisContext;
use crate::replica::cordoned_log_dirs::{effective_value, parse_cordoned_log_dirs};

/// A resource answered by the broker itself: its position in the request and its error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    position: usize,
    resource_type: i8,
    resource_name: String,
    message: String,
}

/// The request to forward (without the refused resources; `None` when none is left) and
/// the refusals.
pub(super) fn preprocess(
    context: &BrokerApisContext,
    auth: &RequestAuth,
    body: RequestBody,
) -> (Option<RequestBody>, Vec<Refusal>) {
    if !auth.authorize_cluster(OPERATION_ALTER_CONFIGS) {
        return (Some(body), Vec::new());
    }
    let mut refusals = Vec::new();
    match body {
        RequestBody::IncrementalAlterConfigs(mut r) => {
            let mut position = 0;
            r.resources.retain(|resource| {
                let ops: Vec<(&str, i8, Option<&str>)> = resource
                    .configs
                    .iter()
                    .map(|c| (c.name.as_str(), c.config_operation, c.value.as_deref()))
                    .collect();
                let kept = check(
                    context,
                    resource.resource_type,
                    &resource.resource_name,
                    |own| apply_config_ops(own, &ops),
                )
                .map_err(|message| {
                    refusals.push(Refusal {
                        position,
                        resource_type: resource.resource_type,
                        resource_name: resource.resource_name.clone(),
                        message,
                    })
                })
                .is_ok();
                position += 1;
                kept
            });
            let body = (!r.resources.is_empty()).then_some(RequestBody::IncrementalAlterConfigs(r));
            (body, refusals)
        }
        RequestBody::AlterConfigs(mut r) => {
            let mut position = 0;
            r.resources.retain(|resource| {
                // The legacy request replaces every override of the resource.
                let ops: Vec<(&str, i8, Option<&str>)> = resource
                    .configs
                    .iter()
                    .map(|c| (c.name.as_str(), OP_SET, c.value.as_deref()))
                    .collect();
                let kept = check(
                    context,
                    resource.resource_type,
                    &resource.resource_name,
                    |_| apply_config_ops(Default::default(), &ops),
                )
                .map_err(|message| {
                    refusals.push(Refusal {
                        position,
                        resource_type: resource.resource_type,
                        resource_name: resource.resource_name.clone(),
                        message,
                    })
                })
                .is_ok();
                position += 1;
                kept
            });
            let body = (!r.resources.is_empty()).then_some(RequestBody::AlterConfigs(r));
            (body, refusals)
        }
        other => (Some(other), refusals),
    }
}

/// Kafka's checks of one resource: another broker's name, or own or cluster-default configs
/// (as `change` makes them from the current ones) that a live component cannot take.
fn check(
    context: &BrokerApisContext,
    resource_type: i8,
    name: &str,
    change: impl FnOnce(
        std::collections::BTreeMap<String, String>,
    ) -> std::collections::BTreeMap<String, String>,
) -> Result<(), String> {
    if ConfigResourceType::from_i8(resource_type) != Some(ConfigResourceType::Broker) {
        return Ok(());
    }
    let snapshot = context.dynamic_configs.snapshot();
    let configs = if name.is_empty() {
        // The cluster-wide default (Kafka's `perBrokerConfig = false`): the new defaults,
        // under this broker's own overrides, must still suit its live components.
        let mut configs = change(snapshot.cluster_default_configs());
        configs.extend(snapshot.own_broker_configs());
        configs
    } else {
        let id: i32 = name
            .parse()
            .map_err(|_| format!("Node id must be an integer, but it is: {name}"))?;
        if id != context.node_id {
            return Err(format!(
                "Unexpected broker id, expected {}, but received {name}",
                context.node_id
            ));
        }
        let mut configs = snapshot.cluster_default_configs();
        configs.extend(change(snapshot.own_broker_configs()));
        configs
    };
    // `cordoned.log.dirs` is checked as Kafka's `new KafkaConfig` checks it, before any
    // reconfigurable: its message is answered as it is.
    let log_dirs = context.data.replica_manager.log_manager().dirs();
    parse_cordoned_log_dirs(effective_value(&configs, &context.static_configs), log_dirs)?;
    context
        .dynamic_configs
        .validate_reconfiguration(&configs)
        .map_err(|e| format!("Invalid dynamic configuration: {e}"))
}

/// The answer to a request whose every resource was refused here.
pub(super) fn refused_response(key: ApiKey, refusals: Vec<Refusal>) -> ResponseBody {
    let empty = if key == ApiKey::AlterConfigs {
        ResponseBody::AlterConfigs(AlterConfigsResponse::default())
    } else {
        ResponseBody::IncrementalAlterConfigs(IncrementalAlterConfigsResponse::default())
    };
    merge(empty, refusals)
}

/// The controller's answer with the refused resources put back where they were asked.
pub(super) fn merge(response: ResponseBody, refusals: Vec<Refusal>) -> ResponseBody {
    let code = ErrorCode::InvalidRequest.code();
    match response {
        ResponseBody::IncrementalAlterConfigs(mut r) => {
            for f in refusals {
                let at = f.position.min(r.responses.len());
                r.responses.insert(
                    at,
                    incremental_alter_configs_response::AlterConfigsResourceResponse {
                        error_code: code,
                        error_message: Some(f.message),
                        resource_type: f.resource_type,
                        resource_name: f.resource_name,
                        ..Default::default()
                    },
                );
            }
            ResponseBody::IncrementalAlterConfigs(r)
        }
        ResponseBody::AlterConfigs(mut r) => {
            for f in refusals {
                let at = f.position.min(r.responses.len());
                r.responses.insert(
                    at,
                    alter_configs_response::AlterConfigsResourceResponse {
                        error_code: code,
                        error_message: Some(f.message),
                        resource_type: f.resource_type,
                        resource_name: f.resource_name,
                        ..Default::default()
                    },
                );
            }
            ResponseBody::AlterConfigs(r)
        }
        other => other,
    }
}
