//! A decoder for the subset of OpenTelemetry's OTLP metrics protobuf (`MetricsData`,
//! opentelemetry-proto `metrics/v1/metrics.proto`) that KIP-714 clients push: resource
//! metrics → scope metrics → metrics whose gauge, sum or histogram data points carry
//! attributes. Hand-written over the protobuf wire format (varints, fixed64, length-delimited
//! fields), because the workspace has no protobuf crate and this needs only a few messages.
//!
//! Every byte is hostile: a length past the end, a truncated varint, an unknown wire type or
//! nesting deeper than [`MAX_DEPTH`] is an [`OtlpError`], never a panic; unknown fields are
//! skipped as protobuf requires; what a payload can make us allocate is bounded by its own
//! length (each decoded item consumes at least one byte of it).

use std::fmt;

/// Deepest nesting of messages followed (AnyValue arrays and key-value lists nest).
const MAX_DEPTH: usize = 16;

/// Why a payload is not valid OTLP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtlpError(pub &'static str);

impl fmt::Display for OtlpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed OTLP metrics: {}", self.0)
    }
}

impl std::error::Error for OtlpError {}

/// One metric data point, flattened out of its resource and scope.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The metric's name as the client sent it (dots and all).
    pub name: String,
    /// The resource's attributes, then the data point's (a point's own win on a clash).
    pub attributes: Vec<(String, String)>,
    pub value: PointValue,
}

/// A data point's value by the metric's kind.
#[derive(Debug, Clone, PartialEq)]
pub enum PointValue {
    Gauge(f64),
    /// A sum; `delta` when the temporality is DELTA (each point the change since the last).
    Sum {
        value: f64,
        delta: bool,
        monotonic: bool,
    },
    Histogram {
        count: u64,
        sum: f64,
        /// Explicit bucket upper bounds; `bucket_counts` has one more entry (+Inf).
        bounds: Vec<f64>,
        bucket_counts: Vec<u64>,
        delta: bool,
    },
}

/// OTLP's AGGREGATION_TEMPORALITY_DELTA.
const TEMPORALITY_DELTA: u64 = 1;

/// Decodes a `MetricsData` message into its data points. Metrics of kinds kraftd does not
/// expose (exponential histograms, summaries) are skipped.
pub fn decode_metrics_data(bytes: &[u8]) -> Result<Vec<Point>, OtlpError> {
    let mut points = Vec::new();
    let mut r = Reader::new(bytes, 0)?;
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, LEN) => resource_metrics(r.nested()?, &mut points)?,
            _ => r.skip(wire)?,
        }
    }
    Ok(points)
}

fn resource_metrics(mut r: Reader<'_>, points: &mut Vec<Point>) -> Result<(), OtlpError> {
    let mut resource_attributes = Vec::new();
    let mut scopes = Vec::new();
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, LEN) => {
                // Resource { repeated KeyValue attributes = 1; }
                let mut res = r.nested()?;
                while let Some((f, w)) = res.key()? {
                    match (f, w) {
                        (1, LEN) => resource_attributes.push(key_value(res.nested()?)?),
                        _ => res.skip(w)?,
                    }
                }
            }
            (2, LEN) => scopes.push(r.nested()?),
            _ => r.skip(wire)?,
        }
    }
    // The resource may come after its scopes on the wire: scopes are read once it is known.
    for mut scope in scopes {
        while let Some((field, wire)) = scope.key()? {
            match (field, wire) {
                (2, LEN) => metric(scope.nested()?, &resource_attributes, points)?,
                _ => scope.skip(wire)?,
            }
        }
    }
    Ok(())
}

fn metric(
    mut r: Reader<'_>,
    resource: &[(String, String)],
    points: &mut Vec<Point>,
) -> Result<(), OtlpError> {
    let mut name = String::new();
    let mut data: Option<(u32, Reader<'_>)> = None;
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, LEN) => name = r.string()?,
            // gauge = 5, sum = 7, histogram = 9.
            (5 | 7 | 9, LEN) => data = Some((field, r.nested()?)),
            _ => r.skip(wire)?,
        }
    }
    let Some((kind, mut data)) = data else {
        return Ok(());
    };
    let mut raw_points = Vec::new();
    let mut delta = false;
    let mut monotonic = false;
    while let Some((field, wire)) = data.key()? {
        match (field, wire) {
            (1, LEN) => raw_points.push(data.nested()?),
            (2, VARINT) => delta = data.varint()? == TEMPORALITY_DELTA,
            (3, VARINT) if kind == 7 => monotonic = data.varint()? != 0,
            _ => data.skip(wire)?,
        }
    }
    for p in raw_points {
        let (attributes, value) = if kind == 9 {
            histogram_point(p, delta)?
        } else {
            number_point(p, kind, delta, monotonic)?
        };
        let mut all = resource.to_vec();
        for (k, v) in attributes {
            all.retain(|(rk, _)| *rk != k);
            all.push((k, v));
        }
        points.push(Point {
            name: name.clone(),
            attributes: all,
            value,
        });
    }
    Ok(())
}

type Attributes = Vec<(String, String)>;

fn number_point(
    mut r: Reader<'_>,
    kind: u32,
    delta: bool,
    monotonic: bool,
) -> Result<(Attributes, PointValue), OtlpError> {
    let mut attributes = Vec::new();
    let mut value = 0.0;
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (7, LEN) => attributes.push(key_value(r.nested()?)?),
            (4, I64) => value = f64::from_bits(r.fixed64()?),
            (6, I64) => value = r.fixed64()? as i64 as f64,
            _ => r.skip(wire)?,
        }
    }
    let value = if kind == 5 {
        PointValue::Gauge(value)
    } else {
        PointValue::Sum {
            value,
            delta,
            monotonic,
        }
    };
    Ok((attributes, value))
}

fn histogram_point(mut r: Reader<'_>, delta: bool) -> Result<(Attributes, PointValue), OtlpError> {
    let mut attributes = Vec::new();
    let (mut count, mut sum) = (0u64, 0.0f64);
    let (mut bounds, mut bucket_counts) = (Vec::new(), Vec::new());
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (9, LEN) => attributes.push(key_value(r.nested()?)?),
            (4, I64) => count = r.fixed64()?,
            (5, I64) => sum = f64::from_bits(r.fixed64()?),
            // Packed repeated fixed64 / double, or one element unpacked.
            (6, LEN) => bucket_counts.extend(r.nested()?.packed_fixed64()?),
            (6, I64) => bucket_counts.push(r.fixed64()?),
            (7, LEN) => bounds.extend(
                r.nested()?
                    .packed_fixed64()?
                    .into_iter()
                    .map(f64::from_bits),
            ),
            (7, I64) => bounds.push(f64::from_bits(r.fixed64()?)),
            _ => r.skip(wire)?,
        }
    }
    if !bucket_counts.is_empty() && bucket_counts.len() != bounds.len() + 1 {
        return Err(OtlpError("histogram bucket counts do not match its bounds"));
    }
    Ok((
        attributes,
        PointValue::Histogram {
            count,
            sum,
            bounds,
            bucket_counts,
            delta,
        },
    ))
}

/// `KeyValue { string key = 1; AnyValue value = 2; }`, the value as text.
fn key_value(mut r: Reader<'_>) -> Result<(String, String), OtlpError> {
    let (mut key, mut value) = (String::new(), String::new());
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, LEN) => key = r.string()?,
            (2, LEN) => value = any_value(r.nested()?)?,
            _ => r.skip(wire)?,
        }
    }
    Ok((key, value))
}

/// `AnyValue` as text: strings as they are, scalars printed, arrays and lists as their
/// items joined by commas, bytes as their length.
fn any_value(mut r: Reader<'_>) -> Result<String, OtlpError> {
    let mut out = String::new();
    while let Some((field, wire)) = r.key()? {
        out = match (field, wire) {
            (1, LEN) => r.string()?,
            (2, VARINT) => (r.varint()? != 0).to_string(),
            (3, VARINT) => (r.varint()? as i64).to_string(),
            (4, I64) => f64::from_bits(r.fixed64()?).to_string(),
            (5, LEN) => {
                // ArrayValue { repeated AnyValue values = 1; }
                let mut arr = r.nested()?;
                let mut items = Vec::new();
                while let Some((f, w)) = arr.key()? {
                    match (f, w) {
                        (1, LEN) => items.push(any_value(arr.nested()?)?),
                        _ => arr.skip(w)?,
                    }
                }
                items.join(",")
            }
            (6, LEN) => {
                // KeyValueList { repeated KeyValue values = 1; }
                let mut list = r.nested()?;
                let mut items = Vec::new();
                while let Some((f, w)) = list.key()? {
                    match (f, w) {
                        (1, LEN) => {
                            let (k, v) = key_value(list.nested()?)?;
                            items.push(format!("{k}={v}"));
                        }
                        _ => list.skip(w)?,
                    }
                }
                items.join(",")
            }
            (7, LEN) => format!("<{} bytes>", r.bytes()?.len()),
            _ => {
                r.skip(wire)?;
                continue;
            }
        };
    }
    Ok(out)
}

const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

/// A cursor over one message's bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    depth: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8], depth: usize) -> Result<Self, OtlpError> {
        if depth > MAX_DEPTH {
            return Err(OtlpError("messages nested too deep"));
        }
        Ok(Reader {
            bytes,
            at: 0,
            depth,
        })
    }

    /// The next field's number and wire type, or `None` at the end of the message.
    fn key(&mut self) -> Result<Option<(u32, u8)>, OtlpError> {
        if self.at >= self.bytes.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = u32::try_from(key >> 3).map_err(|_| OtlpError("field number too large"))?;
        if field == 0 {
            return Err(OtlpError("field number 0"));
        }
        Ok(Some((field, (key & 7) as u8)))
    }

    fn varint(&mut self) -> Result<u64, OtlpError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self
                .bytes
                .get(self.at)
                .ok_or(OtlpError("truncated varint"))?;
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(OtlpError("varint longer than 10 bytes"))
    }

    fn fixed64(&mut self) -> Result<u64, OtlpError> {
        let end = self
            .at
            .checked_add(8)
            .ok_or(OtlpError("truncated fixed64"))?;
        let raw = self
            .bytes
            .get(self.at..end)
            .ok_or(OtlpError("truncated fixed64"))?;
        self.at = end;
        let mut buf = [0u8; 8];
        buf.copy_from_slice(raw);
        Ok(u64::from_le_bytes(buf))
    }

    fn bytes(&mut self) -> Result<&'a [u8], OtlpError> {
        let len = usize::try_from(self.varint()?).map_err(|_| OtlpError("length too large"))?;
        let end = self
            .at
            .checked_add(len)
            .filter(|end| *end <= self.bytes.len())
            .ok_or(OtlpError("length past the end of the message"))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn string(&mut self) -> Result<String, OtlpError> {
        let raw = self.bytes()?;
        String::from_utf8(raw.to_vec()).map_err(|_| OtlpError("a string is not UTF-8"))
    }

    fn nested(&mut self) -> Result<Reader<'a>, OtlpError> {
        let bytes = self.bytes()?;
        Reader::new(bytes, self.depth + 1)
    }

    /// The rest of this (packed) field as little-endian 64-bit words.
    fn packed_fixed64(mut self) -> Result<Vec<u64>, OtlpError> {
        if self.bytes.len() % 8 != 0 {
            return Err(OtlpError("packed fixed64 not a multiple of 8 bytes"));
        }
        let mut out = Vec::with_capacity(self.bytes.len() / 8);
        while self.at < self.bytes.len() {
            out.push(self.fixed64()?);
        }
        Ok(out)
    }

    fn skip(&mut self, wire: u8) -> Result<(), OtlpError> {
        match wire {
            VARINT => self.varint().map(|_| ()),
            I64 => self.fixed64().map(|_| ()),
            LEN => self.bytes().map(|_| ()),
            I32 => {
                let end = self
                    .at
                    .checked_add(4)
                    .filter(|end| *end <= self.bytes.len())
                    .ok_or(OtlpError("truncated fixed32"))?;
                self.at = end;
                Ok(())
            }
            _ => Err(OtlpError("unsupported wire type")),
        }
    }
}

/// An encoder for tests: builds the messages the decoder reads.
#[cfg(test)]
pub(crate) mod encode {
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    pub fn len_field(out: &mut Vec<u8>, field: u32, body: &[u8]) {
        varint(out, u64::from(field) << 3 | 2);
        varint(out, body.len() as u64);
        out.extend_from_slice(body);
    }

    pub fn varint_field(out: &mut Vec<u8>, field: u32, v: u64) {
        varint(out, u64::from(field) << 3);
        varint(out, v);
    }

    pub fn fixed64_field(out: &mut Vec<u8>, field: u32, v: u64) {
        varint(out, u64::from(field) << 3 | 1);
        out.extend_from_slice(&v.to_le_bytes());
    }

    pub fn key_value(key: &str, value: &str) -> Vec<u8> {
        let mut any = Vec::new();
        len_field(&mut any, 1, value.as_bytes());
        let mut kv = Vec::new();
        len_field(&mut kv, 1, key.as_bytes());
        len_field(&mut kv, 2, &any);
        kv
    }

    /// A number data point with attributes and a double value.
    pub fn number_point(attrs: &[(&str, &str)], value: f64) -> Vec<u8> {
        let mut p = Vec::new();
        for (k, v) in attrs {
            len_field(&mut p, 7, &key_value(k, v));
        }
        fixed64_field(&mut p, 4, value.to_bits());
        p
    }

    /// A metric: `kind` 5 (gauge) or 7 (sum, delta and monotonic).
    pub fn metric(name: &str, kind: u32, points: &[Vec<u8>]) -> Vec<u8> {
        let mut data = Vec::new();
        for p in points {
            len_field(&mut data, 1, p);
        }
        if kind == 7 {
            varint_field(&mut data, 2, 1);
            varint_field(&mut data, 3, 1);
        }
        let mut m = Vec::new();
        len_field(&mut m, 1, name.as_bytes());
        len_field(&mut m, kind, &data);
        m
    }

    /// `MetricsData` with one resource (its attributes) and one scope of `metrics`.
    pub fn metrics_data(resource: &[(&str, &str)], metrics: &[Vec<u8>]) -> Vec<u8> {
        let mut res = Vec::new();
        for (k, v) in resource {
            len_field(&mut res, 1, &key_value(k, v));
        }
        let mut scope = Vec::new();
        for m in metrics {
            len_field(&mut scope, 2, m);
        }
        let mut rm = Vec::new();
        len_field(&mut rm, 1, &res);
        len_field(&mut rm, 2, &scope);
        let mut data = Vec::new();
        len_field(&mut data, 1, &rm);
        data
    }
}

#[cfg(test)]
mod tests {
    use super::encode::{len_field, metric, metrics_data, number_point};
    use super::{decode_metrics_data, OtlpError, PointValue};

    #[test]
    fn gauges_and_sums_with_attributes() {
        let data = metrics_data(
            &[("client_rack", "r1")],
            &[
                metric(
                    "org.apache.kafka.producer.record.send.rate",
                    5,
                    &[number_point(&[("client_id", "p1")], 2.5)],
                ),
                metric(
                    "org.apache.kafka.producer.record.send.total",
                    7,
                    &[number_point(&[("client_id", "p1")], 10.0)],
                ),
            ],
        );
        let points = decode_metrics_data(&data).expect("decodes");
        assert_eq!(points.len(), 2);
        assert_eq!(points[0].name, "org.apache.kafka.producer.record.send.rate");
        assert_eq!(
            points[0].attributes,
            [
                ("client_rack".into(), "r1".into()),
                ("client_id".into(), "p1".into())
            ]
        );
        assert_eq!(points[0].value, PointValue::Gauge(2.5));
        assert_eq!(
            points[1].value,
            PointValue::Sum {
                value: 10.0,
                delta: true,
                monotonic: true
            }
        );
    }

    #[test]
    fn every_truncation_and_corruption_is_an_error_or_a_value_never_a_panic() {
        let data = metrics_data(
            &[("a", "b")],
            &[metric("m", 7, &[number_point(&[("k", "v")], 1.0)])],
        );
        for cut in 0..data.len() {
            let _ = decode_metrics_data(&data[..cut]);
        }
        for i in 0..data.len() {
            for flip in [0x00u8, 0xff, 0x80, 0x07] {
                let mut bad = data.clone();
                bad[i] = flip;
                let _ = decode_metrics_data(&bad);
            }
        }
        // A length far past the end.
        assert!(decode_metrics_data(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        // An attribute whose value nests arrays 100 deep is refused at MAX_DEPTH.
        let mut any = Vec::new();
        len_field(&mut any, 1, b"leaf");
        for _ in 0..100 {
            // AnyValue { array_value = 5: ArrayValue { values = 1: AnyValue } }
            let mut array = Vec::new();
            len_field(&mut array, 1, &any);
            any = Vec::new();
            len_field(&mut any, 5, &array);
        }
        let mut kv = Vec::new();
        len_field(&mut kv, 1, b"k");
        len_field(&mut kv, 2, &any);
        let mut point = Vec::new();
        len_field(&mut point, 7, &kv);
        let deep = metrics_data(&[], &[metric("m", 5, &[point])]);
        assert_eq!(
            decode_metrics_data(&deep),
            Err(OtlpError("messages nested too deep"))
        );
    }
}
