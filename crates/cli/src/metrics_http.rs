//! The `/metrics` endpoint (Prometheus text format) every node serves on `metrics.port`:
//! Raft's `raft-metrics` and, on brokers, `broker-metadata-metrics`; and, with
//! `console.enable`, the web console's page and JSON (`crate::console`) on every other path.
//! A deliberately tiny HTTP/1.1 responder: one request per connection — GETs, and the
//! console's login POSTs (a small form body) — nothing else understood.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tracing::{debug, info};

use crate::console::{Console, Request, Response};

/// The most bytes of a request's head read before answering (a scrape's GET is far
/// smaller).
const MAX_REQUEST_BYTES: usize = 8192;
/// The most bytes of a POST body read (a login form).
const MAX_BODY_BYTES: usize = 4096;

/// Request line and headers: (method, target, `Cookie`, `Content-Length`).
fn parse_head(head: &str) -> Option<(String, String, Option<String>, usize)> {
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let (mut cookie, mut length) = (None, 0);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.eq_ignore_ascii_case("cookie") {
            cookie = Some(value.trim().to_string());
        } else if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    Some((method, target, cookie, length))
}

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
            let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                return;
            };
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let Some((method, target, cookie, length)) = parse_head(&head) else {
                return;
            };
            let mut body = buf[end + 4..].to_vec();
            let length = length.min(MAX_BODY_BYTES);
            while body.len() < length {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => body.extend_from_slice(&chunk[..n]),
                }
            }
            body.truncate(length);
            let response = match (method.as_str(), &console) {
                ("GET", _) if target == "/metrics" || target.starts_with("/metrics?") => Response {
                    status: "200 OK",
                    content_type: "text/plain; version=0.0.4",
                    body: render().into_bytes(),
                    set_cookie: None,
                    retry_after: None,
                },
                ("GET" | "POST", Some(console)) => {
                    let request = Request {
                        method,
                        target,
                        cookie,
                        body: String::from_utf8_lossy(&body).into_owned(),
                        peer: peer.ip(),
                    };
                    console.handle(&request).await
                }
                _ => {
                    debug!(%peer, "not a GET /metrics");
                    Response::text("404 Not Found", "only GET /metrics is served\n")
                }
            };
            let cookie = response
                .set_cookie
                .as_ref()
                .map(|c| format!("Set-Cookie: {c}\r\n"))
                .unwrap_or_default();
            let retry = response
                .retry_after
                .map(|s| format!("Retry-After: {s}\r\n"))
                .unwrap_or_default();
            let head = format!(
                "HTTP/1.1 {}\r\nContent-Type: {}\r\nCache-Control: no-store\r\n{cookie}{retry}\
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
