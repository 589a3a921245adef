//! ClusterControlManager and BrokerHeartbeatManager: registration epochs (KIP-380), clean and
//! unclean restarts, heartbeats (unfencing once caught up, STALE_BROKER_EPOCH), controlled
//! shutdown and session expiry, asserted on the records replayed into the image.

use kraftd_controller::control::BROKER_SESSION_TIMEOUT_MS_DEFAULT;
use kraftd_protocol::messages::broker_registration_request::Feature;
use kraftd_protocol::{ErrorCode, MetadataRecord};

use kraftd_controller::testing::records::partition;
use kraftd_controller::testing::{ControlHarness, TOPIC_ID};

#[test]
fn registration_epoch_is_the_record_offset_and_starts_fenced() {
    let mut h = ControlHarness::new(true, 1);
    let offset = h.next_offset;
    let response = h.register(1, -1);
    assert_eq!(response.error_code, 0);
    assert_eq!(response.broker_epoch, offset);
    assert_eq!(h.epoch(1), offset);
    assert!(h.fenced(1));

    // Not caught up with its own registration: stays fenced.
    let mut behind = h.heartbeat_request(1, offset);
    behind.current_metadata_offset = offset - 1;
    let response = h.send_heartbeat(&behind);
    assert_eq!(response.error_code, 0);
    assert!(!response.is_caught_up);
    assert!(response.is_fenced);
    assert!(h.fenced(1));

    let response = h.heartbeat(1);
    assert!(response.is_caught_up);
    assert!(!response.is_fenced);
    assert!(!h.fenced(1));
}

/// SCENARIOS S1.6: a restart gets a new, larger epoch; requests with the old one are stale.
#[test]
fn restart_gets_larger_epoch_and_old_epoch_is_stale() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2]);
    h.create_partition(&[1, 2]);
    let old = h.epoch(1);

    // A clean stop: controlled shutdown moves leadership, then the broker is fenced.
    let mut stop = h.heartbeat_request(1, old);
    stop.want_shut_down = true;
    let response = h.send_heartbeat(&stop);
    assert!(!response.should_shut_down, "it still leads partition 0");
    assert_eq!(h.state().2, 2, "leadership moved away first");
    h.heartbeat(2);
    let response = h.send_heartbeat(&stop);
    assert!(response.should_shut_down);
    assert!(h.fenced(1));

    let response = h.restart_clean(1);
    assert_eq!(response.error_code, 0);
    assert!(response.broker_epoch > old);

    let stale = h.heartbeat_request(1, old);
    let result = h.cluster.broker_heartbeat(
        &h.image,
        &mut h.heartbeats,
        &stale,
        old,
        h.next_offset,
        h.now_ms,
    );
    assert!(result.records.is_empty());
    assert_eq!(
        result.response.error_code,
        ErrorCode::StaleBrokerEpoch.code()
    );

    let unknown = h.heartbeat_request(9, 0);
    let result = h.cluster.broker_heartbeat(
        &h.image,
        &mut h.heartbeats,
        &unknown,
        0,
        h.next_offset,
        h.now_ms,
    );
    assert_eq!(
        result.response.error_code,
        ErrorCode::StaleBrokerEpoch.code()
    );
}

/// A new process with the id of a broker whose session is still alive is a duplicate (as in
/// Kafka); once the old session expires and it is fenced, the restart registers.
#[test]
fn duplicate_registration_while_session_valid() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2]);
    let old = h.epoch(1);
    let response = h.restart_unclean(1);
    assert_eq!(
        response.error_code,
        ErrorCode::DuplicateBrokerRegistration.code()
    );
    assert_eq!(response.broker_epoch, -1);
    assert_eq!(h.epoch(1), old);

    h.go_offline(&[1]);
    let response = h.restart_unclean(1);
    assert_eq!(response.error_code, 0);
    assert!(h.epoch(1) > old);
}

#[test]
fn same_incarnation_retry_gets_new_epoch_without_shutdown_records() {
    let mut h = ControlHarness::new(true, 1);
    let request = h.registration_request(1, -1);
    let first = h.send_registration(&request);
    let result = h.cluster.register_broker(
        &h.image,
        &h.heartbeats,
        3,
        &request,
        h.kraft_version,
        h.next_offset,
        h.now_ms,
    );
    assert_eq!(result.records.len(), 1);
    assert!(matches!(
        result.records[0],
        MetadataRecord::RegisterBroker(_)
    ));
    let second = h.apply(result);
    assert!(second.broker_epoch > first.broker_epoch);
}

#[test]
fn registration_errors() {
    let mut h = ControlHarness::new(true, 1);
    let mut request = h.registration_request(1, -1);
    request.cluster_id = "other".into();
    assert_eq!(
        h.send_registration(&request).error_code,
        ErrorCode::InconsistentClusterId.code()
    );

    let mut request = h.registration_request(1, -1);
    request.features[0].max_supported_version = 20;
    assert_eq!(
        h.send_registration(&request).error_code,
        ErrorCode::UnsupportedVersion.code()
    );

    let mut request = h.registration_request(1, -1);
    request.features.remove(1);
    assert_eq!(
        h.send_registration(&request).error_code,
        ErrorCode::UnsupportedVersion.code(),
        "ELR is finalized at 1; a broker without it cannot join"
    );
    assert!(h.image.cluster.broker(1).is_none());
}

/// A dynamic quorum's `kraft.version` 1 is a finalized feature a registering broker must
/// support, as Kafka's QuorumController checks it: a broker listing no `kraft.version`
/// (support for level 0 only) is refused, one listing 0-1 (as Kafka's and kraftd's brokers
/// do) joins. Kafka refused kraftd brokers that left it out.
#[test]
fn a_dynamic_quorums_kraft_version_must_be_supported_to_register() {
    let mut h = ControlHarness::new(true, 1);
    h.kraft_version = 1;
    let request = h.registration_request(1, -1);
    assert_eq!(
        h.send_registration(&request).error_code,
        ErrorCode::UnsupportedVersion.code(),
        "kraft.version 1 and a broker without it"
    );
    assert!(h.image.cluster.broker(1).is_none());
    let mut request = h.registration_request(1, -1);
    request.features.push(Feature {
        name: "kraft.version".into(),
        min_supported_version: 0,
        max_supported_version: 1,
        ..Default::default()
    });
    assert_eq!(h.send_registration(&request).error_code, 0);
    // A static quorum (kraft.version 0) takes a broker that does not list it.
    let mut h = ControlHarness::new(true, 1);
    let request = h.registration_request(1, -1);
    assert_eq!(h.send_registration(&request).error_code, 0);
}

#[test]
fn controlled_shutdown_moves_leadership_then_lets_the_broker_stop() {
    let mut h = ControlHarness::new(true, 2);
    h.start_brokers(&[1, 2, 3]);
    h.create_partition(&[1, 2, 3]);
    let mut stop = h.heartbeat_request(1, h.epoch(1));
    stop.want_shut_down = true;
    let epoch = h.epoch(1);
    let result = h.cluster.broker_heartbeat(
        &h.image,
        &mut h.heartbeats,
        &stop,
        epoch,
        h.next_offset,
        h.now_ms,
    );
    assert!(matches!(
        &result.records[0],
        MetadataRecord::BrokerRegistrationChange(r) if r.in_controlled_shutdown == 1
    ));
    let response = h.apply(result);
    assert!(!response.should_shut_down);
    assert!(!response.is_fenced);
    assert!(h.image.cluster.broker(1).unwrap().in_controlled_shutdown);
    assert_eq!(h.state(), (vec![2, 3], vec![], 2));

    // The other brokers have not yet replicated the leadership change.
    let mut lagging = h.heartbeat_request(2, h.epoch(2));
    lagging.current_metadata_offset = 0;
    h.send_heartbeat(&lagging);
    let response = h.send_heartbeat(&stop);
    assert!(
        !response.should_shut_down,
        "broker 2 has not seen the change yet"
    );

    h.heartbeat(2);
    h.heartbeat(3);
    let response = h.send_heartbeat(&stop);
    assert!(response.should_shut_down);
    assert!(response.is_fenced);
    assert!(h.fenced(1));
}

#[test]
fn heartbeat_state_transitions() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1]);
    // An unfenced broker asking to be fenced is fenced.
    let mut fence = h.heartbeat_request(1, h.epoch(1));
    fence.want_fence = true;
    let response = h.send_heartbeat(&fence);
    assert!(response.is_fenced);
    assert!(h.fenced(1));
    // A fenced broker asking to shut down may go at once, with nothing written.
    let mut stop = h.heartbeat_request(1, h.epoch(1));
    stop.want_shut_down = true;
    let result = h.cluster.broker_heartbeat(
        &h.image,
        &mut h.heartbeats,
        &stop,
        0,
        h.next_offset,
        h.now_ms,
    );
    assert!(result.records.is_empty());
    assert!(result.response.should_shut_down);
    // An unfenced broker leading nothing shuts down at once.
    h.start_brokers(&[2]);
    let mut stop = h.heartbeat_request(2, h.epoch(2));
    stop.want_shut_down = true;
    let response = h.send_heartbeat(&stop);
    assert!(response.should_shut_down);
    assert!(h.fenced(2));
}

#[test]
fn session_expiry_fences_one_silent_broker_at_a_time() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2, 3]);
    h.create_partition(&[1, 2, 3]);
    let start = h.now_ms;

    // Just within the session: nothing.
    let result = h.cluster.maybe_fence_one_stale_broker(
        &h.image,
        &h.heartbeats,
        start + BROKER_SESSION_TIMEOUT_MS_DEFAULT,
    );
    assert_eq!(result.response, None);
    assert!(result.records.is_empty());

    h.now_ms = start + 5_000;
    h.heartbeat(3);
    h.now_ms = start + BROKER_SESSION_TIMEOUT_MS_DEFAULT + 1;
    let result = h
        .cluster
        .maybe_fence_one_stale_broker(&h.image, &h.heartbeats, h.now_ms);
    assert_eq!(result.response, Some(1), "the oldest session first");
    // Leadership moves, then the fence record.
    assert!(
        matches!(result.records.last(), Some(MetadataRecord::BrokerRegistrationChange(r)) if r.fenced == 1)
    );
    h.apply(result);
    assert_eq!(h.state(), (vec![2, 3], vec![], 2));
    let result = h
        .cluster
        .maybe_fence_one_stale_broker(&h.image, &h.heartbeats, h.now_ms);
    assert_eq!(result.response, Some(2));
    h.apply(result);
    assert_eq!(h.state(), (vec![3], vec![], 3));
    let result = h
        .cluster
        .maybe_fence_one_stale_broker(&h.image, &h.heartbeats, h.now_ms);
    assert_eq!(result.response, None, "broker 3 heartbeated 4 s ago");
}

#[test]
fn new_active_controller_gives_every_broker_a_full_session() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2]);
    let mut fresh =
        kraftd_controller::control::BrokerHeartbeatManager::new(BROKER_SESSION_TIMEOUT_MS_DEFAULT);
    let later = h.now_ms + 100_000;
    fresh.activate(&h.image, later);
    let result = h
        .cluster
        .maybe_fence_one_stale_broker(&h.image, &fresh, later + 1);
    assert_eq!(result.response, None);
    let result = h.cluster.maybe_fence_one_stale_broker(
        &h.image,
        &fresh,
        later + BROKER_SESSION_TIMEOUT_MS_DEFAULT + 1,
    );
    assert_eq!(result.response, Some(1));
}

/// S1.6 for controlled shutdown: the shutdown request of an old incarnation is stale and
/// moves nothing.
#[test]
fn controlled_shutdown_with_stale_epoch_is_rejected() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2]);
    h.create_partition(&[1, 2]);
    let mut stop = h.heartbeat_request(1, h.epoch(1) - 1);
    stop.want_shut_down = true;
    let before = h.next_offset;
    let response = h.send_heartbeat(&stop);
    assert_eq!(response.error_code, ErrorCode::StaleBrokerEpoch.code());
    assert_eq!(h.next_offset, before);
    assert_eq!(h.state(), (vec![1, 2], vec![], 1));
}

#[test]
fn unregister_removes_the_broker_from_isr_and_elr() {
    let mut h = ControlHarness::new(true, 3);
    h.start_brokers(&[1, 2, 3]);
    h.create_partition(&[1, 2, 3]);
    h.go_offline(&[3]);
    assert_eq!(h.state(), (vec![1, 2], vec![3], 1));
    let result = h.cluster.unregister_broker(&h.image, 3);
    // Not atomic: the partition changes may go in several batches, the unregistration last.
    assert!(!result.is_atomic);
    assert!(matches!(
        result.records.last(),
        Some(MetadataRecord::UnregisterBroker(r)) if r.broker_id == 3
    ));
    assert_eq!(h.apply(result), ErrorCode::None);
    assert!(h.image.cluster.broker(3).is_none());
    assert_eq!(h.state(), (vec![1, 2], vec![], 1));

    let result = h.cluster.unregister_broker(&h.image, 3);
    assert!(result.records.is_empty());
    assert_eq!(result.response, ErrorCode::BrokerIdNotRegistered);
}

/// A broker fenced in the middle of its controlled shutdown stays fenced until it registers
/// again, whatever it reports.
#[test]
fn broker_fenced_during_controlled_shutdown_stays_fenced() {
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2]);
    h.create_partition(&[1, 2]);
    let mut stop = h.heartbeat_request(1, h.epoch(1));
    stop.want_shut_down = true;
    h.send_heartbeat(&stop);
    assert!(h.image.cluster.broker(1).unwrap().in_controlled_shutdown);
    h.go_offline(&[1]);
    let response = h.heartbeat(1);
    assert!(response.is_fenced);
    assert!(h.fenced(1));
    assert_eq!(h.restart_clean(1).error_code, 0);
    assert!(!h.heartbeat(1).is_fenced);
    assert!(!h.image.cluster.broker(1).unwrap().in_controlled_shutdown);
}

/// A broker that replicates every partition of a large cluster but is in no ISR or ELR
/// (issue 19: the figure of the `scale` bench's second fencing) is fenced, restarted
/// uncleanly, unfenced, shut down and unregistered with its own records only: the image's
/// ISR and ELR indexes say no partition changes, where a scan of every partition used to.
/// A broker in every ISR still changes every partition.
#[test]
fn a_broker_in_no_isr_of_a_large_cluster_changes_no_partition() {
    let partitions = 20_000;
    let mut h = ControlHarness::new(true, 1);
    h.start_brokers(&[1, 2, 3]);
    let records: Vec<MetadataRecord> = (0..partitions)
        .map(|p| partition(TOPIC_ID, p, &[1, 2, 3], &[1, 2], 1))
        .collect();
    h.replay(&records);
    let written = |h: &ControlHarness, from: i64| h.next_offset - from;

    let from = h.next_offset;
    let mut fence = h.heartbeat_request(3, h.epoch(3));
    fence.want_fence = true;
    assert!(h.send_heartbeat(&fence).is_fenced);
    assert_eq!(written(&h, from), 1, "the fencing record only");

    let from = h.next_offset;
    assert_eq!(h.restart_unclean(3).error_code, 0);
    assert_eq!(written(&h, from), 1, "the registration only");
    let from = h.next_offset;
    assert!(!h.heartbeat(3).is_fenced);
    assert_eq!(written(&h, from), 1, "the unfencing record only");

    // It leads nothing, so a controlled shutdown fences it at once.
    let from = h.next_offset;
    let mut shutdown = h.heartbeat_request(3, h.epoch(3));
    shutdown.want_shut_down = true;
    assert!(h.send_heartbeat(&shutdown).should_shut_down);
    assert_eq!(written(&h, from), 1, "the fencing record only");

    let from = h.next_offset;
    let result = h.cluster.unregister_broker(&h.image, 3);
    assert_eq!(h.apply(result), ErrorCode::None);
    assert_eq!(written(&h, from), 1, "the unregistration only");

    let from = h.next_offset;
    let mut fence = h.heartbeat_request(2, h.epoch(2));
    fence.want_fence = true;
    assert!(h.send_heartbeat(&fence).is_fenced);
    assert_eq!(written(&h, from), i64::from(partitions) + 1);
    assert!(h.image.topics.partitions_with_isr_member(2).is_empty());
    assert_eq!(h.image.topics.partitions_with_isr_member(1).len(), 20_000);
}
