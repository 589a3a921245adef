//! AlterPartition to the active controller (Kafka's `AlterPartitionManager`).
