//! The broker's side of the metadata log: the MetadataLoader (Raft observer listener that
//! builds deltas and images and feeds the publishers once caught up) and the MetadataCache
//! the request handlers read.
