//! Request and response headers, and whole request/response frames (header + body).
//!
//! The header version follows from the api key and version: request header v2 for flexible
//! versions, else v1; response header v1 for flexible versions, else v0, except ApiVersions,
//! whose response header is always v0 so that a client can read it before it knows what the
//! server speaks (KIP-511).

use crate::codec::{DecodeError, Encoder};
use crate::messages::{RequestHeader, ResponseHeader};
use crate::{ApiKey, EncodeError, Message, RequestBody, ResponseBody};
use bytes::Bytes;

/// Why a request frame could not be turned into a request. After any of these but an
/// ApiVersions at an unsupported version, a server closes the connection, as Kafka does.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    #[error("unknown api key {api_key} (correlation id {correlation_id})")]
    UnknownApiKey { api_key: i16, correlation_id: i32 },
    #[error("{} v{} is not supported (correlation id {})", .api_key.name(), .header.request_api_version, .header.correlation_id)]
    UnsupportedVersion {
        api_key: ApiKey,
        header: RequestHeader,
    },
    #[error(transparent)]
    Malformed(#[from] DecodeError),
}

/// A decoded request frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub header: RequestHeader,
    pub api_key: ApiKey,
    pub body: RequestBody,
}

/// Decodes the header of a request frame (without its size prefix), leaving the body in
/// `frame`. Works for any version of a known api key, so that an unsupported version can
/// still be answered (ApiVersions) or logged with its correlation id.
pub fn decode_request_header(frame: &mut Bytes) -> Result<(ApiKey, RequestHeader), RequestError> {
    let mut peek = frame.clone();
    let peeked = |e: DecodeError| e.within("RequestHeader", -1);
    let api_key =
        crate::codec::read_i16(&mut peek, "RequestHeader.RequestApiKey").map_err(peeked)?;
    let version =
        crate::codec::read_i16(&mut peek, "RequestHeader.RequestApiVersion").map_err(peeked)?;
    let Some(key) = ApiKey::from_i16(api_key) else {
        let header = RequestHeader::decode(frame, 1)?;
        return Err(RequestError::UnknownApiKey {
            api_key,
            correlation_id: header.correlation_id,
        });
    };
    let header = RequestHeader::decode(frame, key.request_header_version(version))?;
    Ok((key, header))
}

/// Decodes a whole request frame (without its size prefix).
pub fn decode_request(mut frame: Bytes) -> Result<Request, RequestError> {
    let (api_key, header) = decode_request_header(&mut frame)?;
    let version = header.request_api_version;
    if !api_key.valid_versions().contains(version) {
        return Err(RequestError::UnsupportedVersion { api_key, header });
    }
    let body = RequestBody::decode(api_key, version, &mut frame)?;
    Ok(Request {
        header,
        api_key,
        body,
    })
}

/// Encodes a request frame body (header + request), without the size prefix.
pub fn encode_request(header: &RequestHeader, body: &RequestBody) -> Result<Encoder, EncodeError> {
    let api_key = body.key();
    let version = header.request_api_version;
    let mut e = Encoder::new();
    header.encode(&mut e, api_key.request_header_version(version))?;
    body.encode(&mut e, version)?;
    Ok(e)
}

/// Encodes a response frame body (header + response), without the size prefix.
pub fn encode_response(
    correlation_id: i32,
    version: i16,
    body: &ResponseBody,
) -> Result<Encoder, EncodeError> {
    let api_key = body.key();
    let mut e = Encoder::new();
    let header = ResponseHeader {
        correlation_id,
        ..Default::default()
    };
    header.encode(&mut e, api_key.response_header_version(version))?;
    match crate::error_response::fit_to_version(body, version) {
        Some(fitted) => fitted.encode(&mut e, version)?,
        None => body.encode(&mut e, version)?,
    }
    Ok(e)
}

/// Decodes a response frame (without its size prefix) to the request that was sent.
pub fn decode_response(
    api_key: ApiKey,
    version: i16,
    mut frame: Bytes,
) -> Result<(ResponseHeader, ResponseBody), DecodeError> {
    let header = ResponseHeader::decode(&mut frame, api_key.response_header_version(version))?;
    let body = ResponseBody::decode(api_key, version, &mut frame)?;
    Ok((header, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::MetadataRequest;

    #[test]
    fn header_versions_follow_flexibility() {
        assert_eq!(ApiKey::Metadata.request_header_version(8), 1);
        assert_eq!(ApiKey::Metadata.request_header_version(9), 2);
        assert_eq!(ApiKey::Metadata.response_header_version(9), 1);
        assert_eq!(ApiKey::ApiVersions.request_header_version(3), 2);
        assert_eq!(ApiKey::ApiVersions.response_header_version(3), 0);
        // A future ApiVersions version still parses with header v2 (KIP-511).
        assert_eq!(ApiKey::ApiVersions.request_header_version(99), 2);
    }

    #[test]
    fn request_round_trip_and_unsupported_version() {
        let header = RequestHeader {
            request_api_key: ApiKey::Metadata.code(),
            request_api_version: 12,
            correlation_id: 42,
            client_id: Some("rdkafka".into()),
            ..Default::default()
        };
        let body = RequestBody::Metadata(MetadataRequest::default());
        let frame = encode_request(&header, &body).unwrap().into_bytes();
        let req = decode_request(frame).unwrap();
        assert_eq!(req.header, header);
        assert_eq!(req.body, body);

        let mut future = header.clone();
        future.request_api_version = 99;
        let frame = encode_request(&future, &body);
        assert!(frame.is_err(), "the codec refuses to encode v99");
        let mut raw = encode_request(&header, &body)
            .unwrap()
            .into_bytes()
            .to_vec();
        raw[2..4].copy_from_slice(&99i16.to_be_bytes());
        match decode_request(Bytes::from(raw)) {
            Err(RequestError::UnsupportedVersion { api_key, header }) => {
                assert_eq!(api_key, ApiKey::Metadata);
                assert_eq!(header.correlation_id, 42);
            }
            other => panic!("expected UnsupportedVersion, got {other:?}"),
        }
    }

    #[test]
    fn unknown_api_key_names_the_correlation_id() {
        let mut e = Encoder::new();
        e.put_i16(9999);
        e.put_i16(0);
        e.put_i32(7);
        e.put_i16(-1);
        match decode_request(e.into_bytes()) {
            Err(RequestError::UnknownApiKey {
                api_key,
                correlation_id,
            }) => assert_eq!((api_key, correlation_id), (9999, 7)),
            other => panic!("expected UnknownApiKey, got {other:?}"),
        }
    }

    #[test]
    fn short_frames_are_malformed_not_panics() {
        for len in 0..8 {
            let r = decode_request(Bytes::from(vec![0u8; len]));
            assert!(r.is_err(), "{len} bytes");
        }
    }
}
