//! Kafka's `skipKeyValueIterator`: the records of an uncompressed batch read only as far as
//! their length, attributes and two deltas, each record's key, value and headers stepped
//! over by its length. For the checks that need no more (a produce's timestamps, the record
//! count and each record's framing), at a fraction of a full decode's cost.

use bytes::{Buf, Bytes};

use super::batch::{RecordBatch, RecordsSection};
use super::compression::Compression;
use super::RecordBatchError;
use crate::codec::{self, DecodeErrorKind};

/// One record's deltas from its batch's base offset and base timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkimmedRecord {
    pub offset_delta: i32,
    pub timestamp_delta: i64,
}

impl RecordBatch {
    /// The records' deltas, each record's framing checked (its length within the records
    /// section, its fields within its length); exactly `recordCount` of them, then an error
    /// if bytes remain. `None` for a compressed batch, whose records must be decompressed
    /// ([`RecordBatch::records`]).
    pub fn skim(&self) -> Option<SkimIter> {
        (self.compression() == Compression::None).then(|| {
            SkimIter(RecordsSection::new(
                self.records_data(),
                self.record_count(),
            ))
        })
    }
}

/// See [`RecordBatch::skim`]; stops for good after the first error.
#[derive(Debug, Clone)]
pub struct SkimIter(RecordsSection);

impl Iterator for SkimIter {
    type Item = Result<SkimmedRecord, RecordBatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next_with(skim_one)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl std::iter::FusedIterator for SkimIter {}

/// One record off the front of `data` (the rest of a section of `section_len` bytes).
fn skim_one(
    data: &mut Bytes,
    section_len: usize,
    index: usize,
) -> Result<SkimmedRecord, RecordBatchError> {
    let at = section_len - data.len();
    let error = |field, kind| RecordBatchError::Record {
        index,
        position: at,
        field,
        kind,
    };
    let length = codec::read_varint(data, "length").map_err(|e| error("length", e.kind))?;
    let length = usize::try_from(length)
        .map_err(|_| error("length", DecodeErrorKind::NegativeLength(length.into())))?;
    if length > data.len() {
        return Err(error(
            "length",
            DecodeErrorKind::Truncated {
                needed: length,
                remaining: data.len(),
            },
        ));
    }
    let mut body = data.slice(..length);
    data.advance(length);
    codec::read_i8(&mut body, "attributes").map_err(|e| error("attributes", e.kind))?;
    let timestamp_delta = codec::read_varlong(&mut body, "timestampDelta")
        .map_err(|e| error("timestampDelta", e.kind))?;
    let offset_delta =
        codec::read_varint(&mut body, "offsetDelta").map_err(|e| error("offsetDelta", e.kind))?;
    Ok(SkimmedRecord {
        offset_delta,
        timestamp_delta,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::RecordBatchBuilder;

    #[test]
    fn skim_reads_each_records_deltas_and_checks_framing() {
        let mut b = RecordBatchBuilder::new(0);
        for (ts, v) in [(1000, "a"), (1005, "bb"), (990, "ccc")] {
            b.append(
                ts,
                Some(Bytes::from_static(b"k")),
                Some(Bytes::from(v)),
                Vec::new(),
            )
            .unwrap();
        }
        let batch = RecordBatch::parse(b.build().unwrap()).unwrap();
        let skimmed: Vec<_> = batch.skim().unwrap().map(Result::unwrap).collect();
        let full: Vec<_> = batch
            .records()
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                (r.offset_delta, r.timestamp_delta)
            })
            .collect();
        assert_eq!(
            skimmed
                .iter()
                .map(|s| (s.offset_delta, s.timestamp_delta))
                .collect::<Vec<_>>(),
            full
        );
        // A record length past the section is an error, and the iterator stops.
        let mut bytes = batch.as_bytes().to_vec();
        let first_record = crate::records::BATCH_HEADER_SIZE;
        bytes[first_record] = 0x7e; // zig-zag 63: longer than what is left
        let broken = RecordBatch::parse(Bytes::from(bytes));
        if let Ok(broken) = broken {
            let mut it = broken.skim().unwrap();
            assert!(it.next().unwrap().is_err());
            assert!(it.next().is_none());
        }
    }
}
