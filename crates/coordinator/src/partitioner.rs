//! Which `__consumer_offsets` partition coordinates a group: Kafka's
//! `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`, with Java's
//! `String.hashCode` over UTF-16 code units, so a Kafka broker and a kraftd broker name the
//! same coordinator for every group id.

/// Java's `String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units,
/// wrapping at 32 bits.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(unit as i32))
}

/// The partition coordinating `group_id` among `partitions` (> 0). Kafka's `Utils.abs` is
/// `Math.abs` but for `i32::MIN`, which it maps to 0: the absolute value, not the hash with
/// its sign bit masked (which names another partition for every negative hash, so a Kafka
/// broker and a kraftd broker would disagree on the coordinator of half the group ids,
/// and a group's offsets written by one would not be found by the other).
pub fn partition_for(group_id: &str, partitions: i32) -> i32 {
    assert!(
        partitions > 0,
        "offsets.topic.num.partitions must be positive"
    );
    match java_string_hash(group_id) {
        i32::MIN => 0,
        hash => hash.abs() % partitions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_java_string_hash_code() {
        // Values printed by Java's "...".hashCode() (jshell, Java 17).
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("console-consumer-12345"), 158_455_506);
        // A character outside the BMP counts as two UTF-16 units.
        assert_eq!(java_string_hash("\u{1F600}"), 1_772_899);
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn partition_is_kafkas_mapping() {
        // Kafka 4.4.0's Utils.abs(hashCode) % 50 for the same id.
        assert_eq!(partition_for("console-consumer-12345", 50), 6);
        // Utils.abs(Integer.MIN_VALUE) is 0, not an overflow.
        assert_eq!(partition_for("polygenelubricants", 50), 0);
        // A negative hash: Math.abs, not the sign bit masked ("chaos-group-classic".hashCode()
        // is -1069200457; Math.abs(...) % 50 is 7 and % 5 is 2 in jshell, Java 17; masking
        // gave 29 and 1).
        assert_eq!(java_string_hash("chaos-group-classic"), -1_069_200_457);
        assert_eq!(partition_for("chaos-group-classic", 50), 7);
        assert_eq!(partition_for("chaos-group-classic", 5), 2);
    }
}
