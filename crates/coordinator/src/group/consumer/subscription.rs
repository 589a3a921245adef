//! Subscriptions: regular expressions (Kafka's `TopicRegexResolver`, RE2J there, the `regex`
//! crate here: both are RE2-style, and a pattern must match the whole topic name as Java's
//! `Matcher.matches` does), the topic ids a member subscribes to, and the metadata hash
//! whose change bumps the group epoch.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::{ErrorCode, Uuid};
use regex::Regex;

use super::member::ConsumerGroupMember;
use crate::context::TopicMetadata;

/// Bounds the compiled size of a client's pattern, so that one cannot make the coordinator
/// build a huge automaton.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles a subscription pattern, anchored at both ends; INVALID_REGULAR_EXPRESSION when
/// it does not parse.
pub fn compile(pattern: &str) -> Result<Regex, (ErrorCode, String)> {
    regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            (
                ErrorCode::InvalidRegularExpression,
                format!("SubscribedTopicRegex `{pattern}` is not a valid regular expression: {e}."),
            )
        })
}

/// The topics a pattern matches now (none when it no longer compiles).
pub fn resolve(pattern: &str, topics: &[String]) -> BTreeSet<String> {
    match compile(pattern) {
        Ok(re) => topics.iter().filter(|t| re.is_match(t)).cloned().collect(),
        Err(_) => BTreeSet::new(),
    }
}

/// The topic names a member subscribes to: its names and, when its regex is resolved,
/// the regex's topics (an unresolved regex counts as none, as Kafka's).
pub fn member_topic_names(
    m: &ConsumerGroupMember,
    regexes: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeSet<String> {
    let mut names = m.subscribed_topic_names.clone();
    if m.has_regex() {
        if let Some(topics) = regexes.get(&m.subscribed_topic_regex) {
            names.extend(topics.iter().cloned());
        }
    }
    names
}

/// The ids of the named topics that exist.
pub fn topic_ids(names: &BTreeSet<String>, metadata: &dyn TopicMetadata) -> BTreeSet<Uuid> {
    names
        .iter()
        .filter_map(|n| metadata.topic_by_name(n).map(|(id, _)| id))
        .collect()
}

/// The group metadata hash of the named topics (Kafka's `Utils.computeGroupHash` over
/// `computeTopicHash`), stored in the groups' metadata records: a change bumps the group
/// epoch, so that a new topic or new partitions get assigned. The same value as Kafka's, so a
/// Kafka coordinator taking the partition over sees no change. 0 when no topic exists.
pub fn metadata_hash(names: &BTreeSet<String>, metadata: &dyn TopicMetadata) -> i64 {
    // Kafka sorts by topic name, as the set iterates.
    let topics: Vec<i64> = names
        .iter()
        .filter_map(|n| topic_hash(n, metadata))
        .collect();
    if topics.is_empty() {
        return 0;
    }
    let mut group = Xxh3Stream::default();
    for t in topics {
        group.put_long(t);
    }
    group.finish()
}

/// Kafka's `Utils.TOPIC_HASH_MAGIC_BYTE`: the version of [`topic_hash`]'s layout.
const TOPIC_HASH_MAGIC_BYTE: u8 = 0;

/// Kafka's `computeTopicHash`: XXH3-64 over the magic byte, the topic id, name and partition
/// count, and each partition with its replicas' racks sorted; `None` for a missing topic.
fn topic_hash(name: &str, metadata: &dyn TopicMetadata) -> Option<i64> {
    let (id, partitions) = metadata.topic_by_name(name)?;
    let mut h = Xxh3Stream::default();
    h.put_byte(TOPIC_HASH_MAGIC_BYTE);
    let (msb, lsb) = id.0.split_at(8);
    h.put_long(i64::from_be_bytes(msb.try_into().expect("8 bytes")));
    h.put_long(i64::from_be_bytes(lsb.try_into().expect("8 bytes")));
    h.put_string(name);
    h.put_int(partitions);
    for p in 0..partitions {
        h.put_int(p);
        let mut racks = metadata.partition_racks(name, p);
        racks.sort();
        for rack in racks {
            h.put_int(java_length(&rack));
            h.put_string(&rack);
        }
    }
    Some(h.finish())
}

/// A Java string's `length()`: its UTF-16 code units.
fn java_length(s: &str) -> i32 {
    i32::try_from(s.encode_utf16().count()).unwrap_or(i32::MAX)
}

/// hash4j's `HashStream64` for XXH3-64 (Kafka's `Hashing.xxh3_64().hashStream()`): numbers
/// little-endian, a string as its UTF-16 code units then its length.
#[derive(Default)]
struct Xxh3Stream(twox_hash::XxHash3_64);

impl Xxh3Stream {
    fn put_byte(&mut self, v: u8) {
        self.write(&[v]);
    }

    fn put_int(&mut self, v: i32) {
        self.write(&v.to_le_bytes());
    }

    fn put_long(&mut self, v: i64) {
        self.write(&v.to_le_bytes());
    }

    fn put_string(&mut self, s: &str) {
        for unit in s.encode_utf16() {
            self.write(&unit.to_le_bytes());
        }
        self.put_int(java_length(s));
    }

    fn write(&mut self, bytes: &[u8]) {
        std::hash::Hasher::write(&mut self.0, bytes);
    }

    fn finish(&self) -> i64 {
        std::hash::Hasher::finish(&self.0) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_whole_names() {
        let topics: Vec<String> = ["orders", "orders-eu", "xorders", "payments"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let got: Vec<String> = resolve("orders.*", &topics).into_iter().collect();
        assert_eq!(got, ["orders", "orders-eu"]);
        assert_eq!(resolve("orders", &topics).len(), 1);
        assert!(resolve("(", &topics).is_empty());
        assert_eq!(
            compile("(").unwrap_err().0,
            ErrorCode::InvalidRegularExpression
        );
        // An alternation does not escape the anchors.
        let got: Vec<String> = resolve("pay|orders", &topics).into_iter().collect();
        assert_eq!(got, ["orders"]);
    }

    /// Values computed with hash4j 0.22.0 (Kafka 4.4.0's jar) for the same inputs.
    #[test]
    fn the_stream_hashes_as_hash4j_does() {
        let mut h = Xxh3Stream::default();
        h.put_byte(0);
        h.put_long(0x0102_0304_0506_0708);
        h.put_long(0x1112_1314_1516_1718);
        h.put_string("in");
        h.put_int(2);
        h.put_int(0);
        h.put_int(1);
        let topic = h.finish();
        assert_eq!(topic, 8_511_078_016_869_526_817);
        let mut g = Xxh3Stream::default();
        g.put_long(topic);
        g.put_long(42);
        assert_eq!(g.finish(), -3_873_743_313_136_988_079);
        let mut r = Xxh3Stream::default();
        r.put_byte(0);
        r.put_long(1);
        r.put_long(2);
        r.put_string("topic-é");
        r.put_int(1);
        r.put_int(0);
        r.put_int(2);
        r.put_string("r1");
        r.put_int(3);
        r.put_string("rk2");
        assert_eq!(r.finish(), -8_295_503_147_844_972_142);
    }
}
