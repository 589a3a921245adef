//! One record of a v2 batch: its wire encoding and decoding, and how its relative offset and
//! timestamp resolve against the batch header.
//!
//! A record stores only deltas from its batch's base offset and base timestamp, all as
//! zig-zag varints, so it is meaningless without its batch; [`Record`] keeps the deltas as
//! they are on the wire (so re-encoding is exact) and resolves absolute values through
//! [`Record::offset`], [`Record::timestamp`] and [`Record::sequence`]. Keys, values and header
//! values are [`Bytes`] slices of the batch (or of its one decompressed buffer): decoding a
//! record copies nothing but header keys, which Kafka defines as strings.
//!
//! ```text
//! length: varint  attributes: int8  timestampDelta: varlong  offsetDelta: varint
//! keyLength: varint (-1 = null)  key  valueLength: varint (-1 = null)  value
//! headerCount: varint  [headerKeyLength: varint  headerKey  headerValueLength: varint  value]
//! ```

use bytes::Bytes;

use super::batch::{increment_sequence, RecordBatch, TimestampType};
use super::control::ControlRecordType;
use super::RecordBatchError;
use crate::codec::{self, DecodeError, DecodeErrorKind, Encoder};

/// A record header: a string key and optional bytes, as Kafka's `RecordHeader`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Header {
    /// The header's name; Kafka requires it and reads it as UTF-8.
    pub key: String,
    /// The header's value; `None` is a null value (distinct from empty).
    pub value: Option<Bytes>,
}

impl Header {
    /// A header with this key and value.
    pub fn new(key: impl Into<String>, value: Option<Bytes>) -> Self {
        Header {
            key: key.into(),
            value,
        }
    }
}

/// A record as it is stored in a v2 batch, with its offset and timestamp relative to the
/// batch (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Record {
    /// The record attributes byte; unused by Kafka so far (always 0), kept so that a record
    /// re-encodes to the same bytes.
    pub attributes: i8,
    /// Timestamp minus the batch's base timestamp.
    pub timestamp_delta: i64,
    /// Offset minus the batch's base offset.
    pub offset_delta: i32,
    /// The key; `None` is a null key (distinct from empty).
    pub key: Option<Bytes>,
    /// The value; `None` is a null value, a tombstone in compacted topics.
    pub value: Option<Bytes>,
    /// Headers, in wire order (keys may repeat).
    pub headers: Vec<Header>,
}

/// The size of `v` as a zig-zag varint.
pub(crate) fn varint_size(v: i32) -> usize {
    codec::unsigned_varint_size(((v << 1) ^ (v >> 31)) as u32)
}

/// The size of `v` as a zig-zag varlong.
pub(crate) fn varlong_size(v: i64) -> usize {
    let mut u = ((v << 1) ^ (v >> 63)) as u64;
    let mut n = 1;
    while u >= 0x80 {
        u >>= 7;
        n += 1;
    }
    n
}

/// A length as the format's `int32` varint, or the error naming the field.
fn wire_len(len: usize, field: &'static str) -> Result<i32, RecordBatchError> {
    i32::try_from(len).map_err(|_| RecordBatchError::TooLarge { field, len })
}

fn nullable_size(v: Option<&[u8]>, field: &'static str) -> Result<usize, RecordBatchError> {
    Ok(match v {
        None => 1,
        Some(b) => varint_size(wire_len(b.len(), field)?) + b.len(),
    })
}

impl Record {
    /// A record with the given deltas, key and value, no headers and zero attributes.
    pub fn new(
        offset_delta: i32,
        timestamp_delta: i64,
        key: Option<Bytes>,
        value: Option<Bytes>,
    ) -> Self {
        Record {
            attributes: 0,
            timestamp_delta,
            offset_delta,
            key,
            value,
            headers: Vec::new(),
        }
    }

    /// The record's absolute offset in its partition.
    pub fn offset(&self, batch: &RecordBatch) -> i64 {
        batch
            .base_offset()
            .wrapping_add(i64::from(self.offset_delta))
    }

    /// The record's timestamp as Kafka reports it: for a `LogAppendTime` batch every record
    /// takes the batch's max timestamp (the broker stamps only the header), otherwise the
    /// base timestamp plus the delta.
    pub fn timestamp(&self, batch: &RecordBatch) -> i64 {
        match batch.timestamp_type() {
            TimestampType::LogAppendTime => batch.max_timestamp(),
            TimestampType::CreateTime => batch.base_timestamp().wrapping_add(self.timestamp_delta),
        }
    }

    /// The record's producer sequence number, as Kafka derives it: the base sequence plus the
    /// offset delta, wrapping from `i32::MAX` to 0; [`super::NO_SEQUENCE`] when the batch has
    /// none.
    pub fn sequence(&self, batch: &RecordBatch) -> i32 {
        increment_sequence(batch.base_sequence(), self.offset_delta)
    }

    /// For a record of a control batch, what kind of control record it is, read from its
    /// key.
    pub fn control_type(&self) -> Result<ControlRecordType, RecordBatchError> {
        match &self.key {
            None => Err(RecordBatchError::InvalidControlKey {
                reason: "control record has a null key",
            }),
            Some(key) => ControlRecordType::decode_key(key),
        }
    }

    /// The size of the record's body: everything after its own length varint.
    fn body_len(&self) -> Result<usize, RecordBatchError> {
        let mut n = 1 + varlong_size(self.timestamp_delta) + varint_size(self.offset_delta);
        n += nullable_size(self.key.as_deref(), "key")?;
        n += nullable_size(self.value.as_deref(), "value")?;
        n += varint_size(wire_len(self.headers.len(), "headers")?);
        for h in &self.headers {
            n += varint_size(wire_len(h.key.len(), "header key")?) + h.key.len();
            n += nullable_size(h.value.as_deref(), "header value")?;
        }
        Ok(n)
    }

    /// The number of bytes [`Record::encode`] writes, including the length prefix.
    pub fn encoded_len(&self) -> Result<usize, RecordBatchError> {
        let body = self.body_len()?;
        Ok(varint_size(wire_len(body, "record")?) + body)
    }

    /// Writes the record as it appears in a batch's records section.
    pub fn encode(&self, enc: &mut Encoder) -> Result<(), RecordBatchError> {
        let body = wire_len(self.body_len()?, "record")?;
        enc.put_varint(body);
        enc.put_i8(self.attributes);
        enc.put_varlong(self.timestamp_delta);
        enc.put_varint(self.offset_delta);
        put_nullable(enc, self.key.as_deref());
        put_nullable(enc, self.value.as_deref());
        // Every length was checked by body_len.
        enc.put_varint(self.headers.len() as i32);
        for h in &self.headers {
            enc.put_varint(h.key.len() as i32);
            enc.put_slice(h.key.as_bytes());
            put_nullable(enc, h.value.as_deref());
        }
        Ok(())
    }

    /// Reads one record from the front of `buf`, the rest of a records section of which
    /// `section_len` bytes there were in all (to report positions); `index` is the record's
    /// place in its batch (for errors).
    pub(crate) fn decode(
        buf: &mut Bytes,
        section_len: usize,
        index: usize,
    ) -> Result<Record, RecordBatchError> {
        let start = section_len - buf.len();
        let mut cur = Cursor {
            buf,
            section_len,
            index,
        };
        let (at, length) = cur.length("length")?;
        let mut body = cur.take(at, length, "length")?;
        let mut cur = Cursor {
            buf: &mut body,
            section_len,
            index,
        };
        let attributes = cur.wrap("attributes", codec::read_i8)?;
        let timestamp_delta = cur.wrap("timestampDelta", codec::read_varlong)?;
        let offset_delta = cur.varint("offsetDelta")?;
        let key = cur.nullable("key")?;
        let value = cur.nullable("value")?;
        let (at, count) = cur.length("headerCount")?;
        // Each header takes at least two bytes (two one-byte varints), so a count the body
        // cannot hold is refused before anything is reserved for it.
        if count.saturating_mul(2) > cur.buf.len() {
            return Err(cur.error_at(
                at,
                "headerCount",
                DecodeErrorKind::CountTooLarge {
                    count,
                    min_element_bytes: 2,
                    remaining: cur.buf.len(),
                },
            ));
        }
        let mut headers = Vec::with_capacity(count);
        for _ in 0..count {
            let (key_at, key_len) = cur.length("headerKey")?;
            let raw = cur.take(key_at, key_len, "headerKey")?;
            let key = match String::from_utf8(raw.to_vec()) {
                Ok(k) => k,
                Err(_) => {
                    return Err(RecordBatchError::Record {
                        index,
                        position: key_at,
                        field: "headerKey",
                        kind: DecodeErrorKind::InvalidUtf8,
                    })
                }
            };
            let value = cur.nullable("headerValue")?;
            headers.push(Header { key, value });
        }
        if !cur.buf.is_empty() {
            return Err(RecordBatchError::Record {
                index,
                position: start,
                field: "length",
                kind: DecodeErrorKind::Invalid("record length covers bytes past its last header"),
            });
        }
        Ok(Record {
            attributes,
            timestamp_delta,
            offset_delta,
            key,
            value,
            headers,
        })
    }
}

fn put_nullable(enc: &mut Encoder, v: Option<&[u8]>) {
    match v {
        None => enc.put_varint(-1),
        Some(b) => {
            enc.put_varint(b.len() as i32);
            enc.put_slice(b);
        }
    }
}

/// Reads record fields off a records section, turning the codec's errors into
/// [`RecordBatchError::Record`] with the field's position.
struct Cursor<'a> {
    buf: &'a mut Bytes,
    section_len: usize,
    index: usize,
}

impl Cursor<'_> {
    fn position(&self) -> usize {
        self.section_len.saturating_sub(self.buf.len())
    }

    fn wrap<T>(
        &mut self,
        field: &'static str,
        read: fn(&mut Bytes, &'static str) -> Result<T, DecodeError>,
    ) -> Result<T, RecordBatchError> {
        let at = self.position();
        read(self.buf, field).map_err(|e| RecordBatchError::Record {
            index: self.index,
            position: at,
            field,
            kind: e.kind,
        })
    }

    fn varint(&mut self, field: &'static str) -> Result<i32, RecordBatchError> {
        self.wrap(field, codec::read_varint)
    }

    fn error_at(&self, at: usize, field: &'static str, kind: DecodeErrorKind) -> RecordBatchError {
        RecordBatchError::Record {
            index: self.index,
            position: at,
            field,
            kind,
        }
    }

    /// A varint that must be a non-negative length or count; errors point at its first byte.
    fn length(&mut self, field: &'static str) -> Result<(usize, usize), RecordBatchError> {
        let at = self.position();
        let v = self.varint(field)?;
        let len = usize::try_from(v)
            .map_err(|_| self.error_at(at, field, DecodeErrorKind::NegativeLength(v.into())))?;
        Ok((at, len))
    }

    /// `len` bytes of the field that started at `at`.
    fn take(
        &mut self,
        at: usize,
        len: usize,
        field: &'static str,
    ) -> Result<Bytes, RecordBatchError> {
        if len > self.buf.len() {
            return Err(self.error_at(
                at,
                field,
                DecodeErrorKind::Truncated {
                    needed: len,
                    remaining: self.buf.len(),
                },
            ));
        }
        Ok(self.buf.split_to(len))
    }

    /// A varint length then that many bytes; -1 is null, below -1 an error.
    fn nullable(&mut self, field: &'static str) -> Result<Option<Bytes>, RecordBatchError> {
        let at = self.position();
        let len = self.varint(field)?;
        if len == -1 {
            return Ok(None);
        }
        let len = usize::try_from(len)
            .map_err(|_| self.error_at(at, field, DecodeErrorKind::NegativeLength(len.into())))?;
        self.take(at, len, field).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(r: &Record) -> Bytes {
        let mut e = Encoder::new();
        r.encode(&mut e).unwrap();
        assert_eq!(e.len(), r.encoded_len().unwrap());
        e.into_bytes()
    }

    #[test]
    fn round_trips_with_nulls_empties_and_headers() {
        let r = Record {
            attributes: 0,
            timestamp_delta: -5,
            offset_delta: 300,
            key: None,
            value: Some(Bytes::new()),
            headers: vec![
                Header::new("a", None),
                Header::new("é", Some(Bytes::from_static(b"v"))),
                Header::new("a", Some(Bytes::new())),
            ],
        };
        let mut b = encode(&r);
        let n = b.len();
        assert_eq!(Record::decode(&mut b, n, 0).unwrap(), r);
        assert!(b.is_empty());
    }

    #[test]
    fn varint_sizes_match_encoder() {
        for v in [0i32, 1, -1, 63, 64, -65, i32::MAX, i32::MIN] {
            let mut e = Encoder::new();
            e.put_varint(v);
            assert_eq!(e.len(), varint_size(v), "{v}");
        }
        for v in [0i64, 1, -1, 1 << 40, i64::MAX, i64::MIN] {
            let mut e = Encoder::new();
            e.put_varlong(v);
            assert_eq!(e.len(), varlong_size(v), "{v}");
        }
    }

    #[test]
    fn minimal_record_is_seven_bytes() {
        let r = Record::new(0, 0, None, None);
        assert_eq!(r.encoded_len().unwrap(), super::super::MIN_RECORD_SIZE);
    }

    #[test]
    fn negative_lengths_are_typed_errors() {
        // length 6, attributes, ts 0, offset 0, key length -2.
        let mut b = Bytes::from_static(&[12, 0, 0, 0, 3, 1, 0]);
        let err = Record::decode(&mut b, 7, 4).unwrap_err();
        assert_eq!(
            err,
            RecordBatchError::Record {
                index: 4,
                position: 4,
                field: "key",
                kind: DecodeErrorKind::NegativeLength(-2)
            }
        );
        // Record length -1.
        let mut b = Bytes::from_static(&[1]);
        assert!(matches!(
            Record::decode(&mut b, 1, 0),
            Err(RecordBatchError::Record {
                field: "length",
                kind: DecodeErrorKind::NegativeLength(-1),
                ..
            })
        ));
        // Header count -1.
        let mut b = Bytes::from_static(&[12, 0, 0, 0, 1, 1, 1]);
        assert!(matches!(
            Record::decode(&mut b, 7, 0),
            Err(RecordBatchError::Record {
                field: "headerCount",
                ..
            })
        ));
    }

    #[test]
    fn huge_header_count_is_refused_before_allocating() {
        // headerCount = i32::MAX in a 10-byte body.
        let mut e = Encoder::new();
        e.put_varint(10);
        e.put_i8(0);
        e.put_varlong(0);
        e.put_varint(0);
        e.put_varint(-1);
        e.put_varint(-1);
        e.put_varint(i32::MAX);
        e.put_slice(&[0]);
        let mut b = e.into_bytes();
        let n = b.len();
        assert!(matches!(
            Record::decode(&mut b, n, 0),
            Err(RecordBatchError::Record {
                field: "headerCount",
                kind: DecodeErrorKind::CountTooLarge { .. },
                ..
            })
        ));
    }

    #[test]
    fn length_must_cover_the_fields_exactly() {
        let mut b = Bytes::from_static(&[14, 0, 0, 0, 1, 1, 0, 9]);
        assert!(matches!(
            Record::decode(&mut b, 8, 0),
            Err(RecordBatchError::Record {
                field: "length",
                kind: DecodeErrorKind::Invalid(_),
                ..
            })
        ));
    }

    #[test]
    fn bad_utf8_header_key_is_a_typed_error() {
        let mut b = Bytes::from_static(&[20, 0, 0, 0, 1, 1, 2, 4, 0xff, 0xfe, 1]);
        assert!(matches!(
            Record::decode(&mut b, 11, 0),
            Err(RecordBatchError::Record {
                field: "headerKey",
                kind: DecodeErrorKind::InvalidUtf8,
                ..
            })
        ));
    }
}
