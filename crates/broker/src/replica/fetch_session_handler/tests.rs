//! The client session rules against Kafka's `FetchSessionHandlerTest`: full first, then
//! only what changed; every reset falls back to a full fetch.

use kraftd_protocol::messages::fetch_request::FetchPartition;
use kraftd_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kraftd_protocol::messages::FetchResponse;
use kraftd_protocol::{ErrorCode, Uuid};

use super::*;

fn topic(n: u8) -> Uuid {
    Uuid([n; 16])
}

fn want(t: u8, partition: i32, offset: i64) -> WantedPartition {
    WantedPartition {
        topic_id: topic(t),
        topic: format!("t{t}"),
        data: FetchPartition {
            partition,
            fetch_offset: offset,
            current_leader_epoch: 1,
            ..Default::default()
        },
    }
}

fn response(session_id: i32, parts: &[(u8, i32)]) -> FetchResponse {
    let mut responses: Vec<FetchableTopicResponse> = Vec::new();
    for &(t, p) in parts {
        if responses.last().is_none_or(|r| r.topic_id != topic(t)) {
            responses.push(FetchableTopicResponse {
                topic: format!("t{t}"),
                topic_id: topic(t),
                ..Default::default()
            });
        }
        responses
            .last_mut()
            .unwrap()
            .partitions
            .push(PartitionData {
                partition_index: p,
                ..Default::default()
            });
    }
    FetchResponse {
        session_id,
        responses,
        ..Default::default()
    }
}

fn error(code: ErrorCode) -> FetchResponse {
    FetchResponse {
        error_code: code.code(),
        ..Default::default()
    }
}

fn sent(req: &SessionRequest) -> Vec<(Uuid, i32, i64)> {
    let mut out: Vec<_> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.topic_id, p.partition, p.fetch_offset))
        })
        .collect();
    out.sort();
    out
}

fn three() -> Vec<WantedPartition> {
    vec![want(1, 0, 10), want(1, 1, 20), want(2, 0, 30)]
}

/// Starts a session 123 over `three()`.
fn in_session() -> FetchSessionHandler {
    let mut h = FetchSessionHandler::new();
    let req = h.build(three());
    assert_eq!(req.metadata, FetchMetadata::INITIAL);
    assert_eq!(req.sent, 3);
    assert!(h.handle_response(&response(123, &[(1, 0), (1, 1), (2, 0)])));
    assert_eq!(
        h.next_metadata(),
        FetchMetadata {
            session_id: 123,
            epoch: 1
        }
    );
    h
}

#[test]
fn full_then_only_added_changed_and_forgotten() {
    let mut h = in_session();
    // Nothing changed: nothing sent, everything left to the session.
    let req = h.build(three());
    assert_eq!((req.sent, req.omitted), (0, 3));
    assert!(req.forgotten.is_empty());
    assert_eq!(req.metadata.epoch, 1);
    assert!(h.handle_response(&response(123, &[])));
    assert_eq!(h.next_metadata().epoch, 2);
    // One moved, one dropped, one added.
    let req = h.build(vec![want(1, 0, 11), want(2, 0, 30), want(3, 5, 0)]);
    assert_eq!(sent(&req), vec![(topic(1), 0, 11), (topic(3), 5, 0)]);
    assert_eq!(req.forgotten.len(), 1);
    assert_eq!(
        (
            req.forgotten[0].topic_id,
            req.forgotten[0].partitions.clone()
        ),
        (topic(1), vec![1])
    );
    assert!(h.handle_response(&response(123, &[(3, 5)])));
    assert_eq!(h.session_partitions(), 3);
    // The dropped partition coming back is sent again.
    let req = h.build(vec![
        want(1, 0, 11),
        want(1, 1, 20),
        want(2, 0, 30),
        want(3, 5, 0),
    ]);
    assert_eq!(sent(&req), vec![(topic(1), 1, 20)]);
    assert_eq!(h.resets(), 0);
}

#[test]
fn any_parameter_change_is_sent() {
    let mut h = in_session();
    let mut w = three();
    w[2].data.high_watermark = 7;
    w[1].data.current_leader_epoch = 2;
    let req = h.build(w);
    assert_eq!(sent(&req), vec![(topic(1), 1, 20), (topic(2), 0, 30)]);
}

#[test]
fn session_id_not_found_starts_over_without_closing() {
    let mut h = in_session();
    h.build(three());
    assert!(!h.handle_response(&error(ErrorCode::FetchSessionIdNotFound)));
    assert_eq!(h.next_metadata(), FetchMetadata::INITIAL);
    let req = h.build(three());
    assert_eq!(req.sent, 3, "the next request is full");
    assert_eq!(h.resets(), 1);
}

#[test]
fn epoch_mismatch_closes_the_session_and_fetches_in_full() {
    let mut h = in_session();
    h.build(three());
    assert!(!h.handle_response(&error(ErrorCode::InvalidFetchSessionEpoch)));
    assert_eq!(
        h.next_metadata(),
        FetchMetadata {
            session_id: 123,
            epoch: 0
        }
    );
    let req = h.build(three());
    assert!(req.metadata.is_full());
    assert_eq!(req.sent, 3);
    assert!(req.forgotten.is_empty());
}

#[test]
fn incremental_response_naming_an_unknown_partition_is_rejected() {
    let mut h = in_session();
    h.build(three());
    assert!(!h.handle_response(&response(123, &[(9, 0)])));
    assert_eq!(h.next_metadata().epoch, 0);
    assert_eq!(h.build(three()).sent, 3);
}

#[test]
fn full_response_must_name_every_partition_once() {
    let mut h = FetchSessionHandler::new();
    h.build(three());
    assert!(
        !h.handle_response(&response(123, &[(1, 0), (2, 0)])),
        "one omitted"
    );
    assert_eq!(h.next_metadata(), FetchMetadata::INITIAL);
    h.build(three());
    assert!(!h.handle_response(&response(123, &[(1, 0), (1, 1), (2, 0), (4, 0)])));
    h.build(three());
    assert!(h.handle_response(&response(123, &[(1, 0), (1, 1), (2, 0)])));
}

#[test]
fn leader_without_a_session_slot_keeps_full_fetches() {
    let mut h = FetchSessionHandler::new();
    h.build(three());
    assert!(h.handle_response(&response(0, &[(1, 0), (1, 1), (2, 0)])));
    assert_eq!(h.next_metadata(), FetchMetadata::INITIAL);
    assert_eq!(h.build(three()).sent, 3);
}

#[test]
fn leader_closing_the_session_means_full_next() {
    let mut h = in_session();
    h.build(three());
    assert!(h.handle_response(&response(0, &[])));
    assert_eq!(h.next_metadata(), FetchMetadata::INITIAL);
    assert_eq!(h.build(three()).sent, 3);
}

#[test]
fn failed_request_closes_the_session() {
    let mut h = in_session();
    h.build(three());
    h.handle_error();
    assert_eq!(
        h.next_metadata(),
        FetchMetadata {
            session_id: 123,
            epoch: 0
        }
    );
    assert_eq!(h.build(three()).sent, 3);
    let mut fresh = FetchSessionHandler::new();
    fresh.build(three());
    fresh.handle_error();
    assert_eq!(fresh.next_metadata(), FetchMetadata::INITIAL);
}

#[test]
fn throttled_empty_full_response_is_not_applied() {
    let mut h = FetchSessionHandler::new();
    h.build(three());
    let mut r = response(123, &[]);
    r.throttle_time_ms = 100;
    assert!(!h.handle_response(&r));
    assert_eq!(h.next_metadata(), FetchMetadata::INITIAL);
}

#[test]
fn epochs_wrap_to_one() {
    let mut h = in_session();
    h.next = FetchMetadata {
        session_id: 123,
        epoch: i32::MAX,
    };
    h.build(three());
    assert!(h.handle_response(&response(123, &[])));
    assert_eq!(h.next_metadata().epoch, 1);
}

/// Built from what changed only: a changed partition is sent, an unchanged one named as
/// changed is not, a gone one is forgotten (one the session never held is ignored), a new
/// one is added; the others stay in the session as last sent, and what was last sent for
/// each is what `last_sent` says.
#[test]
fn built_from_changes_sends_and_forgets_only_those() {
    let mut h = in_session();
    let req = h.build_changed(
        vec![want(1, 0, 11), want(2, 0, 30), want(3, 5, 0)],
        &[(topic(1), 1), (topic(9), 9)],
    );
    assert_eq!(sent(&req), vec![(topic(1), 0, 11), (topic(3), 5, 0)]);
    assert_eq!((req.sent, req.omitted), (2, 1));
    assert_eq!(req.forgotten.len(), 1);
    assert_eq!(
        (
            req.forgotten[0].topic_id,
            req.forgotten[0].partitions.clone()
        ),
        (topic(1), vec![1])
    );
    assert_eq!(req.metadata.epoch, 1);
    assert!(h.handle_response(&response(123, &[(3, 5)])));
    assert_eq!(h.session_partitions(), 3);
    assert_eq!(
        h.last_sent(&(topic(1), 0)).map(|p| p.fetch_offset),
        Some(11)
    );
    assert_eq!(
        h.last_sent(&(topic(2), 0)).map(|p| p.fetch_offset),
        Some(30)
    );
    assert!(h.last_sent(&(topic(1), 1)).is_none());
    // Nothing changed: an empty incremental request, everything left to the session.
    let req = h.build_changed(Vec::new(), &[]);
    assert_eq!((req.sent, req.omitted), (0, 3));
    assert!(h.handle_response(&response(123, &[(2, 0)])));
    assert_eq!(h.resets(), 0);
}
