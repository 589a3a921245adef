//! [`LogConfig`]: the per-log settings, named and defaulted as Kafka's topic configs
//! (`segment.bytes`, `retention.ms`, `flush.messages`, ...), so Kafka's documentation and
//! the operators' habits carry over unchanged.
//!
//! "Never" in Kafka is `Long.MAX_VALUE`; here it is `i64::MAX` for the same reason: the
//! arithmetic stays total and the value round-trips through a properties file.

use kraftd_protocol::records::{Compression, TimestampType};

use crate::error::{LogError, Result};

/// Kafka's `segment.bytes` default: 1 GiB.
pub const DEFAULT_SEGMENT_BYTES: u64 = 1024 * 1024 * 1024;
/// Kafka's `segment.ms` default: 7 days.
pub const DEFAULT_SEGMENT_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// Kafka's `retention.ms` default: 7 days.
pub const DEFAULT_RETENTION_MS: i64 = 7 * 24 * 60 * 60 * 1000;
/// Kafka's `segment.index.bytes` default: 10 MiB.
pub const DEFAULT_SEGMENT_INDEX_BYTES: u64 = 10 * 1024 * 1024;
/// Kafka's `index.interval.bytes` default: 4 KiB.
pub const DEFAULT_INDEX_INTERVAL_BYTES: u64 = 4096;
/// Kafka's `max.message.bytes` default: 1 MiB plus the 12-byte log overhead.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 1024 * 1024 + 12;
/// The most one read returns (beyond its first batch, which is always whole), whatever
/// `max_bytes` the caller asks for: a read is one allocation, so it is bounded. Kafka's
/// largest default fetch size (`fetch.max.bytes`) is 50 MiB.
pub const MAX_READ_BYTES: usize = 64 * 1024 * 1024;
/// kraftd's `log.segment.open.files.max` default: the most segment `.log` handles the
/// process keeps open (active and sealed segments of every log; index files hold none
/// between writes), least recently used closed first. Kafka has no such bound (it keeps
/// every segment's files open: three or four descriptors per segment); with it a broker's
/// descriptors for its logs are bounded whatever its partition and segment counts.
pub const DEFAULT_SEGMENT_OPEN_FILES_MAX: usize = 10_000;
/// kraftd's `log.segment.idle.close.ms` default: a segment handle unused this long is
/// closed (reopened on the next read or append). Ten minutes: a partition produced to or
/// fetched from at any steady rate keeps its handle; an idle one gives it back.
pub const DEFAULT_SEGMENT_IDLE_CLOSE_MS: i64 = 10 * 60 * 1000;
/// The smallest segment the log store rolls at (14 bytes, so a segment holds at least a
/// header). A topic's `segment.bytes` is at least 1 MiB (Kafka's `LogConfig` floor, checked
/// by the controller); tests roll tiny segments with `internal.segment.bytes`, as Kafka's do.
pub const MIN_SEGMENT_BYTES: u64 = 14;
/// Kafka's `min.cleanable.dirty.ratio` default.
pub const DEFAULT_MIN_CLEANABLE_DIRTY_RATIO: f64 = 0.5;
/// Kafka's `delete.retention.ms` default: 1 day.
pub const DEFAULT_DELETE_RETENTION_MS: i64 = 24 * 60 * 60 * 1000;

/// Kafka's `message.timestamp.after.max.ms` default (4.x): one hour.
pub const DEFAULT_MESSAGE_TIMESTAMP_AFTER_MAX_MS: i64 = 60 * 60 * 1000;

/// Kafka's `compression.type` for a topic: the codec the leader stores batches in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TopicCompression {
    /// `producer`: each batch stays as the producer compressed it.
    #[default]
    Producer,
    /// `uncompressed`, `gzip`, `snappy`, `lz4` or `zstd`: a batch in another codec is
    /// re-compressed into this one by the leader.
    Codec(Compression),
}

impl TopicCompression {
    /// Parses Kafka's values (case-sensitive, as Kafka's validator is).
    pub fn parse(value: &str) -> Result<TopicCompression> {
        Ok(match value.trim() {
            "producer" => TopicCompression::Producer,
            "uncompressed" => TopicCompression::Codec(Compression::None),
            "gzip" => TopicCompression::Codec(Compression::Gzip),
            "snappy" => TopicCompression::Codec(Compression::Snappy),
            "lz4" => TopicCompression::Codec(Compression::Lz4),
            "zstd" => TopicCompression::Codec(Compression::Zstd),
            _ => {
                return Err(LogError::InvalidConfig {
                    name: "compression.type",
                    value: value.to_string(),
                    reason: "must be producer, uncompressed, gzip, snappy, lz4 or zstd",
                })
            }
        })
    }

    /// The codec a batch compressed with `source` is stored in.
    pub fn target(self, source: Compression) -> Compression {
        match self {
            TopicCompression::Producer => source,
            TopicCompression::Codec(c) => c,
        }
    }
}

/// Kafka's `cleanup.policy`: what happens to old data. `delete` removes whole segments by
/// time and size (`retention.ms`, `retention.bytes`); `compact` keeps the latest record per
/// key (the log cleaner, [`crate::cleaner`]); both may be on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CleanupPolicy {
    /// `delete` is in the list.
    pub delete: bool,
    /// `compact` is in the list.
    pub compact: bool,
}

impl CleanupPolicy {
    /// `delete`, Kafka's default.
    pub const DELETE: CleanupPolicy = CleanupPolicy {
        delete: true,
        compact: false,
    };
    /// `compact`.
    pub const COMPACT: CleanupPolicy = CleanupPolicy {
        delete: false,
        compact: true,
    };

    /// Parses Kafka's list: `delete`, `compact`, or both comma-separated in any order
    /// (whitespace around items ignored). An empty list, an unknown item or a repeated one
    /// is refused.
    pub fn parse(value: &str) -> Result<CleanupPolicy> {
        let refuse = |reason| LogError::InvalidConfig {
            name: "cleanup.policy",
            value: value.to_string(),
            reason,
        };
        let mut policy = CleanupPolicy {
            delete: false,
            compact: false,
        };
        for item in value.split(',').map(str::trim) {
            let slot = match item {
                "delete" => &mut policy.delete,
                "compact" => &mut policy.compact,
                _ => return Err(refuse("must be delete, compact, or both (comma-separated)")),
            };
            if std::mem::replace(slot, true) {
                return Err(refuse("lists a policy twice"));
            }
        }
        Ok(policy)
    }

    /// Kafka's spelling: `delete`, `compact` or `compact,delete`.
    pub fn name(self) -> &'static str {
        match (self.compact, self.delete) {
            (true, true) => "compact,delete",
            (true, false) => "compact",
            _ => "delete",
        }
    }
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        CleanupPolicy::DELETE
    }
}

/// How one log behaves: when it rolls, what it keeps, when it forces data to disk.
///
/// Field names are Kafka's property names with dots turned into underscores.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes`: roll to a new segment before one would grow past this size.
    pub segment_bytes: u64,
    /// `segment.ms`: roll a non-empty segment once its first append is this old.
    pub segment_ms: i64,
    /// `segment.index.bytes`: roll when the offset index would grow past this size.
    pub segment_index_bytes: u64,
    /// `retention.ms`: delete segments whose newest timestamp is older than this; -1 keeps
    /// them forever.
    pub retention_ms: i64,
    /// `retention.bytes`: delete the oldest segments while the log is larger than this; -1
    /// means no limit.
    pub retention_bytes: i64,
    /// `flush.messages`: fdatasync after this many records since the last flush
    /// (`i64::MAX`: never force, rely on replication; 1: flush every append).
    pub flush_messages: i64,
    /// `flush.ms`: fdatasync when the last flush is this old at an append (`i64::MAX`:
    /// never).
    pub flush_ms: i64,
    /// `index.interval.bytes`: bytes between offset-index entries.
    pub index_interval_bytes: u64,
    /// `max.message.bytes`: the largest batch accepted.
    pub max_message_bytes: usize,
    /// `message.timestamp.type`: with `LogAppendTime` the leader stamps each batch with the
    /// append time.
    pub message_timestamp_type: TimestampType,
    /// `cleanup.policy`: `delete` gates time and size retention, `compact` the cleaner.
    pub cleanup_policy: CleanupPolicy,
    /// `min.cleanable.dirty.ratio`: the cleaner takes a log once this share of it is dirty
    /// (not yet cleaned), in [0, 1].
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms`: a segment is not cleaned until its newest record is this old.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: a dirty segment whose first batch is this old forces a clean
    /// whatever the dirty ratio (`i64::MAX`: never).
    pub max_compaction_lag_ms: i64,
    /// `delete.retention.ms`: how long a tombstone (null value) survives after the clean
    /// that first kept it (KIP-534's delete horizon), so consumers can see the delete.
    pub delete_retention_ms: i64,
    /// `message.timestamp.before.max.ms`: on a `CreateTime` log, produce refuses a record
    /// whose timestamp is more than this before the leader's clock (`i64::MAX`: no limit).
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`: on a `CreateTime` log, produce refuses a record
    /// whose timestamp is more than this after the leader's clock.
    pub message_timestamp_after_max_ms: i64,
    /// `compression.type`: the codec the leader stores produced batches in.
    pub compression_type: TopicCompression,
    /// Whether a follower may append across forward offset gaps, and recovery accept them,
    /// whatever `cleanup.policy` says now: a data partition's leader may hold cleaned
    /// segments from a time its topic was compacted, and Kafka's followers accept any
    /// increasing offsets. Off for a log that never has gaps (the Raft metadata log, where
    /// one would mean a bug); a compacted log allows them in any case.
    pub offset_gaps: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            segment_ms: DEFAULT_SEGMENT_MS,
            segment_index_bytes: DEFAULT_SEGMENT_INDEX_BYTES,
            retention_ms: DEFAULT_RETENTION_MS,
            retention_bytes: -1,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
            index_interval_bytes: DEFAULT_INDEX_INTERVAL_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            message_timestamp_type: TimestampType::CreateTime,
            cleanup_policy: CleanupPolicy::DELETE,
            min_cleanable_dirty_ratio: DEFAULT_MIN_CLEANABLE_DIRTY_RATIO,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: DEFAULT_DELETE_RETENTION_MS,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: DEFAULT_MESSAGE_TIMESTAMP_AFTER_MAX_MS,
            compression_type: TopicCompression::Producer,
            offset_gaps: false,
        }
    }
}

impl LogConfig {
    /// Whether offsets may jump forward between batches (see [`LogConfig::offset_gaps`]).
    pub fn allows_offset_gaps(&self) -> bool {
        self.offset_gaps || self.cleanup_policy.compact
    }
}

impl LogConfig {
    /// The Raft metadata log's policy: flush before acknowledging (Raft's votes and commits
    /// count only durable entries), and no time or size retention (snapshots decide what
    /// is deleted).
    pub fn metadata_log() -> Self {
        LogConfig {
            flush_messages: 1,
            retention_ms: -1,
            retention_bytes: -1,
            max_message_bytes: 8 * 1024 * 1024,
            ..LogConfig::default()
        }
    }

    /// Every Kafka property name [`LogConfig::set`] takes, in an order that applies each
    /// after what it is checked against (`min.compaction.lag.ms` before
    /// `max.compaction.lag.ms`) or overrides (`internal.segment.bytes`, Kafka's testing-only
    /// segment size without `segment.bytes`' 1 MiB floor, after `segment.bytes`): the owner applies a topic's effective configs from this
    /// list, so a setting the store honours cannot be left out of the one that feeds it.
    pub const KEYS: &'static [&'static str] = &[
        "segment.bytes",
        "internal.segment.bytes",
        "segment.ms",
        "segment.index.bytes",
        "retention.ms",
        "retention.bytes",
        "flush.messages",
        "flush.ms",
        "index.interval.bytes",
        "max.message.bytes",
        "message.timestamp.type",
        "cleanup.policy",
        "min.cleanable.dirty.ratio",
        "min.compaction.lag.ms",
        "max.compaction.lag.ms",
        "delete.retention.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.after.max.ms",
        "compression.type",
    ];

    /// Sets one setting by its Kafka property name (`segment.bytes`, `retention.ms`, ...),
    /// so the owner can apply a properties file or a dynamic config change without knowing
    /// the fields. Unknown names are refused.
    /// On error the config is unchanged.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let mut next = self.clone();
        next.set_unchecked(name, value)?;
        next.validate()?;
        *self = next;
        Ok(())
    }

    fn set_unchecked(&mut self, name: &str, value: &str) -> Result<()> {
        fn parse<T: std::str::FromStr>(name: &'static str, value: &str) -> Result<T> {
            value.trim().parse().map_err(|_| LogError::InvalidConfig {
                name,
                value: value.to_string(),
                reason: "not a number",
            })
        }
        match name {
            "segment.bytes" => self.segment_bytes = parse("segment.bytes", value)?,
            "internal.segment.bytes" => {
                self.segment_bytes = parse("internal.segment.bytes", value)?
            }
            "segment.ms" => self.segment_ms = parse("segment.ms", value)?,
            "segment.index.bytes" => {
                self.segment_index_bytes = parse("segment.index.bytes", value)?
            }
            "retention.ms" => self.retention_ms = parse("retention.ms", value)?,
            "retention.bytes" => self.retention_bytes = parse("retention.bytes", value)?,
            "flush.messages" => self.flush_messages = parse("flush.messages", value)?,
            "flush.ms" => self.flush_ms = parse("flush.ms", value)?,
            "index.interval.bytes" => {
                self.index_interval_bytes = parse("index.interval.bytes", value)?
            }
            "max.message.bytes" => self.max_message_bytes = parse("max.message.bytes", value)?,
            "message.timestamp.type" => {
                self.message_timestamp_type = match value.trim() {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => {
                        return Err(LogError::InvalidConfig {
                            name: "message.timestamp.type",
                            value: value.to_string(),
                            reason: "must be CreateTime or LogAppendTime",
                        })
                    }
                }
            }
            "cleanup.policy" => self.cleanup_policy = CleanupPolicy::parse(value)?,
            "min.cleanable.dirty.ratio" => {
                self.min_cleanable_dirty_ratio = parse("min.cleanable.dirty.ratio", value)?
            }
            "min.compaction.lag.ms" => {
                self.min_compaction_lag_ms = parse("min.compaction.lag.ms", value)?
            }
            "max.compaction.lag.ms" => {
                self.max_compaction_lag_ms = parse("max.compaction.lag.ms", value)?
            }
            "delete.retention.ms" => {
                self.delete_retention_ms = parse("delete.retention.ms", value)?
            }
            "message.timestamp.before.max.ms" => {
                self.message_timestamp_before_max_ms =
                    parse("message.timestamp.before.max.ms", value)?
            }
            "message.timestamp.after.max.ms" => {
                self.message_timestamp_after_max_ms =
                    parse("message.timestamp.after.max.ms", value)?
            }
            "compression.type" => self.compression_type = TopicCompression::parse(value)?,
            _ => {
                return Err(LogError::InvalidConfig {
                    name: "(unknown)",
                    value: format!("{name}={value}"),
                    reason: "unknown log config",
                })
            }
        }
        Ok(())
    }

    /// Checks the ranges Kafka's `LogConfig` enforces, so a bad value is refused when set
    /// rather than misbehaving at the next roll.
    pub fn validate(&self) -> Result<()> {
        let bad = |name: &'static str, value: String, reason: &'static str| {
            Err(LogError::InvalidConfig {
                name,
                value,
                reason,
            })
        };
        if self.segment_bytes < MIN_SEGMENT_BYTES || self.segment_bytes > i32::MAX as u64 {
            return bad(
                "segment.bytes",
                self.segment_bytes.to_string(),
                "must be in [14, 2147483647]",
            );
        }
        if self.segment_ms < 1 {
            return bad("segment.ms", self.segment_ms.to_string(), "must be >= 1");
        }
        if self.segment_index_bytes < 8 {
            return bad(
                "segment.index.bytes",
                self.segment_index_bytes.to_string(),
                "must be >= 8",
            );
        }
        if self.retention_ms < -1 {
            return bad(
                "retention.ms",
                self.retention_ms.to_string(),
                "must be >= -1",
            );
        }
        if self.flush_messages < 1 {
            return bad(
                "flush.messages",
                self.flush_messages.to_string(),
                "must be >= 1",
            );
        }
        if self.flush_ms < 0 {
            return bad("flush.ms", self.flush_ms.to_string(), "must be >= 0");
        }
        if self.max_message_bytes < 12 + 49 {
            return bad(
                "max.message.bytes",
                self.max_message_bytes.to_string(),
                "must hold at least a batch header (61 bytes)",
            );
        }
        // Kafka's ranges: the ratio in [0, 1], the lags and delete retention at least 0, and
        // the max lag at least 1 (and, checked as Kafka's LogConfig does, not below the min).
        let ratio = self.min_cleanable_dirty_ratio;
        if !(0.0..=1.0).contains(&ratio) {
            return bad(
                "min.cleanable.dirty.ratio",
                ratio.to_string(),
                "must be in [0, 1]",
            );
        }
        if self.min_compaction_lag_ms < 0 {
            return bad(
                "min.compaction.lag.ms",
                self.min_compaction_lag_ms.to_string(),
                "must be >= 0",
            );
        }
        if self.max_compaction_lag_ms < 1 {
            return bad(
                "max.compaction.lag.ms",
                self.max_compaction_lag_ms.to_string(),
                "must be >= 1",
            );
        }
        if self.max_compaction_lag_ms < self.min_compaction_lag_ms {
            return bad(
                "max.compaction.lag.ms",
                self.max_compaction_lag_ms.to_string(),
                "must not be below min.compaction.lag.ms",
            );
        }
        if self.delete_retention_ms < 0 {
            return bad(
                "delete.retention.ms",
                self.delete_retention_ms.to_string(),
                "must be >= 0",
            );
        }
        for (name, value) in [
            (
                "message.timestamp.before.max.ms",
                self.message_timestamp_before_max_ms,
            ),
            (
                "message.timestamp.after.max.ms",
                self.message_timestamp_after_max_ms,
            ),
        ] {
            if value < 0 {
                return bad(name, value.to_string(), "must be >= 0");
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_listed_is_one_set_takes() {
        for key in LogConfig::KEYS {
            let value = match *key {
                "message.timestamp.type" => "CreateTime",
                "cleanup.policy" => "compact",
                "compression.type" => "producer",
                "min.cleanable.dirty.ratio" => "0.5",
                _ => "1000",
            };
            assert!(
                LogConfig::default().set(key, value).is_ok(),
                "{key}={value} refused"
            );
        }
        assert!(LogConfig::default().set("no.such.key", "1").is_err());
    }

    #[test]
    fn defaults_are_kafkas() {
        let c = LogConfig::default();
        assert_eq!(c.segment_bytes, 1_073_741_824);
        assert_eq!(c.segment_ms, 604_800_000);
        assert_eq!(c.retention_ms, 604_800_000);
        assert_eq!(c.retention_bytes, -1);
        assert_eq!(c.flush_messages, i64::MAX);
        assert_eq!(c.flush_ms, i64::MAX);
        assert_eq!(c.index_interval_bytes, 4096);
        assert_eq!(c.max_message_bytes, 1_048_588);
        assert!(c.validate().is_ok());
        assert!(LogConfig::metadata_log().validate().is_ok());
    }

    #[test]
    fn set_by_kafka_name() {
        let mut c = LogConfig::default();
        c.set("segment.bytes", "1024").unwrap();
        c.set("retention.ms", "-1").unwrap();
        c.set("message.timestamp.type", "LogAppendTime").unwrap();
        assert_eq!(c.segment_bytes, 1024);
        assert_eq!(c.retention_ms, -1);
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
        assert!(c.set("segment.bytes", "x").is_err());
        assert!(c.set("segment.bytes", "1").is_err());
        assert!(c.set("no.such", "1").is_err());
    }

    #[test]
    fn compaction_settings_are_kafkas() {
        let mut c = LogConfig::default();
        assert_eq!(c.cleanup_policy, CleanupPolicy::DELETE);
        assert_eq!(c.min_cleanable_dirty_ratio, 0.5);
        assert_eq!(c.min_compaction_lag_ms, 0);
        assert_eq!(c.max_compaction_lag_ms, i64::MAX);
        assert_eq!(c.delete_retention_ms, 86_400_000);
        for (v, compact, delete) in [
            ("compact", true, false),
            ("delete", false, true),
            ("compact,delete", true, true),
            ("delete, compact", true, true),
        ] {
            c.set("cleanup.policy", v).unwrap();
            assert_eq!(
                (c.cleanup_policy.compact, c.cleanup_policy.delete),
                (compact, delete)
            );
        }
        assert_eq!(c.cleanup_policy.name(), "compact,delete");
        for bad in ["", "compact,", "Compact", "compact,compact", "none"] {
            assert!(c.set("cleanup.policy", bad).is_err(), "{bad:?}");
        }
        c.set("min.cleanable.dirty.ratio", "0.1").unwrap();
        assert!(c.set("min.cleanable.dirty.ratio", "1.5").is_err());
        assert!(c.set("min.cleanable.dirty.ratio", "NaN").is_err());
        c.set("min.compaction.lag.ms", "100").unwrap();
        assert!(c.set("min.compaction.lag.ms", "-1").is_err());
        assert!(c.set("max.compaction.lag.ms", "50").is_err());
        c.set("max.compaction.lag.ms", "1000").unwrap();
        c.set("delete.retention.ms", "0").unwrap();
        assert!(c.set("delete.retention.ms", "-1").is_err());
        assert_eq!(c.min_cleanable_dirty_ratio, 0.1);
        assert_eq!(c.max_compaction_lag_ms, 1000);
    }

    #[test]
    fn validation_settings_are_kafkas() {
        let mut c = LogConfig::default();
        assert_eq!(c.message_timestamp_before_max_ms, i64::MAX);
        assert_eq!(c.message_timestamp_after_max_ms, 3_600_000);
        assert_eq!(c.compression_type, TopicCompression::Producer);
        c.set("message.timestamp.before.max.ms", "1000").unwrap();
        c.set("message.timestamp.after.max.ms", "0").unwrap();
        assert_eq!(
            (
                c.message_timestamp_before_max_ms,
                c.message_timestamp_after_max_ms
            ),
            (1000, 0)
        );
        assert!(c.set("message.timestamp.before.max.ms", "-1").is_err());
        assert!(c.set("message.timestamp.after.max.ms", "x").is_err());
        for (v, want) in [
            ("uncompressed", TopicCompression::Codec(Compression::None)),
            ("gzip", TopicCompression::Codec(Compression::Gzip)),
            ("snappy", TopicCompression::Codec(Compression::Snappy)),
            ("lz4", TopicCompression::Codec(Compression::Lz4)),
            ("zstd", TopicCompression::Codec(Compression::Zstd)),
            ("producer", TopicCompression::Producer),
        ] {
            c.set("compression.type", v).unwrap();
            assert_eq!(c.compression_type, want, "{v}");
        }
        for bad in ["none", "GZIP", "brotli", ""] {
            assert!(c.set("compression.type", bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            TopicCompression::Producer.target(Compression::Lz4),
            Compression::Lz4
        );
        assert_eq!(
            TopicCompression::Codec(Compression::Gzip).target(Compression::Lz4),
            Compression::Gzip
        );
    }
}
