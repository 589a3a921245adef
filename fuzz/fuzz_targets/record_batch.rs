//! A `records` field (zero or more v2 record batches), as Produce requests, Fetch responses
//! and the log carry it.
//!
//! Never panics: batch framing ([`Batches`], [`BatchesMut`], [`RecordBatch::parse`]), header
//! accessors, CRC validation, decompression (bounded), record iteration (bounded), control
//! keys and the `__cluster_metadata` value framing of every record.
//!
//! Properties:
//! - [`Batches`] and [`BatchesMut`] split the input identically;
//! - base offset and partition leader epoch are outside the CRC: rewriting them keeps a valid
//!   CRC valid; `set_max_timestamp` leaves a valid CRC;
//! - every decoded record re-encodes to exactly `encoded_len()` bytes;
//! - an uncompressed batch whose records all decode, rebuilt with [`RecordBatchBuilder`]
//!   from its header and records, gives a batch with a valid CRC, the same header fields and
//!   the same records (record attributes, which the builder always writes as 0, aside);
//! - a metadata record value that decodes re-encodes, and decodes again to the same record.
#![no_main]

use bytes::Bytes;
use kraftd_protocol::codec::Encoder;
use kraftd_protocol::metadata_record::{decode_metadata_record, encode_metadata_record};
use kraftd_protocol::records::{
    Batches, BatchesMut, Compression, Record, RecordBatch, RecordBatchBuilder, RecordBatchMut,
    TimestampType,
};
use libfuzzer_sys::fuzz_target;

/// Batches looked at per input.
const MAX_BATCHES: usize = 64;
/// Records decoded per batch.
const MAX_RECORDS: usize = 4096;
/// Decompression cap: far below the production 64 MiB, so that one small zstd bomb does not
/// eat the fuzzer's time (the cap itself is what is being exercised).
const DECOMPRESS_LIMIT: usize = 1 << 20;

/// Attribute bits the builder can write: compression (0-2), timestamp type (3),
/// transactional (4), control (5), delete horizon (6).
const KNOWN_ATTRIBUTES: i16 = 0x7f;

fuzz_target!(|data: &[u8]| {
    let input = Bytes::copy_from_slice(data);

    // The whole input as exactly one batch (a Produce request's records).
    if let Ok(batch) = RecordBatch::parse(input.clone()) {
        check_batch(&batch);
    }

    // The input as a sequence of batches (a Fetch response's records, a log segment).
    let mut seen = Vec::new();
    let mut batches = Batches::new(input.clone());
    for item in batches.by_ref().take(MAX_BATCHES) {
        match item {
            Ok(batch) => {
                seen.push((batch.position(), batch.size_in_bytes()));
                check_batch(&batch);
            }
            Err(e) => {
                let _ = e.is_partial_batch();
                let _ = e.to_string();
                break;
            }
        }
    }
    assert!(batches.position() <= data.len());
    assert_eq!(batches.position() + batches.remaining().len(), data.len());

    // The same split through the mutable iterator, patching what a leader patches on append.
    let mut buf = data.to_vec();
    let mut seen_mut = Vec::new();
    for item in BatchesMut::new(&mut buf).take(MAX_BATCHES) {
        let Ok(mut batch) = item else { break };
        seen_mut.push((batch.position(), batch.size_in_bytes()));
        check_batch_mut(&mut batch);
    }
    assert_eq!(
        seen, seen_mut,
        "Batches and BatchesMut split the input differently"
    );
});

fn check_batch(batch: &RecordBatch) {
    // Header accessors never panic, whatever the values.
    let _ = (
        batch.base_offset(),
        batch.batch_length(),
        batch.partition_leader_epoch(),
        batch.magic(),
        batch.attributes(),
        batch.timestamp_type(),
        batch.is_transactional(),
        batch.is_control(),
        batch.delete_horizon_ms(),
        batch.last_offset_delta(),
        batch.max_timestamp(),
        batch.producer_id(),
        batch.producer_epoch(),
        batch.last_sequence(),
        batch.last_offset(),
        batch.next_offset(),
        batch.records_data(),
    );
    let _ = format!("{batch:?}");
    assert_eq!(batch.batch_length() as usize + 12, batch.size_in_bytes());
    let crc_ok = batch.validate_crc().is_ok();
    assert_eq!(crc_ok, batch.crc() == batch.compute_crc());

    let Ok(iter) = batch.records_with_limit(DECOMPRESS_LIMIT) else {
        return;
    };
    let mut records = Vec::new();
    let mut complete = true;
    for item in iter.take(MAX_RECORDS + 1) {
        match item {
            Ok(record) => {
                check_record(batch, &record);
                records.push(record);
                if records.len() > MAX_RECORDS {
                    complete = false;
                    break;
                }
            }
            Err(e) => {
                let _ = e.to_string();
                complete = false;
                break;
            }
        }
    }
    if complete {
        assert_eq!(records.len(), batch.record_count() as usize);
        if batch.compression() == Compression::None {
            check_rebuild(batch, &records);
        }
    }
}

fn check_record(batch: &RecordBatch, record: &Record) {
    let _ = (
        record.offset(batch),
        record.timestamp(batch),
        record.sequence(batch),
    );
    if batch.is_control() {
        let _ = record.control_type();
    }
    let mut enc = Encoder::new();
    match (record.encoded_len(), record.encode(&mut enc)) {
        (Ok(len), Ok(())) => assert_eq!(len, enc.into_bytes().len(), "encoded_len is wrong"),
        (Err(_), Err(_)) => {}
        (len, res) => panic!("encoded_len {len:?} and encode {res:?} disagree on {record:?}"),
    }
    if let Some(value) = &record.value {
        check_metadata_value(value.clone());
    }
}

/// The `__cluster_metadata` framing of a record value.
fn check_metadata_value(value: Bytes) {
    let Ok((record, version)) = decode_metadata_record(value) else {
        return;
    };
    let bytes = match encode_metadata_record(&record, version) {
        Ok(b) => b,
        Err(e) => {
            panic!("metadata record v{version} decoded but does not re-encode: {e}\n{record:?}")
        }
    };
    match decode_metadata_record(bytes.clone()) {
        // Debug text too, for a NaN in a float64 field (ClientQuotaRecord).
        Ok(again) => assert!(
            again == (record.clone(), version) || format!("{again:?}") == format!("{:?}", (&record, version)),
            "metadata record changed in a round trip\nfirst:  {record:?}\nsecond: {again:?}"
        ),
        Err(e) => panic!(
            "metadata record v{version} re-encoded to bytes that do not decode: {e}\n{record:?}\n{bytes:02x?}"
        ),
    }
}

/// Rebuilds an uncompressed batch from its header and decoded records.
fn check_rebuild(batch: &RecordBatch, records: &[Record]) {
    let base_offset = batch.base_offset();
    let base_timestamp = batch.base_timestamp();
    let mut builder = RecordBatchBuilder::new(base_offset)
        .partition_leader_epoch(batch.partition_leader_epoch())
        .producer(
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
        )
        .transactional(batch.is_transactional())
        .control(batch.is_control())
        .timestamp_type(batch.timestamp_type());
    builder = if batch.has_delete_horizon() {
        builder.delete_horizon(base_timestamp)
    } else {
        builder.base_timestamp(base_timestamp)
    };
    // The builder refuses what it cannot write (offsets not increasing from the base, and
    // deltas that do not fit); such a batch is valid to read but has no rebuild to check.
    let mut previous = None;
    for r in records {
        if r.offset_delta < 0 || previous.is_some_and(|p| r.offset_delta <= p) {
            return;
        }
        previous = Some(r.offset_delta);
        let (Some(offset), Some(timestamp)) = (
            base_offset.checked_add(i64::from(r.offset_delta)),
            base_timestamp.checked_add(r.timestamp_delta),
        ) else {
            return;
        };
        builder
            .append_with_offset(
                offset,
                timestamp,
                r.key.clone(),
                r.value.clone(),
                r.headers.clone(),
            )
            .unwrap_or_else(|e| panic!("builder refused record {r:?} of {batch:?}: {e}"));
    }
    let built = builder
        .build()
        .unwrap_or_else(|e| panic!("builder failed on the records of {batch:?}: {e}"));
    let rebuilt = RecordBatch::parse(built.clone())
        .unwrap_or_else(|e| panic!("rebuilt batch does not parse: {e}\n{built:02x?}"));
    assert!(
        rebuilt.validate_crc().is_ok(),
        "rebuilt batch has a bad CRC"
    );
    assert_eq!(rebuilt.compression(), Compression::None);
    assert_eq!(rebuilt.base_offset(), base_offset);
    assert_eq!(rebuilt.base_timestamp(), base_timestamp);
    assert_eq!(
        rebuilt.partition_leader_epoch(),
        batch.partition_leader_epoch()
    );
    assert_eq!(rebuilt.producer_id(), batch.producer_id());
    assert_eq!(rebuilt.producer_epoch(), batch.producer_epoch());
    assert_eq!(rebuilt.base_sequence(), batch.base_sequence());
    assert_eq!(
        rebuilt.attributes(),
        batch.attributes() & KNOWN_ATTRIBUTES,
        "rebuilt batch attributes differ"
    );
    assert_eq!(rebuilt.record_count(), batch.record_count());
    if let Some(last) = records.last() {
        assert_eq!(rebuilt.last_offset_delta(), last.offset_delta);
    }
    if batch.timestamp_type() == TimestampType::CreateTime {
        if let Some(max) = records
            .iter()
            .map(|r| base_timestamp + r.timestamp_delta)
            .max()
        {
            assert_eq!(rebuilt.max_timestamp(), max);
        }
    }
    let again: Vec<Record> = rebuilt
        .records()
        .expect("rebuilt batch has records")
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("rebuilt batch's records do not decode: {e}"));
    let want: Vec<Record> = records
        .iter()
        .map(|r| Record {
            attributes: 0,
            ..r.clone()
        })
        .collect();
    assert_eq!(again, want, "rebuilt batch holds different records");
}

fn check_batch_mut(batch: &mut RecordBatchMut<'_>) {
    let crc_ok = batch.crc() == batch.compute_crc();
    let _ = (
        batch.last_offset_delta(),
        batch.record_count(),
        batch.as_slice(),
    );
    let offset = batch.base_offset();
    let epoch = batch.partition_leader_epoch();
    batch.set_base_offset(offset.wrapping_add(1));
    batch.set_partition_leader_epoch(epoch.wrapping_add(1));
    assert_eq!(batch.base_offset(), offset.wrapping_add(1));
    assert_eq!(batch.partition_leader_epoch(), epoch.wrapping_add(1));
    assert_eq!(
        crc_ok,
        batch.crc() == batch.compute_crc(),
        "base offset or leader epoch is inside the CRC"
    );
    if crc_ok {
        batch.set_max_timestamp(TimestampType::LogAppendTime, 1_700_000_000_000);
        assert_eq!(
            batch.crc(),
            batch.compute_crc(),
            "set_max_timestamp left a bad CRC"
        );
        let view = RecordBatch::parse(Bytes::copy_from_slice(batch.as_slice()))
            .expect("a patched batch still parses");
        assert_eq!(view.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(view.max_timestamp(), 1_700_000_000_000);
    }
}
