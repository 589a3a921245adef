//! The transport over TLS on real sockets, with a CA, a server certificate (for 127.0.0.1
//! and localhost) and a client certificate made by the test: TLS 1.2 and 1.3 each carry
//! requests; garbage instead of a ClientHello and a handshake that never finishes close
//! only their own connection, the stalled one within `connections.max.idle.ms`; client
//! authentication required refuses a client without a certificate; the node's own
//! [`Channel`] connects through TLS with its certificate and the server sees the principal
//! the mapping rules make of its subject; host name verification is on unless disabled.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use kraftd_net::tls::{
    ClientAuth, SslPrincipalMapper, TlsClient, TlsClientSettings, TlsIdentity, TlsOptions,
    TlsServer, TlsServerSettings, TlsVersion,
};
use kraftd_net::{
    Channel, ClientConfig, ClientError, ClientSecurity, KafkaPrincipal, ListenerSecurity,
    SecurityProtocol, ServerConfig,
};
use kraftd_protocol::api_versions::{ApiVersionsTable, ListenerType};
use kraftd_protocol::frame::split_frame;
use kraftd_protocol::header::decode_response;
use kraftd_protocol::messages::{ApiVersionsRequest, VoteRequest, VoteResponse};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody, VersionRange};
use rcgen::{BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::transport::{next_request, request_frame, server_with, Requests};

const WAIT: Duration = Duration::from_secs(10);

/// A CA and what it signed.
struct Pki {
    ca: CertificateDer<'static>,
    server: TlsIdentity,
    /// `CN=alice,OU=eng,O=acme`.
    client: TlsIdentity,
}

fn identity(params: CertificateParams, ca: &rcgen::Certificate, ca_key: &KeyPair) -> TlsIdentity {
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, ca, ca_key).unwrap();
    TlsIdentity {
        chain: vec![cert.der().clone()],
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    }
}

fn pki() -> Pki {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kraftd test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
    // Most significant first in the certificate; RFC 2253 prints it the other way round.
    client.distinguished_name = DistinguishedName::new();
    client
        .distinguished_name
        .push(DnType::OrganizationName, "acme");
    client
        .distinguished_name
        .push(DnType::OrganizationalUnitName, "eng");
    client.distinguished_name.push(DnType::CommonName, "alice");
    Pki {
        ca: ca.der().clone(),
        server: identity(server, &ca, &ca_key),
        client: identity(client, &ca, &ca_key),
    }
}

fn tls_server(pki: &Pki, client_auth: ClientAuth, rules: &str) -> TlsServer {
    TlsServer::new(TlsServerSettings {
        identity: pki.server.clone(),
        trust: vec![pki.ca.clone()],
        client_auth,
        options: TlsOptions::default(),
        principal_mapper: SslPrincipalMapper::parse(rules).unwrap(),
    })
    .unwrap()
}

fn tls_client(pki: &Pki, with_cert: bool, versions: &[TlsVersion], verify: bool) -> TlsClient {
    TlsClient::new(TlsClientSettings {
        identity: with_cert.then(|| pki.client.clone()),
        trust: vec![pki.ca.clone()],
        verify_host_name: verify,
        options: TlsOptions {
            versions: versions.to_vec(),
            cipher_suites: vec![],
        },
    })
    .unwrap()
}

/// A controller-type listener advertising Vote v2, served over TLS.
async fn tls_listener(tls: TlsServer, idle: Duration) -> (String, Requests) {
    let mut table = ApiVersionsTable::new(ListenerType::Controller);
    table
        .add(ApiKey::Vote, VersionRange { min: 2, max: 2 })
        .unwrap();
    let config = ServerConfig {
        connections_max_idle: idle,
        security: ListenerSecurity {
            listener_name: "SSL".into(),
            protocol: SecurityProtocol::Ssl,
            tls: Some(tls),
            sasl: None,
        },
        ..ServerConfig::default()
    };
    let (addr, requests, task) = server_with(config, table).await;
    // The server lives as long as the test's runtime.
    std::mem::forget(task);
    (addr, requests)
}

/// A stock-style rustls client speaking only `version`, with or without the client
/// certificate.
async fn raw_tls(
    pki: &Pki,
    addr: &str,
    version: &'static rustls::SupportedProtocolVersion,
    with_cert: bool,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[version])
        .unwrap()
        .with_root_certificates(roots);
    let config = if with_cert {
        builder
            .with_client_auth_cert(pki.client.chain.clone(), pki.client.key.clone_key())
            .unwrap()
    } else {
        builder.with_no_client_auth()
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    connector.connect(name, tcp).await
}

/// Reads one frame, or `None` once the server closed (or broke) the connection.
async fn read_frame<S: AsyncRead + Unpin>(s: &mut S, buf: &mut BytesMut) -> Option<Bytes> {
    loop {
        if let Some(f) = split_frame(buf, 1 << 20).unwrap() {
            return Some(f);
        }
        let n = tokio::time::timeout(WAIT, s.read_buf(buf))
            .await
            .expect("the server answers or closes")
            .ok()?;
        if n == 0 {
            return None;
        }
    }
}

/// ApiVersions over `s`: whether it was answered.
async fn api_versions_answered<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, corr: i32) -> bool {
    let frame = request_frame(
        ApiKey::ApiVersions,
        3,
        corr,
        RequestBody::ApiVersions(ApiVersionsRequest::default()),
    );
    if s.write_all(&frame).await.is_err() || s.flush().await.is_err() {
        return false;
    }
    let mut buf = BytesMut::new();
    match read_frame(s, &mut buf).await {
        Some(f) => {
            let (h, _) = decode_response(ApiKey::ApiVersions, 3, f).unwrap();
            h.correlation_id == corr
        }
        None => false,
    }
}

#[tokio::test]
async fn tls_1_2_and_1_3_both_carry_requests() {
    let pki = pki();
    let (addr, _requests) = tls_listener(tls_server(&pki, ClientAuth::None, "DEFAULT"), WAIT).await;
    for (version, expected) in [
        (&rustls::version::TLS12, rustls::ProtocolVersion::TLSv1_2),
        (&rustls::version::TLS13, rustls::ProtocolVersion::TLSv1_3),
    ] {
        let mut s = raw_tls(&pki, &addr, version, false).await.unwrap();
        assert_eq!(s.get_ref().1.protocol_version(), Some(expected));
        assert!(api_versions_answered(&mut s, 7).await, "{expected:?}");
    }
}

#[tokio::test]
async fn garbage_and_stalled_handshakes_close_only_their_connection() {
    let pki = pki();
    let idle = Duration::from_millis(500);
    let (addr, _requests) = tls_listener(tls_server(&pki, ClientAuth::None, "DEFAULT"), idle).await;
    let mut good = raw_tls(&pki, &addr, &rustls::version::TLS13, false)
        .await
        .unwrap();
    assert!(api_versions_answered(&mut good, 1).await);

    // A plaintext Kafka request instead of a ClientHello.
    let mut garbage = TcpStream::connect(&addr).await.unwrap();
    garbage
        .write_all(&request_frame(
            ApiKey::ApiVersions,
            3,
            1,
            RequestBody::ApiVersions(ApiVersionsRequest::default()),
        ))
        .await
        .unwrap();
    // At most a TLS alert record back (content type 21), never a Kafka answer.
    let mut back = Vec::new();
    let _ = tokio::time::timeout(WAIT, garbage.read_to_end(&mut back))
        .await
        .expect("closed");
    assert!(back.is_empty() || back[0] == 21, "{back:?}");
    // The good connection never noticed (asked well within its idle time).
    assert!(api_versions_answered(&mut good, 2).await);

    // The start of a handshake record (a ClientHello of 128 bytes), then nothing.
    let mut bogus = TcpStream::connect(&addr).await.unwrap();
    bogus
        .write_all(&[0x16, 0x03, 0x01, 0x00, 0x80, 0x01, 0x00, 0x00])
        .await
        .unwrap();
    // Nothing at all: the handshake never starts.
    let mut silent = TcpStream::connect(&addr).await.unwrap();
    let started = Instant::now();
    for s in [&mut bogus, &mut silent] {
        let mut back = Vec::new();
        let _ = tokio::time::timeout(WAIT, s.read_to_end(&mut back))
            .await
            .expect("closed within connections.max.idle.ms, not left open");
        assert!(back.is_empty() || back[0] == 21, "{back:?}");
    }
    let waited = started.elapsed();
    assert!(waited >= idle - Duration::from_millis(100), "{waited:?}");
    assert!(waited < idle + Duration::from_secs(3), "{waited:?}");

    // The listener still serves.
    let mut again = raw_tls(&pki, &addr, &rustls::version::TLS12, false)
        .await
        .unwrap();
    assert!(api_versions_answered(&mut again, 3).await);
}

#[tokio::test]
async fn required_client_auth_refuses_a_client_without_a_certificate() {
    let pki = pki();
    let (addr, _requests) =
        tls_listener(tls_server(&pki, ClientAuth::Required, "DEFAULT"), WAIT).await;
    for version in [&rustls::version::TLS12, &rustls::version::TLS13] {
        // TLS 1.3 clients finish their side before the server checks their certificate:
        // refused either at the handshake or at the first read.
        if let Ok(mut s) = raw_tls(&pki, &addr, version, false).await {
            assert!(!api_versions_answered(&mut s, 1).await, "{version:?}");
        }
        let mut s = raw_tls(&pki, &addr, version, true).await.unwrap();
        assert!(api_versions_answered(&mut s, 2).await, "{version:?}");
    }
}

/// A Vote through `channel`, answered by the test: the principal the server saw.
async fn principal_of_a_call(channel: &Channel, requests: &Requests) -> KafkaPrincipal {
    let call = {
        let channel = channel.clone();
        tokio::spawn(async move {
            channel
                .call(5, 2, RequestBody::Vote(VoteRequest::default()))
                .await
        })
    };
    let (request, reply) = next_request(requests).await;
    reply
        .send(ResponseBody::Vote(VoteResponse::default()))
        .unwrap();
    assert!(matches!(call.await.unwrap(), Ok(ResponseBody::Vote(_))));
    request.session.principal.clone()
}

#[tokio::test]
async fn the_node_channel_speaks_tls_and_the_server_maps_its_certificate() {
    let pki = pki();
    let rules = "RULE:^CN=([^,]+),OU=eng,O=acme$/$1-eng/U,DEFAULT";
    let (addr, requests) = tls_listener(tls_server(&pki, ClientAuth::Requested, rules), WAIT).await;
    let config = |tls: TlsClient| ClientConfig {
        security: ClientSecurity {
            protocol: SecurityProtocol::Ssl,
            tls: Some(tls),
            sasl: None,
        },
        ..ClientConfig::new("raft-client-1")
    };
    for versions in [vec![TlsVersion::Tls12], vec![TlsVersion::Tls13], vec![]] {
        let channel = Channel::spawn(
            addr.clone(),
            config(tls_client(&pki, true, &versions, true)),
        );
        let principal = principal_of_a_call(&channel, &requests).await;
        assert_eq!(principal, KafkaPrincipal::user("ALICE-ENG"), "{versions:?}");
    }
    // Requested, not required: no certificate is User:ANONYMOUS.
    let channel = Channel::spawn(addr.clone(), config(tls_client(&pki, false, &[], true)));
    assert_eq!(
        principal_of_a_call(&channel, &requests).await,
        KafkaPrincipal::anonymous()
    );

    // The certificate names 127.0.0.1, not localhost: refused unless host names go
    // unchecked (an empty ssl.endpoint.identification.algorithm).
    let port = addr.rsplit_once(':').unwrap().1;
    let by_name = format!("localhost:{port}");
    let channel = Channel::spawn(by_name.clone(), config(tls_client(&pki, true, &[], true)));
    let refused = channel
        .call(1, 2, RequestBody::Vote(VoteRequest::default()))
        .await;
    assert!(
        matches!(&refused, Err(ClientError::ConnectFailed { reason, .. }) if reason.contains("not valid for name") || reason.contains("NotValidForName")),
        "{refused:?}"
    );
    let channel = Channel::spawn(by_name, config(tls_client(&pki, true, &[], false)));
    assert_eq!(
        principal_of_a_call(&channel, &requests).await,
        KafkaPrincipal::user("ALICE-ENG")
    );
}
