//! Each rule on hand-written scrapes: the Prometheus parser, seed 003's observer that asks
//! everyone but the leader, the growing lag, the clock-skew bound, fencing, partitions,
//! voters, and the order of what is printed.

use std::collections::BTreeMap;

use kraftd_protocol::messages::describe_quorum_response::ReplicaState;

use super::super::prom::{parse, Scrape};
use super::*;

fn scrape(node: i32, body: &str, sent_ms: i64, received_ms: i64) -> Scrape {
    let text = body.replace("{N}", &node.to_string());
    Scrape::from_text(
        &format!("127.0.0.1:{}", 9000 + node),
        &text,
        sent_ms,
        received_ms,
    )
    .unwrap()
}

/// A broker's raft and metadata metrics: `leader` it knows, counters by destination.
#[allow(clippy::too_many_arguments)]
fn broker(
    node: i32,
    leader: i32,
    last_fetch: i32,
    from_leader: u64,
    failures_to_leader: u64,
    not_leader: &[(i32, u64)],
    lag_ms: i64,
    offset: i64,
) -> String {
    let mut s = format!(
        "kafka_raft_metrics_current_leader{{node=\"{node}\"}} {leader}\n\
         kafka_raft_metrics_current_epoch{{node=\"{node}\"}} 7\n\
         kafka_raft_metrics_current_state{{node=\"{node}\",state=\"observer\"}} 1\n\
         kafka_raft_metrics_last_fetch_destination{{node=\"{node}\"}} {last_fetch}\n\
         kafka_raft_metrics_responses_received_total{{node=\"{node}\",destination=\"{leader}\"}} {from_leader}\n\
         kafka_raft_metrics_request_failures_total{{node=\"{node}\",destination=\"{leader}\"}} {failures_to_leader}\n\
         kafka_broker_metadata_metrics_last_applied_record_offset{{node=\"{node}\"}} {offset}\n\
         kafka_broker_metadata_metrics_last_applied_record_lag_ms{{node=\"{node}\"}} {lag_ms}\n"
    );
    for (d, n) in not_leader {
        s += &format!(
            "kafka_raft_metrics_destination_info{{node=\"{node}\",destination=\"{d}\",address=\"10.0.0.{}:9093\"}} 1\n",
            d.abs()
        );
        s += &format!(
            "kafka_raft_metrics_responses_received_total{{node=\"{node}\",destination=\"{d}\"}} {n}\n\
             kafka_raft_metrics_response_errors_total{{node=\"{node}\",destination=\"{d}\",error_code=\"6\"}} {n}\n"
        );
    }
    s
}

fn controller(node: i32, leader: i32, clock_ms: i64) -> String {
    let state = if node == leader { "leader" } else { "follower" };
    format!(
        "kafka_raft_metrics_current_leader{{node=\"{node}\"}} {leader}\n\
         kafka_raft_metrics_current_epoch{{node=\"{node}\"}} 7\n\
         kafka_raft_metrics_current_state{{node=\"{node}\",state=\"{state}\"}} 1\n\
         kraftd_wall_clock_ms{{node=\"{node}\"}} {clock_ms}\n"
    )
}

fn round(at_ms: i64, scrapes: Vec<Scrape>) -> Round {
    Round {
        at_ms,
        scrapes,
        errors: Vec::new(),
    }
}

fn replica(id: i32, leo: i64, fetch: i64, caught_up: i64) -> ReplicaState {
    ReplicaState {
        replica_id: id,
        log_end_offset: leo,
        last_fetch_timestamp: fetch,
        last_caught_up_timestamp: caught_up,
        ..Default::default()
    }
}

const NOW: i64 = 1_800_000_000_000;

fn quorum(observers: Vec<ReplicaState>) -> Quorum {
    Quorum {
        cluster_id: None,
        leader_id: 1,
        leader_epoch: 7,
        high_watermark: 500,
        voters: vec![
            replica(1, 500, NOW, NOW),
            replica(2, 500, NOW - 100, NOW - 100),
            replica(3, 500, NOW - 200, NOW - 200),
        ],
        observers,
        endpoints: BTreeMap::new(),
    }
}

fn cluster(brokers: &[(i32, bool)], partitions: Vec<PartitionState>) -> ClusterState {
    ClusterState {
        brokers: brokers
            .iter()
            .map(|(id, fenced)| BrokerState {
                id: *id,
                fenced: *fenced,
            })
            .collect(),
        fenced_listed: true,
        partitions,
    }
}

fn partition(
    topic: &str,
    leader: i32,
    replicas: &[i32],
    isr: &[i32],
    min_isr: usize,
) -> PartitionState {
    PartitionState {
        topic: topic.into(),
        partition: 0,
        leader,
        replicas: replicas.to_vec(),
        isr: isr.to_vec(),
        min_isr: Some(min_isr),
    }
}

fn facts(first: Vec<Scrape>, second: Vec<Scrape>) -> Facts {
    Facts {
        first: round(NOW - 2_000, first),
        second: round(NOW, second),
        quorum: Some(Ok(quorum(vec![
            replica(4, 500, NOW - 100, NOW - 100),
            replica(5, 500, NOW - 100, NOW - 100),
        ]))),
        cluster: Some(Ok(cluster(&[(4, false), (5, false)], vec![]))),
        max_clock_skew_ms: 1_000,
    }
}

#[test]
fn prometheus_text_is_parsed_with_labels_escapes_and_specials() {
    let samples = parse(
        "# HELP x a help\n# TYPE x gauge\n\n\
         x{node=\"1\",path=\"a\\\\b\\\"c\\nd\"} 2.5\n\
         y 3 1700000000000\n\
         z{node=\"1\",} NaN\n\
         w{node=\"1\"} +Inf\n\
         v{ node=\"1\" , k=\"a,b}\"} -Inf\n",
    )
    .unwrap();
    assert_eq!(samples.len(), 5);
    assert_eq!(samples[0].label("path"), Some("a\\b\"c\nd"));
    assert_eq!(samples[0].value, 2.5);
    assert_eq!(samples[1].name, "y");
    assert_eq!(samples[1].value, 3.0);
    assert!(samples[2].value.is_nan());
    assert_eq!(samples[3].value, f64::INFINITY);
    assert_eq!(samples[4].label("k"), Some("a,b}"));
    assert_eq!(samples[4].value, f64::NEG_INFINITY);
    for bad in [
        "x{node=\"1\" 2",
        "x{node=1} 2",
        "x two",
        "x{node=\"1} 2",
        "x",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_scrape_belongs_to_the_node_its_labels_name() {
    let s = scrape(4, &broker(4, 1, 1, 0, 0, &[], 0, 0), 0, 0);
    assert_eq!(s.node, 4);
    assert!(s.is_broker() && !s.is_controller());
    assert_eq!(s.raft_state(), Some("observer"));
    let e = Scrape::from_text("h:1", "x 1\n", 0, 0).unwrap_err();
    assert!(e.contains("no sample carries a node label"), "{e}");
    let e = Scrape::from_text("h:1", "x{node=\"a\"} 1\n", 0, 0).unwrap_err();
    assert!(e.contains("not a node id"), "{e}");
}

#[test]
fn a_healthy_cluster_has_no_finding_and_one_line() {
    let f = facts(
        vec![
            scrape(1, &controller(1, 1, NOW - 2_000), NOW - 2_001, NOW - 1_999),
            scrape(4, &broker(4, 1, 1, 100, 0, &[], 300, 480), 0, 0),
        ],
        vec![
            scrape(1, &controller(1, 1, NOW), NOW - 1, NOW + 1),
            scrape(4, &broker(4, 1, 1, 104, 0, &[], 200, 500), 0, 0),
        ],
    );
    assert_eq!(diagnose(&f), vec![]);
    let line = healthy_line(&f);
    assert!(
        line.starts_with("healthy: quorum leader 1 (epoch 7)"),
        "{line}"
    );
    assert!(line.ends_with("nothing wrong"), "{line}");
}

#[test]
fn seed_003_an_observer_asking_only_non_leaders_is_named_with_both_and_the_leader() {
    // Broker 5 was told leader 1 but fetches from bootstrap servers -2 and -3, which answer
    // NOT_LEADER_OR_FOLLOWER; nothing from 1 in the window.
    let mut f = facts(
        vec![scrape(
            5,
            &broker(5, 1, -2, 40, 0, &[(-2, 10), (-3, 10)], 10_000, 450),
            0,
            0,
        )],
        vec![scrape(
            5,
            &broker(5, 1, -3, 40, 0, &[(-2, 12), (-3, 13)], 12_000, 450),
            0,
            0,
        )],
    );
    if let Some(Ok(q)) = &mut f.quorum {
        q.observers[1].last_fetch_timestamp = NOW - 12_300;
    }
    let found = diagnose(&f);
    let text = &found[0].text;
    assert_eq!(found[0].severity, Severity::Critical);
    assert!(
        text.starts_with("broker 5 does not fetch metadata from the leader 1 (epoch 7)"),
        "{text}"
    );
    assert!(
        text.contains("bootstrap server -3 at 10.0.0.3:9093 (3 times), bootstrap server -2 at 10.0.0.2:9093 (2 times)"),
        "{text}"
    );
    assert!(text.contains("NOT_LEADER_OR_FOLLOWER"), "{text}");
    assert!(text.contains("it was told the leader is 1"), "{text}");
    assert!(
        text.contains("its last Fetch went to bootstrap server -3 at 10.0.0.3:9093"),
        "{text}"
    );
    assert!(
        text.contains("the leader last heard from it 12.3 s ago"),
        "{text}"
    );
    // The growing lag is its own finding, next.
    assert!(
        found[1]
            .text
            .starts_with("broker 5's metadata is 12.0 s old and getting older"),
        "{found:?}"
    );
    // The DescribeQuorum witness is not repeated for a node already named.
    assert_eq!(found.len(), 2, "{found:?}");
}

#[test]
fn failures_to_the_leader_alone_are_enough_and_any_answer_from_it_clears() {
    let cut = facts(
        vec![scrape(5, &broker(5, 1, 1, 40, 3, &[], 0, 450), 0, 0)],
        vec![scrape(5, &broker(5, 1, 1, 40, 5, &[], 0, 450), 0, 0)],
    );
    let found = diagnose(&cut);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .text
            .contains("(requests to it failed or timed out 2 times)"),
        "{found:?}"
    );
    // An election in the window: not judged until the next round.
    let mut moved = cut.clone();
    let epoch8 = broker(5, 1, 1, 40, 5, &[], 0, 450).replace(
        "kafka_raft_metrics_current_epoch{node=\"5\"} 7",
        "kafka_raft_metrics_current_epoch{node=\"5\"} 8",
    );
    moved.second.scrapes = vec![scrape(5, &epoch8, 0, 0)];
    assert_eq!(diagnose(&moved), vec![]);
    let fine = facts(
        vec![scrape(5, &broker(5, 1, 1, 40, 3, &[(2, 1)], 0, 450), 0, 0)],
        vec![scrape(5, &broker(5, 1, 1, 41, 5, &[(2, 2)], 0, 460), 0, 0)],
    );
    assert_eq!(diagnose(&fine), vec![]);
}

#[test]
fn the_lag_rule_wants_growth_with_wall_time_a_stuck_offset_and_something_to_apply() {
    let lagging = |lag1: i64, lag2: i64, off2: i64, hw: i64, other: (i64, i64)| {
        let mut f = facts(
            vec![
                scrape(4, &broker(4, 1, 1, 1, 0, &[], 0, other.0), 0, 0),
                scrape(5, &broker(5, 1, 1, 1, 0, &[], lag1, 450), 0, 0),
            ],
            vec![
                scrape(4, &broker(4, 1, 1, 2, 0, &[], 0, other.1), 0, 0),
                scrape(5, &broker(5, 1, 1, 2, 0, &[], lag2, off2), 0, 0),
            ],
        );
        if let Some(Ok(q)) = &mut f.quorum {
            q.high_watermark = hw;
        }
        diagnose(&f)
    };
    let found = lagging(10_000, 12_000, 450, 500, (500, 500));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .text
            .contains("grew from 10.0 s to 12.0 s in 2.0 s while it stayed at offset 450"),
        "{found:?}"
    );
    assert!(found[0].text.contains("high watermark is 500"), "{found:?}");
    // Another broker moving is evidence enough without a quorum answer's HW.
    assert_eq!(lagging(10_000, 12_000, 450, 451, (480, 500)).len(), 1);
    // An idle quorum (no no-op records): nothing to apply, nobody moves.
    assert_eq!(lagging(10_000, 12_000, 450, 451, (500, 500)), vec![]);
    // The offset moved, the lag is small, or it did not grow with time.
    assert_eq!(lagging(10_000, 12_000, 451, 500, (500, 500)), vec![]);
    assert_eq!(lagging(500, 2_500, 450, 500, (500, 500)), vec![]);
    assert_eq!(lagging(10_000, 11_000, 450, 500, (500, 500)), vec![]);
}

#[test]
fn clock_skew_is_bounded_by_the_round_trip() {
    // Node read 1_000 while the doctor's clock went from 900 to 1_300: offset in [-300, 100].
    let s = scrape(1, &controller(1, 1, 1_000), 900, 1_300);
    assert_eq!(clock_offset(&s), Some((-300, 100)));
    assert_eq!(least_skew((-300, 100), (50, 60)), 0);
    assert_eq!(least_skew((-300, 100), (1_600, 1_700)), 1_500);
    assert_eq!(least_skew((1_600, 1_700), (-300, 100)), 1_500);
    let second = vec![
        scrape(1, &controller(1, 1, NOW), NOW - 10, NOW + 10),
        scrape(2, &controller(2, 1, NOW + 5_000), NOW - 10, NOW + 10),
        // A slow round trip hides up to 4 s of skew: not reported.
        scrape(3, &controller(3, 1, NOW + 3_000), NOW - 2_000, NOW + 2_000),
    ];
    let f = facts(vec![], second);
    let found = diagnose(&f);
    let skews: Vec<&str> = found
        .iter()
        .filter(|x| x.rank == 80)
        .map(|x| x.text.as_str())
        .collect();
    assert_eq!(skews.len(), 1, "{found:?}");
    assert!(
        skews[0].starts_with("the clock of node 2 is ahead of node 1's by at least 4980 ms"),
        "{skews:?}"
    );
}

#[test]
fn fenced_missing_brokers_and_offline_or_under_min_isr_partitions() {
    let mut f = facts(vec![], vec![]);
    f.cluster = Some(Ok(cluster(
        &[(4, false), (5, true)],
        vec![
            partition("a", -1, &[5], &[5], 1),
            partition("b", 4, &[4, 5, 6], &[4], 2),
            partition("c", 4, &[4, 5], &[4], 1),
            partition("d", 4, &[4], &[4], 1),
        ],
    )));
    let found = diagnose(&f);
    let texts: Vec<&str> = found.iter().map(|x| x.text.as_str()).collect();
    assert!(
        texts[0].starts_with("1 partition is offline (no leader): a-0 (replicas [5])"),
        "{texts:?}"
    );
    assert!(texts[1].starts_with("broker 5 is fenced"), "{texts:?}");
    assert!(texts[2].starts_with("broker 6 is missing"), "{texts:?}");
    assert!(texts[3].starts_with("1 partition is under min ISR (acks=all produce fails): b-0 (ISR [4], min.insync.replicas 2)"), "{texts:?}");
    assert!(
        texts[4].starts_with("1 partition is under-replicated: c-0"),
        "{texts:?}"
    );
    assert_eq!(found[4].severity, Severity::Warning);
    assert_eq!(found.len(), 5, "{texts:?}");
}

#[test]
fn an_unfenced_observer_the_leader_has_not_heard_from_is_seed_003_without_metrics() {
    let mut f = facts(vec![], vec![]);
    f.quorum = Some(Ok(quorum(vec![
        replica(4, 500, NOW - 100, NOW - 100),
        replica(5, 450, NOW - 20_000, NOW - 20_000),
    ])));
    let found = diagnose(&f);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].text,
        "broker 5 is alive (unfenced) but the leader 1 last had a Fetch from it 20.0 s ago; it \
         is stuck at metadata offset 450 of 500"
    );
    // Without the brokers' view, it may as well be down.
    f.cluster = None;
    let found = diagnose(&f);
    assert!(
        found[0]
            .text
            .starts_with("broker 5 may be down or cut off: the leader 1 last had"),
        "{found:?}"
    );
    // Fenced, it is reported as fenced, not as this.
    f.cluster = Some(Ok(cluster(&[(4, false), (5, true)], vec![])));
    let found = diagnose(&f);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].text.starts_with("broker 5 is fenced"), "{found:?}");
}

#[test]
fn voters_that_do_not_fetch_or_lag_and_a_quorum_without_leader() {
    let mut f = facts(vec![], vec![]);
    if let Some(Ok(q)) = &mut f.quorum {
        q.voters[1] = replica(2, 300, NOW - 9_000, NOW - 9_000);
        q.voters[2] = replica(3, 480, NOW - 100, NOW - 7_000);
    }
    let found = diagnose(&f);
    let texts: Vec<&str> = found.iter().map(|x| x.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "voter 2 last fetched from the leader 9.0 s ago (200 records behind leader 1): down or cut off",
            "voter 3 lags: 20 records behind leader 1, not caught up for 7.0 s",
        ]
    );
    let mut f = facts(vec![], vec![scrape(2, &controller(2, -1, NOW), NOW, NOW)]);
    f.quorum = Some(Err("127.0.0.1:9093: knows no leader in epoch 8".into()));
    let found = diagnose(&f);
    assert_eq!(found[0].severity, Severity::Critical);
    assert!(
        found[0]
            .text
            .starts_with("the metadata quorum has no leader that answers"),
        "{found:?}"
    );
    assert!(
        found[1]
            .text
            .starts_with("controller 2 knows no quorum leader"),
        "{found:?}"
    );
}

#[test]
fn unclean_and_elr_elections_and_unreachable_endpoints_are_warnings_after_criticals() {
    let mut f = facts(
        vec![],
        vec![scrape(
            1,
            &(controller(1, 1, NOW)
                + "kafka_controller_ControllerStats_UncleanLeaderElectionsPerSec_total{node=\"1\"} 2\n\
                   kafka_controller_ControllerStats_ElectionFromEligibleLeaderReplicasPerSec_total{node=\"1\"} 0\n"),
            NOW,
            NOW,
        )],
    );
    f.second
        .errors
        .push(("127.0.0.1:1".into(), "connection refused".into()));
    f.cluster = Some(Err("127.0.0.1:2: connection refused".into()));
    let found = diagnose(&f);
    let texts: Vec<(Severity, &str)> = found
        .iter()
        .map(|x| (x.severity, x.text.as_str()))
        .collect();
    assert_eq!(
        texts[0],
        (
            Severity::Critical,
            "no broker answers: 127.0.0.1:2: connection refused"
        )
    );
    assert_eq!(texts[1].0, Severity::Warning);
    assert!(
        texts[1].1.contains("elected uncleanly") && texts[1].1.ends_with("2 by controller 1"),
        "{texts:?}"
    );
    assert_eq!(
        texts[2],
        (
            Severity::Warning,
            "cannot read /metrics at 127.0.0.1:1: connection refused"
        )
    );
    assert_eq!(texts.len(), 3, "{texts:?}");
}
