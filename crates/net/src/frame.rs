//! Writing one frame to a socket: the chunks of an encoded request or response with as few
//! write calls as the socket takes. Shared by the server, the client channels and the SASL
//! handshake; a leaf, so none of them depends on another through it.

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
