//! Per-partition idempotent producer state (Kafka's `ProducerStateManager`).
