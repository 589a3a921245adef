//! A node's security settings from Kafka's property names, read when the configuration
//! loads so a bad one stops the start with one line, by part: [`sasl`] (mechanisms, JAAS
//! users, the node's own logins, re-authentication) and [`tls`] (`ssl.*`, per listener
//! `listener.name.<listener>.ssl.*`).

pub mod sasl;
pub mod tls;
