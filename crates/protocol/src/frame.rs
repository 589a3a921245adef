//! Kafka's framing: every request and response is a 4-byte big-endian size, then that many
//! bytes. Pure helpers over buffers; the sockets live in the driver.
//!
//! "Incomplete" (wait for more bytes) is kept apart from "malformed" (close the connection):
//! [`split_frame`] answers `Ok(None)` for the first and an error for the second, and checks the
//! size against the limit as soon as the 4-byte prefix is in, before any body is buffered.

use crate::codec::Encoder;
use bytes::{Buf, Bytes, BytesMut};

/// Kafka's `socket.request.max.bytes` default: 100 MiB.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 100 * 1024 * 1024;

/// Bytes of the size prefix.
pub const SIZE_PREFIX_BYTES: usize = 4;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame of {size} bytes is over the limit of {max} bytes")]
    TooLarge { size: usize, max: usize },
    #[error("frame size {0} is negative")]
    NegativeSize(i32),
}

/// The body size announced by a size prefix, checked against `max_bytes`.
pub fn frame_size(prefix: [u8; 4], max_bytes: usize) -> Result<usize, FrameError> {
    let size = i32::from_be_bytes(prefix);
    if size < 0 {
        return Err(FrameError::NegativeSize(size));
    }
    let size = size as usize;
    if size > max_bytes {
        return Err(FrameError::TooLarge {
            size,
            max: max_bytes,
        });
    }
    Ok(size)
}

/// Takes one complete frame body off the front of `buf`; `Ok(None)` while it is incomplete.
pub fn split_frame(buf: &mut BytesMut, max_bytes: usize) -> Result<Option<Bytes>, FrameError> {
    if buf.len() < SIZE_PREFIX_BYTES {
        return Ok(None);
    }
    let prefix = [buf[0], buf[1], buf[2], buf[3]];
    let size = frame_size(prefix, max_bytes)?;
    if buf.len() < SIZE_PREFIX_BYTES + size {
        buf.reserve(SIZE_PREFIX_BYTES + size - buf.len());
        return Ok(None);
    }
    buf.advance(SIZE_PREFIX_BYTES);
    Ok(Some(buf.split_to(size).freeze()))
}

/// The chunks of a frame ready for a vectored write: the size prefix, then the body's chunks
/// (large record payloads are not copied).
pub fn frame_chunks(body: Encoder) -> Vec<Bytes> {
    let size = body.len() as u32;
    let mut chunks = Vec::with_capacity(2);
    chunks.push(Bytes::copy_from_slice(&size.to_be_bytes()));
    chunks.extend(body.into_chunks());
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_is_not_an_error() {
        let mut buf = BytesMut::from(&[0u8, 0, 0, 3, 1, 2][..]);
        assert_eq!(split_frame(&mut buf, 10), Ok(None));
        buf.extend_from_slice(&[3, 9]);
        assert_eq!(
            split_frame(&mut buf, 10),
            Ok(Some(Bytes::from_static(&[1, 2, 3])))
        );
        assert_eq!(&buf[..], &[9]);
    }

    #[test]
    fn oversized_and_negative_sizes_are_rejected_from_the_prefix() {
        let mut buf = BytesMut::from(&[0u8, 0, 1, 0][..]);
        assert_eq!(
            split_frame(&mut buf, 255),
            Err(FrameError::TooLarge {
                size: 256,
                max: 255
            })
        );
        let mut buf = BytesMut::from(&[0xffu8, 0xff, 0xff, 0xff][..]);
        assert_eq!(
            split_frame(&mut buf, 255),
            Err(FrameError::NegativeSize(-1))
        );
    }

    #[test]
    fn chunks_carry_the_size() {
        let mut e = Encoder::new();
        e.put_i32(7);
        let chunks = frame_chunks(e);
        assert_eq!(&chunks[0][..], &[0, 0, 0, 4]);
        assert_eq!(&chunks[1][..], &[0, 0, 0, 7]);
    }
}
