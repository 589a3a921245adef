//! Channels from this broker to other brokers' inter-broker listener (this one's own
//! included), one per address, kept for reuse: the transaction coordinator's markers and
//! the produce path's transaction verification share the shape.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use kraftd_controller::MetadataImage;
use kraftd_net::{Channel, ClientConfig, ClientSecurity};

use crate::kafka_apis::broker_address;

/// Channels to brokers by address (see the module docs).
#[derive(Debug)]
pub struct BrokerChannels {
    client_id: String,
    request_timeout: Duration,
    /// The inter-broker listener (the first listener of each broker when unset).
    listener: Option<String>,
    /// How to reach that listener.
    security: ClientSecurity,
    channels: Mutex<HashMap<String, Channel>>,
}

impl BrokerChannels {
    pub fn new(
        client_id: String,
        listener: Option<String>,
        security: ClientSecurity,
        request_timeout: Duration,
    ) -> Self {
        BrokerChannels {
            security,
            client_id,
            request_timeout,
            listener,
            channels: Mutex::new(HashMap::new()),
        }
    }

    /// The address of `broker_id` in `image`, if it is registered with the listener.
    pub fn address(&self, image: &MetadataImage, broker_id: i32) -> Option<String> {
        broker_address(image.cluster.broker(broker_id)?, self.listener.as_deref())
    }

    /// The channel to `address` (created on first use).
    pub fn channel(&self, address: &str) -> Channel {
        let mut channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        channels
            .entry(address.to_string())
            .or_insert_with(|| {
                let mut config = ClientConfig::new(self.client_id.clone());
                config.request_timeout = self.request_timeout;
                config.security = self.security.clone();
                Channel::spawn(address.to_string(), config)
            })
            .clone()
    }
}
