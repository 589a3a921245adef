//! How a transaction's markers leave the coordinator (Kafka's
//! `TransactionMarkerChannelManager`): the shard hands back a [`MarkerRequest`] once the
//! transaction's PrepareCommit/PrepareAbort is committed; whoever runs the shard gives it to
//! a [`TransactionMarkerChannel`], which writes the markers on the partitions' leaders and
//! says when every one is written, so the runtime can call
//! [`TransactionCoordinatorShard::on_markers_written`](super::TransactionCoordinatorShard::on_markers_written).
//!
//! A trait, so the state machine's crate says what it needs of the network and the broker
//! (which owns the channels to the other brokers and the metadata naming the leaders) says
//! how: the coordinator never imports the broker.

use super::MarkerRequest;

/// Called once every marker of a request is written.
pub type MarkersWritten = Box<dyn FnOnce() + Send>;

/// Writes transaction markers on the leaders of their partitions (see the module docs).
pub trait TransactionMarkerChannel: Send + Sync + 'static {
    /// Writes `marker` on every partition it names, retrying a partition whose leader
    /// refused or could not be reached (against the leader named then) until all are
    /// written, then calls `written`. A partition of a deleted topic counts as written. When
    /// a leader answers that a newer coordinator owns the transaction, it stops and never
    /// calls `written`: the newer coordinator completes it.
    fn send(&self, marker: MarkerRequest, written: MarkersWritten);
}
