//! The server half of the transport: accepts TCP connections, reads size-prefixed Kafka
//! frames (the size checked against `socket.request.max.bytes` from the prefix, before the
//! body is buffered), decodes each request, answers ApiVersions from the listener's
//! [`ApiVersionsTable`] itself and hands every other advertised request to a
//! [`RequestHandler`]; requests take effect in the order they were sent (the next is read
//! once the handler sequenced the previous one: [`super::ordering`]) and responses go back
//! in request order, as Kafka clients require. On a SASL listener every frame passes the
//! connection's [`SaslAuthenticator`] first (login, the principal of the connection's
//! [`Session`], re-authentication: `sasl/`).
//!
//! Limits: every accepted connection passes the role's [`ConnectionQuotas`]
//! (`ServerConfig::connection_quotas`: Kafka's `max.connections`, per-address caps and
//! creation rates — the accept loop waits, or the connection is closed, as Kafka's acceptor
//! does), at most [`ServerConfig::max_in_flight_per_connection`] requests awaiting their
//! response per connection (the reader stops reading until one is answered). A malformed
//! frame, an unknown api key, or an api or version the listener does not advertise closes
//! that connection only, with one log line naming the peer; nothing read from the network
//! can panic the server.
//!
//! Every request is timed and counted in the process's [`RequestMetrics`]
//! (`ServerConfig::metrics`, see [`super::request_metrics`]): the reader starts its timer
//! when the frame is read, the writer finishes it once the response is written; every
//! connection is counted under its listener.
//!
//! An SSL listener (`ServerConfig::security.tls`) first runs the TLS handshake
//! ([`super::tls::TlsServer`]), bounded by `connections.max.idle.ms`, and starts the
//! connection's session as the principal its certificate maps to.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use kraftd_protocol::api_versions::{self, ApiVersionsTable};
use kraftd_protocol::frame::{frame_chunks, split_frame, DEFAULT_MAX_FRAME_BYTES};
use kraftd_protocol::header::{decode_request, encode_response, RequestError};
use kraftd_protocol::messages::{ApiVersionsRequest, RequestHeader};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;

use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::connection_quotas::{
    ConnectionQuotaConfig, ConnectionQuotas, Refused, QUOTA_WINDOW_DEFAULT,
};
use super::frame::write_frame;
use super::request_metrics::{self, InFlight, RequestMetrics, RequestTimer};
use super::sasl::{self, SaslAuthenticator, SaslReply, SaslStep};
use super::security::{ChannelMute, ClientInformation, KafkaPrincipal, ListenerSecurity, Session};

/// The default cap on requests awaiting a response on one connection.
pub const DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION: usize = 64;
/// Kafka's `connections.max.idle.ms` default (10 minutes).
pub const DEFAULT_CONNECTIONS_MAX_IDLE: Duration = Duration::from_secs(600);

/// The pause after a failed accept (out of file descriptors, say), so the loop does not spin.
pub const ACCEPT_ERROR_BACKOFF: std::time::Duration = std::time::Duration::from_millis(10);

/// Limits and protection of one listener.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// `socket.request.max.bytes`: the largest request frame accepted.
    pub max_frame_bytes: usize,
    /// Requests read but not yet answered, per connection.
    pub max_in_flight_per_connection: usize,
    /// The connection limits of the role this listener belongs to, shared by its
    /// listeners (a default config gets quotas of its own, without limits).
    pub connection_quotas: Arc<ConnectionQuotas>,
    /// `connections.max.idle.ms`: a connection that sends nothing this long while none of
    /// its requests is pending is closed.
    pub connections_max_idle: Duration,
    /// The listener's name and security protocol.
    pub security: ListenerSecurity,
    /// Where requests and connections are counted: one per process, shared by its
    /// listeners (a default config gets a registry of its own).
    pub metrics: Arc<RequestMetrics>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_in_flight_per_connection: DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION,
            connection_quotas: ConnectionQuotas::new(
                ConnectionQuotaConfig::default(),
                QUOTA_WINDOW_DEFAULT,
            ),
            connections_max_idle: DEFAULT_CONNECTIONS_MAX_IDLE,
            security: ListenerSecurity::default(),
            metrics: Arc::new(RequestMetrics::default()),
        }
    }
}

/// A decoded request of an advertised api and version.
#[derive(Debug, Clone)]
pub struct InboundRequest {
    pub peer: SocketAddr,
    /// Who sent it, on which listener (the connection's, as authenticated so far).
    pub session: Arc<Session>,
    /// The connection's mute: a handler throttling the client holds its next request back.
    pub mute: ChannelMute,
    pub api_key: ApiKey,
    pub header: RequestHeader,
    pub body: RequestBody,
    /// The request's size on the wire, header included (Kafka's `sizeInBytes`: what a
    /// produce quota counts).
    pub size: usize,
    /// The request's phases for the request metrics: a handler marks its dequeue, local
    /// and remote completion and its response where they happen (see
    /// [`super::request_metrics`]; unmarked ones get Kafka's defaults).
    pub timer: RequestTimer,
}

/// What serves the requests of a listener.
pub trait RequestHandler: Send + Sync + 'static {
    /// Takes one request. Resolves (applying backpressure while the handler is busy) to the
    /// receiver of its response, or `None` to close the connection. The connection's next
    /// request is read only once this resolves, so a handler resolves only once the
    /// request's effect is sequenced — done, or queued where effects apply in arrival order
    /// — and leaves only waiting to the receiver ([`super::ordering`]): a client's requests
    /// then take effect in the order it sent them, as on Kafka. A receiver whose sender
    /// is dropped means "no response": right only for a Produce with `acks=0`, whose client
    /// expects none; for any other request it closes the connection, so a client never waits
    /// out its timeout for an answer that will not come (and retries on a new connection).
    fn dispatch(
        &self,
        request: InboundRequest,
    ) -> impl Future<Output = Option<oneshot::Receiver<ResponseBody>>> + Send;

    /// The features an ApiVersions v3+ answer carries (KIP-584): what this node supports,
    /// what the cluster finalized and at which metadata offset. `None` (the default): none,
    /// as a listener that does not know the cluster's metadata answers.
    fn api_versions_features(&self) -> Option<ApiVersionsFeatures> {
        None
    }

    /// The cluster id and node id an ApiVersions v5 request naming them must match, else
    /// REBOOTSTRAP_REQUIRED (KIP-1242). `None` (the default): not checked, as Kafka's
    /// controllers do not check it.
    fn api_versions_identity(&self) -> Option<(String, i32)> {
        None
    }

    /// The connection from `peer` closed, or its peer stopped sending (Kafka's
    /// `ConnectionDisconnectListener`): state tied to it, such as a share session, can end.
    /// Called once per connection, possibly before the answers still owed are written.
    /// The default keeps nothing.
    fn connection_closed(&self, peer: SocketAddr) {
        let _ = peer;
    }
}

/// The feature part of an ApiVersions answer (see
/// [`RequestHandler::api_versions_features`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiVersionsFeatures {
    /// (name, min, max) supported by this node.
    pub supported: Vec<(String, i16, i16)>,
    /// (name, level) finalized in the cluster.
    pub finalized: Vec<(String, i16)>,
    /// The metadata offset the finalized levels were read at (Kafka's
    /// `finalized_features_epoch`), -1 when unknown.
    pub epoch: i64,
}

/// ApiVersions v3 added the features.
const API_VERSIONS_FEATURES_VERSION: i16 = 3;

/// Accepts connections on `listener` until the task running it is aborted or dropped
/// (which closes every connection it accepted).
pub async fn serve<H: RequestHandler>(
    listener: TcpListener,
    table: Arc<ApiVersionsTable>,
    config: ServerConfig,
    handler: Arc<H>,
) {
    let quotas = Arc::clone(&config.connection_quotas);
    let listener_name = config.security.listener_name.clone();
    quotas.add_listener(&listener_name);
    let table = sasl::listener_table(table);
    let listener_metrics = config.metrics.listener(&config.security.listener_name);
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors and the like: keep serving the others.
                        warn!(error = %e, "accept failed");
                        tokio::time::sleep(ACCEPT_ERROR_BACKOFF).await;
                        continue;
                    }
                };
                // Kafka's acceptor: the broker's and listener's rates and caps may hold
                // this loop; the address's limits refuse the connection.
                let permit = match quotas.admit(&listener_name, peer.ip()).await {
                    Ok(slot) => slot,
                    Err(refused @ Refused::TooManyConnections { .. }) => {
                        info!(%peer, listener = %listener_name, "Rejected connection: {refused}");
                        continue;
                    }
                    Err(Refused::Throttled { throttle, .. }) => {
                        // Kafka's delayed close: the socket stays open, unserved, for the
                        // throttle time, so the client does not reconnect at once.
                        debug!(%peer, ?throttle, "delaying the close of a throttled connection");
                        connections.spawn(async move {
                            tokio::time::sleep(throttle).await;
                            drop(stream);
                        });
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let table = Arc::clone(&table);
                let handler = Arc::clone(&handler);
                let config = config.clone();
                let counted = listener_metrics.opened();
                connections.spawn(async move {
                    let _permit = permit;
                    let _counted = counted;
                    connection(stream, peer, table, config, handler).await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// A request read, waiting for its response, in arrival order. Boxed on its way to the
/// writer: the response channel's buffer (a block of 32 slots, allocated with the channel
/// and kept while the connection lives) then holds pointers, not 88-byte requests.
struct Pending {
    correlation_id: i32,
    version: i16,
    /// The request's API, for the log line if its response is lost.
    api_key: ApiKey,
    /// False only for a Produce with `acks=0`: its client reads no response.
    expects_response: bool,
    /// A SASL token after a v0 handshake: written as a bare frame, without a header.
    raw_sasl_token: bool,
    response: oneshot::Receiver<ResponseBody>,
    /// The request's metrics, finished once its response is written (`None`: not
    /// counted, as SASL steps and everything while request metrics are off).
    metrics: Option<InFlight>,
}

/// Whether the client reads a response to `body`: every request but a Produce with
/// `acks=0` (Kafka's `ProduceRequest` with acks 0 gets none).
fn expects_response(body: &RequestBody) -> bool {
    !matches!(body, RequestBody::Produce(p) if p.acks == 0)
}

async fn connection<H: RequestHandler>(
    stream: TcpStream,
    peer: SocketAddr,
    table: Arc<ApiVersionsTable>,
    config: ServerConfig,
    handler: Arc<H>,
) {
    let Some(tls) = config.security.tls.clone() else {
        let (rd, wr) = stream.into_split();
        let principal = KafkaPrincipal::anonymous();
        return serve_connection(rd, wr, principal, peer, table, config, handler).await;
    };
    // The handshake is bounded like an idle connection: a client that never finishes it
    // (or sends something else than a ClientHello) closes only its own connection. Boxed:
    // the handshake's state would otherwise widen every connection's task, TLS or not, for
    // its whole life.
    // The match ends before the connection is served, so that the TLS stream it moves into
    // the split does not keep a second place in the task; the TLS connection's service is
    // boxed, so that its (larger) state does not widen every plaintext connection's task.
    let (rd, wr, principal) = match Box::pin(tls.accept(stream, config.connections_max_idle)).await
    {
        Ok((stream, principal)) => {
            let (rd, wr) = tokio::io::split(stream);
            (rd, wr, principal)
        }
        Err(reason) => {
            warn!(%peer, listener = %config.security.listener_name, "closing connection: {reason}");
            handler.connection_closed(peer);
            return;
        }
    };
    Box::pin(serve_connection(
        rd, wr, principal, peer, table, config, handler,
    ))
    .await
}

/// Serves one connection's requests, plain or TLS, as `principal` until then.
async fn serve_connection<H, R, W>(
    rd: R,
    wr: W,
    principal: KafkaPrincipal,
    peer: SocketAddr,
    table: Arc<ApiVersionsTable>,
    config: ServerConfig,
    handler: Arc<H>,
) where
    H: RequestHandler,
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (tx, rx) = mpsc::channel(config.max_in_flight_per_connection.max(1));
    // Requests read and not yet answered on the wire: the connection is not idle while any is.
    let unanswered = Arc::new(AtomicUsize::new(0));
    let mut writer = pin!(write_responses(
        wr,
        rx,
        peer,
        Arc::clone(&unanswered),
        Arc::clone(&config.metrics),
    ));
    // Pinned in place, as the writer: `select!` would otherwise hold a second copy.
    let mut reader = pin!(read_requests(
        rd,
        principal,
        peer,
        &table,
        &config,
        handler.as_ref(),
        tx,
        &unanswered,
    ));
    tokio::select! {
        read = &mut reader => {
            // The handler hears of the close as soon as the peer stops sending, not once
            // the answers still owed are written: a share fetch parked for its max wait
            // must not keep a killed member's records from the others (Kafka's disconnect
            // listener runs when the channel closes).
            handler.connection_closed(peer);
            match read {
                // The peer stopped sending: answer what it asked, then close.
                Ok(()) => writer.await,
                Err(reason) => warn!(%peer, "closing connection: {reason}"),
            }
        }
        () = &mut writer => handler.connection_closed(peer),
    }
}

#[allow(clippy::too_many_arguments)]
async fn read_requests<H: RequestHandler, R: AsyncRead + Unpin>(
    mut rd: R,
    principal: KafkaPrincipal,
    peer: SocketAddr,
    table: &ApiVersionsTable,
    config: &ServerConfig,
    handler: &H,
    tx: mpsc::Sender<Box<Pending>>,
    unanswered: &AtomicUsize,
) -> Result<(), String> {
    // No read buffer until the first bytes arrive, and none while the connection waits
    // between frames ([`read_more`]).
    let mut buf = BytesMut::new();
    let mut session = Arc::new(Session {
        principal,
        listener_name: config.security.listener_name.clone(),
        protocol: config.security.protocol,
        client_information: Default::default(),
    });
    let mute = ChannelMute::default();
    let shard = config.metrics.connection_shard();
    // On a SASL listener, every frame passes the connection's authenticator first.
    let mut sasl = config
        .security
        .sasl
        .clone()
        .map(|c| SaslAuthenticator::new(c, Instant::now(), config.connections_max_idle));
    loop {
        loop {
            let max_frame = sasl.as_ref().map_or(config.max_frame_bytes, |s| {
                s.max_frame_bytes(config.max_frame_bytes)
            });
            let Some(frame) = split_frame(&mut buf, max_frame).map_err(|e| e.to_string())? else {
                break;
            };
            // One frame's handling, boxed for the time it runs (one allocation per
            // request): inline, its largest state — the decoded request, the handler's
            // future (a Produce's verification and append) — would be part of every
            // connection's task all its life, idle or not, most of what an idle
            // connection costs. Ok(false): the connection is done.
            let handled = Box::pin(async {
                // A throttled client's next request waits out its throttle time.
                mute.wait().await;
                // Kafka's request start: the whole frame read (and the channel unmuted).
                let started = std::time::Instant::now();
                let frame = match sasl.as_mut() {
                    None => frame,
                    Some(auth) => match auth.on_frame(Instant::now(), frame) {
                        SaslStep::Pass(frame) => frame,
                        SaslStep::Close(reason) => return Err(reason),
                        SaslStep::Reply(reply) => {
                            if let Some(principal) = &reply.authenticated {
                                let mut next = (*session).clone();
                                next.principal = principal.clone();
                                session = Arc::new(next);
                            }
                            let close = reply.then_close.clone();
                            unanswered.fetch_add(1, Ordering::Relaxed);
                            if tx.send(Box::new(sasl_reply(reply))).await.is_err() || close.is_some() {
                                if let Some(reason) = close {
                                    info!(%peer, "closing connection after answering: {reason}");
                                    // Kafka's delayed close (KIP-306): the answer goes out first.
                                    tokio::time::sleep(auth.failed_authentication_delay()).await;
                                }
                                return Ok(false);
                            }
                            return Ok(true);
                        }
                    },
                };
                let size = frame.len();
                let metrics = config.metrics.enabled().then_some(&config.metrics);
                let pending = match decode_request(frame) {
                    Ok(req) if req.api_key == ApiKey::ApiVersions => {
                        let RequestBody::ApiVersions(body) = &req.body else {
                            unreachable!("an ApiVersions header decodes an ApiVersions body")
                        };
                        // The client's name and version, for what matches on them (Kafka's
                        // `ClientInformation`, kept for the connection's later requests).
                        let (name, version) =
                            (&body.client_software_name, &body.client_software_version);
                        if ClientInformation::is_valid(name, version) {
                            let mut next = (*session).clone();
                            next.client_information = ClientInformation {
                                software_name: name.clone(),
                                software_version: version.clone(),
                            };
                            session = Arc::new(next);
                        }
                        api_versions(
                            table,
                            handler,
                            req.header.correlation_id,
                            req.header.request_api_version,
                            Some(body),
                        )
                        .counted(metrics, started, size, shard)
                    }
                    // Outside a SASL exchange (a listener without SASL): Kafka's KafkaApis
                    // answers both ILLEGAL_SASL_STATE, and advertises them on every listener.
                    Ok(req)
                        if sasl.is_none()
                            && matches!(
                                req.api_key,
                                ApiKey::SaslHandshake | ApiKey::SaslAuthenticate
                            )
                            && table.supports(req.api_key, req.header.request_api_version) =>
                    {
                        answered(
                            req.header.correlation_id,
                            req.header.request_api_version,
                            sasl::illegal_state_response(req.api_key),
                        )
                        .counted(metrics, started, size, shard)
                    }
                    Ok(req) => {
                        let version = req.header.request_api_version;
                        if !table.supports(req.api_key, version) {
                            return Err(format!(
                                "{} v{version} is not served on this {} listener",
                                req.api_key.name(),
                                table.listener().name()
                            ));
                        }
                        let correlation_id = req.header.correlation_id;
                        let api_key = req.api_key;
                        // Kafka's `kafka.request.logger` at DEBUG: every request in and out.
                        debug!(target: "kraftd::request", %peer, api = api_key.name(), version, correlation_id,
                            client_id = req.header.client_id.as_deref().unwrap_or(""), "request received");
                        let expects_response = expects_response(&req.body);
                        let fetch_from_follower = request_metrics::fetch_from_follower(&req.body);
                        let timer = metrics.map_or_else(RequestTimer::disabled, |m| m.start(started));
                        let request = InboundRequest {
                            peer,
                            session: Arc::clone(&session),
                            mute: mute.clone(),
                            api_key: req.api_key,
                            header: req.header,
                            body: req.body,
                            size,
                            timer: timer.clone(),
                        };
                        let dispatched = std::time::Instant::now();
                        let response = match metrics {
                            // The handler's task-local request, for marks deep inside it.
                            Some(_) => timer.scope(handler.dispatch(request)).await,
                            None => handler.dispatch(request).await,
                        };
                        let Some(response) = response else {
                            return Err("the handler refused the request".into());
                        };
                        Pending {
                            correlation_id,
                            version,
                            api_key,
                            expects_response,
                            raw_sasl_token: false,
                            response,
                            metrics: metrics.map(|_| InFlight {
                                timer,
                                api: api_key,
                                version,
                                fetch_from_follower,
                                request_bytes: size,
                                dispatched,
                                returned: std::time::Instant::now(),
                                shard,
                            }),
                        }
                    }
                    Err(RequestError::UnsupportedVersion {
                        api_key: ApiKey::ApiVersions,
                        header,
                    }) => api_versions(
                        table,
                        handler,
                        header.correlation_id,
                        header.request_api_version,
                        None,
                    )
                    .counted(metrics, started, size, shard),
                    Err(e) => return Err(e.to_string()),
                };
                unanswered.fetch_add(1, Ordering::Relaxed);
                if tx.send(Box::new(pending)).await.is_err() {
                    return Ok(false);
                }
                Ok(true)
            })
            .await?;
            if !handled {
                return Ok(());
            }
        }
        let read = loop {
            // An unauthenticated SASL connection gets until its deadline, at most.
            let deadline = sasl.as_ref().and_then(SaslAuthenticator::deadline);
            let wait = deadline.map_or(config.connections_max_idle, |d| {
                config
                    .connections_max_idle
                    .min(d.saturating_duration_since(Instant::now()))
            });
            match tokio::time::timeout(wait, read_more(&mut rd, &mut buf)).await {
                Ok(read) => break read,
                Err(_) if deadline.is_some_and(|d| d <= Instant::now()) => {
                    return Err("it did not complete SASL authentication in time".into())
                }
                // Idle only when no request of this connection is still being answered.
                Err(_) if unanswered.load(Ordering::Relaxed) == 0 => {
                    debug!(%peer, idle = ?config.connections_max_idle, "closing idle connection");
                    return Ok(());
                }
                Err(_) => continue,
            }
        };
        match read {
            Ok(0) if buf.is_empty() => return Ok(()),
            Ok(0) => {
                return Err(format!(
                    "connection closed inside a frame ({} bytes)",
                    buf.len()
                ))
            }
            Ok(_) => {}
            // A TLS peer that closes between frames without close_notify (librdkafka,
            // kafka-python and Kafka's Java client all do) has closed cleanly: frames carry
            // their length, so a truncation inside one is still caught above.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && buf.is_empty() => {
                return Ok(())
            }
            Err(e) => return Err(format!("read failed: {e}")),
        }
    }
}

/// Bytes a read takes at most into a full buffer while frames keep coming (a larger
/// frame's size prefix reserves the whole frame: [`split_frame`]).
const READ_CHUNK_BYTES: usize = 8 * 1024;

/// Bytes the first read after a wait takes: a small request whole, or a larger one's size
/// prefix, after which [`split_frame`] reserves exactly the frame. Frames are slices of the
/// buffer they were read into and a handler may keep a slice (a member's JoinGroup metadata
/// and SyncGroup assignment, held by its group): a fresh 8 KiB chunk per request would then
/// pin 8 KiB per slice kept.
const FIRST_READ_BYTES: usize = 512;

/// Reads what the peer sent into `buf`, as `read_buf` does, but holds no buffer while it
/// waits between frames: when nothing is there to read and `buf` holds no part of a frame,
/// its memory is given back before the wait and the poll that finds bytes takes a small
/// one ([`FIRST_READ_BYTES`]). An idle connection (most of a broker's thousands) then costs
/// no read buffer, as Kafka's `NetworkReceive` allocates only once a frame's size is read;
/// a busy one reads into the room left after the frames split off, in 8 KiB chunks.
async fn read_more<R: AsyncRead + Unpin>(rd: &mut R, buf: &mut BytesMut) -> std::io::Result<usize> {
    std::future::poll_fn(|cx| {
        if buf.len() == buf.capacity() {
            buf.reserve(if buf.capacity() == 0 {
                FIRST_READ_BYTES
            } else {
                READ_CHUNK_BYTES
            });
        }
        let read = pin!(rd.read_buf(&mut *buf)).poll(cx);
        if read.is_pending() && buf.is_empty() {
            *buf = BytesMut::new();
        }
        read
    })
    .await
}

/// Decrements the unanswered-request count when dropped.
struct Decrement<'a>(&'a AtomicUsize);

impl Drop for Decrement<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The answer to an ApiVersions request at `version` (`request` is `None` when the version
/// is too new to decode: KIP-511's v0 answer).
fn api_versions<H: RequestHandler>(
    table: &ApiVersionsTable,
    handler: &H,
    correlation_id: i32,
    version: i16,
    request: Option<&ApiVersionsRequest>,
) -> Pending {
    if let Some(request) = request {
        let node = handler.api_versions_identity();
        let node = node.as_ref().map(|(cluster, id)| (cluster.as_str(), *id));
        if let Some(code) = api_versions::request_error(version, request, node) {
            let body = ResponseBody::ApiVersions(api_versions::error_response(code));
            return answered(correlation_id, version, body);
        }
    }
    let (version, mut body) = table.response(version);
    if version >= API_VERSIONS_FEATURES_VERSION {
        if let Some(features) = handler.api_versions_features() {
            use kraftd_protocol::messages::api_versions_response::{
                FinalizedFeatureKey, SupportedFeatureKey,
            };
            body.supported_features = features
                .supported
                .into_iter()
                .map(|(name, min, max)| SupportedFeatureKey {
                    name,
                    min_version: min,
                    max_version: max,
                    ..Default::default()
                })
                .collect();
            body.finalized_features = features
                .finalized
                .into_iter()
                .map(|(name, level)| FinalizedFeatureKey {
                    name,
                    max_version_level: level,
                    min_version_level: level,
                    ..Default::default()
                })
                .collect();
            body.finalized_features_epoch = features.epoch;
        }
    }
    answered(correlation_id, version, ResponseBody::ApiVersions(body))
}

/// A request the server answers itself, at once.
fn answered(correlation_id: i32, version: i16, body: ResponseBody) -> Pending {
    let api_key = body.key();
    let (tx, rx) = oneshot::channel();
    let _ = tx.send(body);
    Pending {
        correlation_id,
        version,
        api_key,
        expects_response: true,
        raw_sasl_token: false,
        response: rx,
        metrics: None,
    }
}

impl Pending {
    /// Counts a request the server answered itself (ApiVersions, a stray SASL request): handled as it was read.
    fn counted(
        mut self,
        metrics: Option<&Arc<RequestMetrics>>,
        started: std::time::Instant,
        request_bytes: usize,
        shard: usize,
    ) -> Self {
        if let Some(m) = metrics {
            let now = std::time::Instant::now();
            self.metrics = Some(InFlight {
                timer: m.start(started),
                api: self.api_key,
                version: self.version,
                fetch_from_follower: None,
                request_bytes,
                dispatched: now,
                returned: now,
                shard,
            });
        }
        self
    }
}

/// The pending answer of a SASL step (answered already).
fn sasl_reply(reply: Box<SaslReply>) -> Pending {
    let api_key = reply.body.key();
    let (tx, rx) = oneshot::channel();
    let _ = tx.send(reply.body);
    Pending {
        correlation_id: reply.correlation_id.unwrap_or(0),
        version: reply.version,
        api_key,
        expects_response: true,
        raw_sasl_token: reply.correlation_id.is_none(),
        response: rx,
        metrics: None,
    }
}

async fn write_responses<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::Receiver<Box<Pending>>,
    peer: SocketAddr,
    unanswered: Arc<AtomicUsize>,
    metrics: Arc<RequestMetrics>,
) {
    while let Some(p) = rx.recv().await {
        let p = *p;
        // One response's wait, encoding and write, boxed for the time they run (one
        // allocation per response), so that an idle connection's task holds only the wait
        // for the next. False: the connection is done.
        let more = Box::pin(async {
            // Answered (or given up) once this iteration ends, whichever way it ends.
            let _done = Decrement(&unanswered);
            let response = p.response.await;
            let taken = p.metrics.as_ref().map(|_| std::time::Instant::now());
            let Ok(body) = response else {
                if !p.expects_response {
                    // acks=0: done once handled (Kafka's NoOpResponse), no response bytes.
                    if let (Some(m), Some(taken)) = (&p.metrics, taken) {
                        metrics.finish(m, taken, taken, None);
                    }
                    return true;
                }
                // A handler lost the response (a bug): closing is the only answer left that
                // does not leave the client waiting out its timeout.
                warn!(%peer, api = p.api_key.name(), correlation_id = p.correlation_id,
                    "closing connection: the request's handler dropped it without a response");
                return false;
            };
            if p.metrics.is_some() {
                metrics.count_errors(p.api_key, p.version, &body);
            }
            let encoded = match body {
                ResponseBody::SaslAuthenticate(token) if p.raw_sasl_token => {
                    let mut e = kraftd_protocol::codec::Encoder::new();
                    e.put_slice(&token.auth_bytes);
                    Ok(e)
                }
                body => encode_response(p.correlation_id, p.version, &body),
            };
            let encoded = match encoded {
                Ok(e) => e,
                Err(e) => {
                    warn!(%peer, correlation_id = p.correlation_id, "closing connection: response does not encode: {e}");
                    return false;
                }
            };
            let response_bytes = encoded.len();
            // TLS holds what it encrypted until flushed (a no-op on plain TCP).
            let written = match write_frame(&mut wr, frame_chunks(encoded)).await {
                Ok(()) => wr.flush().await,
                Err(e) => Err(e),
            };
            if let Err(e) = written {
                debug!(%peer, "closing connection: write failed: {e}");
                return false;
            }
            debug!(target: "kraftd::request", %peer, api = p.api_key.name(), correlation_id = p.correlation_id,
                response_bytes, "response sent");
            if let (Some(m), Some(taken)) = (&p.metrics, taken) {
                metrics.finish(m, taken, std::time::Instant::now(), Some(response_bytes));
            }
            true
        })
        .await;
        if !more {
            return;
        }
    }
    let _ = wr.shutdown().await;
}
