//! The client half of the transport: a [`Channel`] is one TCP connection to one destination
//! (`host:port`), owned by a task, with Kafka's request headers (client id, correlation ids
//! chosen by the caller or by [`Channel::next_correlation_id`]), a request timeout, at most
//! [`ClientConfig::max_in_flight`] requests outstanding, and reconnect backoff (exponential
//! from `reconnect.backoff.ms` to `reconnect.backoff.max.ms`) after a failed connect.
//!
//! On a SASL listener the channel logs in right after connecting (`sasl::client`) and renews
//! its session before it expires (KIP-368); a failed login fails the request and backs off
//! like a failed connect, logged once per reason.
//!
//! As Kafka's NetworkClient does, a request that times out closes the connection (its
//! response could otherwise still arrive and be taken for a later one's), failing every
//! other request outstanding on it; the next request reconnects. While backing off after a
//! failed connect, requests fail at once, so the caller's own retry logic decides.
//!
//! A connection the peer closes (or resets) while requests are in flight is made again at
//! once: if the reconnect is refused, the peer's process is gone (its kernel closed the
//! socket and nothing listens on the port) and those requests fail with
//! [`ClientError::PeerGone`], which Raft's driver reports to the core to start its pre-vote
//! without waiting out a timeout; if it succeeds (a transient close, the peer alive), they
//! fail as [`ClientError::Disconnected`] and the caller retries on the new connection.
//!
//! With `ClientConfig::security.tls` set, the connect includes the TLS handshake
//! ([`super::tls::TlsClient`]), all within the request timeout.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use kraftd_protocol::frame::{frame_chunks, split_frame, DEFAULT_MAX_FRAME_BYTES};
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::RequestHeader;
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{sleep_until, timeout, Instant};
use tracing::{debug, warn};

use super::frame::write_frame;
use super::sasl::client::SaslLogin;
use super::tls;

/// Requests queued for a channel's task before callers are refused.
pub const CHANNEL_QUEUE_CAPACITY: usize = 256;

/// How a channel behaves.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The client id of every request header (`raft-client-<node.id>` for Raft traffic).
    pub client_id: String,
    /// `request.timeout.ms` (`controller.quorum.request.timeout.ms` for Raft): also bounds
    /// a connect.
    pub request_timeout: Duration,
    /// `reconnect.backoff.ms`: the pause after a failed connect, doubled per failure...
    pub reconnect_backoff: Duration,
    /// ... up to `reconnect.backoff.max.ms`.
    pub reconnect_backoff_max: Duration,
    /// The largest response frame accepted.
    pub max_frame_bytes: usize,
    /// Requests awaiting a response at once.
    pub max_in_flight: usize,
    /// How to reach the destination's listener (TLS, SASL).
    pub security: super::ClientSecurity,
}

impl ClientConfig {
    /// Kafka's defaults for `client_id`.
    pub fn new(client_id: impl Into<String>) -> Self {
        ClientConfig {
            client_id: client_id.into(),
            request_timeout: Duration::from_millis(2000),
            reconnect_backoff: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_millis(1000),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            max_in_flight: 16,
            security: Default::default(),
        }
    }
}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    #[error("connect to {destination} failed: {reason}")]
    ConnectFailed {
        destination: String,
        reason: String,
        /// Refused: nothing listens on the port (a crashed process's host answers so).
        refused: bool,
    },
    #[error("backing off after a failed connect to {destination}")]
    BackingOff { destination: String },
    #[error("connection to {destination} lost: {reason}")]
    Disconnected { destination: String, reason: String },
    #[error("connection to {destination} closed ({reason}) and the reconnect was refused")]
    PeerGone { destination: String, reason: String },
    #[error("request to {destination} timed out")]
    Timeout { destination: String },
    #[error("SASL authentication with {destination} failed: {reason}")]
    AuthenticationFailed { destination: String, reason: String },
    #[error("too many requests in flight to {destination}")]
    Overloaded { destination: String },
    #[error("correlation id {correlation_id} is already in flight")]
    DuplicateCorrelationId { correlation_id: i32 },
    #[error("request does not encode: {0}")]
    Encode(String),
    #[error("response does not decode: {0}")]
    Decode(String),
    #[error("the channel is closed")]
    Closed,
}

impl ClientError {
    /// Whether the destination's process is known to be gone: its connection closed and a
    /// reconnect was refused, or a connect was refused outright.
    pub fn is_peer_gone(&self) -> bool {
        matches!(
            self,
            ClientError::PeerGone { .. } | ClientError::ConnectFailed { refused: true, .. }
        )
    }
}

/// One destination's connection; cheap to clone (all clones share the task).
#[derive(Debug, Clone)]
pub struct Channel {
    destination: String,
    tx: mpsc::Sender<Outgoing>,
    next_correlation_id: Arc<AtomicI32>,
}

/// What [`Channel::send_with`] runs with the outcome of a request.
pub type ReplyFn = Box<dyn FnOnce(Result<ResponseBody, ClientError>) + Send>;

/// Where a request's outcome goes.
enum Reply {
    Oneshot(oneshot::Sender<Result<ResponseBody, ClientError>>),
    Callback(ReplyFn),
}

impl Reply {
    fn complete(self, result: Result<ResponseBody, ClientError>) {
        match self {
            Reply::Oneshot(tx) => {
                let _ = tx.send(result);
            }
            Reply::Callback(f) => f(result),
        }
    }
}

struct Outgoing {
    correlation_id: i32,
    version: i16,
    body: RequestBody,
    reply: Reply,
}

struct InFlight {
    api_key: ApiKey,
    version: i16,
    deadline: Instant,
    reply: Reply,
}

impl Channel {
    /// A channel to `destination` (`host:port`), run by a task on the current runtime that
    /// ends when every clone of the channel is dropped. Connects lazily, on the first request.
    pub fn spawn(destination: impl Into<String>, config: ClientConfig) -> Channel {
        let destination = destination.into();
        let (tx, rx) = mpsc::channel(CHANNEL_QUEUE_CAPACITY);
        let task = ChannelTask {
            destination: destination.clone(),
            config,
            rx,
            conn: None,
            in_flight: HashMap::new(),
            backoff_until: None,
            connect_failures: 0,
            sasl_failure_logged: None,
        };
        tokio::spawn(task.run());
        Channel {
            destination,
            tx,
            next_correlation_id: Arc::new(AtomicI32::new(0)),
        }
    }

    pub fn destination(&self) -> &str {
        &self.destination
    }

    /// A fresh correlation id for callers that do not choose their own.
    pub fn next_correlation_id(&self) -> i32 {
        self.next_correlation_id
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1)
            & i32::MAX
    }

    /// Sends `body` at `version` with `correlation_id` and waits for its response (at most
    /// the request timeout once it is written).
    pub async fn call(
        &self,
        correlation_id: i32,
        version: i16,
        body: RequestBody,
    ) -> Result<ResponseBody, ClientError> {
        let (reply, rx) = oneshot::channel();
        self.enqueue(correlation_id, version, body, Reply::Oneshot(reply))?;
        rx.await.unwrap_or(Err(ClientError::Closed))
    }

    /// [`Channel::call`] without a task waiting: `on_reply` runs on the channel's task with
    /// the response or the failure (exactly once, unless the channel itself is dropped).
    /// An `Err` here means the request was not queued and `on_reply` will not run. Saves
    /// a task wake-up per request on latency-critical paths (Raft's Fetch).
    pub fn send_with(
        &self,
        correlation_id: i32,
        version: i16,
        body: RequestBody,
        on_reply: ReplyFn,
    ) -> Result<(), ClientError> {
        self.enqueue(correlation_id, version, body, Reply::Callback(on_reply))
    }

    fn enqueue(
        &self,
        correlation_id: i32,
        version: i16,
        body: RequestBody,
        reply: Reply,
    ) -> Result<(), ClientError> {
        let out = Outgoing {
            correlation_id,
            version,
            body,
            reply,
        };
        self.tx.try_send(out).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => ClientError::Overloaded {
                destination: self.destination.clone(),
            },
            mpsc::error::TrySendError::Closed(_) => ClientError::Closed,
        })
    }
}

struct Conn {
    rd: tls::ReadHalf,
    wr: tls::WriteHalf,
    buf: BytesMut,
    /// The SASL login and when to renew it (KIP-368), on a SASL listener.
    sasl: Option<(SaslLogin, Option<Instant>)>,
}

struct ChannelTask {
    destination: String,
    config: ClientConfig,
    rx: mpsc::Receiver<Outgoing>,
    conn: Option<Conn>,
    in_flight: HashMap<i32, InFlight>,
    backoff_until: Option<Instant>,
    connect_failures: u32,
    /// The last SASL failure logged, so a failing login is logged once, not per retry.
    sasl_failure_logged: Option<String>,
}

enum Event {
    Request(Option<Box<Outgoing>>),
    Read(std::io::Result<usize>),
    Deadline,
}

impl ChannelTask {
    async fn run(mut self) {
        loop {
            let deadline = self.in_flight.values().map(|f| f.deadline).min();
            let event = match self.conn.as_mut() {
                Some(conn) => tokio::select! {
                    out = self.rx.recv() => Event::Request(out.map(Box::new)),
                    read = conn.rd.read_buf(&mut conn.buf) => Event::Read(read),
                    () = sleep_until(deadline.unwrap_or_else(far_future)), if deadline.is_some() => Event::Deadline,
                },
                None => Event::Request(self.rx.recv().await.map(Box::new)),
            };
            match event {
                Event::Request(None) => return,
                Event::Request(Some(out)) => self.send(*out).await,
                Event::Read(Ok(0)) => self.closed_by_peer("closed by peer").await,
                Event::Read(Ok(_)) => self.read_responses(),
                Event::Read(Err(e)) => self.closed_by_peer(&format!("read failed: {e}")).await,
                Event::Deadline => self.expire(),
            }
        }
    }

    async fn send(&mut self, out: Outgoing) {
        let api_key = out.body.key();
        if self.in_flight.contains_key(&out.correlation_id) {
            out.reply.complete(Err(ClientError::DuplicateCorrelationId {
                correlation_id: out.correlation_id,
            }));
            return;
        }
        if self.in_flight.len() >= self.config.max_in_flight {
            out.reply.complete(Err(ClientError::Overloaded {
                destination: self.destination.clone(),
            }));
            return;
        }
        let header = RequestHeader {
            request_api_key: api_key.code(),
            request_api_version: out.version,
            correlation_id: out.correlation_id,
            client_id: Some(self.config.client_id.clone()),
            ..Default::default()
        };
        let encoded = match encode_request(&header, &out.body) {
            Ok(e) => e,
            Err(e) => {
                out.reply.complete(Err(ClientError::Encode(e.to_string())));
                return;
            }
        };
        self.maybe_reauthenticate().await;
        if self.conn.is_none() {
            if let Err(e) = self.connect().await {
                out.reply.complete(Err(e));
                return;
            }
        }
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let write = timeout(self.config.request_timeout, async {
            write_frame(&mut conn.wr, frame_chunks(encoded)).await?;
            // TLS holds what it encrypted until flushed (a no-op on plain TCP).
            conn.wr.flush().await
        })
        .await;
        let failed = match write {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(format!("write failed: {e}")),
            Err(_) => Some("write timed out".to_string()),
        };
        if let Some(reason) = failed {
            out.reply.complete(Err(ClientError::Disconnected {
                destination: self.destination.clone(),
                reason: reason.clone(),
            }));
            self.disconnect(&reason);
            return;
        }
        self.in_flight.insert(
            out.correlation_id,
            InFlight {
                api_key,
                version: out.version,
                deadline: Instant::now() + self.config.request_timeout,
                reply: out.reply,
            },
        );
    }

    async fn connect(&mut self) -> Result<(), ClientError> {
        if let Some(until) = self.backoff_until {
            if Instant::now() < until {
                return Err(ClientError::BackingOff {
                    destination: self.destination.clone(),
                });
            }
        }
        // The TLS handshake, when the listener speaks TLS, is part of the connect.
        let tls = self.config.security.tls.as_ref();
        let attempt = timeout(self.config.request_timeout, async {
            let stream = TcpStream::connect(self.destination.as_str()).await?;
            let _ = stream.set_nodelay(true);
            tls::client_halves(stream, tls, &self.destination).await
        })
        .await;
        let error = match attempt {
            Ok(Ok((rd, wr))) => {
                let mut conn = Conn {
                    rd,
                    wr,
                    buf: BytesMut::with_capacity(64 * 1024),
                    sasl: None,
                };
                match self.login(&mut conn).await {
                    Ok(()) => {
                        self.conn = Some(conn);
                        self.backoff_until = None;
                        self.connect_failures = 0;
                        return Ok(());
                    }
                    Err(reason) => ClientError::AuthenticationFailed {
                        destination: self.destination.clone(),
                        reason,
                    },
                }
            }
            Ok(Err(e)) => ClientError::ConnectFailed {
                destination: self.destination.clone(),
                reason: e.to_string(),
                refused: e.kind() == std::io::ErrorKind::ConnectionRefused,
            },
            Err(_) => ClientError::ConnectFailed {
                destination: self.destination.clone(),
                reason: "connect timed out".to_string(),
                refused: false,
            },
        };
        let shift = self.connect_failures.min(16);
        self.connect_failures = self.connect_failures.saturating_add(1);
        let backoff = self
            .config
            .reconnect_backoff
            .saturating_mul(1 << shift)
            .min(self.config.reconnect_backoff_max);
        self.backoff_until = Some(Instant::now() + backoff);
        debug!(destination = %self.destination, reason = %error, ?backoff, "connect failed");
        Err(error)
    }

    /// Logs in on a SASL listener right after connecting (nothing to do on others). A
    /// failure is logged once per distinct reason, not on every retry.
    async fn login(&mut self, conn: &mut Conn) -> Result<(), String> {
        let Some(sasl) = self.config.security.sasl.as_ref() else {
            return Ok(());
        };
        let previous = conn.sasl.map(|(login, _)| login);
        let exchange = super::sasl::client::authenticate(
            &mut conn.rd,
            &mut conn.wr,
            &mut conn.buf,
            sasl,
            &self.config.client_id,
            self.config.max_frame_bytes,
            previous,
        );
        let result = match timeout(self.config.request_timeout, exchange).await {
            Ok(Ok(login)) => Ok(login),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("the SASL exchange timed out".to_string()),
        };
        match result {
            Ok(login) => {
                self.sasl_failure_logged = None;
                // Renew at 85% of the session, as Kafka's clients do (85-95%).
                let renew = login
                    .session_lifetime
                    .map(|l| Instant::now() + l.mul_f64(0.85));
                conn.sasl = Some((login, renew));
                Ok(())
            }
            Err(reason) => {
                if self.sasl_failure_logged.as_deref() != Some(reason.as_str()) {
                    warn!(destination = %self.destination, mechanism = %sasl.mechanism,
                        user = %sasl.username, "SASL authentication failed: {reason}");
                    self.sasl_failure_logged = Some(reason.clone());
                }
                Err(reason)
            }
        }
    }

    /// Renews the SASL session (KIP-368) once it is due and nothing is in flight (the
    /// exchange then owns the connection); a failed renewal drops the connection, and the
    /// next request logs in afresh.
    async fn maybe_reauthenticate(&mut self) {
        let due = self
            .conn
            .as_ref()
            .and_then(|c| c.sasl)
            .and_then(|(_, renew)| renew)
            .is_some_and(|renew| renew <= Instant::now());
        if !due || !self.in_flight.is_empty() {
            return;
        }
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        match self.login(&mut conn).await {
            Ok(()) => self.conn = Some(conn),
            Err(reason) => self.disconnect(&format!("SASL re-authentication failed: {reason}")),
        }
    }

    fn read_responses(&mut self) {
        loop {
            let Some(conn) = self.conn.as_mut() else {
                return;
            };
            let frame = match split_frame(&mut conn.buf, self.config.max_frame_bytes) {
                Ok(Some(f)) => f,
                Ok(None) => return,
                Err(e) => return self.disconnect(&format!("bad response frame: {e}")),
            };
            if frame.len() < 4 {
                return self.disconnect("response frame without a header");
            }
            let correlation_id = (&frame[..4]).get_i32();
            let Some(f) = self.in_flight.remove(&correlation_id) else {
                // Kafka closes on an unknown correlation id: the stream is out of step.
                return self.disconnect(&format!(
                    "response to unknown correlation id {correlation_id}"
                ));
            };
            let result = decode_response(f.api_key, f.version, frame)
                .map(|(_, body)| body)
                .map_err(|e| ClientError::Decode(e.to_string()));
            f.reply.complete(result);
        }
    }

    fn expire(&mut self) {
        let now = Instant::now();
        let expired: Vec<i32> = self
            .in_flight
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(c, _)| *c)
            .collect();
        if expired.is_empty() {
            return;
        }
        for c in expired {
            if let Some(f) = self.in_flight.remove(&c) {
                f.reply.complete(Err(ClientError::Timeout {
                    destination: self.destination.clone(),
                }));
            }
        }
        self.disconnect("request timed out");
    }

    /// The peer closed the connection (or reset it). With requests in flight, reconnect at
    /// once: refused means the peer's process is gone, and the requests fail with
    /// [`ClientError::PeerGone`]; otherwise (reconnected, or the connect failed some other
    /// way) they fail as disconnected and the caller retries as usual.
    async fn closed_by_peer(&mut self, reason: &str) {
        if self.in_flight.is_empty() {
            return self.disconnect(reason);
        }
        self.conn = None;
        debug!(destination = %self.destination, %reason, "closed by peer; reconnecting");
        let gone = match self.connect().await {
            Ok(()) => false,
            Err(e) => e.is_peer_gone(),
        };
        let destination = self.destination.clone();
        for (_, f) in self.in_flight.drain() {
            let (destination, reason) = (destination.clone(), reason.to_string());
            f.reply.complete(Err(if gone {
                ClientError::PeerGone {
                    destination,
                    reason,
                }
            } else {
                ClientError::Disconnected {
                    destination,
                    reason,
                }
            }));
        }
    }

    fn disconnect(&mut self, reason: &str) {
        if self.conn.take().is_some() {
            debug!(destination = %self.destination, %reason, "disconnected");
        }
        for (_, f) in self.in_flight.drain() {
            f.reply.complete(Err(ClientError::Disconnected {
                destination: self.destination.clone(),
                reason: reason.to_string(),
            }));
        }
    }
}

fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400)
}
