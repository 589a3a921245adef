//! `MemoryWriter` meets the `PartitionWriter` contract, and its high watermark moves as the
//! tests move it.

use crate::shard::OutputBatch;
use crate::testing::writer::check;
use crate::writer::{MemoryWriter, PartitionWriter};
use bytes::Bytes;

#[test]
fn memory_writer_meets_the_contract() {
    check(MemoryWriter::new);
}

fn one(tag: u8) -> OutputBatch {
    OutputBatch {
        producer: None,
        records: vec![(Bytes::from(vec![tag]), None)],
    }
}

#[test]
fn high_watermark_moves_by_hand_and_uncommitted_entries_can_be_lost() {
    let mut w = MemoryWriter::new();
    w.append(&one(1)).unwrap();
    w.append(&one(2)).unwrap();
    assert_eq!(w.high_watermark().unwrap(), 0);
    w.commit_up_to(1);
    assert_eq!(w.high_watermark().unwrap(), 1);
    w.commit_up_to(0);
    assert_eq!(
        w.high_watermark().unwrap(),
        1,
        "the high watermark never goes back"
    );
    w.commit_up_to(99);
    assert_eq!(w.high_watermark().unwrap(), 2, "nor past the log end");
    w.append(&one(3)).unwrap();
    w.append_end_txn(5, 0, 0, true).unwrap();
    w.truncate_uncommitted();
    assert_eq!(w.log_end_offset().unwrap(), 2);
    assert_eq!(w.entries().len(), 2);
    assert_eq!(w.append(&one(4)).unwrap().base_offset, 2);
}
