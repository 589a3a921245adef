//! The `/metrics` endpoint (Prometheus text format) every node serves on `metrics.port`:
//! Raft's `raft-metrics` and, on brokers, `broker-metadata-metrics`; and, with
//! `console.enable`, the web console's page and JSON (`crate::console`) on every other path.
//! A deliberately tiny HTTP/1.1 responder: one GET per connection, nothing else understood.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tracing::{debug, info};

use crate::console::{Console, Response};

/// The most bytes of a request read before answering (a scrape's GET is far smaller).
const MAX_REQUEST_BYTES: usize = 8192;

/// Serves `render()` at `/metrics`, and `console` (when on) at every other path, on
/// `listener` until the task is dropped.
pub async fn serve(
    listener: TcpListener,
    render: Arc<dyn Fn() -> String + Send + Sync>,
    console: Option<Arc<Console>>,
) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, console = console.is_some(), "serving /metrics");
    }
    loop {
        let Ok((mut stream, peer)) = listener.accept().await else {
            continue;
        };
        let render = Arc::clone(&render);
        let console = console.clone();
        tokio::spawn(async move {
            let mut buf = Vec::with_capacity(1024);
            let mut chunk = [0u8; 1024];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_REQUEST_BYTES {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let request = String::from_utf8_lossy(&buf);
            // `GET <target> HTTP/1.1`: the target is the second word of the first line.
            let target = request
                .strip_prefix("GET ")
                .and_then(|rest| rest.split_whitespace().next());
            let response = match (target, &console) {
                (Some(t), _) if t == "/metrics" || t.starts_with("/metrics?") => Response {
                    status: "200 OK",
                    content_type: "text/plain; version=0.0.4",
                    body: render().into_bytes(),
                },
                (Some(target), Some(console)) => console.get(target).await,
                _ => {
                    debug!(%peer, "not a GET /metrics");
                    Response {
                        status: "404 Not Found",
                        content_type: "text/plain; version=0.0.4",
                        body: b"only GET /metrics is served\n".to_vec(),
                    }
                }
            };
            let head = format!(
                "HTTP/1.1 {}\r\nContent-Type: {}\r\nCache-Control: no-store\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                response.status,
                response.content_type,
                response.body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&response.body).await;
            let _ = stream.shutdown().await;
        });
    }
}
