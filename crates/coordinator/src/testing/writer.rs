//! The behaviour every [`PartitionWriter`] must have, as one function an implementation can
//! be run through (`writer::check(MemoryWriter::new)`): the runtime and [`load`] rely on
//! exactly this — offsets in append order, a marker one offset, reads of whole entries from
//! the one holding the offset asked, and everything appended read back as it was.

use bytes::Bytes;

use crate::shard::OutputBatch;
use crate::writer::{load, LogEntry, PartitionWriter};

fn batch(producer: Option<(i64, i16)>, n: usize, tag: u8) -> OutputBatch {
    OutputBatch {
        producer,
        records: (0..n)
            .map(|i| {
                let key = Bytes::from(vec![tag, i as u8]);
                // Every third record a tombstone.
                let value = (i % 3 != 2).then(|| Bytes::from(vec![tag; 4]));
                (key, value)
            })
            .collect(),
    }
}

/// Panics with a description of the first contract the writer `make` returns breaks.
pub fn check<W: PartitionWriter>(make: impl Fn() -> W) {
    let mut w = make();
    assert_eq!(
        w.log_end_offset().unwrap(),
        w.log_start_offset().unwrap(),
        "a new log is empty"
    );
    assert_eq!(w.high_watermark().unwrap(), w.log_start_offset().unwrap());
    let start = w.log_start_offset().unwrap();
    assert!(w
        .read(start, 10)
        .expect("reading an empty log")
        .entries
        .is_empty());
    assert!(
        w.append(&OutputBatch::default()).is_err(),
        "an empty batch is refused"
    );
    assert_eq!(
        w.log_end_offset().unwrap(),
        start,
        "a refused append changes nothing"
    );

    let a = w.append(&batch(None, 3, 1)).expect("append");
    assert_eq!(
        (a.base_offset, a.last_offset, a.end_offset),
        (start, start + 2, start + 3)
    );
    let t = w.append(&batch(Some((7, 2)), 2, 2)).expect("append");
    assert_eq!(t.base_offset, a.end_offset, "offsets follow on");
    let m = w.append_end_txn(7, 2, 4, true).expect("marker");
    assert_eq!(m, t.end_offset, "a marker takes the next offset");
    let b = w.append(&batch(None, 1, 3)).expect("append");
    assert_eq!(b.base_offset, m + 1, "a marker takes one offset");
    let n = w.append_end_txn(8, 0, 4, false).expect("marker");
    assert_eq!(w.log_end_offset().unwrap(), n + 1);

    // Reads: whole entries from the one holding the offset, at least one, at most as asked.
    let all = w.read(start, 100).expect("read").entries;
    assert_eq!(all.len(), 5);
    assert_eq!(
        all[1],
        LogEntry::Records {
            base_offset: t.base_offset,
            producer: Some((7, 2)),
            records: batch(Some((7, 2)), 2, 2).records,
        },
        "a batch reads back as appended"
    );
    assert_eq!(
        all[2],
        LogEntry::Marker {
            offset: m,
            producer_id: 7,
            producer_epoch: 2,
            coordinator_epoch: 4,
            commit: true,
        }
    );
    let mid = w.read(start + 1, 1).expect("read").entries;
    assert_eq!(mid.len(), 1);
    assert_eq!(
        mid[0].base_offset(),
        start,
        "a read starts at the entry holding the offset"
    );
    let from_marker = w.read(m, 100).expect("read").entries;
    assert_eq!(from_marker.len(), 3);
    assert!(w
        .read(w.log_end_offset().unwrap(), 10)
        .expect("read")
        .entries
        .is_empty());

    // The loader replays every record once, in order, markers included.
    struct Count(Vec<(i64, Option<(i64, i16)>)>, Vec<(i64, i64, bool)>);
    impl crate::shard::CoordinatorShard for Count {
        type Config = ();
        type Request = ();
        type Response = ();
        type Work = ();
        const TOPIC: &'static str = "t";
        const METRICS_GROUP: &'static str = "m";
        fn topic_partitions(_: &()) -> i32 {
            1
        }
        fn new(
            _: i32,
            _: i32,
            _: std::sync::Arc<()>,
            _: std::sync::Arc<dyn crate::context::TopicMetadata>,
        ) -> Self {
            Count(Vec::new(), Vec::new())
        }
        fn replay(
            &mut self,
            offset: i64,
            producer: Option<(i64, i16)>,
            _: Bytes,
            _: Option<Bytes>,
        ) -> Result<(), crate::shard::ReplayFailure> {
            self.0.push((offset, producer));
            Ok(())
        }
        fn replay_end_txn(&mut self, offset: i64, producer_id: i64, commit: bool) {
            self.1.push((offset, producer_id, commit));
        }
        fn on_loaded(&mut self, _: i64) {}
        fn on_metadata_update(&mut self, _: std::sync::Arc<dyn crate::context::TopicMetadata>) {}
        fn handle(&mut self, _: i64, _: &crate::context::RequestContext, _: u64, _: ()) {}
        fn on_timeout(&mut self, _: i64) {}
        fn next_deadline(&self) -> Option<i64> {
            None
        }
        fn take_output(&mut self) -> crate::shard::CoordinatorOutput<(), ()> {
            Default::default()
        }
    }
    let mut c = Count(Vec::new(), Vec::new());
    let summary = load(&w, &mut c).expect("the log loads");
    assert_eq!(summary.records, 6);
    assert_eq!(summary.log_end_offset, w.log_end_offset().unwrap());
    let offsets: Vec<i64> = c.0.iter().map(|(o, _)| *o).collect();
    assert_eq!(
        offsets,
        vec![
            start,
            start + 1,
            start + 2,
            t.base_offset,
            t.base_offset + 1,
            b.base_offset
        ]
    );
    assert_eq!(
        c.0[3].1,
        Some((7, 2)),
        "a transactional record carries its producer"
    );
    assert_eq!(c.0[5].1, None);
    assert_eq!(c.1, vec![(m, 7, true), (n, 8, false)]);
}
