//! KIP-227 incremental fetch sessions (Kafka's `FetchSession`/`FetchManager`).
