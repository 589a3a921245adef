//! The share-group state persister (Kafka's `Persister` / `DefaultStatePersister`): how the
//! share-partition leaders (ShareFetch / ShareAcknowledge) and the group coordinator
//! (initializing, reading, altering and deleting a share group's offsets) reach the share
//! coordinator, which keeps each share partition's state in `__share_group_state`.
//!
//! The requests and answers are Kafka's own messages. A request may name partitions held by
//! several share coordinators (the key of one share partition is
//! `"<group>:<topic id>:<partition>"`, mapped to a `__share_group_state` partition as Kafka
//! maps it); the persister splits it, sends each part to the leader of that partition (this
//! broker's own share coordinator without a round trip), retries what Kafka retries
//! (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS) and answers
//! every partition it was asked about, each with its own error code where it failed.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;

use kraftd_protocol::messages::{
    DeleteShareGroupStateRequest, DeleteShareGroupStateResponse, InitializeShareGroupStateRequest,
    InitializeShareGroupStateResponse, ReadShareGroupStateRequest, ReadShareGroupStateResponse,
    ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse,
    WriteShareGroupStateRequest, WriteShareGroupStateResponse,
};

/// A persister call's answer to come.
pub type PersisterFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The share coordinator as its callers see it (see the module docs). Every answer names
/// every topic and partition of its request, each with an error code; a call never fails
/// as a whole.
pub trait Persister: Send + Sync + Debug {
    /// InitializeShareGroupState: a share partition's state starts at a start offset (the
    /// group coordinator, when a share group is first assigned a partition or its offsets
    /// are reset).
    fn initialize_state(
        &self,
        request: InitializeShareGroupStateRequest,
    ) -> PersisterFuture<InitializeShareGroupStateResponse>;

    /// ReadShareGroupState: what a share-partition leader loads before serving a partition.
    fn read_state(
        &self,
        request: ReadShareGroupStateRequest,
    ) -> PersisterFuture<ReadShareGroupStateResponse>;

    /// WriteShareGroupState: the start offset and the in-flight batches' states after
    /// acknowledgements, lock expiries or a move of the start offset.
    fn write_state(
        &self,
        request: WriteShareGroupStateRequest,
    ) -> PersisterFuture<WriteShareGroupStateResponse>;

    /// DeleteShareGroupState: a share group's state goes (DeleteGroups, delete offsets).
    fn delete_state(
        &self,
        request: DeleteShareGroupStateRequest,
    ) -> PersisterFuture<DeleteShareGroupStateResponse>;

    /// ReadShareGroupStateSummary: the start offset and state epoch only (DescribeShareGroupOffsets).
    fn read_summary(
        &self,
        request: ReadShareGroupStateSummaryRequest,
    ) -> PersisterFuture<ReadShareGroupStateSummaryResponse>;
}
