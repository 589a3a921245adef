//! One blocking connection speaking raw Kafka requests, for tests that compare kraftd's
//! answers with Kafka's byte for byte or error for error.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::{
    ApiVersionsRequest, ApiVersionsResponse, FindCoordinatorRequest, InitProducerIdRequest,
    RequestHeader,
};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};

/// One blocking connection speaking raw requests.
pub struct Raw {
    stream: TcpStream,
    correlation: i32,
}

impl Raw {
    pub fn connect(address: &str) -> Raw {
        let stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        Raw {
            stream,
            correlation: 0,
        }
    }

    /// Logs in with `mechanism` (SCRAM-SHA-256 or SCRAM-SHA-512) as `user` (SaslHandshake
    /// v1, then SaslAuthenticate for each step, as Kafka's clients do), panicking when the
    /// node refuses.
    pub fn scram_login(&mut self, mechanism: &str, user: &str, password: &str) {
        use kraftd_net::sasl::scram::{random_nonce, ScramClient};
        use kraftd_net::sasl::ScramHash;
        use kraftd_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
        let handshake = self.call(
            1,
            RequestBody::SaslHandshake(SaslHandshakeRequest {
                mechanism: mechanism.into(),
            }),
        );
        assert!(
            matches!(&handshake, ResponseBody::SaslHandshake(r) if r.error_code == 0),
            "{handshake:?}"
        );
        let hash = match mechanism {
            "SCRAM-SHA-256" => ScramHash::Sha256,
            "SCRAM-SHA-512" => ScramHash::Sha512,
            other => panic!("not a SCRAM mechanism: {other}"),
        };
        let mut client = ScramClient::new(hash, user, password, &random_nonce());
        let mut authenticate = |bytes: Vec<u8>| match self.call(
            2,
            RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
                auth_bytes: Bytes::from(bytes),
                ..Default::default()
            }),
        ) {
            ResponseBody::SaslAuthenticate(r) if r.error_code == 0 => r.auth_bytes,
            other => panic!("SCRAM login as {user} refused: {other:?}"),
        };
        let server_first = authenticate(client.first_message());
        let client_final = client.final_message(&server_first).unwrap();
        let server_final = authenticate(client_final);
        client.verify_server_final(&server_final).unwrap();
    }

    /// A connection to `address` once it accepts one (a starting broker refuses at first).
    pub fn connect_when_listening(address: &str, logs: impl Fn() -> String) -> Raw {
        super::eventually("the broker listens", Duration::from_secs(60), logs, || {
            TcpStream::connect(address)
                .map(|_| Raw::connect(address))
                .map_err(|e| e.to_string())
        })
    }

    /// ApiVersions v3, as a raw client named `raw` asks it.
    pub fn api_versions(&mut self) -> ApiVersionsResponse {
        let request = ApiVersionsRequest {
            client_software_name: "raw".into(),
            client_software_version: "1.0".into(),
            ..Default::default()
        };
        match self.call(3, RequestBody::ApiVersions(request)) {
            ResponseBody::ApiVersions(r) => r,
            other => panic!("ApiVersions answered with {other:?}"),
        }
    }

    /// One request, and its answer.
    pub fn call(&mut self, version: i16, body: RequestBody) -> ResponseBody {
        let mut answers = self.pipeline(vec![(version, body)]);
        answers.pop().expect("one answer per request")
    }

    /// Sends every request before reading any answer (as a pipelining client does: the
    /// broker has them all on one connection at once) and returns the answers in order.
    pub fn pipeline(&mut self, requests: Vec<(i16, RequestBody)>) -> Vec<ResponseBody> {
        let mut sent = Vec::with_capacity(requests.len());
        let mut bytes = Vec::new();
        for (version, body) in requests {
            self.correlation += 1;
            let key = body.key();
            let header = RequestHeader {
                request_api_key: key.code(),
                request_api_version: version,
                correlation_id: self.correlation,
                client_id: Some("raw".into()),
                ..Default::default()
            };
            let frame = encode_request(&header, &body).unwrap().into_bytes();
            bytes.extend_from_slice(&(frame.len() as i32).to_be_bytes());
            bytes.extend_from_slice(&frame);
            sent.push((key, version, self.correlation));
        }
        self.stream.write_all(&bytes).unwrap();
        sent.into_iter()
            .map(|(key, version, correlation)| {
                let mut size = [0u8; 4];
                self.stream.read_exact(&mut size).unwrap();
                let mut buf = vec![0u8; i32::from_be_bytes(size) as usize];
                self.stream.read_exact(&mut buf).unwrap();
                let (header, body) = decode_response(key, version, Bytes::from(buf)).unwrap();
                assert_eq!(header.correlation_id, correlation, "answers come in order");
                body
            })
            .collect()
    }

    /// FindCoordinator v4 for one key (`key_type` 0: a group, 1: a transactional id): the
    /// key's error code.
    pub fn find_coordinator(&mut self, key_type: i8, key: &str) -> i16 {
        let find = FindCoordinatorRequest {
            key_type,
            coordinator_keys: vec![key.into()],
            ..Default::default()
        };
        match self.call(4, RequestBody::FindCoordinator(find)) {
            ResponseBody::FindCoordinator(r) => r.coordinators[0].error_code,
            other => panic!("FindCoordinator answered with {other:?}"),
        }
    }

    /// InitProducerId at `version` for a new producer of `transactional_id` (60 s
    /// transactions): (error code, producer id, epoch).
    pub fn init_producer_id(&mut self, version: i16, transactional_id: &str) -> (i16, i64, i16) {
        let init = InitProducerIdRequest {
            transactional_id: Some(transactional_id.into()),
            transaction_timeout_ms: 60_000,
            producer_id: -1,
            producer_epoch: -1,
            ..Default::default()
        };
        match self.call(version, RequestBody::InitProducerId(init)) {
            ResponseBody::InitProducerId(r) => (r.error_code, r.producer_id, r.producer_epoch),
            other => panic!("InitProducerId answered with {other:?}"),
        }
    }
}

/// One request over a fresh connection: its answer, or why there is none (the node not
/// listening yet, or gone), for [`super::eventually`] probes.
pub fn try_call(address: &str, version: i16, body: RequestBody) -> Result<ResponseBody, String> {
    let key = body.key();
    let header = RequestHeader {
        request_api_key: key.code(),
        request_api_version: version,
        correlation_id: 1,
        client_id: Some("raw".into()),
        ..Default::default()
    };
    let frame = encode_request(&header, &body)
        .map_err(|e| e.to_string())?
        .into_bytes();
    let mut stream = TcpStream::connect(address).map_err(|e| format!("{address}: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    stream
        .write_all(&(frame.len() as i32).to_be_bytes())
        .and_then(|_| stream.write_all(&frame))
        .map_err(|e| format!("{address}: {e}"))?;
    let mut size = [0u8; 4];
    stream
        .read_exact(&mut size)
        .map_err(|e| format!("{address}: {e}"))?;
    let mut buf = vec![0u8; i32::from_be_bytes(size).max(0) as usize];
    stream
        .read_exact(&mut buf)
        .map_err(|e| format!("{address}: {e}"))?;
    decode_response(key, version, Bytes::from(buf))
        .map(|(_, b)| b)
        .map_err(|e| e.to_string())
}

/// `key`'s advertised range in `versions`, as the side-by-side tests note it
/// (`Some((min, max))`, or `None` when not advertised).
pub fn advertised(versions: &ApiVersionsResponse, key: ApiKey) -> String {
    let range = versions
        .api_keys
        .iter()
        .find(|k| k.api_key == key.code())
        .map(|v| (v.min_version, v.max_version));
    format!("{range:?}")
}

/// `feature`'s finalized level in `versions`.
pub fn finalized(versions: &ApiVersionsResponse, feature: &str) -> Option<i16> {
    versions
        .finalized_features
        .iter()
        .find(|f| f.name == feature)
        .map(|f| f.max_version_level)
}
