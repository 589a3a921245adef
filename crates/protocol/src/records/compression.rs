//! The compression codecs a v2 record batch may use (attributes bits 0-2): none, gzip, snappy,
//! lz4 and zstd, for both writing and reading, in the exact framings Kafka's Java client
//! produces and accepts.
//!
//! This module owns the byte formats *around* the records section, not the records: a
//! compressed batch holds, after its 61-byte header, one compressed stream whose plain text is
//! the concatenated records. Kafka fixes a framing per codec, and other clients must be able to
//! read what we write:
//!
//! * gzip: RFC 1952 members (several concatenated members are accepted, as Java's
//!   `GZIPInputStream` does).
//! * snappy: snappy-java's "xerial" framing, `\x82SNAPPY\0` + two big-endian `int32` versions,
//!   then blocks of (`int32` compressed length, raw snappy block). The reader also accepts a
//!   single raw snappy block without the header, as snappy-java does.
//! * lz4: the LZ4 *frame* format, written as Kafka's `Lz4BlockOutputStream` does (independent
//!   64 KiB blocks, no checksums, no content size) because Kafka's reader rejects linked blocks.
//! * zstd: standard zstd frames.
//!
//! Decompression is always bounded: it stops with [`RecordBatchError::DecompressedTooLarge`]
//! as soon as the output would pass the caller's limit, so a small hostile batch cannot make
//! the broker allocate gigabytes (no "zip bombs"), and no length declared inside the compressed
//! stream is trusted for an allocation beyond that limit.

use std::io::{self, Read, Write};

use bytes::{BufMut, Bytes, BytesMut};

use super::RecordBatchError;

/// The largest records section, after decompression, that [`decompress`] accepts by default
/// (and [`super::RecordBatch::records`] uses).
///
/// Kafka's own default `message.max.bytes` is about 1 MiB and brokers seldom raise it past
/// tens of MiB; 64 MiB leaves room for any sane configuration while keeping what one hostile
/// batch can make us allocate bounded. Callers with a different budget use
/// [`super::RecordBatch::records_with_limit`] or [`decompress`] with their own limit.
pub const MAX_DECOMPRESSED_BATCH_BYTES: usize = 64 * 1024 * 1024;

/// The compression codec of a batch, as numbered in the low three bits of its attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Records are stored as they are and can be sliced without a copy.
    #[default]
    None = 0,
    /// gzip (deflate with the RFC 1952 wrapper).
    Gzip = 1,
    /// snappy, in snappy-java's xerial framing.
    Snappy = 2,
    /// lz4, in the LZ4 frame format.
    Lz4 = 3,
    /// zstd frames.
    Zstd = 4,
}

impl Compression {
    /// Every codec, in id order (handy for tests and for configuration parsing).
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// The codec with this id (attributes bits 0-2); `None` for the unassigned ids 5-7.
    pub fn from_id(id: u8) -> Option<Compression> {
        match id {
            0 => Some(Compression::None),
            1 => Some(Compression::Gzip),
            2 => Some(Compression::Snappy),
            3 => Some(Compression::Lz4),
            4 => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The id written in the attributes.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// Kafka's configuration name for the codec (`compression.type`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

impl std::fmt::Display for Compression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// snappy-java's stream header: magic, then version 1 and minimum compatible version 1.
const XERIAL_HEADER: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// The magic alone; what identifies a xerial stream.
const XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
/// snappy-java's default block size, which Kafka uses.
const XERIAL_BLOCK_SIZE: usize = 32 * 1024;
/// Java's `GZIPOutputStream` default level, which Kafka uses by default.
const GZIP_LEVEL: u32 = 6;
/// zstd-jni's default level, which Kafka uses by default.
const ZSTD_LEVEL: i32 = 3;
/// The largest zstd window (2^27 = 128 MiB) a frame may ask the decoder to allocate.
///
/// The streaming decoder allocates the window a frame header declares before producing any
/// output, so this, not [`MAX_DECOMPRESSED_BATCH_BYTES`], bounds that allocation. It cannot be
/// tied to the output limit: Java producers stream without a pledged size, so their frames
/// declare the level's full window (2 MiB at the default level 3, 128 MiB at level 22, which
/// `compression.zstd.level` allows) whatever the batch size. 27 is zstd's own default bound.
const ZSTD_WINDOW_LOG_MAX: u32 = 27;

/// Compresses `input` (the plain records section) with `codec` and appends the result to
/// `out`. With [`Compression::None`] the input is appended as it is.
pub fn compress(
    codec: Compression,
    input: &[u8],
    out: &mut BytesMut,
) -> Result<(), RecordBatchError> {
    let failed = |e: io::Error| RecordBatchError::Compress {
        codec,
        reason: e.to_string(),
    };
    match codec {
        Compression::None => out.extend_from_slice(input),
        Compression::Gzip => {
            let mut enc =
                flate2::write::GzEncoder::new(out.writer(), flate2::Compression::new(GZIP_LEVEL));
            enc.write_all(input).map_err(failed)?;
            enc.finish().map_err(failed)?;
        }
        Compression::Snappy => compress_xerial(input, out)?,
        Compression::Lz4 => {
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent)
                .block_checksums(false)
                .content_checksum(false)
                .content_size(None);
            let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, out.writer());
            enc.write_all(input).map_err(failed)?;
            enc.finish().map_err(|e| RecordBatchError::Compress {
                codec,
                reason: e.to_string(),
            })?;
        }
        Compression::Zstd => {
            let mut enc =
                zstd::stream::write::Encoder::new(out.writer(), ZSTD_LEVEL).map_err(failed)?;
            enc.write_all(input).map_err(failed)?;
            enc.finish().map_err(failed)?;
        }
    }
    Ok(())
}

fn compress_xerial(input: &[u8], out: &mut BytesMut) -> Result<(), RecordBatchError> {
    out.extend_from_slice(XERIAL_HEADER);
    let mut encoder = snap::raw::Encoder::new();
    let mut block = vec![0u8; snap::raw::max_compress_len(XERIAL_BLOCK_SIZE)];
    for chunk in input.chunks(XERIAL_BLOCK_SIZE) {
        let n = encoder
            .compress(chunk, &mut block)
            .map_err(|e| RecordBatchError::Compress {
                codec: Compression::Snappy,
                reason: e.to_string(),
            })?;
        let Some(written) = block.get(..n) else {
            return Err(RecordBatchError::Compress {
                codec: Compression::Snappy,
                reason: "snappy reported more output than its buffer".into(),
            });
        };
        // n ≤ max_compress_len(32 KiB), far below i32::MAX.
        out.put_u32(n as u32);
        out.extend_from_slice(written);
    }
    Ok(())
}

/// Decompresses a records section compressed with `codec`, refusing to produce more than
/// `limit` bytes. [`Compression::None`] returns the input itself, without a copy (still
/// subject to the limit).
pub fn decompress(
    codec: Compression,
    input: &Bytes,
    limit: usize,
) -> Result<Bytes, RecordBatchError> {
    let too_large = RecordBatchError::DecompressedTooLarge { codec, limit };
    let corrupt = |e: io::Error| {
        // Our bounded reader signals the limit through an io error of its own.
        if e.kind() == io::ErrorKind::OutOfMemory {
            RecordBatchError::DecompressedTooLarge { codec, limit }
        } else {
            RecordBatchError::Decompress {
                codec,
                reason: e.to_string(),
            }
        }
    };
    match codec {
        Compression::None => {
            if input.len() > limit {
                return Err(too_large);
            }
            Ok(input.clone())
        }
        Compression::Gzip => {
            read_bounded(flate2::read::MultiGzDecoder::new(&input[..]), limit).map_err(corrupt)
        }
        Compression::Snappy => decompress_snappy(input, limit),
        Compression::Lz4 => {
            read_bounded(lz4_flex::frame::FrameDecoder::new(&input[..]), limit).map_err(corrupt)
        }
        Compression::Zstd => {
            let mut dec = zstd::stream::read::Decoder::with_buffer(&input[..]).map_err(corrupt)?;
            dec.window_log_max(ZSTD_WINDOW_LOG_MAX).map_err(corrupt)?;
            read_bounded(dec, limit).map_err(corrupt)
        }
    }
}

/// Reads `reader` to its end, failing (with `OutOfMemory`, mapped by the caller) once more
/// than `limit` bytes come out. The buffer doubles as it fills but never past `limit + 1`
/// bytes, so what is allocated is bounded by the limit, not by anything the stream claims.
fn read_bounded(mut reader: impl Read, limit: usize) -> io::Result<Bytes> {
    let cap = limit.saturating_add(1);
    let mut out: Vec<u8> = Vec::new();
    loop {
        let filled = out.len();
        if filled >= cap {
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                "decompressed data exceeds limit",
            ));
        }
        let target = filled.saturating_mul(2).max(8 * 1024).min(cap);
        out.reserve_exact(target - filled);
        out.resize(target, 0);
        let mut at = filled;
        while at < target {
            match reader.read(&mut out[at..]) {
                Ok(0) => {
                    out.truncate(at);
                    return Ok(Bytes::from(out));
                }
                Ok(n) => at += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

fn decompress_snappy(input: &Bytes, limit: usize) -> Result<Bytes, RecordBatchError> {
    let codec = Compression::Snappy;
    let corrupt = |reason: String| RecordBatchError::Decompress { codec, reason };
    if !input.starts_with(XERIAL_MAGIC) {
        // snappy-java falls back to one raw block when the magic is missing.
        let mut out = Vec::new();
        raw_snappy_into(input, &mut out, limit)?;
        return Ok(Bytes::from(out));
    }
    let mut out: Vec<u8> = Vec::new();
    let mut rest: &[u8] = input;
    while !rest.is_empty() {
        if rest.starts_with(XERIAL_MAGIC) {
            // A stream header (also between concatenated streams, as snappy-java allows):
            // magic + version + minimum compatible version.
            if rest.len() < XERIAL_HEADER.len() {
                return Err(corrupt(format!(
                    "xerial header needs {} bytes, {} remain",
                    XERIAL_HEADER.len(),
                    rest.len()
                )));
            }
            rest = &rest[XERIAL_HEADER.len()..];
            continue;
        }
        let Some((len_bytes, tail)) = rest.split_first_chunk::<4>() else {
            return Err(corrupt(format!(
                "xerial block length needs 4 bytes, {} remain",
                rest.len()
            )));
        };
        let len = i32::from_be_bytes(*len_bytes);
        let Ok(len) = usize::try_from(len) else {
            return Err(corrupt(format!("xerial block length {len} is negative")));
        };
        if len > tail.len() {
            return Err(corrupt(format!(
                "xerial block of {len} bytes but only {} remain",
                tail.len()
            )));
        }
        let (block, after) = tail.split_at(len);
        raw_snappy_into(block, &mut out, limit)?;
        rest = after;
    }
    Ok(Bytes::from(out))
}

/// Appends one raw snappy block to `out`, checking its declared length against `limit`
/// before allocating for it.
fn raw_snappy_into(block: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<(), RecordBatchError> {
    let codec = Compression::Snappy;
    let corrupt = |e: snap::Error| RecordBatchError::Decompress {
        codec,
        reason: e.to_string(),
    };
    let declared = snap::raw::decompress_len(block).map_err(corrupt)?;
    let start = out.len();
    if declared > limit.saturating_sub(start) {
        return Err(RecordBatchError::DecompressedTooLarge { codec, limit });
    }
    let end = start + declared;
    if out.capacity() < end {
        // Double like a Vec would, but never past the limit.
        let target = start.saturating_mul(2).min(limit).max(end);
        out.reserve_exact(target - start);
    }
    out.resize(end, 0);
    let n = snap::raw::Decoder::new()
        .decompress(block, &mut out[start..])
        .map_err(corrupt)?;
    out.truncate(start + n);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        (0..200_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect()
    }

    #[test]
    fn every_codec_round_trips() {
        let plain = sample();
        for codec in Compression::ALL {
            let mut out = BytesMut::new();
            compress(codec, &plain, &mut out).unwrap();
            let back = decompress(codec, &out.freeze(), MAX_DECOMPRESSED_BATCH_BYTES).unwrap();
            assert_eq!(back, plain, "{codec}");
        }
    }

    #[test]
    fn empty_input_round_trips() {
        for codec in Compression::ALL {
            let mut out = BytesMut::new();
            compress(codec, &[], &mut out).unwrap();
            let back = decompress(codec, &out.freeze(), 16).unwrap();
            assert!(back.is_empty(), "{codec}");
        }
    }

    #[test]
    fn output_past_the_limit_is_refused() {
        let plain = vec![0u8; 1 << 20];
        for codec in Compression::ALL {
            let mut out = BytesMut::new();
            compress(codec, &plain, &mut out).unwrap();
            let err = decompress(codec, &out.freeze(), (1 << 20) - 1).unwrap_err();
            assert_eq!(
                err,
                RecordBatchError::DecompressedTooLarge {
                    codec,
                    limit: (1 << 20) - 1
                }
            );
            // Exactly at the limit is fine.
        }
        for codec in Compression::ALL {
            let mut out = BytesMut::new();
            compress(codec, &plain, &mut out).unwrap();
            assert_eq!(
                decompress(codec, &out.freeze(), 1 << 20).unwrap().len(),
                1 << 20
            );
        }
    }

    #[test]
    fn snappy_writes_xerial_framing_and_reads_raw_too() {
        let plain = sample();
        let mut out = BytesMut::new();
        compress(Compression::Snappy, &plain, &mut out).unwrap();
        assert_eq!(&out[..16], XERIAL_HEADER);
        let raw = snap::raw::Encoder::new().compress_vec(&plain).unwrap();
        let back = decompress(Compression::Snappy, &Bytes::from(raw), usize::MAX).unwrap();
        assert_eq!(back, plain);
    }

    #[test]
    fn snappy_accepts_concatenated_xerial_streams() {
        let mut out = BytesMut::new();
        compress(Compression::Snappy, b"hello ", &mut out).unwrap();
        compress(Compression::Snappy, b"world", &mut out).unwrap();
        let back = decompress(Compression::Snappy, &out.freeze(), 1024).unwrap();
        assert_eq!(&back[..], b"hello world");
    }

    #[test]
    fn snappy_declared_length_is_checked_before_allocating() {
        // A raw block claiming 2^32-1 bytes of output.
        let bomb = Bytes::from_static(&[0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]);
        assert!(matches!(
            decompress(Compression::Snappy, &bomb, 1 << 20),
            Err(RecordBatchError::DecompressedTooLarge { .. })
        ));
        let mut framed = BytesMut::from(&XERIAL_HEADER[..]);
        framed.put_i32(-5);
        assert!(matches!(
            decompress(Compression::Snappy, &framed.freeze(), 1 << 20),
            Err(RecordBatchError::Decompress { .. })
        ));
    }

    #[test]
    fn lz4_frame_matches_kafka_settings() {
        let mut out = BytesMut::new();
        compress(Compression::Lz4, b"abc", &mut out).unwrap();
        // Magic 0x184D2204 (little endian), then FLG: version 01, block independence set,
        // no checksums, no content size; BD: 64 KiB blocks.
        assert_eq!(&out[..4], &[0x04, 0x22, 0x4d, 0x18]);
        assert_eq!(out[4], 0b0110_0000);
        assert_eq!(out[5], 0x40);
    }

    #[test]
    fn garbage_is_a_typed_error() {
        let junk = Bytes::from_static(b"definitely not compressed data at all");
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            assert!(
                matches!(
                    decompress(codec, &junk, 1 << 20),
                    Err(RecordBatchError::Decompress { .. })
                ),
                "{codec}"
            );
        }
    }
}
