//! Rules of a single core, driven message by message without the network: Fetch validation
//! (M5), the HW walk-throughs of seed 000 (S0.1–S0.3), KIP-279 divergence (S1.4), votes and
//! pre-votes, EndQuorumEpoch backoff, the fetch purgatory, what a follower refuses, and the
//! leader's side of KIP-630 (a Fetch below the log start, FetchSnapshot chunks).

use bytes::Bytes;
use kraftd_log::SnapshotId;
use kraftd_protocol::messages::{
    end_quorum_epoch_request, fetch_request, fetch_response, fetch_snapshot_request, vote_request,
    vote_response, EndQuorumEpochRequest, FetchRequest, FetchResponse, FetchSnapshotRequest,
    FetchSnapshotResponse, VoteRequest, VoteResponse,
};
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_raft::{
    ApiKind, MemoryLog, Output, QuorumStateData, RaftConfig, RaftCore, RaftLog, RaftMessage,
    RoleName, CLUSTER_METADATA_TOPIC, CLUSTER_METADATA_TOPIC_ID,
};

const CLUSTER: &str = "rules-cluster";

fn config() -> RaftConfig {
    RaftConfig::new(CLUSTER)
}

fn drain(core: &mut RaftCore<MemoryLog>) -> Vec<Output> {
    std::iter::from_fn(|| core.poll_output()).collect()
}

/// Drains as the driver does: an [`Output::Flush`] is performed at once, at `now`.
fn drain_flushing(core: &mut RaftCore<MemoryLog>, now: u64) -> Vec<Output> {
    let mut out = Vec::new();
    while let Some(o) = core.poll_output() {
        if o == Output::Flush {
            core.flush(now);
        }
        out.push(o);
    }
    out
}

fn sends(outputs: &[Output]) -> Vec<(i32, &RaftMessage)> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Send { to, msg, .. } => Some((*to, msg)),
            _ => None,
        })
        .collect()
}

fn fetch_responses(outputs: &[Output]) -> Vec<(i32, &FetchResponse)> {
    sends(outputs)
        .into_iter()
        .filter_map(|(to, m)| match m {
            RaftMessage::FetchResponse(r) => Some((to, &**r)),
            _ => None,
        })
        .collect()
}

fn partition(r: &FetchResponse) -> &fetch_response::PartitionData {
    &r.responses[0].partitions[0]
}

fn vote_response(epoch: i32, leader: i32, granted: bool) -> RaftMessage {
    RaftMessage::VoteResponse(VoteResponse {
        topics: vec![vote_response::TopicData {
            topic_name: CLUSTER_METADATA_TOPIC.into(),
            partitions: vec![vote_response::PartitionData {
                leader_id: leader,
                leader_epoch: epoch,
                vote_granted: granted,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn vote_request(candidate: i32, epoch: i32, last_epoch: i32, end: i64, pre: bool) -> RaftMessage {
    RaftMessage::VoteRequest(VoteRequest {
        cluster_id: Some(CLUSTER.into()),
        topics: vec![vote_request::TopicData {
            topic_name: CLUSTER_METADATA_TOPIC.into(),
            partitions: vec![vote_request::PartitionData {
                replica_epoch: epoch,
                replica_id: candidate,
                last_offset_epoch: last_epoch,
                last_offset: end,
                pre_vote: pre,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// The vote requests among `outputs`: (destination, correlation id).
fn vote_requests(outputs: &[Output]) -> Vec<(i32, i32)> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Send {
                to,
                correlation_id,
                msg: RaftMessage::VoteRequest(_),
            } => Some((*to, *correlation_id)),
            _ => None,
        })
        .collect()
}

/// Delivers a fetch response as the answer to the core's fetch in flight.
fn reply(
    core: &mut RaftCore<MemoryLog>,
    now: u64,
    msg: RaftMessage,
) -> Result<(), kraftd_raft::RaftError> {
    let (to, corr) = core.fetch_in_flight().expect("a fetch in flight");
    let r = core.handle_message(now, to, corr, msg);
    drain(core);
    r
}

fn granted(outputs: &[Output]) -> Option<bool> {
    sends(outputs).into_iter().find_map(|(_, m)| match m {
        RaftMessage::VoteResponse(r) => Some(r.topics[0].partitions[0].vote_granted),
        _ => None,
    })
}

fn fetch(replica: i32, epoch: i32, offset: i64, last_epoch: i32, hw: i64) -> FetchRequest {
    FetchRequest {
        cluster_id: Some(CLUSTER.into()),
        replica_state: fetch_request::ReplicaState {
            replica_id: replica,
            replica_epoch: -1,
            ..Default::default()
        },
        max_wait_ms: 500,
        topics: vec![fetch_request::FetchTopic {
            topic_id: CLUSTER_METADATA_TOPIC_ID,
            partitions: vec![fetch_request::FetchPartition {
                current_leader_epoch: epoch,
                fetch_offset: offset,
                last_fetched_epoch: last_epoch,
                partition_max_bytes: 1 << 20,
                high_watermark: hw,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn batch(records: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(0);
    for i in 0..records {
        b.append(0, None, Some(Bytes::from(vec![i as u8; 4])), Vec::new())
            .expect("append");
    }
    b.build().expect("build")
}

/// Node 1 of `voters`, elected leader of epoch `epoch_before + 1` by votes from the others.
fn leader(voters: &[i32], log: MemoryLog, epoch_before: i32) -> (RaftCore<MemoryLog>, u64) {
    leader_with(config(), voters, log, epoch_before)
}

fn leader_with(
    config: RaftConfig,
    voters: &[i32],
    log: MemoryLog,
    epoch_before: i32,
) -> (RaftCore<MemoryLog>, u64) {
    let persisted = QuorumStateData {
        leader_epoch: epoch_before,
        leader_id: -1,
        voted_id: -1,
    };
    let mut core = RaftCore::new(
        config,
        1,
        voters.iter().copied(),
        Some(persisted),
        log,
        7,
        0,
    );
    let mut now = 0;
    while core.role() != RoleName::Prospective {
        now = core.poll_timeout();
        core.handle_timeout(now);
    }
    for (v, corr) in vote_requests(&drain(&mut core)) {
        core.handle_message(now, v, corr, vote_response(epoch_before, -1, true))
            .expect("ok");
    }
    assert_eq!(core.role(), RoleName::Candidate);
    for (v, corr) in vote_requests(&drain(&mut core)) {
        core.handle_message(now, v, corr, vote_response(epoch_before + 1, -1, true))
            .expect("ok");
    }
    assert_eq!(core.role(), RoleName::Leader);
    drain_flushing(&mut core, now);
    (core, now)
}

fn answer(
    core: &mut RaftCore<MemoryLog>,
    now: u64,
    from: i32,
    req: FetchRequest,
) -> Option<FetchResponse> {
    core.handle_message(now, from, 99, RaftMessage::FetchRequest(req))
        .expect("ok");
    let out = drain_flushing(core, now);
    fetch_responses(&out).first().map(|(_, r)| (*r).clone())
}

#[test]
fn leader_validates_fetch_as_m5_says() {
    let (mut l, now) = leader(&[1, 2, 3], MemoryLog::new(), 4);
    let epoch = l.epoch();
    let mut bad_cluster = fetch(2, epoch, 0, 0, -1);
    bad_cluster.cluster_id = Some("other".into());
    assert_eq!(answer(&mut l, now, 2, bad_cluster).unwrap().error_code, 104);
    let mut bad_topic = fetch(2, epoch, 0, 0, -1);
    bad_topic.topics[0].topic_id = kraftd_protocol::Uuid([9; 16]);
    assert_eq!(answer(&mut l, now, 2, bad_topic).unwrap().error_code, 42);
    let code =
        |l: &mut RaftCore<MemoryLog>, r| partition(&answer(l, now, 2, r).unwrap()).error_code;
    assert_eq!(
        code(&mut l, fetch(2, epoch, -1, 0, -1)),
        42,
        "negative offset"
    );
    assert_eq!(
        code(&mut l, fetch(2, epoch, 0, epoch + 1, -1)),
        42,
        "last epoch above current"
    );
    let mut negative_wait = fetch(2, epoch, 0, 0, -1);
    negative_wait.max_wait_ms = -1;
    assert_eq!(code(&mut l, negative_wait), 42);
    let fenced = answer(&mut l, now, 2, fetch(2, epoch - 1, 0, 0, -1)).unwrap();
    assert_eq!(partition(&fenced).error_code, 74, "FENCED_LEADER_EPOCH");
    assert_eq!(partition(&fenced).current_leader.leader_id, 1);
    assert_eq!(partition(&fenced).current_leader.leader_epoch, epoch);
    assert_eq!(
        code(&mut l, fetch(2, epoch + 1, 0, 0, -1)),
        75,
        "UNKNOWN_LEADER_EPOCH"
    );

    // A follower answers NOT_LEADER_OR_FOLLOWER naming its leader.
    let persisted = QuorumStateData {
        leader_epoch: 9,
        leader_id: 3,
        voted_id: -1,
    };
    let mut f = RaftCore::new(
        config(),
        2,
        [1, 2, 3],
        Some(persisted),
        MemoryLog::new(),
        1,
        0,
    );
    drain(&mut f);
    let r = answer(&mut f, 0, 68, fetch(68, 9, 0, 0, -1)).unwrap();
    assert_eq!(partition(&r).error_code, 6);
    assert_eq!(partition(&r).current_leader.leader_id, 3);
}

#[test]
fn hw_needs_two_fetches_s0_1_or_one_s0_2() {
    // S0.1: a leader and one voter follower.
    let (mut l, mut now) = leader(&[1, 2], MemoryLog::new(), 0);
    let epoch = l.epoch();
    now += 1;
    let r = answer(&mut l, now, 2, fetch(2, epoch, 0, 0, -1)).unwrap();
    assert!(
        !partition(&r).records.as_ref().unwrap().is_empty(),
        "the LeaderChange record"
    );
    // The follower holds offset 0: HW 1 comes back at once (its HW is behind).
    let r = answer(&mut l, now, 2, fetch(2, epoch, 1, epoch, 0)).unwrap();
    assert_eq!(partition(&r).high_watermark, 1);
    l.propose(now, &[Bytes::from_static(b"m1")]).unwrap();
    now += 30; // append.linger.ms: the leader flushes
    l.handle_timeout(now);
    drain_flushing(&mut l, now);
    assert_eq!(l.high_watermark(), 1, "no majority yet");
    let r = answer(&mut l, now, 2, fetch(2, epoch, 1, epoch, 1)).unwrap();
    assert_eq!(partition(&r).high_watermark, 1);
    assert!(!partition(&r).records.as_ref().unwrap().is_empty());
    let r = answer(&mut l, now, 2, fetch(2, epoch, 2, epoch, 1)).unwrap();
    assert_eq!(
        partition(&r).high_watermark,
        2,
        "second fetch carries the new HW"
    );

    // S0.2: three voters; voter 3 already holds the record, so voter 2's first fetch after
    // the append gets the record and HW 2 together.
    let (mut l, mut now) = leader(&[1, 2, 3], MemoryLog::new(), 0);
    let epoch = l.epoch();
    answer(&mut l, now, 3, fetch(3, epoch, 1, epoch, -1));
    answer(&mut l, now, 2, fetch(2, epoch, 1, epoch, -1));
    l.propose(now, &[Bytes::from_static(b"m1")]).unwrap();
    now += 30;
    l.handle_timeout(now);
    drain_flushing(&mut l, now);
    answer(&mut l, now, 3, fetch(3, epoch, 2, epoch, 1));
    assert_eq!(l.high_watermark(), 2);
    let r = answer(&mut l, now, 2, fetch(2, epoch, 1, epoch, 1)).unwrap();
    assert_eq!(partition(&r).high_watermark, 2);
    assert!(!partition(&r).records.as_ref().unwrap().is_empty());
}

fn follower_with(log: MemoryLog, epoch: i32, leader: i32) -> RaftCore<MemoryLog> {
    let persisted = QuorumStateData {
        leader_epoch: epoch,
        leader_id: leader,
        voted_id: -1,
    };
    let mut f = RaftCore::new(config(), 2, [1, 2, 3], Some(persisted), log, 3, 0);
    drain(&mut f);
    f
}

fn response(leader: i32, epoch: i32, hw: i64, records: Bytes) -> RaftMessage {
    RaftMessage::FetchResponse(Box::new(FetchResponse {
        responses: vec![fetch_response::FetchableTopicResponse {
            topic_id: CLUSTER_METADATA_TOPIC_ID,
            partitions: vec![fetch_response::PartitionData {
                high_watermark: hw,
                current_leader: fetch_response::LeaderIdAndEpoch {
                    leader_id: leader,
                    leader_epoch: epoch,
                    ..Default::default()
                },
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }))
}

#[test]
fn follower_hw_is_min_of_leader_hw_and_leo_skips_unknown_and_never_decreases() {
    // S0.3
    let mut leader_log = MemoryLog::new();
    leader_log.append_as_leader(batch(2), 1).unwrap();
    leader_log.append_as_leader(batch(2), 1).unwrap();
    let mut f = follower_with(MemoryLog::new(), 1, 1);
    assert_eq!(f.fetch_target(), Some(1));
    let records = leader_log.read(0, 1 << 20);
    reply(&mut f, 1, response(1, 1, 10, records)).unwrap();
    assert_eq!(f.log().end_offset(), 4);
    assert_eq!(f.high_watermark(), 4, "min(leader HW 10, LEO 4)");
    drain(&mut f);
    reply(&mut f, 2, response(1, 1, -1, Bytes::new())).unwrap();
    assert_eq!(f.high_watermark(), 4, "-1 is skipped");
    drain(&mut f);
    reply(&mut f, 3, response(1, 1, 2, Bytes::new())).unwrap();
    assert_eq!(f.high_watermark(), 4, "never decreases");
}

#[test]
fn leader_answers_kip_279_diverging_epoch_and_follower_truncates_s1_4() {
    // A leads epoch 1: [0,10] and [11,20]; then epoch 3: [21,30].
    let mut a = MemoryLog::new();
    a.append_as_leader(batch(11), 1).unwrap();
    a.append_as_leader(batch(10), 1).unwrap();
    a.append_as_leader(batch(10), 3).unwrap();
    let (mut l, now) = leader(&[1, 2], a, 3);
    let epoch = l.epoch();
    // B holds [0,10] of epoch 1 and [11,15] of epoch 2, and fetches from 16 with epoch 2.
    let r = answer(&mut l, now, 2, fetch(2, epoch, 16, 2, -1)).unwrap();
    let d = &partition(&r).diverging_epoch;
    assert_eq!((d.epoch, d.end_offset), (1, 21));

    let mut b_log = MemoryLog::new();
    b_log.append_as_leader(batch(11), 1).unwrap();
    b_log.append_as_leader(batch(5), 2).unwrap();
    let mut b = follower_with(b_log, epoch, 1);
    let mut msg = response(1, epoch, -1, Bytes::new());
    if let RaftMessage::FetchResponse(r) = &mut msg {
        r.responses[0].partitions[0].diverging_epoch = fetch_response::EpochEndOffset {
            epoch: 1,
            end_offset: 21,
            ..Default::default()
        };
    }
    reply(&mut b, now, msg).unwrap();
    assert_eq!(
        b.log().end_offset(),
        11,
        "epochs above 1 are cut, [0,10] stays"
    );
}

#[test]
fn truncation_below_the_high_watermark_is_fatal() {
    let mut leader_log = MemoryLog::new();
    leader_log.append_as_leader(batch(4), 1).unwrap();
    let mut f = follower_with(MemoryLog::new(), 2, 1);
    reply(&mut f, 1, response(1, 2, 4, leader_log.read(0, 1 << 20))).unwrap();
    assert_eq!(f.high_watermark(), 4);
    drain(&mut f);
    let mut msg = response(1, 2, -1, Bytes::new());
    if let RaftMessage::FetchResponse(r) = &mut msg {
        r.responses[0].partitions[0].diverging_epoch = fetch_response::EpochEndOffset {
            epoch: 0,
            end_offset: 0,
            ..Default::default()
        };
    }
    assert!(reply(&mut f, 2, msg).is_err());
    assert!(f.is_fatal());
    assert_eq!(f.log().end_offset(), 4, "nothing committed was cut");
}

#[test]
fn follower_never_appends_batches_above_its_epoch_or_corrupt() {
    let mut future = MemoryLog::new();
    future.append_as_leader(batch(2), 5).unwrap();
    let mut f = follower_with(MemoryLog::new(), 2, 1);
    reply(&mut f, 1, response(1, 2, 2, future.read(0, 1 << 20))).unwrap();
    assert_eq!(f.log().end_offset(), 0);
    drain(&mut f);
    f.handle_timeout(100);
    let mut ok = MemoryLog::new();
    ok.append_as_leader(batch(2), 2).unwrap();
    let mut bytes = ok.read(0, 1 << 20).to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    reply(&mut f, 101, response(1, 2, 2, Bytes::from(bytes))).unwrap();
    assert_eq!(f.log().end_offset(), 0, "a corrupt batch is refused");
}

#[test]
fn fetch_response_from_a_node_not_fetched_from_is_ignored() {
    let mut other = MemoryLog::new();
    other.append_as_leader(batch(2), 2).unwrap();
    let mut f = follower_with(MemoryLog::new(), 2, 1);
    let (_, corr) = f.fetch_in_flight().expect("fetching from 1");
    f.handle_message(1, 3, corr, response(3, 2, 2, other.read(0, 1 << 20)))
        .unwrap();
    assert_eq!(f.log().end_offset(), 0);
}

#[test]
fn restarted_leader_is_resigned_refuses_votes_in_its_epoch_and_grants_higher() {
    let persisted = QuorumStateData {
        leader_epoch: 5,
        leader_id: 1,
        voted_id: 1,
    };
    let mut c = RaftCore::new(
        config(),
        1,
        [1, 2, 3],
        Some(persisted),
        MemoryLog::new(),
        1,
        0,
    );
    assert_eq!(c.role(), RoleName::Resigned);
    let out = drain(&mut c);
    assert!(
        sends(&out)
            .iter()
            .any(|(_, m)| matches!(m, RaftMessage::EndQuorumEpochRequest(_))),
        "tells the voters its epoch is over"
    );
    c.handle_message(1, 2, 1, vote_request(2, 5, 0, 0, false))
        .unwrap();
    assert_eq!(granted(&drain(&mut c)), Some(false));
    c.handle_message(2, 2, 2, vote_request(2, 6, 0, 0, false))
        .unwrap();
    let out = drain(&mut c);
    let persist = out
        .iter()
        .position(|o| matches!(o, Output::PersistQuorumState(d) if d.voted_id == 2 && d.leader_epoch == 6))
        .expect("the vote is persisted");
    let reply = out
        .iter()
        .position(|o| {
            matches!(
                o,
                Output::Send {
                    msg: RaftMessage::VoteResponse(_),
                    ..
                }
            )
        })
        .expect("a reply");
    assert!(persist < reply, "persisted before the reply leaves");
    assert_eq!(granted(&out), Some(true));
    // One vote per epoch: another candidate in epoch 6 is refused.
    c.handle_message(3, 3, 3, vote_request(3, 6, 5, 99, false))
        .unwrap();
    assert_eq!(granted(&drain(&mut c)), Some(false));
}

#[test]
fn vote_needs_an_up_to_date_log() {
    let mut log = MemoryLog::new();
    log.append_as_leader(batch(3), 2).unwrap();
    let mut c = RaftCore::new(config(), 1, [1, 2, 3], None, log, 1, 0);
    drain(&mut c);
    c.handle_message(1, 2, 1, vote_request(2, 3, 1, 100, false))
        .unwrap();
    assert_eq!(granted(&drain(&mut c)), Some(false), "older last epoch");
    c.handle_message(1, 3, 2, vote_request(3, 3, 2, 3, false))
        .unwrap();
    assert_eq!(granted(&drain(&mut c)), Some(true), "same epoch and end");
}

#[test]
fn pre_vote_is_refused_by_a_follower_that_hears_from_its_leader() {
    let mut f = follower_with(MemoryLog::new(), 2, 1);
    f.handle_message(1, 3, 1, vote_request(3, 2, 0, 0, true))
        .unwrap();
    assert_eq!(
        granted(&drain(&mut f)),
        Some(true),
        "not fetched from the leader yet"
    );
    reply(&mut f, 2, response(1, 2, -1, Bytes::new())).unwrap();
    drain(&mut f);
    f.handle_message(3, 3, 2, vote_request(3, 2, 0, 0, true))
        .unwrap();
    assert_eq!(granted(&drain(&mut f)), Some(false), "its leader is alive");
    assert_eq!(f.epoch(), 2, "a pre-vote never changes the epoch");
}

#[test]
fn losing_candidate_waits_out_its_election_timeout() {
    let mut c = RaftCore::new(config(), 1, [1, 2, 3], None, MemoryLog::new(), 5, 0);
    let mut now = 0;
    while c.role() != RoleName::Prospective {
        now = c.poll_timeout();
        c.handle_timeout(now);
    }
    let pre_votes = vote_requests(&drain(&mut c));
    let (to, corr) = pre_votes[0];
    c.handle_message(now, to, corr, vote_response(0, -1, true))
        .unwrap();
    assert_eq!(c.role(), RoleName::Candidate);
    for (to, corr) in vote_requests(&drain(&mut c)) {
        c.handle_message(now + 1, to, corr, vote_response(1, -1, false))
            .unwrap();
    }
    assert_eq!(c.role(), RoleName::Candidate, "waits, no lockstep retry");
    let deadline = c.poll_timeout();
    assert!(deadline >= now + 1000, "the rest of the randomized timeout");
    c.handle_timeout(deadline - 1);
    assert!(
        sends(&drain(&mut c)).is_empty(),
        "no new requests while waiting"
    );
    c.handle_timeout(deadline);
    assert_eq!(c.role(), RoleName::Prospective);
    assert_eq!(c.epoch(), 1, "the pre-vote runs in the candidate's epoch");
}

#[test]
fn end_quorum_epoch_backs_off_by_successor_position() {
    for (successors, expected_ms) in [(vec![2, 3], 0), (vec![3, 2], 500), (vec![3], 1000)] {
        let mut f = follower_with(MemoryLog::new(), 4, 1);
        let req = EndQuorumEpochRequest {
            cluster_id: Some(CLUSTER.into()),
            topics: vec![end_quorum_epoch_request::TopicData {
                topic_name: CLUSTER_METADATA_TOPIC.into(),
                partitions: vec![end_quorum_epoch_request::PartitionData {
                    leader_id: 1,
                    leader_epoch: 4,
                    preferred_candidates: successors
                        .iter()
                        .map(|c| end_quorum_epoch_request::ReplicaInfo {
                            candidate_id: *c,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        f.handle_message(100, 1, 1, RaftMessage::EndQuorumEpochRequest(req))
            .unwrap();
        drain(&mut f);
        if expected_ms == 0 {
            assert_eq!(
                f.role(),
                RoleName::Prospective,
                "the first successor starts at once"
            );
        } else {
            assert_eq!(f.role(), RoleName::Follower);
            assert_eq!(f.poll_timeout(), 100 + expected_ms);
        }
    }
}

#[test]
fn purgatory_completes_on_append_on_max_wait_and_on_resignation() {
    let (mut l, now) = leader(&[1, 2, 3], MemoryLog::new(), 0);
    let epoch = l.epoch();
    let end = l.log().end_offset();
    // The first fetch at the end commits the LeaderChange record and is answered at once:
    // the fetcher's HW (-1) is behind the leader's (KIP-1166).
    let r = answer(&mut l, now, 2, fetch(2, epoch, end, epoch, -1)).expect("answered");
    assert_eq!(partition(&r).high_watermark, end);
    // Caught up, HW known, nothing to return: parked.
    assert!(answer(&mut l, now, 2, fetch(2, epoch, end, epoch, end)).is_none());
    // An append completes it early, with the records.
    l.propose(now + 5, &[Bytes::from_static(b"x")]).unwrap();
    let out = drain(&mut l);
    let r = fetch_responses(&out);
    assert_eq!(r.len(), 1);
    assert!(!partition(r[0].1).records.as_ref().unwrap().is_empty());
    // After the linger flush, parked again; its max wait (500 ms) answers it empty.
    let end = l.log().end_offset();
    l.handle_timeout(now + 40);
    drain_flushing(&mut l, now + 40);
    assert!(answer(&mut l, now + 40, 2, fetch(2, epoch, end, epoch, -1)).is_some());
    let hw = l.high_watermark();
    assert_eq!(hw, end);
    assert!(answer(&mut l, now + 40, 2, fetch(2, epoch, end, epoch, hw)).is_none());
    l.handle_timeout(now + 539);
    assert!(fetch_responses(&drain(&mut l)).is_empty());
    l.handle_timeout(now + 540);
    let out = drain(&mut l);
    let r = fetch_responses(&out);
    assert_eq!(r.len(), 1);
    assert!(partition(r[0].1).records.as_ref().unwrap().is_empty());
    // A role change answers parked fetches with the new role's error.
    let hw = l.high_watermark();
    assert!(answer(&mut l, now + 600, 2, fetch(2, epoch, end, epoch, hw)).is_none());
    l.resign(now + 601);
    let out = drain(&mut l);
    let r = fetch_responses(&out);
    assert_eq!(partition(r[0].1).error_code, 6, "NOT_LEADER_OR_FOLLOWER");
}

#[test]
fn observer_never_starts_an_election_and_asks_a_bootstrap_server() {
    let mut cfg = config();
    cfg.bootstrap_servers = vec![1, 2, 3];
    let mut o = RaftCore::new(cfg, 68, [1, 2, 3], None, MemoryLog::new(), 1, 0);
    let out = drain(&mut o);
    let first = sends(&out);
    assert_eq!(first.len(), 1);
    assert!(matches!(first[0].1, RaftMessage::FetchRequest(_)));
    assert!([1, 2, 3].contains(&first[0].0));
    for t in 1..100 {
        o.handle_timeout(t * 1_000);
        assert_ne!(o.role(), RoleName::Prospective);
        assert_ne!(o.role(), RoleName::Candidate);
    }
}

#[test]
fn new_leader_is_told_of_its_leadership_after_reading_to_the_epoch_start() {
    let mut log = MemoryLog::new();
    log.append_as_leader(batch(3), 1).unwrap();
    log.append_as_leader(batch(2), 1).unwrap();
    let persisted = QuorumStateData {
        leader_epoch: 1,
        leader_id: -1,
        voted_id: -1,
    };
    let mut core = RaftCore::new(config(), 1, [1, 2, 3], Some(persisted), log, 7, 0);
    let mut now = 0;
    while core.role() != RoleName::Prospective {
        now = core.poll_timeout();
        core.handle_timeout(now);
    }
    let mut outputs = Vec::new();
    for (v, corr) in vote_requests(&drain(&mut core)) {
        core.handle_message(now, v, corr, vote_response(1, -1, true))
            .unwrap();
    }
    for (v, corr) in vote_requests(&drain(&mut core)) {
        core.handle_message(now, v, corr, vote_response(2, -1, true))
            .unwrap();
    }
    assert_eq!(core.role(), RoleName::Leader);
    outputs.extend(drain_flushing(&mut core, now));
    let told = |outs: &[Output]| {
        outs.iter().any(|o| {
            matches!(
                o,
                Output::LeaderChange {
                    epoch: 2,
                    leader_id: Some(1)
                }
            )
        })
    };
    assert!(
        !told(&outputs),
        "not before the listener reached the epoch start (5)"
    );
    // A follower catches up: the LeaderChange record at 5 commits, HW 6.
    core.handle_message(
        now + 30,
        2,
        9,
        RaftMessage::FetchRequest(fetch(2, 2, 6, 2, -1)),
    )
    .unwrap();
    let outs = drain(&mut core);
    assert_eq!(core.high_watermark(), 6);
    let notice = outs
        .iter()
        .position(|o| matches!(o, Output::LeaderChange { .. }));
    let last_commit = outs
        .iter()
        .rposition(|o| matches!(o, Output::Committed(_)))
        .expect("committed batches");
    assert!(told(&outs));
    assert!(
        notice.expect("notice") > last_commit,
        "after the batches before the epoch"
    );
}

#[test]
fn a_voter_without_pre_vote_sends_the_prospective_straight_to_candidate() {
    let mut c = RaftCore::new(config(), 1, [1, 2, 3], None, MemoryLog::new(), 5, 0);
    let mut now = 0;
    while c.role() != RoleName::Prospective {
        now = c.poll_timeout();
        c.handle_timeout(now);
    }
    let (to, corr) = vote_requests(&drain(&mut c))[0];
    let unsupported = RaftMessage::VoteResponse(VoteResponse {
        error_code: 35,
        ..Default::default()
    });
    c.handle_message(now, to, corr, unsupported).unwrap();
    assert_eq!(c.role(), RoleName::Candidate);
    assert_eq!(c.epoch(), 1);
}

#[test]
fn vote_meant_for_another_voter_is_refused_with_invalid_voter_key() {
    let mut c = RaftCore::new(config(), 1, [1, 2, 3], None, MemoryLog::new(), 1, 0);
    drain(&mut c);
    let mut req = vote_request(2, 1, 0, 0, false);
    if let RaftMessage::VoteRequest(r) = &mut req {
        r.voter_id = 3;
    }
    c.handle_message(1, 2, 1, req).unwrap();
    let out = drain(&mut c);
    let code = sends(&out)
        .into_iter()
        .find_map(|(_, m)| match m {
            RaftMessage::VoteResponse(r) => Some(r.topics[0].partitions[0].error_code),
            _ => None,
        })
        .expect("a response");
    assert_eq!(code, 125, "INVALID_VOTER_KEY");
    assert_eq!(c.durable_state().voted_id, -1, "no vote cast");
}

#[test]
fn begin_quorum_epoch_is_resent_to_voters_that_have_not_fetched() {
    let persisted = QuorumStateData {
        leader_epoch: 0,
        leader_id: -1,
        voted_id: -1,
    };
    let mut core = RaftCore::new(
        config(),
        1,
        [1, 2, 3],
        Some(persisted),
        MemoryLog::new(),
        7,
        0,
    );
    let mut now = 0;
    while core.role() != RoleName::Prospective {
        now = core.poll_timeout();
        core.handle_timeout(now);
    }
    for (v, corr) in vote_requests(&drain(&mut core)) {
        core.handle_message(now, v, corr, vote_response(0, -1, true))
            .unwrap();
    }
    for (v, corr) in vote_requests(&drain(&mut core)) {
        core.handle_message(now, v, corr, vote_response(1, -1, true))
            .unwrap();
    }
    assert_eq!(core.role(), RoleName::Leader);
    let begin_quorum = |outs: &[Output]| -> Vec<(i32, i32)> {
        outs.iter()
            .filter_map(|o| match o {
                Output::Send {
                    to,
                    correlation_id,
                    msg: RaftMessage::BeginQuorumEpochRequest(_),
                } => Some((*to, *correlation_id)),
                _ => None,
            })
            .collect()
    };
    let first = begin_quorum(&drain(&mut core));
    let mut to: Vec<i32> = first.iter().map(|(t, _)| *t).collect();
    to.sort();
    assert_eq!(to, vec![2, 3], "the election is announced to every voter");
    for (v, corr) in first {
        let ack = RaftMessage::BeginQuorumEpochResponse(
            kraftd_protocol::messages::BeginQuorumEpochResponse {
                topics: vec![
                    kraftd_protocol::messages::begin_quorum_epoch_response::TopicData {
                        topic_name: CLUSTER_METADATA_TOPIC.into(),
                        partitions: vec![
                            kraftd_protocol::messages::begin_quorum_epoch_response::PartitionData {
                                leader_id: 1,
                                leader_epoch: 1,
                                ..Default::default()
                            },
                        ],
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
        );
        core.handle_message(now, v, corr, ack).unwrap();
    }
    // Voter 2 fetches every 400 ms; voter 3 never does.
    let mut resent = Vec::new();
    for step in 1..=8u64 {
        let t = now + step * 400;
        core.handle_timeout(t);
        let end = core.log().end_offset();
        core.handle_message(
            t,
            2,
            step as i32,
            RaftMessage::FetchRequest(fetch(2, 1, end, 1, -1)),
        )
        .unwrap();
        resent.extend(
            begin_quorum(&drain(&mut core))
                .into_iter()
                .map(|(to, _)| to),
        );
    }
    assert!(
        resent.contains(&3),
        "the silent voter hears BeginQuorumEpoch again"
    );
    assert!(!resent.contains(&2), "the fetching voter does not");
}

#[test]
fn leader_sends_new_records_before_its_flush_and_counts_itself_only_once_flushed() {
    let mut cfg = config();
    cfg.append_linger_ms = 0;
    let (mut l, now) = leader_with(cfg, &[1, 2, 3], MemoryLog::new(), 0);
    let epoch = l.epoch();
    let end = l.log().end_offset();
    answer(&mut l, now, 2, fetch(2, epoch, end, epoch, -1)).expect("answered");
    answer(&mut l, now, 3, fetch(3, epoch, end, epoch, -1)).expect("answered");
    assert_eq!(l.high_watermark(), end);
    assert!(answer(&mut l, now, 2, fetch(2, epoch, end, epoch, end)).is_none());
    // The append answers the parked fetch first, then asks for the flush; the log is not
    // flushed by the core itself.
    l.propose(now + 1, &[Bytes::from_static(b"x")]).unwrap();
    let out = drain(&mut l);
    let send = out
        .iter()
        .position(|o| matches!(o, Output::Send { .. }))
        .expect("the parked fetch is answered");
    let flush = out
        .iter()
        .position(|o| *o == Output::Flush)
        .expect("a flush is asked for");
    assert!(send < flush, "records go out before the leader's fsync");
    assert_eq!(out.iter().filter(|o| **o == Output::Flush).count(), 1);
    assert_eq!(
        l.log().flushed_offset(),
        end,
        "the core did not flush by itself"
    );
    assert!(
        l.poll_timeout() > now + 1,
        "no busy loop while the flush is pending"
    );
    // Voter 2 holds the record, the leader's copy is unflushed: no majority yet.
    answer(&mut l, now + 2, 2, fetch(2, epoch, end + 1, epoch, end));
    assert_eq!(l.high_watermark(), end);
    // The flush done, the leader counts itself: HW end + 1.
    l.flush(now + 2);
    assert_eq!(l.log().flushed_offset(), end + 1);
    assert_eq!(l.high_watermark(), end + 1);
    // Only one flush is outstanding at a time.
    l.propose(now + 3, &[Bytes::from_static(b"y")]).unwrap();
    l.propose(now + 3, &[Bytes::from_static(b"z")]).unwrap();
    let flushes = drain(&mut l)
        .iter()
        .filter(|o| **o == Output::Flush)
        .count();
    assert_eq!(flushes, 1);
    l.flush(now + 4);
    assert_eq!(l.log().flushed_offset(), l.log().end_offset());
    assert!(drain(&mut l).iter().all(|o| *o != Output::Flush));
}

fn fetch_snapshot(
    core: &mut RaftCore<MemoryLog>,
    now: u64,
    epoch: i32,
    id: SnapshotId,
    position: i64,
    max_bytes: i32,
) -> FetchSnapshotResponse {
    let req = FetchSnapshotRequest {
        cluster_id: Some(CLUSTER.into()),
        replica_id: 9,
        max_bytes,
        topics: vec![fetch_snapshot_request::TopicSnapshot {
            name: CLUSTER_METADATA_TOPIC.into(),
            partitions: vec![fetch_snapshot_request::PartitionSnapshot {
                partition: 0,
                current_leader_epoch: epoch,
                snapshot_id: fetch_snapshot_request::SnapshotId {
                    end_offset: id.end_offset,
                    epoch: id.epoch,
                    ..Default::default()
                },
                position,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    core.handle_message(now, 9, 77, RaftMessage::FetchSnapshotRequest(req))
        .expect("ok");
    let out = drain(core);
    sends(&out)
        .into_iter()
        .find_map(|(_, m)| match m {
            RaftMessage::FetchSnapshotResponse(r) => Some((**r).clone()),
            _ => None,
        })
        .expect("answered")
}

#[test]
fn leader_sends_a_fetcher_below_its_log_start_to_its_snapshot_and_serves_it_in_chunks() {
    let (mut l, now) = leader(&[1, 2], MemoryLog::new(), 0);
    let epoch = l.epoch();
    l.propose(now, &[Bytes::from_static(b"a"), Bytes::from_static(b"b")])
        .expect("leader");
    // Past append.linger.ms: the leader flushes.
    let now = now + 100;
    l.handle_timeout(now);
    drain_flushing(&mut l, now);
    let end = l.log().end_offset();
    answer(&mut l, now, 2, fetch(2, epoch, end, epoch, -1));
    assert_eq!(l.high_watermark(), end);
    let id = SnapshotId {
        end_offset: end,
        epoch,
    };
    assert!(
        l.create_snapshot(
            SnapshotId {
                end_offset: end + 1,
                epoch
            },
            b"x"
        )
        .is_err(),
        "never above the HW"
    );
    let state: Vec<u8> = (0..100u8).collect();
    l.create_snapshot(id, &state).expect("snapshot");
    assert_eq!(l.delete_log_before_latest_snapshot(), end);

    // Below the start, or at it with another epoch: the snapshot id, no records.
    for (offset, last_epoch) in [(0, 0), (end, 0)] {
        let r = answer(&mut l, now, 9, fetch(9, epoch, offset, last_epoch, -1)).unwrap();
        let p = partition(&r);
        assert_eq!(p.error_code, 0);
        assert_eq!(
            (p.snapshot_id.end_offset, p.snapshot_id.epoch),
            (end, epoch)
        );
        assert!(p.records.as_ref().is_none_or(|r| r.is_empty()));
    }
    // At the start with the snapshot's epoch: an ordinary fetch.
    l.propose(now, &[Bytes::from_static(b"c")]).expect("leader");
    drain_flushing(&mut l, now);
    let r = answer(&mut l, now, 9, fetch(9, epoch, end, epoch, -1)).unwrap();
    assert_eq!(partition(&r).snapshot_id.end_offset, -1);
    assert!(!partition(&r).records.as_ref().expect("records").is_empty());

    // FetchSnapshot: chunks by position, then the errors Kafka answers.
    let chunk = fetch_snapshot(&mut l, now, epoch, id, 0, 40);
    let p = &chunk.topics[0].partitions[0];
    assert_eq!((p.error_code, p.size, p.position), (0, 100, 0));
    assert_eq!(&p.unaligned_records[..], &state[..40]);
    let last = fetch_snapshot(&mut l, now, epoch, id, 80, 40);
    assert_eq!(
        &last.topics[0].partitions[0].unaligned_records[..],
        &state[80..]
    );
    let code = |r: FetchSnapshotResponse| r.topics[0].partitions[0].error_code;
    assert_eq!(code(fetch_snapshot(&mut l, now, epoch, id, 101, 40)), 99);
    assert_eq!(code(fetch_snapshot(&mut l, now, epoch, id, -1, 40)), 99);
    let unknown = SnapshotId {
        end_offset: 1,
        epoch,
    };
    assert_eq!(code(fetch_snapshot(&mut l, now, epoch, unknown, 0, 40)), 98);
    assert_eq!(code(fetch_snapshot(&mut l, now, epoch - 1, id, 0, 40)), 74);
    assert_eq!(code(fetch_snapshot(&mut l, now, epoch + 1, id, 0, 40)), 75);
}

/// Answers the fetch in flight with `msg`; returns the outputs.
fn reply_outputs(core: &mut RaftCore<MemoryLog>, now: u64, msg: RaftMessage) -> Vec<Output> {
    let (to, corr) = core.fetch_in_flight().expect("a fetch in flight");
    core.handle_message(now, to, corr, msg).expect("ok");
    drain(core)
}

fn snapshot_chunk(id: SnapshotId, size: i64, position: i64, bytes: &[u8]) -> RaftMessage {
    use kraftd_protocol::messages::fetch_snapshot_response as fsr;
    RaftMessage::FetchSnapshotResponse(Box::new(FetchSnapshotResponse {
        topics: vec![fsr::TopicSnapshot {
            name: CLUSTER_METADATA_TOPIC.into(),
            partitions: vec![fsr::PartitionSnapshot {
                snapshot_id: fsr::SnapshotId {
                    end_offset: id.end_offset,
                    epoch: id.epoch,
                    ..Default::default()
                },
                current_leader: fsr::LeaderIdAndEpoch {
                    leader_id: 1,
                    leader_epoch: 1,
                    ..Default::default()
                },
                size,
                position,
                unaligned_records: Bytes::copy_from_slice(bytes),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }))
}

fn snapshot_position(outputs: &[Output]) -> Option<i64> {
    sends(outputs).into_iter().find_map(|(_, m)| match m {
        RaftMessage::FetchSnapshotRequest(r) => Some(r.topics[0].partitions[0].position),
        _ => None,
    })
}

#[test]
fn follower_downloads_a_snapshot_in_chunks_restarts_on_a_bad_chunk_and_installs_it() {
    let mut f = follower_with(MemoryLog::new(), 1, 1);
    let id = SnapshotId {
        end_offset: 50,
        epoch: 1,
    };
    let to_snapshot = || {
        let RaftMessage::FetchResponse(mut r) = response(1, 1, 50, Bytes::new()) else {
            unreachable!()
        };
        r.responses[0].partitions[0].snapshot_id = fetch_response::SnapshotId {
            end_offset: id.end_offset,
            epoch: id.epoch,
            ..Default::default()
        };
        RaftMessage::FetchResponse(r)
    };
    let state = b"0123456789";
    let out = reply_outputs(&mut f, 1, to_snapshot());
    assert_eq!(
        snapshot_position(&out),
        Some(0),
        "FetchSnapshot in place of Fetch"
    );
    let out = reply_outputs(&mut f, 2, snapshot_chunk(id, 10, 0, &state[..6]));
    assert_eq!(snapshot_position(&out), Some(6));
    // A chunk at the wrong position starts over with a Fetch.
    let out = reply_outputs(&mut f, 3, snapshot_chunk(id, 10, 3, &state[3..]));
    assert_eq!(snapshot_position(&out), None);
    assert_eq!(f.log().latest_snapshot(), None);
    f.handle_timeout(1_000);
    drain(&mut f);
    let out = reply_outputs(&mut f, 1_001, to_snapshot());
    assert_eq!(snapshot_position(&out), Some(0));
    let out = reply_outputs(&mut f, 1_002, snapshot_chunk(id, 10, 0, state));
    assert_eq!(f.log().latest_snapshot(), Some(id));
    assert_eq!((f.log().start_offset(), f.log().end_offset()), (50, 50));
    assert_eq!(f.high_watermark(), 50);
    assert!(
        out.iter().any(
            |o| matches!(o, Output::Snapshot { id: s, bytes } if *s == id && &bytes[..] == state)
        ),
        "listeners load the snapshot"
    );
    assert!(
        sends(&out)
            .iter()
            .any(|(_, m)| matches!(m, RaftMessage::FetchRequest(r)
                if r.topics[0].partitions[0].fetch_offset == 50
                    && r.topics[0].partitions[0].last_fetched_epoch == 1)),
        "fetching on from the snapshot's end"
    );
}

/// `controller.quorum.bootstrap.servers` entries that name no voter get negative ids (-2,
/// -3, as Kafka): a NOT_LEADER_OR_FOLLOWER from one naming leader 1 sends the observer to
/// voter 1; when voter 1 cannot be reached it asks a bootstrap server again, and a good
/// reply from one naming leader 1 in its epoch (the leader under another name) is taken as
/// the leader's and sends it back to voter 1.
#[test]
fn observer_follows_the_leader_a_negative_id_bootstrap_server_names() {
    let mut cfg = config();
    cfg.bootstrap_servers = vec![-2, -3];
    let mut o = RaftCore::new(cfg, 68, [1, 2, 3], None, MemoryLog::new(), 1, 0);
    drain(&mut o);
    let (to, _) = o.fetch_in_flight().expect("a bootstrap fetch");
    assert!(
        [-2, -3].contains(&to),
        "asks a bootstrap server first, not {to}"
    );
    let mut not_leader = response(1, 5, -1, Bytes::new());
    if let RaftMessage::FetchResponse(r) = &mut not_leader {
        r.responses[0].partitions[0].error_code = 6;
    }
    reply(&mut o, 10, not_leader).unwrap();
    assert_eq!(o.leader_id(), Some(1));
    assert_eq!(o.epoch(), 5);
    assert_eq!(o.fetch_target(), Some(1));
    o.handle_timeout(100);
    drain(&mut o);
    let (to, corr) = o.fetch_in_flight().expect("a fetch to the leader");
    assert_eq!(to, 1, "the next fetch goes to the named leader");

    // Voter 1's endpoint cannot be reached: back to a bootstrap server.
    o.handle_request_failed(200, 1, corr, ApiKind::Fetch);
    o.handle_timeout(300);
    drain(&mut o);
    let (to, _) = o.fetch_in_flight().expect("a bootstrap fetch");
    assert!(
        [-2, -3].contains(&to),
        "falls back to a bootstrap server, not {to}"
    );
    let mut leader_log = MemoryLog::new();
    leader_log.append_as_leader(batch(2), 5).unwrap();
    reply(&mut o, 310, response(1, 5, 2, leader_log.read(0, 1 << 20))).unwrap();
    assert_eq!(
        o.log().end_offset(),
        2,
        "the leader's records, under another name"
    );
    assert_eq!(o.high_watermark(), 2);
    assert_eq!(
        o.fetch_target(),
        Some(1),
        "and back to the leader's own endpoint"
    );
    o.handle_timeout(400);
    drain(&mut o);
    assert_eq!(o.fetch_in_flight().map(|(to, _)| to), Some(1));
}

/// A good reply from a negative-id bootstrap server naming another leader or epoch is no
/// leader's reply: its records are not taken.
#[test]
fn a_bootstrap_reply_naming_another_leader_is_not_taken_as_the_leaders() {
    let mut cfg = config();
    cfg.bootstrap_servers = vec![-2];
    let persisted = QuorumStateData {
        leader_epoch: 5,
        leader_id: 1,
        voted_id: -1,
    };
    let mut o = RaftCore::new(cfg, 68, [1, 2, 3], Some(persisted), MemoryLog::new(), 1, 0);
    drain(&mut o);
    let (to, corr) = o.fetch_in_flight().expect("a fetch to the leader");
    assert_eq!(to, 1);
    o.handle_request_failed(10, 1, corr, ApiKind::Fetch);
    o.handle_timeout(100);
    drain(&mut o);
    assert_eq!(o.fetch_in_flight().map(|(to, _)| to), Some(-2));
    let mut other = MemoryLog::new();
    other.append_as_leader(batch(2), 4).unwrap();
    reply(&mut o, 110, response(2, 4, 2, other.read(0, 1 << 20))).unwrap();
    assert_eq!(
        o.log().end_offset(),
        0,
        "an older epoch's leader is not ours"
    );
    assert_eq!(o.leader_id(), Some(1));
}

fn endpoint(port: u16) -> kraftd_raft::core::endpoints::Endpoint {
    kraftd_raft::core::endpoints::Endpoint {
        host: "127.0.0.1".to_string(),
        port,
    }
}

/// KIP-853: a leader that knows its own endpoint puts it in its Fetch responses and
/// BeginQuorumEpoch requests; a follower that lacks it in its configuration learns it from
/// them and names it in its own responses (Kafka's `RaftUtil.singleton*`).
#[test]
fn the_leader_sends_its_endpoint_and_a_follower_learns_and_repeats_it() {
    let mut c = config();
    c.voter_endpoints.insert(1, endpoint(9001));
    let persisted = QuorumStateData {
        leader_epoch: 0,
        leader_id: -1,
        voted_id: -1,
    };
    let mut leader = RaftCore::new(c, 1, [1, 2, 3], Some(persisted), MemoryLog::new(), 7, 0);
    let mut now = 0;
    while leader.role() != RoleName::Prospective {
        now = leader.poll_timeout();
        leader.handle_timeout(now);
    }
    for (v, corr) in vote_requests(&drain(&mut leader)) {
        leader
            .handle_message(now, v, corr, vote_response(0, -1, true))
            .expect("ok");
    }
    for (v, corr) in vote_requests(&drain(&mut leader)) {
        leader
            .handle_message(now, v, corr, vote_response(1, -1, true))
            .expect("ok");
    }
    assert_eq!(leader.role(), RoleName::Leader);
    let mut begin = Vec::new();
    let out = drain_flushing(&mut leader, now);
    for (_, msg) in sends(&out) {
        if let RaftMessage::BeginQuorumEpochRequest(r) = msg {
            begin.push(r.clone());
        }
    }
    assert!(!begin.is_empty(), "the new leader sends BeginQuorumEpoch");
    for r in &begin {
        assert_eq!(r.leader_endpoints.len(), 1);
        assert_eq!(r.leader_endpoints[0].name, "CONTROLLER");
        assert_eq!(r.leader_endpoints[0].port, 9001);
    }
    let epoch = leader.epoch();
    let r = answer(&mut leader, now, 2, fetch(2, epoch, 0, 0, 0)).expect("answered");
    assert_eq!(r.node_endpoints.len(), 1, "{r:?}");
    assert_eq!(r.node_endpoints[0].node_id, 1);
    assert_eq!(r.node_endpoints[0].port, 9001);

    // A follower without voter 1's endpoint learns it from BeginQuorumEpoch.
    let mut f = RaftCore::new(config(), 2, [1, 2, 3], None, MemoryLog::new(), 3, 0);
    drain(&mut f);
    f.handle_message(
        now,
        1,
        5,
        RaftMessage::BeginQuorumEpochRequest(begin[0].clone()),
    )
    .expect("ok");
    assert_eq!(f.leader_id(), Some(1));
    let learned = f.learned_endpoint(1).expect("learned");
    assert_eq!((learned.epoch, learned.endpoint.port), (epoch, 9001));
    let out = drain(&mut f);
    let answered = sends(&out).into_iter().any(|(to, m)| {
        matches!(m, RaftMessage::BeginQuorumEpochResponse(r)
            if to == 1 && r.node_endpoints.len() == 1 && r.node_endpoints[0].port == 9001)
    });
    assert!(
        answered,
        "the follower names the leader's endpoint back: {out:?}"
    );
    // ...and repeats it to a candidate of the same epoch it refuses.
    f.handle_message(now, 3, 6, vote_request(3, epoch, 0, 0, false))
        .expect("ok");
    let out = drain(&mut f);
    let named = sends(&out).into_iter().any(|(_, m)| {
        matches!(m, RaftMessage::VoteResponse(r)
            if r.node_endpoints.len() == 1 && r.node_endpoints[0].node_id == 1)
    });
    assert!(named, "{out:?}");
}
