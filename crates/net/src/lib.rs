//! The Kafka-protocol transport over tokio, shared by the Raft driver, the controller (its
//! listener), the broker (its client listeners, the replica fetcher and the controller
//! channel) and the CLI's `metadata-quorum` tool: a TCP [`server`] that frames, decodes and
//! answers requests in order with bounded in-flight work and a connection cap, and a
//! [`client`] channel, one connection per destination, with correlation ids, request
//! timeouts and reconnect backoff; [`tls`], [`sasl`] and the [`security`] of a listener and
//! its sessions; the [`request_metrics`] every listener records; and the [`ordering`] of a
//! connection's requests. Both speak only through `kraftd-protocol`'s codecs (its only
//! kraftd dependency); nothing here knows Raft, the controller or the broker: a SASL/SCRAM
//! listener reads credentials through [`sasl::ScramCredentialLookup`], which the controller's
//! SCRAM store implements.

pub mod client;
pub mod ordering;
pub mod request_metrics;
pub mod sasl;
pub mod security;
pub mod server;
pub mod tls;

pub use client::{Channel, ClientConfig, ClientError, ReplyFn};
pub use ordering::{mark_sequenced, run_until_sequenced};
pub use request_metrics::{mark_local_complete, RequestMetrics, RequestTimer};
pub use security::{
    ChannelMute, ClientSecurity, KafkaPrincipal, ListenerSecurity, SecurityProtocol, Session,
};
pub use server::{serve, ApiVersionsFeatures, InboundRequest, RequestHandler, ServerConfig};

use std::io::IoSlice;

use bytes::{Buf, Bytes};
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Slices handed to one vectored write (well under Linux's `IOV_MAX` of 1024).
const MAX_WRITE_SLICES: usize = 64;

/// Writes a frame's chunks ([`kraftd_protocol::frame::frame_chunks`]) with as few write
/// calls as the socket takes: one vectored write for a whole frame, normally. A write per
/// chunk would put the 4-byte size prefix in a TCP segment of its own (the sockets are
/// `TCP_NODELAY`), costing a syscall and a wake-up of the reader per chunk.
pub(crate) async fn write_frame<W: AsyncWrite + Unpin>(
    wr: &mut W,
    chunks: Vec<Bytes>,
) -> std::io::Result<()> {
    let mut chunks: std::collections::VecDeque<Bytes> =
        chunks.into_iter().filter(|c| !c.is_empty()).collect();
    while !chunks.is_empty() {
        let mut written = {
            let slices: Vec<IoSlice<'_>> = chunks
                .iter()
                .take(MAX_WRITE_SLICES)
                .map(|c| IoSlice::new(c))
                .collect();
            wr.write_vectored(&slices).await?
        };
        if written == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        while written > 0 {
            let Some(front) = chunks.front_mut() else {
                break;
            };
            if written >= front.len() {
                written -= front.len();
                chunks.pop_front();
            } else {
                front.advance(written);
                written = 0;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_frame_survives_partial_writes_and_empty_chunks() {
        // A pipe of 7 bytes forces short writes that end inside chunks and between them.
        let (mut wr, mut rd) = tokio::io::duplex(7);
        let chunks = vec![
            Bytes::from_static(&[0, 0, 0, 13]),
            Bytes::new(),
            Bytes::from_static(b"hello, "),
            Bytes::from_static(b"world!"),
        ];
        let reader = tokio::spawn(async move {
            let mut out = Vec::new();
            rd.read_to_end(&mut out).await.map(|_| out)
        });
        write_frame(&mut wr, chunks).await.expect("written");
        drop(wr);
        let out = reader.await.expect("reader").expect("read");
        assert_eq!(out, b"\0\0\0\x0dhello, world!");
    }
}
