//! The web console (issue 34): a read-only view of the cluster served on the node's HTTP
//! listener beside `/metrics` (`metrics.port`) when `console.enable` is true (the embedded
//! default sets it). One page (`assets/`: HTML, plain JavaScript, CSS, embedded with
//! `include_str!` and served as one document, nothing fetched from the network) polls JSON
//! endpoints:
//!
//! - `/api/overview` — cluster id, features, brokers (state, rack, partitions led), the
//!   quorum (leader, epoch, each voter's and observer's lag), partition counts by health,
//!   this node's Produce/Fetch request counters (the page charts their rates);
//! - `/api/topics?page=N` and `/api/topics/<name>?page=N` — a page of topics; one topic's
//!   partitions (leader, replicas, ISR, ELR, log start, HW, LSO) and its config overrides;
//! - `/api/groups` and `/api/groups/<id>` — the groups; one group's members, assignments,
//!   committed offsets and lag per partition;
//! - `/api/health` — `kraftd doctor`'s findings.
//!
//! Where each comes from and what it costs: `image_api.rs` (the node's metadata image),
//! `client.rs` (the Kafka APIs a client uses), `health.rs` (the doctor's rules).
//!
//! Cost per open page (each polls its one endpoint every 2 s): the overview reads the
//! image's summary (one O(partitions) walk per metadata change, shared by all pages) and
//! the shared health snapshot; a topics page is 50 topics of the image; a topic page 50
//! partitions plus 3 ListOffsets per leader of those; the group list one ListGroups per
//! broker; a group page FindCoordinator, DescribeGroups, OffsetFetch and one ListOffsets per
//! leader of its partitions; the health page (and the overview's quorum and request rates)
//! one diagnosis per 2 s whatever the number of pages: DescribeQuorum plus the doctor's
//! DescribeCluster, Metadata and DescribeConfigs (O(partitions), as `kraftd doctor`). The
//! page itself is ~13 KB, sent once per load.
//!
//! Security in this slice: a node with an authorizer (`authorizer.class.name`) serves no
//! console data (HTTP 403 with a one-line reason), since the console has no login yet and
//! must never show what ACLs would hide.

mod client;
mod health;
mod image_api;

use std::sync::{Arc, Mutex};

use kraftd_controller::MetadataImage;
use kraftd_net::ClientSecurity;
use serde_json::{json, Value};

pub use health::HealthSources;

/// `console.enable`: kraftd's own setting (Kafka has no console).
pub const CONSOLE_ENABLE: &str = "console.enable";

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

/// The one line a node with an authorizer answers with.
pub const REFUSED_WITH_AUTHORIZER: &str = "the console is off on a cluster with an authorizer: \
     it has no SASL/mTLS login yet and would show what ACLs hide\n";

/// An HTTP answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    pub status: &'static str,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Response {
    fn json(value: &Value) -> Response {
        Response {
            status: "200 OK",
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }

    fn text(status: &'static str, text: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: text.as_bytes().to_vec(),
        }
    }
}

/// The node's current metadata image (the broker's, else the controller's committed).
pub type ImageSource = Arc<dyn Fn() -> Arc<MetadataImage> + Send + Sync>;

/// Where the console reads from: the node's image and the addresses it asks.
pub struct ConsoleConfig {
    pub node_id: i32,
    pub cluster_id: String,
    pub image: ImageSource,
    /// A client listener of this node (name, `host:port`) and how to connect to it; `None`
    /// on a controller-only node (no group or offset pages then).
    pub client_listener: Option<(String, String, ClientSecurity)>,
    pub health: HealthSources,
    /// `authorizer.class.name` is set: everything but the refusal is off.
    pub authorizer: bool,
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
        }
    }

    /// Answers a GET of `target` (path and query).
    pub async fn get(&self, target: &str) -> Response {
        if self.config.authorizer {
            return Response::text("403 Forbidden", REFUSED_WITH_AUTHORIZER);
        }
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let page = query_page(query);
        match path {
            "/" | "/index.html" => Response {
                status: "200 OK",
                content_type: "text/html; charset=utf-8",
                body: self.page.as_bytes().to_vec(),
            },
            "/api/overview" => Response::json(&self.overview().await),
            "/api/topics" => Response::json(&image_api::topics_page(&self.image(), page)),
            "/api/groups" => match &self.client {
                Some(c) => Response::json(&c.groups(&self.image()).await),
                None => no_client(),
            },
            "/api/health" => {
                let snapshot = self.health.lock().await.current(&self.config.health).await;
                Response::json(&snapshot.health)
            }
            _ => {
                if let Some(name) = path.strip_prefix("/api/topics/") {
                    return self.topic(&percent_decode(name), page).await;
                }
                if let Some(id) = path.strip_prefix("/api/groups/") {
                    return self.group(&percent_decode(id)).await;
                }
                Response::text("404 Not Found", "no such page\n")
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

    async fn overview(&self) -> Value {
        let image = self.image();
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
        value["health_status"] = snapshot.health["status"].clone();
        value
    }

    async fn topic(&self, name: &str, page: usize) -> Response {
        let image = self.image();
        let Some(mut value) = image_api::topic(&image, name, page) else {
            return Response::text("404 Not Found", &format!("no topic {name}\n"));
        };
        if let (Some(client), Some(partitions)) = (&self.client, value["partitions"].as_array_mut())
        {
            let indexes: Vec<i32> = partitions
                .iter()
                .filter_map(|p| p["partition"].as_i64())
                .filter_map(|p| i32::try_from(p).ok())
                .collect();
            let offsets = client.partition_offsets(&image, name, &indexes).await;
            for p in partitions.iter_mut() {
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

    async fn group(&self, id: &str) -> Response {
        let (Some(client), Some((_, bootstrap, _))) = (&self.client, &self.config.client_listener)
        else {
            return no_client();
        };
        match client.group(&self.image(), id, bootstrap).await {
            Ok(v) => Response::json(&v),
            Err(e) => Response::json(&json!({"group_id": id, "error": e.to_string()})),
        }
    }
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
