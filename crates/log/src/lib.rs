//! The storage engine under both the Raft metadata log (`__cluster_metadata`) and every data
//! partition: segments of Kafka RecordBatch v2 bytes named by base offset, offset and time
//! indexes, the leader-epoch checkpoint, snapshots (`<end offset>-<epoch>.checkpoint`), the
//! clean-shutdown marker and crash recovery. It will be the only crate that opens data files.
//!
//! Empty until the log-store issue lands; nothing here yet.
