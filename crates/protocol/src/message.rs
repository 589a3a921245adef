//! The trait every generated message implements, and version ranges.

use crate::codec::{DecodeResult, EncodeError, Encoder};
use bytes::Bytes;

/// An inclusive range of versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VersionRange {
    pub min: i16,
    pub max: i16,
}

impl VersionRange {
    pub fn contains(&self, version: i16) -> bool {
        self.min <= version && version <= self.max
    }

    /// Every version in the range, lowest first.
    pub fn iter(&self) -> impl Iterator<Item = i16> {
        self.min..=self.max
    }
}

/// A message generated from one of Kafka's schemas (request, response, header, control
/// record value, metadata record). `encode` and `decode` check the version against the
/// schema's valid versions; the `*_unchecked` forms are the generated bodies.
pub trait Message: Sized + Clone + std::fmt::Debug + PartialEq + Default {
    /// Kafka's name of the message (`ProduceRequest`).
    const NAME: &'static str;
    /// The schema's `validVersions`.
    const VERSIONS: VersionRange;
    /// The first flexible version, if any.
    const FLEXIBLE_MIN_VERSION: Option<i16>;

    #[doc(hidden)]
    fn write_unchecked(&self, e: &mut Encoder, version: i16) -> Result<(), EncodeError>;
    #[doc(hidden)]
    fn read_unchecked(b: &mut Bytes, version: i16) -> DecodeResult<Self>;

    /// A random value valid at `version`, for property and differential tests.
    #[cfg(feature = "testing")]
    fn sample(rng: &mut crate::testing::SampleRng, version: i16) -> Self;

    fn is_flexible(version: i16) -> bool {
        Self::FLEXIBLE_MIN_VERSION.is_some_and(|m| version >= m)
    }

    /// Writes the message at `version`.
    fn encode(&self, e: &mut Encoder, version: i16) -> Result<(), EncodeError> {
        if !Self::VERSIONS.contains(version) {
            return Err(EncodeError::UnsupportedVersion {
                message: Self::NAME,
                version,
                min: Self::VERSIONS.min,
                max: Self::VERSIONS.max,
            });
        }
        self.write_unchecked(e, version)
    }

    /// Reads a message at `version` from the front of `b`, leaving what follows it.
    fn decode(b: &mut Bytes, version: i16) -> DecodeResult<Self> {
        if !Self::VERSIONS.contains(version) {
            return Err(crate::DecodeError::new(
                "(version)",
                crate::DecodeErrorKind::UnsupportedVersion {
                    version,
                    min: Self::VERSIONS.min,
                    max: Self::VERSIONS.max,
                },
            )
            .within(Self::NAME, version));
        }
        Self::read_unchecked(b, version).map_err(|e| e.within(Self::NAME, version))
    }

    /// The message at `version` as one buffer.
    fn to_bytes(&self, version: i16) -> Result<Bytes, EncodeError> {
        let mut e = Encoder::new();
        self.encode(&mut e, version)?;
        Ok(e.into_bytes())
    }
}
