//! The web console (issue 34): a read-only view of the cluster served on the node's HTTP
//! listener beside `/metrics` (`metrics.port`) when `console.enable` is true (the embedded
//! default sets it). One page (`assets/`: HTML, plain JavaScript, CSS, embedded with
//! `include_str!` and served as one document, nothing fetched from the network) polls JSON
//! endpoints:
//!
//! - `/api/overview` — cluster id, features, brokers (state, rack, partitions led), the
//!   quorum (leader, epoch, each voter's and observer's lag), partition counts by health,
//!   this node's Produce/Fetch request counters (the page charts their rates), each broker's
//!   bytes in and out counters (this node's, and those `console.metrics.endpoints` names);
//! - `/api/topics?page=N` and `/api/topics/<name>?page=N` — a page of topics (with each
//!   one's size over its replicas and the sum of its end offsets); one topic's
//!   partitions (leader, replicas, ISR, ELR, log start, HW, LSO) and its config overrides;
//! - `/api/groups` and `/api/groups/<id>` — the groups; one group's members, assignments,
//!   committed offsets and lag per partition (a share group's: its members, the partitions
//!   each shares, and each partition's start offset and lag; a streams group's: its members
//!   with their active, standby and warm-up tasks, and its committed offsets and lag);
//! - `/api/transactions` — every transaction the coordinators hold (state, age, partitions)
//!   and the hanging ones by `kafka-transactions find-hanging`'s rule (`transactions.rs`);
//! - `/api/health` — `kraftd doctor`'s findings.
//!
//! Where each comes from and what it costs: `image_api.rs` (the node's metadata image),
//! `client.rs` (the Kafka APIs a client uses), `health.rs` (the doctor's rules).
//!
//! Cost per open page (each polls its one endpoint every 2 s): the overview reads the
//! image's summary (one O(partitions) walk per metadata change, shared by all pages) and
//! the shared health snapshot; a topics page is 50 topics of the image plus, for their sizes
//! and records/s, one DescribeLogDirs per broker holding a replica of them and one
//! ListOffsets per leader (O(partitions of those 50 topics)); a topic page 50
//! partitions plus 3 ListOffsets per leader of those and one DescribeLogDirs per broker
//! holding a replica of them (each replica's size); the group list one ListGroups per
//! broker; a group page FindCoordinator, DescribeGroups, OffsetFetch and one ListOffsets per
//! leader of its partitions; the transactions page one ListTransactions and one
//! DescribeTransactions per broker, plus, at most every 30 s, DescribeProducers to each leader
//! for every partition (O(partitions); one scan per viewer); the health page (and the
//! overview's quorum and request rates)
//! one diagnosis per 2 s whatever the number of pages: DescribeQuorum plus the doctor's
//! DescribeCluster, Metadata and DescribeConfigs (O(partitions), as `kraftd doctor`), and a
//! GET `/metrics` of each node `console.metrics.endpoints` lists. The
//! page itself is ~13 KB, sent once per load.
//!
//! Security: on a node with an authorizer (`authorizer.class.name`) the console asks for a
//! SASL login (`login.rs`: checked by the broker itself, over its SASL listener) and shows
//! only what that principal may DESCRIBE; `POST /api/login` (form fields `username`,
//! `password`, `mechanism`; refused with 429 and `Retry-After` after too many failures from
//! the address or for the username, `login::LoginGuard`), `POST /api/logout`, and
//! `/api/whoami`. A node with an
//! authorizer but no SASL listener offering a password mechanism (or a controller-only node)
//! serves no console data (HTTP 403 with a one-line reason): it must never show what ACLs
//! would hide.

mod client;
pub mod config;
mod health;
mod image_api;
pub mod login;
mod transactions;

use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use kraftd_controller::auth::RequestAuth;
use kraftd_controller::control::acl::RESOURCE_TYPE_TOPIC;
use kraftd_controller::publisher::OPERATION_DESCRIBE;
use kraftd_controller::MetadataImage;
use serde_json::{json, Value};

use login::{LoginConfig, LoginGuard, Session, Sessions};

pub use config::ConsoleConfig;
pub use health::HealthSources;

/// `console.enable`: kraftd's own setting (Kafka has no console).
pub const CONSOLE_ENABLE: &str = "console.enable";
/// `console.metrics.endpoints`: the nodes' `/metrics` the health page reads (kraftd's own).
pub const CONSOLE_METRICS_ENDPOINTS: &str = "console.metrics.endpoints";

const INDEX_HTML: &str = include_str!("assets/index.html");
const CONSOLE_JS: &str = include_str!("assets/console.js");
const CONSOLE_CSS: &str = include_str!("assets/console.css");

/// The page of node `node_id` with its stylesheet and script inlined: one request before
/// the first paint (the embedded default's target is under 200 ms).
fn page_html(node_id: i32) -> String {
    INDEX_HTML
        .replace("/* console.css */", CONSOLE_CSS)
        .replace("/* console.js */", CONSOLE_JS)
        .replace(
            "<span id=\"node-id\">?</span>",
            &format!("<span id=\"node-id\">{node_id}</span>"),
        )
}

/// The one line a node with an authorizer but no way to log in answers with.
pub const REFUSED_WITH_AUTHORIZER: &str = "the console is off on this node: the cluster has an \
     authorizer, and the node has no SASL listener with SCRAM or PLAIN to log in through \
     (ask a broker's console that has one)\n";

/// An HTTP request as the console needs it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `GET` or `POST`.
    pub method: String,
    /// Path and query.
    pub target: String,
    /// The `Cookie:` header, if any.
    pub cookie: Option<String>,
    /// The body of a POST.
    pub body: String,
    /// The browser's address.
    pub peer: IpAddr,
}

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: &'static str,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    /// A `Set-Cookie:` header value.
    pub set_cookie: Option<String>,
    /// A `Retry-After:` header's seconds (a refused login, 429).
    pub retry_after: Option<u64>,
}

impl Response {
    fn json(value: &Value) -> Response {
        Response::json_status("200 OK", value)
    }

    fn json_status(status: &'static str, value: &Value) -> Response {
        Response {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
            set_cookie: None,
            retry_after: None,
        }
    }

    pub fn text(status: &'static str, text: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: text.as_bytes().to_vec(),
            set_cookie: None,
            retry_after: None,
        }
    }
}

/// Who is looking: anyone (no authorizer), or a signed-in principal.
enum Viewer {
    All,
    User {
        session: Arc<Session>,
        auth: RequestAuth,
    },
}

impl Viewer {
    fn may_describe_topic(&self, name: &str) -> bool {
        match self {
            Viewer::All => true,
            Viewer::User { auth, .. } => {
                auth.authorize(OPERATION_DESCRIBE, RESOURCE_TYPE_TOPIC, name)
            }
        }
    }

    /// What DescribeQuorum and the doctor's cluster-wide reads require.
    fn may_describe_cluster(&self) -> bool {
        match self {
            Viewer::All => true,
            Viewer::User { auth, .. } => auth.authorize_cluster(OPERATION_DESCRIBE),
        }
    }
}

/// The console of one node.
pub struct Console {
    config: ConsoleConfig,
    /// [`page_html`], built once.
    page: String,
    client: Option<client::KafkaAccess>,
    /// The summary of the last image seen, recomputed only when the image changes.
    summary: Mutex<Option<(Arc<MetadataImage>, Arc<image_api::Summary>)>>,
    health: tokio::sync::Mutex<health::HealthState>,
    sessions: Sessions,
    /// Failed logins by address and username (the brute-force guard).
    guard: LoginGuard,
    /// The last hanging-transaction scan as this node's own client sees it (a signed-in
    /// user's is kept in its session: what it may describe differs).
    hanging: tokio::sync::Mutex<transactions::HangingScan>,
}

impl Console {
    pub fn new(config: ConsoleConfig) -> Console {
        let client = config
            .client_listener
            .as_ref()
            .map(|(name, _, security)| client::KafkaAccess::new(name.clone(), security.clone()));
        Console {
            page: page_html(config.node_id),
            config,
            client,
            summary: Mutex::new(None),
            health: tokio::sync::Mutex::new(health::HealthState::default()),
            sessions: Sessions::default(),
            guard: LoginGuard::default(),
            hanging: tokio::sync::Mutex::new(transactions::HangingScan::default()),
        }
    }

    /// Answers one HTTP request: the page, the login, and the JSON as the viewer may see it.
    pub async fn handle(&self, request: &Request) -> Response {
        let target = request.target.as_str();
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let viewer = if self.config.authorizer {
            let Some(login) = &self.config.login else {
                return Response::text("403 Forbidden", REFUSED_WITH_AUTHORIZER);
            };
            match (request.method.as_str(), path) {
                ("POST", "/api/login") => return self.login(login, request).await,
                ("POST", "/api/logout") => {
                    if let Some(token) = request
                        .cookie
                        .as_deref()
                        .and_then(|c| login::cookie(c, login::COOKIE))
                    {
                        self.sessions.remove(token);
                    }
                    let mut r = Response::json(&json!({"logged_out": true}));
                    r.set_cookie = Some(format!(
                        "{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
                        login::COOKIE
                    ));
                    return r;
                }
                ("GET", "/" | "/index.html") => return self.page(),
                _ => {}
            }
            let session = request
                .cookie
                .as_deref()
                .and_then(|c| login::cookie(c, login::COOKIE))
                .and_then(|token| self.sessions.get(token));
            let Some(session) = session else {
                let mechanisms: Vec<&str> = login.mechanisms.iter().map(|m| m.name()).collect();
                return Response::json_status(
                    "401 Unauthorized",
                    &json!({"login_required": true, "mechanisms": mechanisms}),
                );
            };
            let auth = session.auth(&login.auth, request.peer);
            Viewer::User { session, auth }
        } else {
            Viewer::All
        };
        if request.method != "GET" {
            return Response::text("405 Method Not Allowed", "only GET here\n");
        }
        let page = query_page(query);
        match path {
            "/" | "/index.html" => self.page(),
            "/api/whoami" => Response::json(&match &viewer {
                Viewer::All => json!({"principal": null}),
                Viewer::User { session, .. } => json!({"principal": session.principal.to_string()}),
            }),
            "/api/overview" => Response::json(&self.overview(&viewer).await),
            "/api/topics" => Response::json(&self.topics(&viewer, page).await),
            "/api/groups" => match self.access(&viewer) {
                Some((c, _)) => Response::json(&c.groups(&self.image()).await),
                None => no_client(),
            },
            "/api/transactions" => {
                let Some((client, _)) = self.access(&viewer) else {
                    return no_client();
                };
                let scan = match &viewer {
                    Viewer::All => &self.hanging,
                    Viewer::User { session, .. } => &session.hanging,
                };
                Response::json(
                    &client
                        .transactions_page(
                            &self.image(),
                            scan,
                            transactions::DEFAULT_MAX_TIMEOUT_MS,
                        )
                        .await,
                )
            }
            "/api/health" => {
                if !viewer.may_describe_cluster() {
                    return needs_cluster_describe();
                }
                let snapshot = self.health.lock().await.current(&self.config.health).await;
                Response::json(&snapshot.health)
            }
            _ => {
                if let Some(name) = path.strip_prefix("/api/topics/") {
                    return self.topic(&viewer, &percent_decode(name), page).await;
                }
                if let Some(id) = path.strip_prefix("/api/groups/") {
                    return self.group(&viewer, &percent_decode(id)).await;
                }
                Response::text("404 Not Found", "no such page\n")
            }
        }
    }

    fn page(&self) -> Response {
        Response {
            status: "200 OK",
            content_type: "text/html; charset=utf-8",
            body: self.page.as_bytes().to_vec(),
            set_cookie: None,
            retry_after: None,
        }
    }

    /// `POST /api/login`: a session for a user the broker lets in.
    async fn login(&self, login: &LoginConfig, request: &Request) -> Response {
        let fields = login::form_fields(&request.body);
        let field = |k: &str| fields.get(k).map(String::as_str).unwrap_or("");
        let attempt =
            match self
                .guard
                .admit(request.peer, field("username"), std::time::Instant::now())
            {
                Ok(attempt) => attempt,
                Err(wait) => {
                    // Whole seconds, rounded up: a client retrying on time is admitted.
                    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                    tracing::info!(peer = %request.peer, username = field("username"),
                    "console login refused: too many failures");
                    let mut r = Response::json_status(
                        "429 Too Many Requests",
                        &json!({"error": format!(
                            "too many failed logins from {} or for {:?}: at most {} per {} s; \
                             try again in {secs} s",
                            request.peer,
                            field("username"),
                            login::MAX_FAILURES,
                            login::FAILURE_WINDOW.as_secs()
                        )}),
                    );
                    r.retry_after = Some(secs);
                    return r;
                }
            };
        match self
            .sessions
            .login(
                login,
                field("username"),
                field("password"),
                field("mechanism"),
            )
            .await
        {
            Ok(token) => {
                self.guard.succeeded(attempt);
                let mut r = Response::json(&json!({
                    "principal": kraftd_net::KafkaPrincipal::user(field("username")).to_string(),
                }));
                r.set_cookie = Some(format!(
                    "{}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={}",
                    login::COOKIE,
                    login::MAX_AGE.as_secs()
                ));
                r
            }
            Err(e) => Response::json_status("401 Unauthorized", &json!({"error": e.to_string()})),
        }
    }

    /// The client the viewer's pages ask the brokers through, and the bootstrap address:
    /// the console's own without an authorizer, the user's login otherwise.
    fn access<'a>(&'a self, viewer: &'a Viewer) -> Option<(&'a client::KafkaAccess, String)> {
        match viewer {
            Viewer::All => {
                let (_, bootstrap, _) = self.config.client_listener.as_ref()?;
                Some((self.client.as_ref()?, bootstrap.clone()))
            }
            Viewer::User { session, .. } => {
                let login = self.config.login.as_ref()?;
                Some((session.access.as_ref(), login.address.clone()))
            }
        }
    }

    fn image(&self) -> Arc<MetadataImage> {
        (self.config.image)()
    }

    /// The image's summary, kept while the image is the same (persistent images: a
    /// pointer comparison).
    fn summary(&self, image: &Arc<MetadataImage>) -> Arc<image_api::Summary> {
        let mut cached = self.summary.lock().expect("console summary");
        if let Some((seen, summary)) = cached.as_ref() {
            if Arc::ptr_eq(seen, image) {
                return Arc::clone(summary);
            }
        }
        let summary = Arc::new(image_api::Summary::of(image));
        *cached = Some((Arc::clone(image), Arc::clone(&summary)));
        summary
    }

    async fn overview(&self, viewer: &Viewer) -> Value {
        let image = self.image();
        if !viewer.may_describe_cluster() {
            // Counts over the topics the viewer may describe only, and nothing cluster-wide.
            let summary =
                image_api::Summary::of_visible(&image, &|name| viewer.may_describe_topic(name));
            let mut value = image_api::overview(&self.config.cluster_id, &image, &summary);
            value["node_id"] = json!(self.config.node_id);
            value["restricted"] = json!(
                "counts cover the topics you may describe; the quorum, request rates and \
                 health need DESCRIBE on the cluster"
            );
            return value;
        }
        let summary = self.summary(&image);
        let mut value = image_api::overview(&self.config.cluster_id, &image, &summary);
        let snapshot = self.health.lock().await.current(&self.config.health).await;
        value["node_id"] = json!(self.config.node_id);
        value["quorum"] = snapshot
            .quorum
            .as_ref()
            .map(|q| health::quorum_json(q, kraftd_log::clock::unix_ms()))
            .unwrap_or(Value::Null);
        value["requests"] = snapshot.requests;
        value["bytes"] = snapshot.bytes;
        value["health_status"] = snapshot.health["status"].clone();
        value
    }

    /// A page of the topic list: the image's figures, and each topic's size on disk and
    /// end offsets asked of the brokers (as the viewer, so a user without DESCRIBE on the
    /// cluster gets no sizes, as from `kafka-log-dirs`).
    async fn topics(&self, viewer: &Viewer, page: usize) -> Value {
        let image = self.image();
        let mut value =
            image_api::topics_page(&image, page, &|name| viewer.may_describe_topic(name));
        let (Some((client, _)), Some(topics)) =
            (self.access(viewer), value["topics"].as_array_mut())
        else {
            return value;
        };
        let names: Vec<String> = topics
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        let totals = client.topic_totals(&image, &names).await;
        for t in topics.iter_mut() {
            let Some(figures) = t["name"].as_str().and_then(|n| totals.get(n)) else {
                continue;
            };
            t["size_bytes"] = json!(figures.size_bytes);
            t["end_offsets"] = json!(figures.end_offsets);
        }
        value
    }

    async fn topic(&self, viewer: &Viewer, name: &str, page: usize) -> Response {
        // Authorization first, as Kafka's Metadata: a topic the viewer may not describe is
        // refused whether it exists or not.
        if !viewer.may_describe_topic(name) {
            return Response::text(
                "403 Forbidden",
                &format!("not authorized to describe topic {name}\n"),
            );
        }
        let image = self.image();
        let Some(mut value) = image_api::topic(&image, name, page) else {
            return Response::text("404 Not Found", &format!("no topic {name}\n"));
        };
        let access = self.access(viewer);
        if let (Some((client, _)), Some(partitions)) = (access, value["partitions"].as_array_mut())
        {
            let indexes: Vec<i32> = partitions
                .iter()
                .filter_map(|p| p["partition"].as_i64())
                .filter_map(|p| i32::try_from(p).ok())
                .collect();
            let (offsets, sizes) = tokio::join!(
                client.partition_offsets(&image, name, &indexes),
                client.replica_sizes(&image, name, &indexes),
            );
            for p in partitions.iter_mut() {
                if let Some(i) = p["partition"].as_i64().and_then(|i| i32::try_from(i).ok()) {
                    let replica_sizes: serde_json::Map<String, Value> = sizes
                        .range((i, i32::MIN)..=(i, i32::MAX))
                        .map(|((_, broker), bytes)| (broker.to_string(), json!(bytes)))
                        .collect();
                    p["sizes"] = Value::Object(replica_sizes);
                }
                let Some(o) = p["partition"]
                    .as_i64()
                    .and_then(|i| i32::try_from(i).ok())
                    .and_then(|i| offsets.get(&i))
                else {
                    continue;
                };
                p["log_start"] = json!(o.log_start);
                p["high_watermark"] = json!(o.high_watermark);
                p["last_stable"] = json!(o.last_stable);
            }
        }
        Response::json(&value)
    }

    async fn group(&self, viewer: &Viewer, id: &str) -> Response {
        let Some((client, bootstrap)) = self.access(viewer) else {
            return no_client();
        };
        match client.group(&self.image(), id, &bootstrap).await {
            Ok(v) => Response::json(&v),
            Err(e) => Response::json(&json!({"group_id": id, "error": e.to_string()})),
        }
    }
}

fn needs_cluster_describe() -> Response {
    Response::text(
        "403 Forbidden",
        "the health page needs DESCRIBE on the cluster (as DescribeQuorum does)\n",
    )
}

fn no_client() -> Response {
    Response::text(
        "503 Service Unavailable",
        "this node has no client listener: ask a broker's console\n",
    )
}

/// `page=N` of a query string, 0 when absent or not a number.
fn query_page(query: &str) -> usize {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix("page="))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A path segment's `%XX` escapes decoded (topic and group names are URL-encoded by the
/// page); an invalid escape is kept as written.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(b) = hex {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_pages_decode_from_the_url() {
        assert_eq!(percent_decode("my%20group"), "my group");
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("t.1_x"), "t.1_x");
        assert_eq!(percent_decode("%41"), "A");
        assert_eq!(query_page("page=3"), 3);
        assert_eq!(query_page("x=1&page=2"), 2);
        assert_eq!(query_page("page=-1"), 0);
        assert_eq!(query_page(""), 0);
    }
}
