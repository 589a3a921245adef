//! The framing of a coordinator record (`__consumer_offsets`, `__transaction_state`,
//! `__share_group_state`), as Kafka's `CoordinatorRecordSerde` writes it: the key is an int16
//! record type (the key schema's `apiKey`) then the key struct at its version; the value is an
//! int16 version then the value struct at that version, and a null value is a tombstone.
//!
//! The typed entry points are generated per coordinator
//! ([`GroupCoordinatorRecordKey::to_record_key`](crate::generated::group_coordinator_record::GroupCoordinatorRecordKey::to_record_key)
//! and its siblings); this module holds the int16 prefix they share.

use crate::codec::{read_i16, DecodeError, DecodeErrorKind, DecodeResult, EncodeError, Encoder};
use bytes::Bytes;

/// Writes `prefix` as an int16, then whatever `body` writes.
pub fn encode_prefixed(
    prefix: i16,
    body: impl FnOnce(&mut Encoder) -> Result<(), EncodeError>,
) -> Result<Bytes, EncodeError> {
    let mut e = Encoder::new();
    e.put_i16(prefix);
    body(&mut e)?;
    Ok(e.into_bytes())
}

/// Reads an int16 prefix (named `field` in errors), hands it and the rest to `body`, and
/// requires `body` to consume every byte: trailing bytes mean a corrupt record. Errors not yet
/// attributed to a message are attributed to `what`.
pub fn decode_prefixed<T>(
    mut bytes: Bytes,
    what: &'static str,
    field: &'static str,
    body: impl FnOnce(i16, &mut Bytes) -> DecodeResult<T>,
) -> DecodeResult<T> {
    let prefix = read_i16(&mut bytes, field).map_err(|e| e.within(what, -1))?;
    let out = body(prefix, &mut bytes).map_err(|e| e.within(what, -1))?;
    if !bytes.is_empty() {
        return Err(DecodeError::new(
            "(end)",
            DecodeErrorKind::Invalid("coordinator record has bytes past its end"),
        )
        .within(what, -1));
    }
    Ok(out)
}
