//! The batches of a run's partitions as the brokers stored them: read from a broker's
//! segment files after the run (kraftd and Kafka write the same format), for the producer id,
//! epoch and sequence each record was appended under. With them the checker tells a
//! duplicate the broker failed to deduplicate (both copies under one producer epoch) from
//! one the producer sent again under a new epoch, which idempotence does not deduplicate
//! (KIP-360: a bumped epoch starts its sequences from 0).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use bytes::Bytes;
use kraftd_protocol::records::Batches;

/// One stored batch's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BatchInfo {
    pub(super) base_offset: i64,
    pub(super) last_offset: i64,
    pub(super) producer_id: i64,
    pub(super) producer_epoch: i16,
    pub(super) base_sequence: i32,
}

/// Per partition of `topic`, the batches of the fullest replica among the node directories
/// `dir/node-*/data/<topic>-<p>/` and `dir/node-*/disk/log/<topic>-<p>/` (the one whose
/// log reaches furthest), in offset order;
/// empty when the run kept no data.
pub(super) fn read(dir: &Path, topic: &str) -> Result<BTreeMap<i32, Vec<BatchInfo>>> {
    let mut best: BTreeMap<i32, Vec<BatchInfo>> = BTreeMap::new();
    let Ok(nodes) = std::fs::read_dir(dir) else {
        return Ok(best);
    };
    for node in nodes.flatten() {
        // The brokers' first log dir, and their second with `--disks`.
        let partitions = ["data", super::disks::LOG_DIR]
            .iter()
            .filter_map(|d| std::fs::read_dir(node.path().join(d)).ok())
            .flatten();
        for entry in partitions.flatten() {
            let name = entry.file_name();
            let Some(partition) = name
                .to_str()
                .and_then(|n| n.strip_prefix(topic)?.strip_prefix('-'))
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            let batches = read_partition(&entry.path())?;
            let end = |b: &Vec<BatchInfo>| b.last().map_or(-1, |b| b.last_offset);
            if best
                .get(&partition)
                .is_none_or(|have| end(have) < end(&batches))
            {
                best.insert(partition, batches);
            }
        }
    }
    Ok(best)
}

/// The batches of every segment of one partition directory, oldest segment first; a torn
/// or corrupt tail of a segment ends that segment.
fn read_partition(dir: &Path) -> Result<Vec<BatchInfo>> {
    let mut logs: Vec<_> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    let mut out = Vec::new();
    for log in logs {
        let bytes = Bytes::from(std::fs::read(&log)?);
        for batch in Batches::new(bytes) {
            let Ok(batch) = batch else { break };
            out.push(BatchInfo {
                base_offset: batch.base_offset(),
                last_offset: batch.last_offset(),
                producer_id: batch.producer_id(),
                producer_epoch: batch.producer_epoch(),
                base_sequence: batch.base_sequence(),
            });
        }
    }
    Ok(out)
}

/// The batch of `batches` (in offset order) that holds `offset`.
pub(super) fn batch_at(batches: &[BatchInfo], offset: i64) -> Option<&BatchInfo> {
    let i = batches.partition_point(|b| b.last_offset < offset);
    batches.get(i).filter(|b| b.base_offset <= offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(base: i64, last: i64, epoch: i16) -> BatchInfo {
        BatchInfo {
            base_offset: base,
            last_offset: last,
            producer_id: 7,
            producer_epoch: epoch,
            base_sequence: 0,
        }
    }

    #[test]
    fn the_batch_of_an_offset_is_the_one_spanning_it() {
        let batches = [batch(0, 4, 0), batch(5, 5, 1), batch(8, 9, 2)];
        assert_eq!(batch_at(&batches, 3).map(|b| b.producer_epoch), Some(0));
        assert_eq!(batch_at(&batches, 5).map(|b| b.producer_epoch), Some(1));
        assert_eq!(batch_at(&batches, 9).map(|b| b.producer_epoch), Some(2));
        // A gap (compacted away, or control batches not listed) and past the end.
        assert_eq!(batch_at(&batches, 6), None);
        assert_eq!(batch_at(&batches, 10), None);
    }
}
