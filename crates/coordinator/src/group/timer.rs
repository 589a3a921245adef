//! What a group shard's timers are for: the keys of its [`Timer`].

pub use crate::timer::Timer;

/// What a shard's timer can be for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimerKey {
    /// A classic member's session (`session.timeout.ms` since its last heartbeat).
    ClassicHeartbeat { group: String, member: String },
    /// A classic member that must rejoin or sync in time (pending member, or a member
    /// awaiting its assignment).
    ClassicPendingMember { group: String, member: String },
    /// A classic group's join phase (`rebalance.timeout.ms`, or the initial delay).
    ClassicJoin { group: String },
    /// A classic group's sync phase.
    ClassicSync { group: String },
    /// A KIP-848 member's session.
    ConsumerSession { group: String, member: String },
    /// A KIP-848 member revoking partitions (`rebalance.timeout.ms`).
    ConsumerRebalance { group: String, member: String },
    /// A share member's session (`group.share.session.timeout.ms`).
    ShareSession { group: String, member: String },
    /// A streams member's session (`group.streams.session.timeout.ms`).
    StreamsSession { group: String, member: String },
    /// A streams member revoking tasks (its `rebalance.timeout.ms`).
    StreamsRebalance { group: String, member: String },
    /// A new streams group's first assignment (`group.streams.initial.rebalance.delay.ms`).
    StreamsInitialRebalance { group: String },
    /// Expired offsets and empty groups (`offsets.retention.check.interval.ms`).
    OffsetExpiration,
}
