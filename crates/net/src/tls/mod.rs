//! TLS on the transport, with rustls and its *ring* provider (named explicitly, never a
//! process-wide default): a [`TlsServer`] wraps an SSL or SASL_SSL listener's connections
//! (its certificate, the client authentication `ssl.client.auth` asks for, the peer's
//! principal from its certificate through [`SslPrincipalMapper`]), a [`TlsClient`] wraps
//! the node's own connections to such a listener (the truststore to verify the server, the
//! host name checked unless `ssl.endpoint.identification.algorithm` is empty, the node's
//! certificate when it has one). The settings come in Kafka's vocabulary (TLSv1.2/TLSv1.3,
//! Kafka's cipher suite names); the CLI reads them from the properties (`kraftd-cli`'s
//! `security::tls`). `server.rs` and `client.rs` call in here and stay protocol-agnostic.
//!
//! Both are reconfigurable as Kafka's `SslFactory` is: every clone of a [`TlsServer`] or
//! [`TlsClient`] shares one cell, and [`TlsServer::reconfigure`] swaps in new stores, so the
//! next handshake uses them while established connections keep theirs.
//! [`validate_reconfiguration`] is Kafka's check before a swap (`SslFactory.
//! createNewSslEngineFactory`): the new certificate keeps the old one's subject and
//! alternative names unless `ssl.allow.dn.changes` / `ssl.allow.san.changes`, a truststore
//! is not added where there was none, and, for the inter-broker listener, each side's
//! certificate is trusted by the other side's truststore.

mod pem;
mod principal;
mod reconfigure;
#[cfg(test)]
mod tests;

use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::principal::KafkaPrincipal;

pub use pem::{parse_certificates, parse_private_key};
pub use principal::{serial_number, subject_alt_names, subject_dn, SslPrincipalMapper};
pub use reconfigure::{validate_reconfiguration, ReconfigurationChecks};
pub use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A TLS protocol version kraftd speaks, by Kafka's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls12,
    Tls13,
}

impl TlsVersion {
    pub const ALL: [TlsVersion; 2] = [TlsVersion::Tls12, TlsVersion::Tls13];

    /// `TLSv1.2`, `TLSv1.3`.
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::Tls12 => "TLSv1.2",
            TlsVersion::Tls13 => "TLSv1.3",
        }
    }

    /// The version Kafka names `name` (`ssl.enabled.protocols`), if kraftd speaks it.
    pub fn from_name(name: &str) -> Option<TlsVersion> {
        Self::ALL.into_iter().find(|v| v.name() == name.trim())
    }

    fn rustls(self) -> &'static rustls::SupportedProtocolVersion {
        match self {
            TlsVersion::Tls12 => &rustls::version::TLS12,
            TlsVersion::Tls13 => &rustls::version::TLS13,
        }
    }
}

/// Kafka's `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// No client certificate asked for: every client is `User:ANONYMOUS` (on SSL).
    #[default]
    None,
    /// Asked for; a client without one is admitted as `User:ANONYMOUS`.
    Requested,
    /// Required: a client without a certificate the truststore verifies is refused.
    Required,
}

impl ClientAuth {
    /// `none`, `requested`, `required` (case-insensitive, as Kafka's `SslClientAuth`).
    pub fn from_name(name: &str) -> Option<ClientAuth> {
        match name.trim().to_ascii_lowercase().as_str() {
            "none" => Some(ClientAuth::None),
            "requested" => Some(ClientAuth::Requested),
            "required" => Some(ClientAuth::Required),
            _ => None,
        }
    }
}

/// The cipher suites kraftd speaks, by their IANA names (the names Kafka's
/// `ssl.cipher.suites` takes through Java), each with rustls's suite.
fn cipher_suites_by_name() -> Vec<(&'static str, rustls::SupportedCipherSuite)> {
    use rustls::crypto::ring::cipher_suite as cs;
    vec![
        ("TLS_AES_256_GCM_SHA384", cs::TLS13_AES_256_GCM_SHA384),
        ("TLS_AES_128_GCM_SHA256", cs::TLS13_AES_128_GCM_SHA256),
        (
            "TLS_CHACHA20_POLY1305_SHA256",
            cs::TLS13_CHACHA20_POLY1305_SHA256,
        ),
        (
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
            cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
            cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
        (
            "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
            cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        ),
        (
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        ),
        (
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        ),
    ]
}

/// The names [`TlsOptions::cipher_suites`] accepts.
pub fn cipher_suite_names() -> Vec<&'static str> {
    cipher_suites_by_name()
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// Protocol versions and cipher suites, shared by both sides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Versions enabled; empty: TLSv1.2 and TLSv1.3.
    pub versions: Vec<TlsVersion>,
    /// Suites enabled, by [`cipher_suite_names`]; empty: all of them.
    pub cipher_suites: Vec<String>,
}

impl TlsOptions {
    fn provider(&self) -> Result<Arc<CryptoProvider>, String> {
        let mut provider = rustls::crypto::ring::default_provider();
        if !self.cipher_suites.is_empty() {
            let known = cipher_suites_by_name();
            let mut suites = Vec::new();
            for name in &self.cipher_suites {
                let (_, suite) =
                    known
                        .iter()
                        .find(|(n, _)| n == &name.trim())
                        .ok_or_else(|| {
                            format!(
                                "unsupported cipher suite {name:?} (kraftd speaks {})",
                                cipher_suite_names().join(", ")
                            )
                        })?;
                suites.push(*suite);
            }
            provider.cipher_suites = suites;
        }
        Ok(Arc::new(provider))
    }

    fn versions(&self) -> Vec<&'static rustls::SupportedProtocolVersion> {
        let versions: &[TlsVersion] = if self.versions.is_empty() {
            &TlsVersion::ALL
        } else {
            &self.versions
        };
        versions.iter().map(|v| v.rustls()).collect()
    }
}

/// A certificate chain (the node's own first) and its private key.
pub struct TlsIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl Clone for TlsIdentity {
    fn clone(&self) -> Self {
        TlsIdentity {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl fmt::Debug for TlsIdentity {
    /// Never the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let subject = self.chain.first().and_then(|c| subject_dn(c));
        f.debug_struct("TlsIdentity")
            .field("subject", &subject)
            .field("chain", &self.chain.len())
            .finish_non_exhaustive()
    }
}

fn root_store(trust: &[CertificateDer<'static>]) -> Result<Arc<RootCertStore>, String> {
    let mut roots = RootCertStore::empty();
    for (i, cert) in trust.iter().enumerate() {
        roots
            .add(cert.clone())
            .map_err(|e| format!("trusted certificate {} is not usable: {e}", i + 1))?;
    }
    Ok(Arc::new(roots))
}

/// What a TLS listener serves with.
#[derive(Debug, Clone)]
pub struct TlsServerSettings {
    pub identity: TlsIdentity,
    /// The CAs client certificates are verified against (needed unless `client_auth` is
    /// [`ClientAuth::None`]).
    pub trust: Vec<CertificateDer<'static>>,
    pub client_auth: ClientAuth,
    pub options: TlsOptions,
    pub principal_mapper: SslPrincipalMapper,
}

/// A listener's TLS: the acceptor, and how a client certificate becomes a principal. Clones
/// share one cell: [`TlsServer::reconfigure`] changes what every clone's next handshake uses.
#[derive(Clone)]
pub struct TlsServer {
    state: Arc<RwLock<Arc<ServerState>>>,
}

/// What one generation of a listener's TLS serves with.
struct ServerState {
    acceptor: TlsAcceptor,
    client_auth: ClientAuth,
    mapper: Arc<SslPrincipalMapper>,
    /// The keystore's chain and the truststore, to compare with a reconfiguration's.
    chain: Vec<CertificateDer<'static>>,
    trust: Vec<CertificateDer<'static>>,
}

impl fmt::Debug for TlsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.current();
        f.debug_struct("TlsServer")
            .field("client_auth", &state.client_auth)
            .field("principal_mapper", &state.mapper.to_string())
            .field("subject", &state.chain.first().and_then(|c| subject_dn(c)))
            .finish_non_exhaustive()
    }
}

impl TlsServer {
    /// Builds the listener's TLS; an error says what does not fit (a key that does not
    /// match its certificate, client authentication without trusted CAs, ...).
    pub fn new(settings: TlsServerSettings) -> Result<TlsServer, String> {
        let provider = settings.options.provider()?;
        let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&settings.options.versions())
            .map_err(|e| e.to_string())?;
        let builder = match settings.client_auth {
            ClientAuth::None => builder.with_no_client_auth(),
            auth => {
                if settings.trust.is_empty() {
                    return Err(
                        "client authentication needs trusted CAs (a truststore) to verify \
                         client certificates"
                            .into(),
                    );
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(
                    root_store(&settings.trust)?,
                    provider,
                );
                let verifier = if auth == ClientAuth::Requested {
                    verifier.allow_unauthenticated()
                } else {
                    verifier
                };
                builder.with_client_cert_verifier(verifier.build().map_err(|e| e.to_string())?)
            }
        };
        let chain = settings.identity.chain.clone();
        let config = builder
            .with_single_cert(settings.identity.chain, settings.identity.key)
            .map_err(|e| format!("the keystore's key and certificate do not fit: {e}"))?;
        let state = ServerState {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            client_auth: settings.client_auth,
            mapper: Arc::new(settings.principal_mapper),
            chain,
            trust: settings.trust,
        };
        Ok(TlsServer {
            state: Arc::new(RwLock::new(Arc::new(state))),
        })
    }

    fn current(&self) -> Arc<ServerState> {
        Arc::clone(&self.state.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The keystore's certificate chain in use, the node's own first.
    pub fn certificates(&self) -> Vec<CertificateDer<'static>> {
        self.current().chain.clone()
    }

    /// The trusted CAs in use (empty without a truststore).
    pub fn trusted(&self) -> Vec<CertificateDer<'static>> {
        self.current().trust.clone()
    }

    /// Whether `other` serves the same certificates and trusts the same CAs: a
    /// reconfiguration to it changes nothing (Kafka's `shouldBeRebuilt` is false).
    pub fn same_stores(&self, other: &TlsServer) -> bool {
        let (a, b) = (self.current(), other.current());
        a.chain == b.chain && a.trust == b.trust
    }

    /// From now on every clone of this server handshakes as `next` does (its stores, client
    /// authentication and principal mapping); connections already established keep theirs.
    pub fn reconfigure(&self, next: &TlsServer) {
        let next = next.current();
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = next;
    }

    /// The TLS handshake on an accepted connection, bounded by `within`
    /// (`connections.max.idle.ms`), and the peer's principal: its certificate's subject
    /// mapped by `ssl.principal.mapping.rules`, `User:ANONYMOUS` without one. An error
    /// (a failed or stalled handshake, no rule for the subject) closes the connection.
    pub(crate) async fn accept(
        &self,
        stream: TcpStream,
        within: Duration,
    ) -> Result<(tokio_rustls::server::TlsStream<TcpStream>, KafkaPrincipal), String> {
        let state = self.current();
        let stream = match tokio::time::timeout(within, state.acceptor.accept(stream)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(format!("TLS handshake failed: {e}")),
            Err(_) => return Err(format!("TLS handshake not done within {within:?}")),
        };
        let principal = match stream
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
        {
            None => KafkaPrincipal::anonymous(),
            Some(cert) => {
                let dn =
                    subject_dn(cert).ok_or("the client certificate's subject does not parse")?;
                let name = state.mapper.name(&dn).ok_or_else(|| {
                    format!("no ssl.principal.mapping.rules rule applies to {dn:?}")
                })?;
                KafkaPrincipal::user(name)
            }
        };
        Ok((stream, principal))
    }
}

/// What the node's own TLS connections use.
#[derive(Debug, Clone)]
pub struct TlsClientSettings {
    /// The node's certificate, presented when the server asks for one.
    pub identity: Option<TlsIdentity>,
    /// The CAs the server's certificate is verified against.
    pub trust: Vec<CertificateDer<'static>>,
    /// `ssl.endpoint.identification.algorithm=https`: the server's certificate must name
    /// the host connected to.
    pub verify_host_name: bool,
    pub options: TlsOptions,
}

/// The node's TLS towards one listener name: the connector; the server name is each
/// destination's host. Clones share one cell, as [`TlsServer`]'s do
/// ([`TlsClient::reconfigure`]).
#[derive(Clone)]
pub struct TlsClient {
    connector: Arc<RwLock<TlsConnector>>,
    verify_host_name: bool,
}

impl fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsClient")
            .field("verify_host_name", &self.verify_host_name)
            .finish_non_exhaustive()
    }
}

impl TlsClient {
    pub fn new(settings: TlsClientSettings) -> Result<TlsClient, String> {
        if settings.trust.is_empty() {
            return Err("no trusted CAs (a truststore) to verify servers with".into());
        }
        let provider = settings.options.provider()?;
        let inner = WebPkiServerVerifier::builder_with_provider(
            root_store(&settings.trust)?,
            Arc::clone(&provider),
        )
        .build()
        .map_err(|e| e.to_string())?;
        let verifier = Arc::new(ServerVerifier {
            inner,
            verify_host_name: settings.verify_host_name,
        });
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&settings.options.versions())
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match settings.identity {
            Some(id) => builder
                .with_client_auth_cert(id.chain, id.key)
                .map_err(|e| format!("the keystore's key and certificate do not fit: {e}"))?,
            None => builder.with_no_client_auth(),
        };
        Ok(TlsClient {
            connector: Arc::new(RwLock::new(TlsConnector::from(Arc::new(config)))),
            verify_host_name: settings.verify_host_name,
        })
    }

    /// From now on every clone of this client connects as `next` does (its certificate and
    /// trusted CAs); connections already established keep theirs.
    pub fn reconfigure(&self, next: &TlsClient) {
        let connector = next
            .connector
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        *self.connector.write().unwrap_or_else(|p| p.into_inner()) = connector;
    }

    /// The TLS handshake with `destination` (`host:port`; a host name or an IP address is
    /// the name the server's certificate must carry).
    pub(crate) async fn connect(
        &self,
        destination: &str,
        stream: TcpStream,
    ) -> io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let host = destination
            .rsplit_once(':')
            .map_or(destination, |(h, _)| h)
            .trim_start_matches('[')
            .trim_end_matches(']');
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let connector = self
            .connector
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        connector.connect(name, stream).await
    }
}

/// WebPKI verification of the server's chain, and of its name unless disabled (an empty
/// `ssl.endpoint.identification.algorithm`). webpki checks the chain before the name, so
/// a name error means the chain itself verified.
#[derive(Debug)]
struct ServerVerifier {
    inner: Arc<WebPkiServerVerifier>,
    verify_host_name: bool,
}

impl ServerCertVerifier for ServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.verify_host_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

type ClientTls = tokio_rustls::client::TlsStream<TcpStream>;

/// The read half of a client connection: plain TCP (split without a lock) or TLS.
#[derive(Debug)]
pub(crate) enum ReadHalf {
    Plain(OwnedReadHalf),
    Tls(tokio::io::ReadHalf<ClientTls>),
}

/// The write half of a client connection.
#[derive(Debug)]
pub(crate) enum WriteHalf {
    Plain(OwnedWriteHalf),
    Tls(tokio::io::WriteHalf<ClientTls>),
}

/// The halves of a connected client stream, through TLS when `tls` is set.
pub(crate) async fn client_halves(
    stream: TcpStream,
    tls: Option<&TlsClient>,
    destination: &str,
) -> io::Result<(ReadHalf, WriteHalf)> {
    match tls {
        None => {
            let (rd, wr) = stream.into_split();
            Ok((ReadHalf::Plain(rd), WriteHalf::Plain(wr)))
        }
        Some(tls) => {
            let stream = tls.connect(destination, stream).await?;
            let (rd, wr) = tokio::io::split(stream);
            Ok((ReadHalf::Tls(rd), WriteHalf::Tls(wr)))
        }
    }
}

impl AsyncRead for ReadHalf {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Plain(r) => Pin::new(r).poll_read(cx, buf),
            ReadHalf::Tls(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteHalf::Plain(w) => Pin::new(w).poll_write(cx, buf),
            WriteHalf::Tls(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteHalf::Plain(w) => Pin::new(w).poll_write_vectored(cx, bufs),
            WriteHalf::Tls(w) => Pin::new(w).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            WriteHalf::Plain(w) => w.is_write_vectored(),
            WriteHalf::Tls(w) => w.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Plain(w) => Pin::new(w).poll_flush(cx),
            WriteHalf::Tls(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Plain(w) => Pin::new(w).poll_shutdown(cx),
            WriteHalf::Tls(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}
