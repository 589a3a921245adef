//! Replica placement for new partitions: which brokers hold each replica, striped across
//! racks so that a partition's replicas land on as many racks as there are, and leadership
//! (the first replica) spreads evenly over the brokers. The algorithm is Kafka's rack-aware
//! assignment (`AdminUtils.assignReplicasToBrokersRackAware`): brokers are ordered rack-alternately, partition `p`'s
//! first replica is the `(start + p)`-th broker of that order and the others follow at a
//! shift that grows every full round, skipping brokers whose rack already holds a replica
//! until every rack does. Its output matches Kafka's `AdminUtilsTest` and
//! `AdminRackAwareTest` cases. Kafka's KRaft controller uses `StripedReplicaPlacer` instead,
//! which also shuffles brokers within each rack at random; here the seed replaces that
//! randomness so placement stays a pure function.
//!
//! Deterministic: the caller passes the start index and replica shift (Kafka draws them at
//! random), so the same inputs give the same placement on every node and in tests.

use std::collections::{BTreeMap, BTreeSet};

use crate::image::MetadataImage;

/// A broker that may receive replicas, with its rack (`None` when racks are not configured).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsableBroker {
    pub id: i32,
    pub rack: Option<String>,
}

/// Where placement starts, as Kafka's random `startIndex` and `nextReplicaShift`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlacementSeed {
    pub start_index: u32,
    pub replica_shift: u32,
}

/// Why replicas cannot be placed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    #[error("Replication factor must be larger than 0.")]
    NonPositiveReplicationFactor,
    #[error("Number of partitions was set to an invalid non-positive value.")]
    NonPositivePartitions,
    /// No broker may take replicas (Kafka's `StripedReplicaPlacer` with no unfenced usable
    /// broker).
    #[error(
        "Unable to replicate the partition {replication_factor} time(s): All brokers are \
         currently fenced, or have all their log directories cordoned."
    )]
    NoUsableBrokers { replication_factor: i16 },
    #[error(
        "Unable to replicate the partition {replication_factor} time(s): The target replication \
         factor of {replication_factor} cannot be reached because only {available} broker(s) \
         are registered or some brokers have all their log directories cordoned."
    )]
    NotEnoughBrokers {
        replication_factor: i16,
        available: usize,
    },
}

impl PlacementSeed {
    /// A seed from one number, spread over both fields (splitmix64), for callers that keep a
    /// single counter or random value.
    pub fn from_u64(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        PlacementSeed {
            start_index: (z & 0xFFFF_FFFF) as u32,
            replica_shift: (z >> 32) as u32,
        }
    }
}

/// The brokers new replicas may go to: registered, not fenced, not shutting down (Kafka
/// places only on unfenced brokers) and with a log directory that is not cordoned (Kafka's
/// `usableBrokers` with `hasUncordonedDirs`, KIP-1066), in id order.
pub fn usable_brokers(image: &MetadataImage) -> Vec<UsableBroker> {
    image
        .cluster
        .brokers()
        .filter(|b| b.is_active() && b.has_uncordoned_dirs())
        .map(|b| UsableBroker {
            id: b.id,
            rack: b.rack.clone(),
        })
        .collect()
}

/// Replicas for partitions `first_partition .. first_partition + num_partitions`, each
/// `replication_factor` long, over `brokers`.
pub fn place(
    brokers: &[UsableBroker],
    first_partition: i32,
    num_partitions: i32,
    replication_factor: i16,
    seed: PlacementSeed,
) -> Result<Vec<Vec<i32>>, PlacementError> {
    if replication_factor <= 0 {
        return Err(PlacementError::NonPositiveReplicationFactor);
    }
    if num_partitions <= 0 {
        return Err(PlacementError::NonPositivePartitions);
    }
    if brokers.is_empty() {
        return Err(PlacementError::NoUsableBrokers { replication_factor });
    }
    let rf = usize::try_from(replication_factor).expect("positive");
    if brokers.len() < rf {
        return Err(PlacementError::NotEnoughBrokers {
            replication_factor,
            available: brokers.len(),
        });
    }
    let arranged = rack_alternated(brokers);
    let n = arranged.len();
    let num_racks = arranged
        .iter()
        .map(|b| b.rack.as_deref())
        .collect::<BTreeSet<_>>()
        .len();
    let start = seed.start_index as usize % n;
    let mut shift = seed.replica_shift as usize % n;
    let first = usize::try_from(first_partition.max(0)).expect("non-negative");
    let mut placements = Vec::with_capacity(usize::try_from(num_partitions).expect("positive"));
    for p in first..first + usize::try_from(num_partitions).expect("positive") {
        // As Kafka: each partition id that starts a new round of the brokers bumps the shift,
        // so later rounds pair leaders with different followers.
        if p > 0 && p % n == 0 {
            shift += 1;
        }
        let first_index = (p + start) % n;
        let leader = arranged[first_index];
        let mut replicas = vec![leader.id];
        let mut racks = BTreeSet::from([leader.rack.as_deref()]);
        let mut k = 0usize;
        while replicas.len() < rf {
            // Each broker is visited within n - 1 steps, so the loop is bounded.
            assert!(
                k < n * n + n,
                "placement did not converge: {n} brokers, rf {rf}"
            );
            let offset = 1 + (shift * num_racks + k) % (n - 1);
            let broker = arranged[(first_index + offset) % n];
            k += 1;
            let rack_ok = !racks.contains(&broker.rack.as_deref()) || racks.len() == num_racks;
            if rack_ok && !replicas.contains(&broker.id) {
                racks.insert(broker.rack.as_deref());
                replicas.push(broker.id);
            }
        }
        placements.push(replicas);
    }
    Ok(placements)
}

/// Brokers ordered rack by rack in turn (racks sorted, brokers by id within a rack), so
/// consecutive brokers sit on different racks: Kafka's `getRackAlternatedBrokerList`.
fn rack_alternated(brokers: &[UsableBroker]) -> Vec<&UsableBroker> {
    let mut by_rack: BTreeMap<Option<&str>, Vec<&UsableBroker>> = BTreeMap::new();
    for b in brokers {
        by_rack.entry(b.rack.as_deref()).or_default().push(b);
    }
    for list in by_rack.values_mut() {
        list.sort_by_key(|b| b.id);
    }
    let longest = by_rack.values().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(brokers.len());
    for i in 0..longest {
        for list in by_rack.values() {
            if let Some(b) = list.get(i) {
                out.push(*b);
            }
        }
    }
    out
}
