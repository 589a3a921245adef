//! A read-ahead buffer between rustls and the socket of a TLS connection. rustls reads its
//! records in reads of at most 4 KiB (`DeframerVecBuffer`'s `READ_SIZE`), so a 1 MiB produce
//! request over TLS cost some 260 `recvfrom` calls, each a pass through tokio's readiness
//! machinery, where the same request in plaintext takes a few reads into a buffer reserved
//! for the whole frame. [`ReadAhead`] reads up to [`READ_AHEAD`] bytes per call and serves
//! rustls's small reads from them. Its buffer exists only while the connection has bytes
//! coming: it is freed once drained when the socket has nothing more, so an idle
//! connection holds none of it (the idle-connection cost issue 33 counts). Writes pass
//! straight through.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Bytes one read of the socket may bring: sixteen of rustls's reads.
pub(crate) const READ_AHEAD: usize = 64 * 1024;

/// `inner` with reads done [`READ_AHEAD`] bytes at a time (see the module doc).
#[derive(Debug)]
pub(crate) struct ReadAhead<S> {
    inner: S,
    /// Empty while the connection is idle.
    buf: Vec<u8>,
    /// `buf[pos..filled]` is read from the socket and not yet handed out.
    pos: usize,
    filled: usize,
}

impl<S> ReadAhead<S> {
    pub(crate) fn new(inner: S) -> ReadAhead<S> {
        ReadAhead {
            inner,
            buf: Vec::new(),
            pos: 0,
            filled: 0,
        }
    }

    pub(crate) fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ReadAhead<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pos == this.filled {
            // A read as large as the buffer gains nothing from it.
            if out.remaining() >= READ_AHEAD {
                return Pin::new(&mut this.inner).poll_read(cx, out);
            }
            if this.buf.is_empty() {
                this.buf = vec![0; READ_AHEAD];
            }
            let mut into = ReadBuf::new(&mut this.buf);
            match Pin::new(&mut this.inner).poll_read(cx, &mut into) {
                Poll::Pending => {
                    // Nothing buffered and nothing coming: the connection is idle.
                    this.buf = Vec::new();
                    return Poll::Pending;
                }
                Poll::Ready(result) => result?,
            }
            this.filled = into.filled().len();
            this.pos = 0;
            if this.filled == 0 {
                return Poll::Ready(Ok(()));
            }
        }
        let n = out.remaining().min(this.filled - this.pos);
        out.put_slice(&this.buf[this.pos..this.pos + n]);
        this.pos += n;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ReadAhead<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn small_reads_see_every_byte_in_order_and_writes_pass_through() {
        let (near, mut far) = tokio::io::duplex(256 * 1024);
        let mut reader = ReadAhead::new(near);
        let sent: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let writer = {
            let sent = sent.clone();
            tokio::spawn(async move {
                // In uneven pieces, so reads end inside and between them.
                for piece in sent.chunks(10_007) {
                    far.write_all(piece).await.expect("write");
                }
                let mut back = [0u8; 5];
                far.read_exact(&mut back).await.expect("read back");
                back
            })
        };
        let mut got = Vec::new();
        let mut small = [0u8; 4096];
        while got.len() < sent.len() {
            let n = reader.read(&mut small).await.expect("read");
            assert!(n > 0, "no EOF before every byte");
            got.extend_from_slice(&small[..n]);
        }
        assert_eq!(got, sent);
        reader.write_all(b"hello").await.expect("write through");
        assert_eq!(&writer.await.expect("writer"), b"hello");
    }

    #[tokio::test]
    async fn an_idle_connection_holds_no_buffer_and_eof_is_seen() {
        let (near, mut far) = tokio::io::duplex(1024);
        let mut reader = ReadAhead::new(near);
        far.write_all(b"abc").await.expect("write");
        let mut out = [0u8; 2];
        assert_eq!(reader.read(&mut out).await.expect("read"), 2);
        assert_eq!(reader.read(&mut out).await.expect("read"), 1);
        // Drained, and the peer sends nothing: the next read waits, and the buffer goes.
        let pending = tokio::time::timeout(
            std::time::Duration::from_millis(20),
            reader.read(&mut out),
        )
        .await;
        assert!(pending.is_err(), "nothing to read yet");
        assert!(reader.buf.is_empty(), "an idle connection keeps no buffer");
        drop(far);
        assert_eq!(reader.read(&mut out).await.expect("EOF"), 0);
    }
}
