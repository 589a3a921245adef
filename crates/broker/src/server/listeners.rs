//! A broker's client listeners (Kafka's `SocketServer` and its `Acceptor`s): each bound at
//! start, so a port clash fails the start at once, but listening and accepting only once the
//! broker has caught up with the metadata log and is unfenced ([`ReadyGate`]); then served
//! by [`kraftd_net::serve`] with this broker's [`KafkaApis`]. What each listener advertises
//! is what the broker registers with.

use std::sync::Arc;

use kraftd_net::{serve, ServerConfig};
use kraftd_protocol::messages::broker_registration_request::Listener;
use tokio::net::TcpSocket;
use tokio::sync::watch;
use tracing::{info, warn};

use super::apis::KafkaApis;
use super::apis_context::BrokerApisContext;
use super::lifecycle::LifecycleState;
use super::metadata_task::MetadataStatus;
use crate::metadata::MetadataCache;

/// One client listener: its name, the socket it is bound to and what it advertises.
#[derive(Debug)]
pub struct BrokerListener {
    pub name: String,
    /// Its name and security protocol.
    pub security: kraftd_net::ListenerSecurity,
    /// Bound, not listening: the port is taken (a clash fails the start at once) but a
    /// client's connection is refused until the broker serves (see [`serve_when_ready`]).
    pub socket: TcpSocket,
    pub advertised_host: String,
    pub advertised_port: u16,
}

impl BrokerListener {
    /// Binds listener `name` to `bind` (`host:port`, each address it resolves to tried in
    /// turn, with `SO_REUSEADDR` as tokio's `TcpListener::bind` sets it) without listening:
    /// connections are refused until the broker serves (see [`serve_when_ready`]).
    /// `advertised_port` 0 advertises the port bound.
    pub async fn bind(
        name: String,
        security: kraftd_net::ListenerSecurity,
        bind: &str,
        advertised_host: String,
        advertised_port: u16,
    ) -> std::io::Result<BrokerListener> {
        let socket = bind_unlistened(bind).await?;
        let advertised_port = if advertised_port == 0 {
            socket.local_addr()?.port()
        } else {
            advertised_port
        };
        Ok(BrokerListener {
            name,
            security,
            socket,
            advertised_host,
            advertised_port,
        })
    }

    /// The listener as the broker registers it with the controller.
    pub(super) fn registration(&self) -> Listener {
        Listener {
            name: self.name.clone(),
            host: self.advertised_host.clone(),
            port: self.advertised_port,
            security_protocol: self.security.protocol.id(),
            ..Default::default()
        }
    }
}

/// A socket bound to `bind` that does not listen yet (see [`BrokerListener::bind`]).
async fn bind_unlistened(bind: &str) -> std::io::Result<TcpSocket> {
    let mut last = None;
    for addr in tokio::net::lookup_host(bind).await? {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        socket.set_reuseaddr(true)?;
        match socket.bind(addr) {
            Ok(()) => return Ok(socket),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{bind} resolves to no address"),
        )
    }))
}

/// What the broker waits for before its client listeners accept connections.
pub(super) struct ReadyGate {
    pub(super) node_id: i32,
    pub(super) lifecycle: watch::Receiver<LifecycleState>,
    pub(super) metadata: watch::Receiver<MetadataStatus>,
    pub(super) cache: MetadataCache,
}

impl ReadyGate {
    /// Ready when the controller has unfenced this broker's registration and the metadata
    /// the broker serves shows it so: a client's first Metadata answer then names this
    /// broker alive (and a controller id), never the empty or stale view of a broker still
    /// catching up, which left clients such as librdkafka waiting for a controller.
    fn ready(&self) -> bool {
        let state = *self.lifecycle.borrow();
        if state.fenced || state.broker_epoch < 0 {
            return false;
        }
        self.cache
            .image()
            .cluster
            .broker(self.node_id)
            .is_some_and(|b| b.epoch == state.broker_epoch && !b.fenced)
    }

    async fn wait(&mut self) {
        while !self.ready() {
            tokio::select! {
                changed = self.lifecycle.changed() => if changed.is_err() { std::future::pending::<()>().await },
                changed = self.metadata.changed() => if changed.is_err() { std::future::pending::<()>().await },
            }
        }
    }
}

/// The accept backlog of a client listener: what tokio's `TcpListener::bind` asks for
/// (`socket.listen.backlog.size` is accepted without effect, docs/configs.md).
const LISTEN_BACKLOG: u32 = 1024;

/// Listens on the client listeners and serves them once `gate` opens, as Kafka's
/// `BrokerServer` enables request processing (and its `Acceptor` opens a configured port)
/// only once the broker has caught up and is unfenced. Until then the bound sockets do not
/// listen, so a connection is refused at once: a client tries another broker or backs off.
/// Listening early instead let the kernel accept connections nobody answered: a broker
/// restarted before its previous incarnation's session expired (registration refused with
/// DUPLICATE_BROKER_REGISTRATION, for as long as controller failovers renew that session)
/// held librdkafka's requests for its 10 s ApiVersions timeout, again and again, while it
/// was the leader its clients' metadata named (the chaos harness's seed 12, docs/chaos.md).
/// Aborting this task closes every listener and connection.
pub(super) async fn serve_when_ready(
    mut gate: ReadyGate,
    listeners: Vec<BrokerListener>,
    context: Arc<BrokerApisContext>,
    server: ServerConfig,
    serving: watch::Sender<bool>,
    stopped: watch::Sender<Option<String>>,
) {
    gate.wait().await;
    let table = Arc::new(KafkaApis::api_versions_for(&context));
    let mut servers = tokio::task::JoinSet::new();
    for l in listeners {
        let socket = match l.socket.listen(LISTEN_BACKLOG) {
            Ok(socket) => socket,
            Err(e) => {
                let reason = format!("listener {} cannot listen: {e}", l.name);
                warn!(node = gate.node_id, %reason, "shutting down");
                let _ = stopped.send(Some(reason));
                return;
            }
        };
        info!(node = gate.node_id, listener = %l.name, "broker listener serving");
        let apis = Arc::new(KafkaApis::new(l.name, Arc::clone(&context)));
        let server = ServerConfig {
            security: l.security,
            ..server.clone()
        };
        servers.spawn(serve(socket, Arc::clone(&table), server, apis));
    }
    let _ = serving.send(true);
    while servers.join_next().await.is_some() {}
}
