//! The replication quota's unit tests on explicit clocks: which replicas are throttled, and
//! the bound against Kafka's `SimpleRate` (the cases of Kafka's `ReplicationQuotaManagerTest`).

use super::*;

fn quota(samples: usize, bound: Option<i64>) -> ReplicationQuota {
    let window = QuotaWindow {
        samples,
        size_seconds: 1,
    };
    let mut q = ReplicationQuota::new(1, ReplicationSide::Leader, window);
    q.set_rate(bound);
    q
}

#[test]
fn only_the_replicas_listed_for_this_broker_are_throttled() {
    let mut q = quota(11, Some(100));
    q.set_topic_replicas("t", Some("0:1, 2:1, 3:2"));
    assert!(q.is_throttled("t", 0));
    assert!(q.is_throttled("t", 2));
    assert!(!q.is_throttled("t", 3), "listed for broker 2");
    assert!(!q.is_throttled("t", 1));
    assert!(!q.is_throttled("u", 0), "another topic");
    q.set_topic_replicas("u", Some("*"));
    assert!(q.is_throttled("u", 0) && q.is_throttled("u", 99));
    // An empty list and a removed config both end the throttle.
    q.set_topic_replicas("u", Some(""));
    assert!(!q.is_throttled("u", 0));
    q.set_topic_replicas("t", None);
    assert!(!q.is_throttled("t", 0));
    // A value the controller would refuse throttles nothing.
    q.set_topic_replicas("t", Some("0:1,x"));
    assert!(!q.is_throttled("t", 0));
}

#[test]
fn the_quota_is_exceeded_above_the_bound_and_recovers_as_time_passes() {
    // Kafka's shouldExceedQuotaThenReturnBackBelowBoundAsTimePasses, 10 samples of 1 s.
    let mut q = quota(10, Some(100));
    assert!(!q.is_quota_exceeded(0), "not exceeded at the start");
    // The first window starts now; half a window into the second one:
    q.record(1, 1500);
    assert!(!q.is_quota_exceeded(1500));
    q.record(149, 1500); // 150 B over 1.5 s: exactly the bound
    assert!(!q.is_quota_exceeded(1500));
    q.record(1, 1500); // 151 B
    assert_eq!(q.byte_rate(1500), 151.0 / 1.5);
    assert!(q.is_quota_exceeded(1500));
    // Half a window later the rate is back under the bound.
    assert!(!q.is_quota_exceeded(2000));
    assert!((q.byte_rate(2000) - 151.0 / 2.0).abs() < 0.1);
    q.record(99, 2500); // 250 B over 2.5 s
    assert_eq!(q.byte_rate(2500), 100.0);
    assert!(!q.is_quota_exceeded(2500));
    q.record(1, 2500);
    assert!(q.is_quota_exceeded(2500));
    assert_eq!(q.byte_rate(2500), 251.0 / 2.5);
    assert!(!q.is_quota_exceeded(4500));
    assert_eq!(q.byte_rate(4500), 251.0 / 4.5);
}

#[test]
fn a_first_burst_reads_over_one_window_not_the_whole_window_set() {
    // SimpleRate, not Rate: 150 B in the first 100 ms is 150 B/s, not 150 B over ten
    // windows, so a throttle bites from the first second.
    let mut q = quota(11, Some(100));
    q.record(150, 0);
    assert_eq!(q.byte_rate(100), 150.0);
    assert!(q.is_quota_exceeded(100));
    assert!(!q.is_quota_exceeded(1500), "150 B over 1.5 s");
}

#[test]
fn without_a_rate_nothing_is_exceeded_but_bytes_are_still_measured() {
    for bound in [None, Some(i64::MAX)] {
        let mut q = quota(11, bound);
        q.record(1 << 40, 0);
        assert!(!q.is_quota_exceeded(10));
        assert_eq!(q.upper_bound(), i64::MAX);
        assert!(q.byte_rate(10) > 0.0);
    }
    // A rate of 0 stops every throttled byte once one was sent.
    let mut q = quota(11, Some(0));
    assert!(!q.is_quota_exceeded(0));
    q.record(1, 0);
    assert!(q.is_quota_exceeded(1));
    assert_eq!(q.upper_bound(), 0);
}

#[test]
fn samples_older_than_the_window_set_are_forgotten() {
    let mut q = quota(11, Some(1000));
    q.record(1_000_000, 0);
    assert!(q.is_quota_exceeded(5_000));
    // 11 samples of 1 s: the burst's sample is purged 11 s after its last event.
    assert!(!q.is_quota_exceeded(11_000));
    assert_eq!(q.byte_rate(11_000), 0.0);
}

#[test]
fn the_alter_log_dirs_quota_throttles_every_copy_once_its_rate_is_set() {
    let window = QuotaWindow {
        samples: 10,
        size_seconds: 1,
    };
    let mut q = ReplicationQuota::new(1, ReplicationSide::AlterLogDirs, window);
    assert_eq!(
        ReplicationSide::AlterLogDirs.rate_config(),
        "replica.alter.log.dirs.io.max.bytes.per.second"
    );
    // No replicas list: every future log's copy counts, and a topic config changes nothing.
    q.set_topic_replicas("t", Some("0:1"));
    assert!(q.is_throttled("t", 0) && q.is_throttled("u", 7));
    q.record(1_000_000, 1500);
    assert!(!q.is_quota_exceeded(1500), "unlimited until a rate is set");
    q.set_rate(Some(100));
    assert!(q.is_quota_exceeded(1500));
    q.set_rate(Some(i64::MAX));
    assert!(
        !q.is_quota_exceeded(1500),
        "Long.MAX_VALUE is Kafka's unlimited"
    );
}
