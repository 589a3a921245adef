//! Request frames (header + body, no size prefix), as a broker reads them off a socket.
//!
//! Properties:
//! - `decode_request` never panics, whatever the bytes (errors are fine);
//! - a frame that decodes re-encodes (`encode_request` must accept what decoding produced),
//!   and the re-encoded frame decodes to an equal request;
//! - encoding is then a fixed point: encoding the second decode gives the same bytes.
#![no_main]

use bytes::Bytes;
use kraftd_protocol::header::{decode_request, encode_request, Request};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(first) = decode_request(Bytes::copy_from_slice(data)) else {
        return;
    };
    let encoded = match encode_request(&first.header, &first.body) {
        Ok(e) => e.into_bytes(),
        Err(e) => panic!(
            "{} v{} decoded but does not re-encode: {e}\n{first:?}",
            first.api_key.name(),
            first.header.request_api_version
        ),
    };
    let second = match decode_request(encoded.clone()) {
        Ok(r) => r,
        Err(e) => panic!(
            "{} v{} re-encoded to a frame that does not decode: {e}\nfirst: {first:?}\nframe: {encoded:02x?}",
            first.api_key.name(),
            first.header.request_api_version
        ),
    };
    let again = encode_request(&second.header, &second.body)
        .expect("a re-decoded request re-encodes")
        .into_bytes();
    assert!(
        same(&first, &second),
        "{} v{} changed in a round trip\nfirst:  {first:?}\nsecond: {second:?}",
        first.api_key.name(),
        first.header.request_api_version
    );
    assert_eq!(
        encoded,
        again,
        "{} v{}: encoding is not a fixed point",
        first.api_key.name(),
        first.header.request_api_version
    );
});

/// Equality, except that a float64 field (AlterClientQuotas) holding NaN is equal to itself:
/// NaN != NaN under `PartialEq`, but its Debug text is the same, and the byte comparison above
/// catches a NaN whose bits changed.
fn same(a: &Request, b: &Request) -> bool {
    a == b || format!("{a:?}") == format!("{b:?}")
}
