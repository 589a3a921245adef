//! The Raft crate's real-network tests (one integration binary): the driver on loopback TCP
//! with real log directories ([`cluster`]), a disk failure under a running driver
//! ([`disk`]), KIP-853 leader endpoints learned from the wire ([`endpoints`]) and voter
//! changes ([`membership`]); the transport's own tests are `kraftd-net`'s.
//! Every wait is on a condition with a deadline; nothing is timed.

mod cluster;
mod disk;
mod endpoints;
mod membership;
