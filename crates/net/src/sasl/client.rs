//! The client half of SASL (Kafka's `SaslClientAuthenticator` with SaslAuthenticate
//! headers): right after a client channel connects to a SASL listener, ApiVersions, then
//! SaslHandshake v1 naming the mechanism, then SaslAuthenticate requests carrying the PLAIN
//! or SCRAM tokens; a re-authentication (KIP-368) skips the ApiVersions. Runs over any
//! stream halves, so the same exchange works over TCP and TLS.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kraftd_protocol::frame::{frame_chunks, split_frame};
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::{
    ApiVersionsRequest, RequestHeader, SaslAuthenticateRequest, SaslAuthenticateResponse,
    SaslHandshakeRequest,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use super::scram::{random_nonce, ScramClient};
use super::{plain, SaslClientConfig};
use crate::frame::write_frame;

/// The ApiVersions version the exchange opens with (every kraftd listener speaks it).
const API_VERSIONS_VERSION: i16 = 3;
/// The SaslHandshake version that puts the tokens in SaslAuthenticate requests.
const HANDSHAKE_VERSION: i16 = 1;
/// The newest SaslAuthenticate this client speaks.
const AUTHENTICATE_MAX_VERSION: i16 = 2;

/// A completed login.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaslLogin {
    /// The SaslAuthenticate version both sides speak (kept for re-authentication).
    pub authenticate_version: i16,
    /// How long the server keeps the session (KIP-368); `None`: forever.
    pub session_lifetime: Option<Duration>,
}

/// Why a login failed: a one-line reason (the server's message when it sent one), never
/// with the password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SaslClientError(pub String);

fn fail(why: impl Into<String>) -> SaslClientError {
    SaslClientError(why.into())
}

/// Logs in over a freshly connected stream (`reauthenticate` is `None`), or renews the
/// session of a logged-in one (`Some(previous login)`). `buf` is the connection's read
/// buffer: bytes read past the exchange stay in it.
pub async fn authenticate<R, W>(
    rd: &mut R,
    wr: &mut W,
    buf: &mut BytesMut,
    config: &SaslClientConfig,
    client_id: &str,
    max_frame_bytes: usize,
    reauthenticate: Option<SaslLogin>,
) -> Result<SaslLogin, SaslClientError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut io = Exchange {
        rd,
        wr,
        buf,
        client_id,
        max_frame_bytes,
        correlation_id: 0,
    };
    let authenticate_version = match reauthenticate {
        Some(previous) => previous.authenticate_version,
        None => io.negotiate().await?,
    };
    let handshake = io
        .call(
            HANDSHAKE_VERSION,
            RequestBody::SaslHandshake(SaslHandshakeRequest {
                mechanism: config.mechanism.name().to_string(),
            }),
        )
        .await?;
    let ResponseBody::SaslHandshake(handshake) = handshake else {
        return Err(fail("SaslHandshake answered with another response"));
    };
    if handshake.error_code != 0 {
        return Err(fail(format!(
            "the server refused SASL mechanism {} ({}; enabled: {})",
            config.mechanism.name(),
            error_name(handshake.error_code),
            handshake.mechanisms.join(",")
        )));
    }
    let last = match config.mechanism.scram_hash() {
        None => {
            let token = plain::client_token(&config.username, &config.password);
            io.token(authenticate_version, token).await?
        }
        Some(hash) => {
            let mut scram =
                ScramClient::new(hash, &config.username, &config.password, &random_nonce());
            let server_first = io
                .token(authenticate_version, scram.first_message())
                .await?;
            let client_final = scram
                .final_message(&server_first.auth_bytes)
                .map_err(|e| fail(format!("SCRAM: {e}")))?;
            let server_final = io.token(authenticate_version, client_final).await?;
            scram
                .verify_server_final(&server_final.auth_bytes)
                .map_err(|e| fail(format!("SCRAM: {e}")))?;
            server_final
        }
    };
    Ok(SaslLogin {
        authenticate_version,
        session_lifetime: (last.session_lifetime_ms > 0)
            .then(|| Duration::from_millis(last.session_lifetime_ms as u64)),
    })
}

fn error_name(code: i16) -> String {
    ErrorCode::from_code(code).map_or_else(|| format!("error {code}"), |e| e.name().to_string())
}

struct Exchange<'a, R, W> {
    rd: &'a mut R,
    wr: &'a mut W,
    buf: &'a mut BytesMut,
    client_id: &'a str,
    max_frame_bytes: usize,
    correlation_id: i32,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Exchange<'_, R, W> {
    /// ApiVersions: the SaslAuthenticate version to use.
    async fn negotiate(&mut self) -> Result<i16, SaslClientError> {
        let response = self
            .call(
                API_VERSIONS_VERSION,
                RequestBody::ApiVersions(ApiVersionsRequest {
                    client_software_name: "kraftd".into(),
                    client_software_version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
            )
            .await?;
        let ResponseBody::ApiVersions(versions) = response else {
            return Err(fail("ApiVersions answered with another response"));
        };
        if versions.error_code != 0 {
            return Err(fail(format!(
                "ApiVersions failed: {}",
                error_name(versions.error_code)
            )));
        }
        let range = |key: ApiKey| {
            versions
                .api_keys
                .iter()
                .find(|k| k.api_key == key.code())
                .map(|k| (k.min_version, k.max_version))
        };
        if !range(ApiKey::SaslHandshake)
            .is_some_and(|(lo, hi)| lo <= HANDSHAKE_VERSION && HANDSHAKE_VERSION <= hi)
        {
            return Err(fail(
                "the server does not serve SaslHandshake v1: is the listener SASL?",
            ));
        }
        match range(ApiKey::SaslAuthenticate) {
            Some((lo, hi)) if lo <= AUTHENTICATE_MAX_VERSION => {
                Ok(hi.min(AUTHENTICATE_MAX_VERSION))
            }
            _ => Err(fail("the server does not serve SaslAuthenticate")),
        }
    }

    /// One SaslAuthenticate round: the server's answer, which must not be an error.
    async fn token(
        &mut self,
        version: i16,
        token: Vec<u8>,
    ) -> Result<SaslAuthenticateResponse, SaslClientError> {
        let response = self
            .call(
                version,
                RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
                    auth_bytes: Bytes::from(token),
                    ..Default::default()
                }),
            )
            .await?;
        let ResponseBody::SaslAuthenticate(response) = response else {
            return Err(fail("SaslAuthenticate answered with another response"));
        };
        if response.error_code != 0 {
            return Err(fail(format!(
                "{}: {}",
                error_name(response.error_code),
                response.error_message.as_deref().unwrap_or("")
            )));
        }
        Ok(response)
    }

    async fn call(
        &mut self,
        version: i16,
        body: RequestBody,
    ) -> Result<ResponseBody, SaslClientError> {
        self.correlation_id += 1;
        let api_key = body.key();
        let header = RequestHeader {
            request_api_key: api_key.code(),
            request_api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some(self.client_id.to_string()),
            ..Default::default()
        };
        let encoded = encode_request(&header, &body).map_err(|e| fail(e.to_string()))?;
        write_frame(self.wr, frame_chunks(encoded))
            .await
            .map_err(|e| fail(format!("write failed: {e}")))?;
        let frame = loop {
            match split_frame(self.buf, self.max_frame_bytes) {
                Ok(Some(frame)) => break frame,
                Ok(None) => {}
                Err(e) => return Err(fail(format!("bad response frame: {e}"))),
            }
            match self.rd.read_buf(self.buf).await {
                Ok(0) => {
                    return Err(fail(format!(
                        "the server closed the connection during {}",
                        api_key.name()
                    )))
                }
                Ok(_) => {}
                Err(e) => return Err(fail(format!("read failed: {e}"))),
            }
        };
        let (header, body) = decode_response(api_key, version, frame)
            .map_err(|e| fail(format!("response does not decode: {e}")))?;
        if header.correlation_id != self.correlation_id {
            return Err(fail("response to another correlation id"));
        }
        Ok(body)
    }
}
