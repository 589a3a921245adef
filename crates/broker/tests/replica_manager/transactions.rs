//! Transactions through the `ReplicaManager`: transactional batches and markers appended as
//! leader, read_committed fetches stopping at the last stable offset with the aborted
//! transactions of the range, ListOffsets with isolation level 1.

use kraftd_broker::replica::replica_manager::TxnMarkerWrite;

use super::*;

fn txn_batch(producer_id: i64, sequence: i32, timestamp: i64, values: &[&str]) -> Bytes {
    let builder = RecordBatchBuilder::new(0)
        .producer(producer_id, 0, sequence)
        .transactional(true);
    built(builder, timestamp, values)
}

async fn fetch_isolated(
    rm: &ReplicaManager,
    tp: &TopicIdPartition,
    offset: i64,
    origin: FetchOrigin,
) -> FetchResult {
    let params = PartitionFetchParams {
        fetch_offset: offset,
        log_start_offset: -1,
        max_bytes: 1 << 20,
        current_leader_epoch: -1,
        last_fetched_epoch: -1,
        high_watermark: i64::MAX,
    };
    let limits = FetchLimits {
        max_wait: Duration::ZERO,
        min_bytes: 0,
        max_bytes: 1 << 20,
    };
    let mut results = rm
        .fetch_messages(origin, limits, &[(tp.clone(), params)])
        .await;
    results.pop().unwrap().1
}

fn offsets_of(records: &Bytes) -> Vec<(i64, i64, bool)> {
    kraftd_protocol::records::Batches::new(records.clone())
        .map(|b| {
            let b = b.unwrap();
            (b.base_offset(), b.producer_id(), b.is_control())
        })
        .collect()
}

async fn markers(
    b: &Broker,
    producer_id: i64,
    coordinator_epoch: i32,
    commit: bool,
    tps: &[TopicIdPartition],
) -> Vec<(TopicIdPartition, ErrorCode)> {
    let mut out =
        b.rm.write_txn_markers(
            Duration::from_secs(5),
            &[TxnMarkerWrite {
                producer_id,
                producer_epoch: 0,
                coordinator_epoch,
                commit,
                partitions: tps.to_vec(),
            }],
        )
        .await;
    out.pop().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn transactions_read_committed_stops_at_lso_and_returns_aborted() {
    let (_dir, b) = Broker::bootstrapped();
    let tp = orders();
    let t = unix_ms();
    // 0: txn A (pid 10), 1: txn B (pid 20), 2: plain, 3: A again.
    assert_eq!(b.produce_ok(-1, &tp, txn_batch(10, 0, t, &["a0"])).await, 0);
    assert_eq!(b.produce_ok(-1, &tp, txn_batch(20, 0, t, &["b0"])).await, 1);
    assert_eq!(b.produce_ok(-1, &tp, batch(t, &["plain"])).await, 2);
    assert_eq!(b.produce_ok(-1, &tp, txn_batch(10, 1, t, &["a1"])).await, 3);
    // A non-transactional write of a producer with its transaction open is refused.
    let refused = b.produce(-1, &tp, idempotent_batch(10, 2, t, &["x"])).await;
    assert_eq!(refused.error, ErrorCode::InvalidTxnState);

    let committed = fetch_isolated(&b.rm, &tp, 0, FetchOrigin::ConsumerReadCommitted).await;
    assert_eq!(committed.error, ErrorCode::None);
    assert_eq!(committed.high_watermark, 4);
    assert_eq!(committed.last_stable_offset, 0);
    assert!(committed.records.is_empty(), "nothing below the LSO");
    assert_eq!(committed.aborted_transactions, Some(vec![]));
    let uncommitted = fetch(&b.rm, &tp, 0, 0, Duration::ZERO).await;
    assert_eq!(offsets_of(&uncommitted.records).len(), 4);
    assert_eq!(uncommitted.last_stable_offset, 0);
    assert_eq!(uncommitted.aborted_transactions, None);
    assert_eq!(
        b.rm.list_offset_isolated(&tp, -1, -1, -1, 1),
        Ok((0, -1, LEADER_EPOCH))
    );
    assert_eq!(
        b.rm.list_offset_isolated(&tp, -1, -1, -1, 0),
        Ok((4, -1, LEADER_EPOCH))
    );

    // A aborts at 4: B's start (1) is now the LSO.
    assert_eq!(
        markers(&b, 10, 5, false, std::slice::from_ref(&tp)).await,
        vec![(tp.clone(), ErrorCode::None)]
    );
    let r = fetch_isolated(&b.rm, &tp, 0, FetchOrigin::ConsumerReadCommitted).await;
    assert_eq!(r.last_stable_offset, 1);
    assert_eq!(offsets_of(&r.records), vec![(0, 10, false)]);
    assert_eq!(r.aborted_transactions, Some(vec![(10, 0)]));
    // B commits at 5: everything is stable.
    assert_eq!(
        markers(&b, 20, 5, true, std::slice::from_ref(&tp)).await,
        vec![(tp.clone(), ErrorCode::None)]
    );
    let r = fetch_isolated(&b.rm, &tp, 0, FetchOrigin::ConsumerReadCommitted).await;
    assert_eq!(r.last_stable_offset, 6);
    assert_eq!(r.high_watermark, 6);
    assert_eq!(
        offsets_of(&r.records),
        vec![
            (0, 10, false),
            (1, 20, false),
            (2, -1, false),
            (3, 10, false),
            (4, 10, true),
            (5, 20, true)
        ]
    );
    assert_eq!(r.aborted_transactions, Some(vec![(10, 0)]));
    // From past the abort marker no aborted transaction is named.
    let r = fetch_isolated(&b.rm, &tp, 5, FetchOrigin::ConsumerReadCommitted).await;
    assert_eq!(r.aborted_transactions, Some(vec![]));
    assert_eq!(
        b.rm.list_offset_isolated(&tp, -1, -1, -1, 1),
        Ok((6, -1, LEADER_EPOCH))
    );

    // An older coordinator epoch is fenced; an unknown partition is named as such.
    let fenced = markers(&b, 10, 4, true, std::slice::from_ref(&tp)).await;
    assert_eq!(
        fenced,
        vec![(tp.clone(), ErrorCode::TransactionCoordinatorFenced)]
    );
    let ghost = topic_partition("ghost", Uuid([0x77; 16]), 0);
    let unknown = markers(&b, 10, 5, true, std::slice::from_ref(&ghost)).await;
    assert_eq!(unknown, vec![(ghost, ErrorCode::UnknownTopicOrPartition)]);
    // The .txnindex is on disk in Kafka's bytes.
    let index = std::fs::read(b.partition_dir(&tp).join("00000000000000000000.txnindex")).unwrap();
    let mut expected = vec![0u8, 0];
    for x in [10i64, 0, 4, 1] {
        expected.extend_from_slice(&x.to_be_bytes());
    }
    assert_eq!(index, expected);
}
