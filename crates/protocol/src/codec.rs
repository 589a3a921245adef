//! The primitive encodings of Kafka's protocol (fixed-width big-endian integers, varints,
//! classic and compact strings, bytes and arrays, tagged-field sections) and the typed errors
//! the generated codecs return.
//!
//! Decoding reads from a [`Bytes`] so that `records` and other large byte fields are sliced,
//! never copied. Every length and count read off the wire is checked against the bytes that
//! remain *before* anything is allocated: a frame can only make the decoder allocate in
//! proportion to its own size. Encoding goes into an [`Encoder`], which keeps large shared byte
//! fields as separate chunks so that a response carrying a megabyte of records can be written
//! with one vectored write and no copy.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// Byte fields at least this long are appended by reference rather than copied.
pub const ZERO_COPY_MIN_BYTES: usize = 512;

/// A uuid as Kafka puts it on the wire: 16 bytes, most significant first.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    /// The all-zero uuid Kafka uses for "no id".
    pub const ZERO: Uuid = Uuid([0; 16]);

    /// Kafka's textual form: URL-safe base64 without padding (e.g. `AAAAAAAAAAAAAAAAAAAAAQ`).
    pub fn to_base64(&self) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::with_capacity(22);
        let mut acc: u32 = 0;
        let mut bits = 0;
        for &b in &self.0 {
            acc = (acc << 8) | u32::from(b);
            bits += 8;
            while bits >= 6 {
                bits -= 6;
                out.push(ALPHABET[((acc >> bits) & 0x3f) as usize] as char);
            }
        }
        if bits > 0 {
            out.push(ALPHABET[((acc << (6 - bits)) & 0x3f) as usize] as char);
        }
        out
    }

    /// Parses Kafka's textual form; `None` when it is not 22 characters of URL-safe base64.
    pub fn from_base64(s: &str) -> Option<Uuid> {
        if s.len() != 22 {
            return None;
        }
        let mut out = [0u8; 16];
        let mut acc: u32 = 0;
        let mut bits = 0;
        let mut i = 0;
        for c in s.bytes() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'-' => 62,
                b'_' => 63,
                _ => return None,
            };
            acc = (acc << 6) | u32::from(v);
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                if i < 16 {
                    out[i] = (acc >> bits) as u8;
                }
                i += 1;
            }
        }
        (i == 16).then_some(Uuid(out))
    }
}

impl std::fmt::Debug for Uuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Uuid({})", self.to_base64())
    }
}

impl std::fmt::Display for Uuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_base64())
    }
}

/// A tagged field the schema does not know at this version, kept so it can be re-encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawTaggedField {
    pub tag: u32,
    pub data: Bytes,
}

/// What was wrong with the bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    #[error("needs {needed} more bytes but only {remaining} remain")]
    Truncated { needed: usize, remaining: usize },
    #[error("length {0} is negative and not -1 (null)")]
    NegativeLength(i64),
    #[error("null is not allowed at this version")]
    UnexpectedNull,
    #[error("array claims {count} elements of at least {min_element_bytes} bytes but only {remaining} bytes remain")]
    CountTooLarge {
        count: usize,
        min_element_bytes: usize,
        remaining: usize,
    },
    #[error("varint is longer than {max_bytes} bytes")]
    VarintTooLong { max_bytes: usize },
    #[error("string is not valid UTF-8")]
    InvalidUtf8,
    #[error("version {version} is not in the valid range {min}-{max}")]
    UnsupportedVersion { version: i16, min: i16, max: i16 },
    #[error("api key {0} is unknown")]
    UnknownApiKey(i16),
    #[error("{0}")]
    Invalid(&'static str),
}

/// A malformed frame: which message, at which version, which field, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed {message} v{version}, field {field}: {kind}")]
pub struct DecodeError {
    pub message: &'static str,
    pub version: i16,
    pub field: &'static str,
    pub kind: DecodeErrorKind,
}

impl DecodeError {
    /// An error in `field`; the message and version are filled in by [`DecodeError::within`].
    pub fn new(field: &'static str, kind: DecodeErrorKind) -> Self {
        DecodeError {
            message: "?",
            version: -1,
            field,
            kind,
        }
    }

    /// Names the message and version the error happened in, once, at the top level.
    pub fn within(mut self, message: &'static str, version: i16) -> Self {
        if self.message == "?" {
            self.message = message;
            self.version = version;
        }
        self
    }
}

/// A value that cannot be written at the requested version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    #[error("{message} has no version {version} (valid {min}-{max})")]
    UnsupportedVersion {
        message: &'static str,
        version: i16,
        min: i16,
        max: i16,
    },
    #[error("field {field} is set but version {version} cannot carry it")]
    FieldNotInVersion { field: &'static str, version: i16 },
    #[error("field {field} is null but version {version} does not allow null")]
    NullNotAllowed { field: &'static str, version: i16 },
    #[error("field {field} is {len} long, over the wire limit {max}")]
    TooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },
}

pub type DecodeResult<T> = Result<T, DecodeError>;

fn need(buf: &Bytes, n: usize, field: &'static str) -> DecodeResult<()> {
    if buf.remaining() < n {
        Err(DecodeError::new(
            field,
            DecodeErrorKind::Truncated {
                needed: n,
                remaining: buf.remaining(),
            },
        ))
    } else {
        Ok(())
    }
}

macro_rules! fixed_readers {
    ($($name:ident: $t:ty = $get:ident, $n:expr;)*) => {$(
        #[doc = concat!("Reads a big-endian `", stringify!($t), "`.")]
        pub fn $name(buf: &mut Bytes, field: &'static str) -> DecodeResult<$t> {
            need(buf, $n, field)?;
            Ok(buf.$get())
        }
    )*};
}

fixed_readers! {
    read_i8: i8 = get_i8, 1;
    read_i16: i16 = get_i16, 2;
    read_u16: u16 = get_u16, 2;
    read_i32: i32 = get_i32, 4;
    read_u32: u32 = get_u32, 4;
    read_i64: i64 = get_i64, 8;
    read_f64: f64 = get_f64, 8;
}

/// Reads a bool as Kafka does: any non-zero byte is true.
pub fn read_bool(buf: &mut Bytes, field: &'static str) -> DecodeResult<bool> {
    Ok(read_i8(buf, field)? != 0)
}

pub fn read_uuid(buf: &mut Bytes, field: &'static str) -> DecodeResult<Uuid> {
    need(buf, 16, field)?;
    let mut id = [0u8; 16];
    buf.copy_to_slice(&mut id);
    Ok(Uuid(id))
}

/// Reads an unsigned varint of at most 5 bytes (a u32), as Kafka's `readUnsignedVarint`.
pub fn read_unsigned_varint(buf: &mut Bytes, field: &'static str) -> DecodeResult<u32> {
    let mut value: u32 = 0;
    for i in 0..5 {
        need(buf, 1, field)?;
        let b = buf.get_u8();
        if i == 4 && b > 0x0f {
            return Err(DecodeError::new(
                field,
                DecodeErrorKind::VarintTooLong { max_bytes: 5 },
            ));
        }
        value |= u32::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::new(
        field,
        DecodeErrorKind::VarintTooLong { max_bytes: 5 },
    ))
}

/// Reads a zig-zag signed varint (i32), as used inside records.
pub fn read_varint(buf: &mut Bytes, field: &'static str) -> DecodeResult<i32> {
    let raw = read_unsigned_varint(buf, field)?;
    Ok(((raw >> 1) as i32) ^ -((raw & 1) as i32))
}

/// Reads an unsigned varint of at most 10 bytes (a u64).
pub fn read_unsigned_varlong(buf: &mut Bytes, field: &'static str) -> DecodeResult<u64> {
    let mut value: u64 = 0;
    for i in 0..10 {
        need(buf, 1, field)?;
        let b = buf.get_u8();
        if i == 9 && b > 0x01 {
            return Err(DecodeError::new(
                field,
                DecodeErrorKind::VarintTooLong { max_bytes: 10 },
            ));
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(DecodeError::new(
        field,
        DecodeErrorKind::VarintTooLong { max_bytes: 10 },
    ))
}

/// Reads a zig-zag signed varlong (i64), as used inside records.
pub fn read_varlong(buf: &mut Bytes, field: &'static str) -> DecodeResult<i64> {
    let raw = read_unsigned_varlong(buf, field)?;
    Ok(((raw >> 1) as i64) ^ -((raw & 1) as i64))
}

/// Reads the length prefix of a string, bytes, records or array: `None` for null.
///
/// Classic encodings use a signed `int16` (strings) or `int32` (the rest) where -1 is null;
/// compact encodings an unsigned varint of length + 1 where 0 is null.
pub fn read_length(
    buf: &mut Bytes,
    field: &'static str,
    compact: bool,
    int16_prefix: bool,
) -> DecodeResult<Option<usize>> {
    let len: i64 = if compact {
        i64::from(read_unsigned_varint(buf, field)?) - 1
    } else if int16_prefix {
        i64::from(read_i16(buf, field)?)
    } else {
        i64::from(read_i32(buf, field)?)
    };
    match len {
        -1 => Ok(None),
        n if n < 0 => Err(DecodeError::new(field, DecodeErrorKind::NegativeLength(n))),
        n => Ok(Some(n as usize)),
    }
}

fn take(buf: &mut Bytes, len: usize, field: &'static str) -> DecodeResult<Bytes> {
    need(buf, len, field)?;
    Ok(buf.split_to(len))
}

fn non_null<T>(value: Option<T>, field: &'static str) -> DecodeResult<T> {
    value.ok_or_else(|| DecodeError::new(field, DecodeErrorKind::UnexpectedNull))
}

pub fn read_nullable_string(
    buf: &mut Bytes,
    field: &'static str,
    compact: bool,
) -> DecodeResult<Option<String>> {
    let Some(len) = read_length(buf, field, compact, true)? else {
        return Ok(None);
    };
    let raw = take(buf, len, field)?;
    match std::str::from_utf8(&raw) {
        Ok(s) => Ok(Some(s.to_owned())),
        Err(_) => Err(DecodeError::new(field, DecodeErrorKind::InvalidUtf8)),
    }
}

pub fn read_string(buf: &mut Bytes, field: &'static str, compact: bool) -> DecodeResult<String> {
    non_null(read_nullable_string(buf, field, compact)?, field)
}

/// Reads `bytes` or `records`: a zero-copy slice of the input.
pub fn read_nullable_bytes(
    buf: &mut Bytes,
    field: &'static str,
    compact: bool,
) -> DecodeResult<Option<Bytes>> {
    match read_length(buf, field, compact, false)? {
        None => Ok(None),
        Some(len) => take(buf, len, field).map(Some),
    }
}

pub fn read_bytes(buf: &mut Bytes, field: &'static str, compact: bool) -> DecodeResult<Bytes> {
    non_null(read_nullable_bytes(buf, field, compact)?, field)
}

/// Reads an array prefix and checks that `count` elements of at least `min_element_bytes`
/// each can fit in what remains, so the caller may reserve `count` slots safely.
pub fn read_array_len(
    buf: &mut Bytes,
    field: &'static str,
    compact: bool,
    min_element_bytes: usize,
) -> DecodeResult<Option<usize>> {
    let Some(count) = read_length(buf, field, compact, false)? else {
        return Ok(None);
    };
    let min = min_element_bytes.max(1);
    if count.saturating_mul(min) > buf.remaining() {
        return Err(DecodeError::new(
            field,
            DecodeErrorKind::CountTooLarge {
                count,
                min_element_bytes: min,
                remaining: buf.remaining(),
            },
        ));
    }
    Ok(Some(count))
}

/// Reads an array whose elements are read by `element`.
pub fn read_nullable_array<T>(
    buf: &mut Bytes,
    field: &'static str,
    compact: bool,
    min_element_bytes: usize,
    mut element: impl FnMut(&mut Bytes) -> DecodeResult<T>,
) -> DecodeResult<Option<Vec<T>>> {
    let Some(count) = read_array_len(buf, field, compact, min_element_bytes)? else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        out.push(element(buf)?);
    }
    Ok(Some(out))
}

pub fn read_array<T>(
    buf: &mut Bytes,
    field: &'static str,
    compact: bool,
    min_element_bytes: usize,
    element: impl FnMut(&mut Bytes) -> DecodeResult<T>,
) -> DecodeResult<Vec<T>> {
    non_null(
        read_nullable_array(buf, field, compact, min_element_bytes, element)?,
        field,
    )
}

/// Reads the marker byte of a nullable struct field: negative means null.
pub fn read_struct_present(buf: &mut Bytes, field: &'static str) -> DecodeResult<bool> {
    Ok(read_i8(buf, field)? >= 0)
}

/// The marker of a nullable struct in a tagged field: an unsigned varint, null when 0 (Kafka's
/// generated readers take `readUnsignedVarint() <= 0` as null). Kafka writes 0 for a null
/// tagged struct whose default is JSON null (ConsumerGroupMemberMetadataValue's
/// ClassicMemberMetadata of every consumer-protocol member), so reading it as the
/// non-tagged byte marker (null when negative) would take that null for a struct.
pub fn read_tagged_struct_present(buf: &mut Bytes, field: &'static str) -> DecodeResult<bool> {
    Ok(read_unsigned_varint(buf, field)? > 0)
}

/// Reads one tagged-field header and slices out its payload, which the caller then decodes
/// (checking that the payload was consumed exactly) or keeps as unknown.
pub fn read_tagged_field(buf: &mut Bytes, field: &'static str) -> DecodeResult<(u32, Bytes)> {
    let tag = read_unsigned_varint(buf, field)?;
    let size = read_unsigned_varint(buf, field)? as usize;
    Ok((tag, take(buf, size, field)?))
}

/// Checks that a known tagged field's payload was decoded to its last byte.
pub fn expect_consumed(payload: &Bytes, field: &'static str) -> DecodeResult<()> {
    if payload.has_remaining() {
        return Err(DecodeError::new(
            field,
            DecodeErrorKind::Invalid("tagged field has bytes past its value"),
        ));
    }
    Ok(())
}

/// Where encoded bytes go. Small values are appended to a growing buffer; large shared byte
/// fields (records) become chunks of their own, so the output is a list of [`Bytes`] ready
/// for a vectored write, and records are never copied.
#[derive(Debug, Default)]
pub struct Encoder {
    buf: BytesMut,
    chunks: Vec<Bytes>,
    len: usize,
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(capacity: usize) -> Self {
        Encoder {
            buf: BytesMut::with_capacity(capacity),
            chunks: Vec::new(),
            len: 0,
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn put_i8(&mut self, v: i8) {
        self.buf.put_i8(v);
        self.len += 1;
    }
    pub fn put_bool(&mut self, v: bool) {
        self.put_i8(i8::from(v));
    }
    pub fn put_i16(&mut self, v: i16) {
        self.buf.put_i16(v);
        self.len += 2;
    }
    pub fn put_u16(&mut self, v: u16) {
        self.buf.put_u16(v);
        self.len += 2;
    }
    pub fn put_i32(&mut self, v: i32) {
        self.buf.put_i32(v);
        self.len += 4;
    }
    pub fn put_u32(&mut self, v: u32) {
        self.buf.put_u32(v);
        self.len += 4;
    }
    pub fn put_i64(&mut self, v: i64) {
        self.buf.put_i64(v);
        self.len += 8;
    }
    pub fn put_f64(&mut self, v: f64) {
        self.buf.put_f64(v);
        self.len += 8;
    }
    pub fn put_uuid(&mut self, v: &Uuid) {
        self.put_slice(&v.0);
    }
    pub fn put_slice(&mut self, v: &[u8]) {
        self.buf.put_slice(v);
        self.len += v.len();
    }

    pub fn put_unsigned_varint(&mut self, mut v: u32) {
        while v >= 0x80 {
            self.put_i8(((v as u8) | 0x80) as i8);
            v >>= 7;
        }
        self.put_i8(v as i8);
    }

    pub fn put_varint(&mut self, v: i32) {
        self.put_unsigned_varint(((v << 1) ^ (v >> 31)) as u32);
    }

    pub fn put_unsigned_varlong(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.put_i8(((v as u8) | 0x80) as i8);
            v >>= 7;
        }
        self.put_i8(v as i8);
    }

    pub fn put_varlong(&mut self, v: i64) {
        self.put_unsigned_varlong(((v << 1) ^ (v >> 63)) as u64);
    }

    /// Writes a length prefix; `None` is null.
    pub fn put_length(
        &mut self,
        len: Option<usize>,
        field: &'static str,
        compact: bool,
        int16_prefix: bool,
    ) -> Result<(), EncodeError> {
        let max = if int16_prefix {
            i16::MAX as usize
        } else {
            i32::MAX as usize - 1
        };
        match len {
            Some(n) if n > max => Err(EncodeError::TooLong { field, len: n, max }),
            Some(n) if compact => {
                self.put_unsigned_varint(n as u32 + 1);
                Ok(())
            }
            None if compact => {
                self.put_unsigned_varint(0);
                Ok(())
            }
            Some(n) if int16_prefix => {
                self.put_i16(n as i16);
                Ok(())
            }
            None if int16_prefix => {
                self.put_i16(-1);
                Ok(())
            }
            Some(n) => {
                self.put_i32(n as i32);
                Ok(())
            }
            None => {
                self.put_i32(-1);
                Ok(())
            }
        }
    }

    pub fn put_string(
        &mut self,
        v: Option<&str>,
        field: &'static str,
        compact: bool,
    ) -> Result<(), EncodeError> {
        self.put_length(v.map(str::len), field, compact, true)?;
        if let Some(s) = v {
            self.put_slice(s.as_bytes());
        }
        Ok(())
    }

    pub fn put_bytes(
        &mut self,
        v: Option<&Bytes>,
        field: &'static str,
        compact: bool,
    ) -> Result<(), EncodeError> {
        self.put_length(v.map(Bytes::len), field, compact, false)?;
        if let Some(b) = v {
            self.put_shared(b);
        }
        Ok(())
    }

    /// Appends bytes by reference when they are large enough for that to pay.
    pub fn put_shared(&mut self, b: &Bytes) {
        if b.len() < ZERO_COPY_MIN_BYTES {
            self.put_slice(b);
            return;
        }
        if !self.buf.is_empty() {
            self.chunks.push(self.buf.split().freeze());
        }
        self.chunks.push(b.clone());
        self.len += b.len();
    }

    /// Appends everything another encoder holds (used for tagged-field payloads).
    pub fn append(&mut self, other: Encoder) {
        if other.chunks.is_empty() {
            self.buf.extend_from_slice(&other.buf);
            self.len += other.len;
            return;
        }
        if !self.buf.is_empty() {
            self.chunks.push(self.buf.split().freeze());
        }
        self.len += other.len;
        self.chunks.extend(other.chunks);
        if !other.buf.is_empty() {
            self.chunks.push(other.buf.freeze());
        }
    }

    /// The encoded bytes as chunks, in order, for a vectored write.
    pub fn into_chunks(mut self) -> Vec<Bytes> {
        if !self.buf.is_empty() {
            self.chunks.push(self.buf.freeze());
        }
        self.chunks
    }

    /// The encoded bytes as one buffer (copies only when there are several chunks).
    pub fn into_bytes(self) -> Bytes {
        let total = self.len;
        let mut chunks = self.into_chunks();
        match chunks.len() {
            0 => Bytes::new(),
            1 => chunks.pop().unwrap_or_default(),
            _ => {
                let mut out = BytesMut::with_capacity(total);
                for c in chunks {
                    out.extend_from_slice(&c);
                }
                out.freeze()
            }
        }
    }
}

/// Encodes a tagged field: its tag, its size, then the payload `write` produces.
pub fn put_tagged_field(
    enc: &mut Encoder,
    tag: u32,
    write: impl FnOnce(&mut Encoder) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let mut payload = Encoder::new();
    write(&mut payload)?;
    enc.put_unsigned_varint(tag);
    enc.put_unsigned_varint(payload.len() as u32);
    enc.append(payload);
    Ok(())
}

/// Writes a tagged-field section: the count, then the known fields (already encoded) and the
/// unknown ones kept from decoding, merged in ascending tag order.
pub fn put_tagged_section(
    enc: &mut Encoder,
    mut known: Vec<(u32, Encoder)>,
    unknown: &[RawTaggedField],
) {
    enc.put_unsigned_varint((known.len() + unknown.len()) as u32);
    if unknown.is_empty() {
        for (tag, payload) in known {
            enc.put_unsigned_varint(tag);
            enc.put_unsigned_varint(payload.len() as u32);
            enc.append(payload);
        }
        return;
    }
    known.sort_by_key(|(tag, _)| *tag);
    let mut unknown: Vec<&RawTaggedField> = unknown.iter().collect();
    unknown.sort_by_key(|f| f.tag);
    let mut known = known.into_iter().peekable();
    let mut unknown = unknown.into_iter().peekable();
    loop {
        let take_known = match (known.peek(), unknown.peek()) {
            (Some((k, _)), Some(u)) => *k <= u.tag,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_known {
            if let Some((tag, payload)) = known.next() {
                enc.put_unsigned_varint(tag);
                enc.put_unsigned_varint(payload.len() as u32);
                enc.append(payload);
            }
        } else if let Some(f) = unknown.next() {
            enc.put_unsigned_varint(f.tag);
            enc.put_unsigned_varint(f.data.len() as u32);
            enc.put_shared(&f.data);
        }
    }
}

/// The size in bytes of `v` as an unsigned varint.
pub fn unsigned_varint_size(v: u32) -> usize {
    match v {
        0..=0x7f => 1,
        0x80..=0x3fff => 2,
        0x4000..=0x1f_ffff => 3,
        0x20_0000..=0xfff_ffff => 4,
        _ => 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip_and_limits() {
        for v in [0u32, 1, 127, 128, 16383, 16384, u32::MAX] {
            let mut e = Encoder::new();
            e.put_unsigned_varint(v);
            assert_eq!(e.len(), unsigned_varint_size(v));
            let mut b = e.into_bytes();
            assert_eq!(read_unsigned_varint(&mut b, "v").unwrap(), v);
        }
        for v in [0i32, -1, 1, i32::MIN, i32::MAX] {
            let mut e = Encoder::new();
            e.put_varint(v);
            assert_eq!(read_varint(&mut e.into_bytes(), "v").unwrap(), v);
        }
        for v in [0i64, -1, i64::MIN, i64::MAX] {
            let mut e = Encoder::new();
            e.put_varlong(v);
            assert_eq!(read_varlong(&mut e.into_bytes(), "v").unwrap(), v);
        }
        let mut six = Bytes::from_static(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]);
        assert!(matches!(
            read_unsigned_varint(&mut six, "v").unwrap_err().kind,
            DecodeErrorKind::VarintTooLong { .. }
        ));
    }

    #[test]
    fn uuid_base64_matches_kafka() {
        let mut id = [0u8; 16];
        id[15] = 1;
        assert_eq!(Uuid(id).to_base64(), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(Uuid::from_base64("AAAAAAAAAAAAAAAAAAAAAQ"), Some(Uuid(id)));
        assert_eq!(Uuid::from_base64("AAAA"), None);
        // java.util.Base64.getUrlEncoder().withoutPadding() of 16 bytes 0xfb.
        assert_eq!(Uuid([0xfb; 16]).to_base64(), "-_v7-_v7-_v7-_v7-_v7-w");
        assert_eq!(
            Uuid::from_base64("-_v7-_v7-_v7-_v7-_v7-w"),
            Some(Uuid([0xfb; 16]))
        );
        assert_eq!(Uuid::from_base64("-_v7-_v7-_v7-_v7-_v7-!"), None);
    }

    #[test]
    fn large_bytes_are_chunked_not_copied() {
        let big = Bytes::from(vec![7u8; 4096]);
        let mut e = Encoder::new();
        e.put_i32(1);
        e.put_bytes(Some(&big), "records", false).unwrap();
        e.put_i32(2);
        let chunks = e.into_chunks();
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks[1].as_ptr(), big.as_ptr());
    }
}
