//! The transport's real-network tests (one integration binary): the server and client
//! channels against hostile and broken peers ([`transport`]), over TLS ([`tls`]) and with
//! SASL ([`sasl`]). Every wait is on a condition with a deadline; nothing is timed.

mod sasl;
mod tls;
mod transport;
