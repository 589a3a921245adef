//! The value framing of a `__cluster_metadata` record, as Kafka writes it: unsigned varints
//! frame version (1), the record's api key and its version, then the record itself. The key is
//! null. Byte-compatible with Kafka's `MetadataRecordSerde`, so Kafka's tools read our log.

use crate::codec::{read_unsigned_varint, DecodeError, DecodeErrorKind, EncodeError, Encoder};
use crate::{MetadataRecord, MetadataRecordType};
use bytes::Bytes;

/// The only frame version Kafka writes.
pub const METADATA_FRAME_VERSION: u32 = 1;

/// Encodes a metadata record value at `version`.
pub fn encode_metadata_record(record: &MetadataRecord, version: i16) -> Result<Bytes, EncodeError> {
    let mut e = Encoder::new();
    e.put_unsigned_varint(METADATA_FRAME_VERSION);
    e.put_unsigned_varint(record.key().code() as u32);
    e.put_unsigned_varint(version as u32);
    record.encode(&mut e, version)?;
    Ok(e.into_bytes())
}

/// Decodes a metadata record value; returns the record and the version it was written at.
/// The whole value must be consumed: trailing bytes mean a corrupt record.
pub fn decode_metadata_record(mut value: Bytes) -> Result<(MetadataRecord, i16), DecodeError> {
    let ctx = |e: DecodeError| e.within("MetadataRecord", -1);
    let frame = read_unsigned_varint(&mut value, "frameVersion").map_err(ctx)?;
    if frame != METADATA_FRAME_VERSION {
        return Err(ctx(DecodeError::new(
            "frameVersion",
            DecodeErrorKind::Invalid("metadata record frame version is not 1"),
        )));
    }
    let api_key = read_unsigned_varint(&mut value, "apiKey").map_err(ctx)?;
    let version = read_unsigned_varint(&mut value, "version").map_err(ctx)?;
    let kind = i16::try_from(api_key)
        .ok()
        .and_then(MetadataRecordType::from_i16)
        .ok_or_else(|| {
            ctx(DecodeError::new(
                "apiKey",
                DecodeErrorKind::UnknownApiKey(api_key.min(i16::MAX as u32) as i16),
            ))
        })?;
    let version = i16::try_from(version).map_err(|_| {
        ctx(DecodeError::new(
            "version",
            DecodeErrorKind::Invalid("metadata record version is over 32767"),
        ))
    })?;
    let record = MetadataRecord::decode(kind, version, &mut value)?;
    if !value.is_empty() {
        return Err(DecodeError::new(
            "(end)",
            DecodeErrorKind::Invalid("metadata record has bytes past its end"),
        )
        .within("MetadataRecord", version));
    }
    Ok((record, version))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::TopicRecord;
    use crate::Uuid;

    #[test]
    fn topic_record_bytes_match_kafka() {
        // TopicRecord v0 "foo" with topic id 0..01, as Kafka's MetadataRecordSerde writes it:
        // frame 1, api key 2, version 0, compact string "foo", uuid, no tagged fields.
        let mut id = [0u8; 16];
        id[15] = 1;
        let record = MetadataRecord::Topic(TopicRecord {
            name: "foo".into(),
            topic_id: Uuid(id),
            ..Default::default()
        });
        let bytes = encode_metadata_record(&record, 0).unwrap();
        let mut want = vec![1u8, 2, 0, 4, b'f', b'o', b'o'];
        want.extend_from_slice(&id);
        want.push(0);
        assert_eq!(&bytes[..], &want[..]);
        assert_eq!(decode_metadata_record(bytes).unwrap(), (record, 0));
    }

    #[test]
    fn bad_frames_are_errors() {
        for bad in [&[2u8, 2, 0][..], &[1, 200, 1, 0], &[1, 2, 0, 4, b'f'], &[1]] {
            assert!(decode_metadata_record(Bytes::copy_from_slice(bad)).is_err());
        }
    }
}
