//! A node's security settings from Kafka's property names, by part: [`sasl`] (mechanisms,
//! JAAS users, the node's own logins, re-authentication).

pub mod sasl;
