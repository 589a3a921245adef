//! A node's security settings from Kafka's property names, read when the configuration
//! loads so a bad one stops the start with one line: [`tls`] (`ssl.*`, per listener
//! `listener.name.<listener>.ssl.*`).

pub mod tls;
