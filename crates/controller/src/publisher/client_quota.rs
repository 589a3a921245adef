//! `ClientQuotaPublisher` and the [`ClientQuotas`] handle it feeds, as Kafka's
//! `DynamicClientQuotaPublisher` feeding the quota managers: every committed change of the
//! image's client quotas (AlterClientQuotas, `kafka-configs --alter --entity-type
//! users|clients`) becomes a new [`QuotaIndex`] the request path reads, so a quota set or
//! removed takes effect on the next request, on every node, without a restart.
//!
//! The `connection_creation_rate` quotas of entity type `ip` go to the node's
//! [`ConnectionQuotas`] instead, as Kafka's `ClientQuotaMetadataManager` hands them to the
//! socket server: an address's own quota, else the default `ip` entity's.
//!
//! The request path first asks whether any quota of a kind exists at all: one atomic load,
//! so a cluster without quotas pays nothing more per request.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use kraftd_net::connection_quotas::ConnectionQuotas;

use super::{is_full_reload, MetadataPublisher, Published};
use crate::control::quotas::ENTITY_IP;
use crate::image::delta::MetadataDelta;
use crate::image::ClientQuotasImage;
use crate::image::MetadataImage;
use crate::quota::{QuotaIndex, QuotaKind};

/// The client quota key of an address's connection creation rate.
const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// A cheap, shareable view of the client quotas; every clone sees every update.
#[derive(Debug, Clone, Default)]
pub struct ClientQuotas {
    index: Arc<Published<QuotaIndex>>,
    /// Bit `kind.index()` set while some entity holds a quota of that kind.
    enabled: Arc<AtomicU8>,
}

impl ClientQuotas {
    /// No quotas until a publisher (or [`ClientQuotas::set`]) says otherwise.
    pub fn new() -> Self {
        ClientQuotas::default()
    }

    /// Whether any entity holds a quota of `kind` (one atomic load).
    pub fn enabled(&self, kind: QuotaKind) -> bool {
        self.enabled.load(Ordering::Relaxed) & (1 << kind.index()) != 0
    }

    /// Whether any client quota exists at all.
    pub fn any_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed) != 0
    }

    /// The current quotas.
    pub fn index(&self) -> Arc<QuotaIndex> {
        self.index.load()
    }

    /// Replaces the quotas (the publisher; tests).
    pub fn set(&self, next: QuotaIndex) {
        let mask = QuotaKind::ALL
            .into_iter()
            .filter(|k| next.enabled(*k))
            .fold(0u8, |m, k| m | (1 << k.index()));
        self.index.update(|current| {
            if *current == next {
                return false;
            }
            *current = next;
            true
        });
        self.enabled.store(mask, Ordering::Relaxed);
    }
}

/// Feeds a [`ClientQuotas`] from the metadata log.
#[derive(Debug)]
pub struct ClientQuotaPublisher {
    quotas: ClientQuotas,
    connection_quotas: Option<Arc<ConnectionQuotas>>,
}

impl ClientQuotaPublisher {
    pub fn new(quotas: ClientQuotas, connection_quotas: Option<Arc<ConnectionQuotas>>) -> Self {
        ClientQuotaPublisher {
            quotas,
            connection_quotas,
        }
    }
}

/// The image's `connection_creation_rate` quotas of entity type `ip`: the default entity's
/// and each address's (an entity whose name does not parse as an address, which the
/// controller refuses, is skipped).
pub fn ip_connection_rates(image: &ClientQuotasImage) -> (Option<i32>, HashMap<IpAddr, i32>) {
    let mut default = None;
    let mut by_ip = HashMap::new();
    for (entity, values) in image.iter() {
        let parts = &entity.0;
        let (Some(ip), 1) = (parts.get(ENTITY_IP), parts.len()) else {
            continue;
        };
        let Some(rate) = values.get(CONNECTION_CREATION_RATE) else {
            continue;
        };
        // Kafka reads the quota as an int.
        let rate = rate.clamp(0.0, f64::from(i32::MAX)) as i32;
        match ip {
            None => default = Some(rate),
            Some(name) => {
                if let Ok(addr) = name.parse::<IpAddr>() {
                    by_ip.insert(addr, rate);
                }
            }
        }
    }
    (default, by_ip)
}

impl MetadataPublisher for ClientQuotaPublisher {
    fn name(&self) -> &str {
        "DynamicClientQuotaPublisher"
    }

    fn on_metadata_update(&mut self, delta: &MetadataDelta, image: &MetadataImage) {
        // Quota changes are rare and the entities few: any change rebuilds the index.
        if is_full_reload(delta) || !delta.changes().changed_client_quotas.is_empty() {
            for entity in &delta.changes().changed_client_quotas {
                tracing::info!(entity = ?entity.0, quotas = ?image.client_quotas.get(entity),
                    "client quota changed");
            }
            self.quotas
                .set(QuotaIndex::from_image(&image.client_quotas));
            if let Some(connections) = &self.connection_quotas {
                let (default, by_ip) = ip_connection_rates(&image.client_quotas);
                connections.set_ip_connection_rates(default, by_ip);
            }
        }
    }
}
