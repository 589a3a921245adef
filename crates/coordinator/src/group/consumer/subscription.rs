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

/// A hash of the subscribed topics as the metadata has them (name, id, partition count),
/// 0 when none exists: a change bumps the group epoch, so that a new topic or new
/// partitions get assigned. Kafka hashes its own way (xxh3, with racks); the value only
/// has to change when the metadata does.
pub fn metadata_hash(names: &BTreeSet<String>, metadata: &dyn TopicMetadata) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut any = false;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for name in names {
        if let Some((id, partitions)) = metadata.topic_by_name(name) {
            any = true;
            eat(&(name.len() as u32).to_be_bytes());
            eat(name.as_bytes());
            eat(&id.0);
            eat(&partitions.to_be_bytes());
        }
    }
    if any {
        h as i64
    } else {
        0
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
}
