//! Producer id blocks from the controller (Kafka's `RPCProducerIdManager`).
