//! Hostile and broken frames: every one is a typed error, none panics, and none makes the
//! decoder ask for memory out of proportion to the frame.

use crate::alloc_probe::largest_allocation;
use bytes::Bytes;
use kraftd_protocol::header::{decode_request, RequestError};
use kraftd_protocol::testing::SampleRng;
use kraftd_protocol::{ApiKey, DecodeErrorKind, Encoder, RequestBody, ResponseBody};
use proptest::prelude::*;

/// No decode of a frame below this size may allocate more than this.
const MAX_ALLOCATION_BYTES: usize = 64 * 1024;

fn header(e: &mut Encoder, api_key: ApiKey, version: i16) {
    e.put_i16(api_key.code());
    e.put_i16(version);
    e.put_i32(1234);
    e.put_i16(-1); // null client id
    if api_key.is_request_flexible(version) {
        e.put_unsigned_varint(0);
    }
}

fn decode_kind(frame: Bytes) -> DecodeErrorKind {
    let (result, largest) = largest_allocation(|| decode_request(frame));
    assert!(
        largest <= MAX_ALLOCATION_BYTES,
        "decoding allocated {largest} bytes"
    );
    match result {
        Err(RequestError::Malformed(e)) => {
            // The error names the api, version and field.
            let text = e.to_string();
            assert!(
                text.contains("Request v") || text.contains("Header v"),
                "{text}"
            );
            e.kind
        }
        other => panic!("expected a malformed-frame error, got {other:?}"),
    }
}

#[test]
fn array_claiming_two_billion_elements_in_20_bytes() {
    let mut e = Encoder::new();
    header(&mut e, ApiKey::Metadata, 1);
    e.put_i32(i32::MAX); // topics count
    e.put_i32(0);
    let frame = e.into_bytes();
    assert!(frame.len() <= 20, "{} bytes", frame.len());
    assert!(
        matches!(decode_kind(frame), DecodeErrorKind::CountTooLarge { count, .. } if count == i32::MAX as usize)
    );

    // The compact form: a varint count of 2^32 - 2 in a flexible version.
    let mut e = Encoder::new();
    header(&mut e, ApiKey::Metadata, 12);
    e.put_unsigned_varint(u32::MAX);
    assert!(matches!(
        decode_kind(e.into_bytes()),
        DecodeErrorKind::CountTooLarge { .. }
    ));

    // Struct elements too: a Produce request claiming 2^31-1 topics.
    let mut e = Encoder::new();
    header(&mut e, ApiKey::Produce, 3);
    e.put_i16(-1); // transactional id
    e.put_i16(1); // acks
    e.put_i32(1000); // timeout
    e.put_i32(i32::MAX);
    assert!(matches!(
        decode_kind(e.into_bytes()),
        DecodeErrorKind::CountTooLarge { .. }
    ));
}

#[test]
fn string_length_past_the_end() {
    let mut e = Encoder::new();
    header(&mut e, ApiKey::Metadata, 1);
    e.put_i32(1);
    e.put_i16(1000);
    e.put_slice(b"ab");
    assert!(matches!(
        decode_kind(e.into_bytes()),
        DecodeErrorKind::Truncated { needed: 1000, .. }
    ));
}

#[test]
fn negative_length_other_than_minus_one() {
    let mut e = Encoder::new();
    header(&mut e, ApiKey::Metadata, 1);
    e.put_i32(1);
    e.put_i16(-2);
    assert!(matches!(
        decode_kind(e.into_bytes()),
        DecodeErrorKind::NegativeLength(-2)
    ));
    let mut e = Encoder::new();
    header(&mut e, ApiKey::Metadata, 1);
    e.put_i32(-7);
    assert!(matches!(
        decode_kind(e.into_bytes()),
        DecodeErrorKind::NegativeLength(-7)
    ));
}

#[test]
fn varint_longer_than_five_bytes() {
    let mut e = Encoder::new();
    e.put_i16(ApiKey::Metadata.code());
    e.put_i16(12);
    e.put_i32(1);
    e.put_i16(-1);
    e.put_slice(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]); // header tagged-field count
    assert!(matches!(
        decode_kind(e.into_bytes()),
        DecodeErrorKind::VarintTooLong { .. }
    ));
}

#[test]
fn null_where_the_version_forbids_it() {
    let mut e = Encoder::new();
    header(&mut e, ApiKey::Metadata, 0);
    e.put_i32(-1); // topics: nullable only from v1
    assert!(matches!(
        decode_kind(e.into_bytes()),
        DecodeErrorKind::UnexpectedNull
    ));
}

#[test]
fn every_truncation_of_valid_requests_is_an_error() {
    let mut rng = SampleRng::new(7);
    for &key in ApiKey::ALL {
        for v in key.valid_versions().iter() {
            let body = RequestBody::sample(key, &mut rng, v);
            let mut e = Encoder::new();
            body.encode(&mut e, v).unwrap();
            let bytes = e.into_bytes();
            for cut in 0..bytes.len() {
                let mut b = bytes.slice(..cut);
                // A prefix may decode when the tail held only defaults; it must never panic,
                // and a prefix that decodes must not claim bytes it did not have.
                if let Ok(m) = RequestBody::decode(key, v, &mut b) {
                    let mut again = Encoder::new();
                    m.encode(&mut again, v).unwrap();
                    assert!(again.len() <= cut, "{} v{v}", key.name());
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic_or_balloon(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let frame = Bytes::from(bytes);
        let (_, largest) = largest_allocation(|| {
            let _ = decode_request(frame.clone());
            for &key in ApiKey::ALL {
                for v in key.valid_versions().iter() {
                    let _ = RequestBody::decode(key, v, &mut frame.clone());
                    let _ = ResponseBody::decode(key, v, &mut frame.clone());
                }
            }
        });
        prop_assert!(largest <= MAX_ALLOCATION_BYTES, "allocated {} bytes", largest);
    }

    #[test]
    fn random_api_key_and_version_prefixes(key in any::<i16>(), version in any::<i16>(), tail in proptest::collection::vec(any::<u8>(), 0..64)) {
        let mut e = Encoder::new();
        e.put_i16(key);
        e.put_i16(version);
        e.put_slice(&tail);
        let _ = decode_request(e.into_bytes());
    }
}
