//! The `/metrics` endpoint (Prometheus text format) every node serves on `metrics.port`:
//! Raft's `raft-metrics` and, on brokers, `broker-metadata-metrics`. A deliberately tiny
//! HTTP/1.1 responder: one GET per connection, nothing else understood.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tracing::{debug, info};

/// The most bytes of a request read before answering (a scrape's GET is far smaller).
const MAX_REQUEST_BYTES: usize = 8192;

/// Serves `render()` at `/metrics` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, render: Arc<dyn Fn() -> String + Send + Sync>) {
    if let Ok(addr) = listener.local_addr() {
        info!(%addr, "serving /metrics");
    }
    loop {
        let Ok((mut stream, peer)) = listener.accept().await else {
            continue;
        };
        let render = Arc::clone(&render);
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
            let (status, body) = if request.starts_with("GET /metrics") {
                ("200 OK", render())
            } else {
                debug!(%peer, "not a GET /metrics");
                ("404 Not Found", "only GET /metrics is served\n".to_string())
            };
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}
