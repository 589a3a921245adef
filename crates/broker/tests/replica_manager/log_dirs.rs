//! Moving a replica between log dirs (AlterReplicaLogDirs) in-process, on two real log
//! dirs: the future log is filled while produces go on, swapped in with every record (the
//! log read back byte for byte), the old directory removed; a future log found at start is
//! resumed; DescribeLogDirs shows both logs meanwhile; Kafka's per-partition errors, and a
//! dir asked for a replica not hosted yet used when the metadata assigns it here.

use std::collections::BTreeSet;

use kraftd_broker::replica::directory_events::DirectoryEventHandler;

use super::*;

/// A manager over the two log dirs `a` and `b` (nothing applied).
fn start_two(a: &Path, b: &Path) -> Broker {
    start_with(ReplicaManagerConfig::new(
        LOCAL,
        vec![a.to_path_buf(), b.to_path_buf()],
    ))
}

/// A manager with `config` (nothing applied); its log dir is the first of `config`'s.
fn start_with(config: ReplicaManagerConfig) -> Broker {
    let log_dir = config.log_dirs[0].clone();
    let (channel, raft) = common::channel_to(
        format!("broker-{LOCAL}-alter-partition-channel"),
        common::voters_on(1000, unused_port()),
        1000,
        Duration::from_secs(1),
    );
    let (epoch, epoch_rx) = watch::channel(10);
    let alter = DefaultAlterPartitionManager::start(LOCAL, epoch_rx, channel);
    let cache = MetadataCache::new(LOCAL, "log-dirs-test");
    let rm =
        ReplicaManager::new(config, cache.clone(), alter, Arc::new(AtomicI64::new(10))).unwrap();
    Broker {
        rm,
        cache,
        image: MetadataImage::empty(),
        log_dir,
        _raft: raft,
        _epoch: epoch,
    }
}

fn abs(p: &Path) -> String {
    kraftd_log::log_manager::absolute_path(p)
}

/// Every byte of the partition from offset 0 to its HW, fetched as a consumer.
async fn read_all(b: &Broker, tp: &TopicIdPartition) -> Vec<u8> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let r = b.fetch(tp, offset, 0, Duration::ZERO).await;
        assert_eq!(r.error, ErrorCode::None);
        if r.records.is_empty() {
            assert_eq!(offset, r.high_watermark);
            return out;
        }
        for batch in kraftd_protocol::records::Batches::new(r.records.clone()) {
            let batch = batch.unwrap();
            if batch.base_offset() >= offset {
                out.extend_from_slice(batch.as_bytes());
            }
            offset = batch.last_offset() + 1;
        }
    }
}

/// (dir, size, lag, is future) of `tp`'s logs as DescribeLogDirs reports them.
fn described(b: &Broker, tp: &TopicIdPartition) -> Vec<(String, i64, i64, bool)> {
    let mut out = Vec::new();
    for dir in b.rm.describe_log_dirs(None) {
        assert_eq!(dir.error_code, 0);
        assert!(dir.total_bytes > 0 && dir.usable_bytes >= 0);
        for t in dir.topics.iter().filter(|t| t.name == tp.topic) {
            for p in t
                .partitions
                .iter()
                .filter(|p| p.partition_index == tp.partition)
            {
                out.push((
                    dir.log_dir.clone(),
                    p.partition_size,
                    p.offset_lag,
                    p.is_future_key,
                ));
            }
        }
    }
    out
}

/// Waits (bounded) until `tp` has one log, in `dir`, and no future log.
async fn wait_moved(b: &Broker, tp: &TopicIdPartition, dir: &Path) {
    let deadline = tokio::time::Instant::now() + GUARD;
    loop {
        let now = described(b, tp);
        if now.len() == 1 && now[0].0 == abs(dir) && !now[0].3 {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "not moved: {now:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_replica_moves_with_every_record_while_produces_go_on() {
    let (a, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut b = start_two(a.path(), b_dir.path());
    b.apply(&bootstrap(unused_port()));
    let tp = orders();
    for i in 0..300 {
        b.produce_ok(1, &tp, batch(i, &["x"; 20])).await;
    }
    let here = described(&b, &tp);
    assert_eq!(here.len(), 1, "{here:?}");
    let (from, to) = if here[0].0 == abs(a.path()) {
        (a.path(), b_dir.path())
    } else {
        (b_dir.path(), a.path())
    };
    let before = read_all(&b, &tp).await;
    assert_eq!(
        b.rm.alter_replica_log_dir(&b.image, TOPIC, 0, &abs(to)),
        ErrorCode::None
    );
    // Produces go on during the move; none fails.
    for i in 0..50 {
        b.produce_ok(1, &tp, batch(1000 + i, &["y"])).await;
    }
    wait_moved(&b, &tp, to).await;
    assert!(!from.join("orders-0").exists());
    b.produce_ok(1, &tp, batch(2000, &["z"])).await;
    let after = read_all(&b, &tp).await;
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(
        b.fetch(&tp, 0, 0, Duration::ZERO).await.high_watermark,
        300 * 20 + 51
    );
    // The same dir again is a no-op; leftovers: none.
    assert_eq!(
        b.rm.alter_replica_log_dir(&b.image, TOPIC, 0, &abs(to)),
        ErrorCode::None
    );
    // The old directory, renamed for deletion at the swap, is removed just after it.
    let deadline = tokio::time::Instant::now() + GUARD;
    loop {
        let names: BTreeSet<String> = std::fs::read_dir(to)
            .unwrap()
            .chain(std::fs::read_dir(from).unwrap())
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("orders"))
            .collect();
        if names == BTreeSet::from(["orders-0".to_string()]) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "left behind: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The log dir's size is the segments' bytes.
    let size = described(&b, &tp)[0].1;
    let on_disk: u64 = std::fs::read_dir(to.join("orders-0"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert_eq!(size as u64, on_disk);
}

#[tokio::test]
async fn a_future_log_found_at_start_is_resumed_and_swapped_in() {
    let (a, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let records = bootstrap(unused_port());
    let before = {
        let mut b = start_two(a.path(), b_dir.path());
        b.apply(&records);
        for i in 0..100 {
            b.produce_ok(1, &orders(), batch(i, &["x"; 5])).await;
        }
        let before = read_all(&b, &orders()).await;
        b.rm.shutdown();
        before
    };
    // The broker stopped just after creating the future log in the other dir.
    let current = if a.path().join("orders-0").exists() {
        a.path()
    } else {
        b_dir.path()
    };
    let other = if current == a.path() {
        b_dir.path()
    } else {
        a.path()
    };
    let future = other.join("orders-0.0123456789abcdef0123456789abcdef-future");
    std::fs::create_dir_all(&future).unwrap();
    std::fs::copy(
        current.join("orders-0/partition.metadata"),
        future.join("partition.metadata"),
    )
    .unwrap();
    let mut b = start_two(a.path(), b_dir.path());
    b.apply(&records);
    wait_moved(&b, &orders(), other).await;
    assert!(!future.exists() && !current.join("orders-0").exists());
    assert_eq!(read_all(&b, &orders()).await, before);
}

#[tokio::test]
async fn kafkas_errors_and_a_dir_remembered_for_a_replica_not_hosted_yet() {
    let (a, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut b = start_two(a.path(), b_dir.path());
    let mut records = bootstrap(unused_port());
    const LATER: Uuid = Uuid([0x0e; 16]);
    records.push(topic("later", LATER));
    records.push(partition(LATER, 0, &[REMOTE], REMOTE));
    b.apply(&records);
    let target = abs(b_dir.path());
    let err = |b: &Broker, t: &str, p: i32, d: &str| b.rm.alter_replica_log_dir(&b.image, t, p, d);
    assert_eq!(
        err(&b, TOPIC, 0, "/not/a/log/dir"),
        ErrorCode::LogDirNotFound
    );
    assert_eq!(
        err(&b, "nope", 0, &target),
        ErrorCode::UnknownTopicOrPartition
    );
    assert_eq!(
        err(&b, TOPIC, 9, &target),
        ErrorCode::UnknownTopicOrPartition
    );
    // Known but hosted elsewhere: remembered, REPLICA_NOT_AVAILABLE.
    assert_eq!(err(&b, "later", 0, &target), ErrorCode::ReplicaNotAvailable);
    // Reassigned here: created in the remembered dir (the other one would be less loaded
    // if `orders-0` is in `b`, so this proves the preference either way).
    b.apply(&[partition(LATER, 0, &[LOCAL], LOCAL)]);
    assert!(b_dir.path().join("later-0").is_dir());
    // A future dir name that cannot be a file name: Kafka's InvalidTopicException.
    let long = "t".repeat(249);
    assert_eq!(err(&b, &long, 0, &target), ErrorCode::InvalidTopicException);
    // A missing log dir is offline: KAFKA_STORAGE_ERROR in DescribeLogDirs.
    drop(b_dir);
    let results = b.rm.describe_log_dirs(Some(&BTreeSet::new()));
    let codes: Vec<i16> = results.iter().map(|r| r.error_code).collect();
    assert!(
        codes.contains(&0) && codes.contains(&ErrorCode::KafkaStorageError.code()),
        "{results:?}"
    );
}

#[tokio::test]
async fn describe_shows_the_future_log_and_asking_for_the_current_dir_cancels_the_move() {
    let (a, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut b = start_two(a.path(), b_dir.path());
    b.apply(&bootstrap(unused_port()));
    let tp = orders();
    for i in 0..20 {
        b.produce_ok(1, &tp, batch(i, &["x"; 10])).await;
    }
    let here = described(&b, &tp);
    let (from, to) = if here[0].0 == abs(a.path()) {
        (a.path(), b_dir.path())
    } else {
        (b_dir.path(), a.path())
    };
    // This test's runtime has one thread: the copier cannot run before the next await.
    assert_eq!(
        b.rm.alter_replica_log_dir(&b.image, TOPIC, 0, &abs(to)),
        ErrorCode::None
    );
    let both = described(&b, &tp);
    assert_eq!(both.len(), 2, "{both:?}");
    let future = both.iter().find(|l| l.3).unwrap();
    // The future log's lag is the current log's end minus its own (still empty).
    assert_eq!(
        (future.0.as_str(), future.1, future.2),
        (abs(to).as_str(), 0, 200)
    );
    let current = both.iter().find(|l| !l.3).unwrap();
    assert_eq!((current.0.as_str(), current.2), (abs(from).as_str(), 0));
    // Asking for the dir the replica is in cancels the move and deletes the future log.
    assert_eq!(
        b.rm.alter_replica_log_dir(&b.image, TOPIC, 0, &abs(from)),
        ErrorCode::None
    );
    let futures: Vec<_> = std::fs::read_dir(to)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with("-future"))
        .collect();
    assert!(futures.is_empty(), "{futures:?}");
    let_tasks_park().await;
    assert_eq!(described(&b, &tp).len(), 1);
    assert!(from.join("orders-0").is_dir());
    b.produce_ok(1, &tp, batch(99, &["y"])).await;
    assert_eq!(b.fetch(&tp, 0, 0, Duration::ZERO).await.high_watermark, 201);
}

#[tokio::test]
async fn no_move_starts_while_a_log_dir_is_offline() {
    let (a, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut b = start_two(a.path(), b_dir.path());
    b.apply(&bootstrap(unused_port()));
    let tp = orders();
    b.produce_ok(1, &tp, batch(0, &["x"])).await;
    let here = described(&b, &tp);
    let (from, to) = if here[0].0 == abs(a.path()) {
        (a.path(), b_dir.path())
    } else {
        (b_dir.path(), a.path())
    };
    // The replica's own dir is lost under the broker.
    std::fs::remove_dir_all(from).unwrap();
    assert_eq!(
        b.rm.alter_replica_log_dir(&b.image, TOPIC, 0, &abs(to)),
        ErrorCode::KafkaStorageError
    );
    assert!(b
        .rm
        .describe_log_dirs(None)
        .iter()
        .any(|d| d.log_dir == abs(from)
            && d.error_code == ErrorCode::KafkaStorageError.code()
            && d.topics.is_empty()));
}

/// Records the directory events the replica layer sends.
#[derive(Debug, Default)]
struct DirectoryEvents {
    failed: std::sync::Mutex<Vec<Uuid>>,
}

impl DirectoryEventHandler for DirectoryEvents {
    fn handle_assignment(&self, _: Uuid, _: i32, _: Uuid, _: &str) {}

    fn handle_failure(&self, directory_id: Uuid) {
        self.failed.lock().unwrap().push(directory_id);
    }
}

/// Kafka's LogDirFailureChannel: an I/O error on the replica's log dir (its offset
/// checkpoint cannot be written: the dir is gone) takes the dir offline. The partition is no
/// longer served (produce and fetch answer KAFKA_STORAGE_ERROR, the replica is not reopened
/// by the next metadata), the dir's id goes to the directory event handler for the
/// heartbeats, DescribeLogDirs reports the dir's error, and the other dir stays online.
#[tokio::test]
async fn an_io_error_takes_the_dir_offline_and_its_replicas_answer_storage_errors() {
    let (a, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let ids = [Uuid([0xa; 16]), Uuid([0xb; 16])];
    let mut config = ReplicaManagerConfig::new(
        LOCAL,
        vec![a.path().to_path_buf(), b_dir.path().to_path_buf()],
    );
    config.directory_ids = [
        (a.path().to_path_buf(), ids[0]),
        (b_dir.path().to_path_buf(), ids[1]),
    ]
    .into_iter()
    .collect();
    let mut b = start_with(config);
    let events = Arc::new(DirectoryEvents::default());
    b.rm.set_directory_event_handler(Arc::clone(&events) as Arc<dyn DirectoryEventHandler>)
        .unwrap();
    let background = b.rm.start_background();
    let bootstrap_records = bootstrap(unused_port());
    b.apply(&bootstrap_records);
    let tp = orders();
    b.produce_ok(1, &tp, batch(0, &["x"])).await;
    let here = described(&b, &tp);
    let (from, other, failed_id) = if here[0].0 == abs(a.path()) {
        (a.path(), b_dir.path(), ids[0])
    } else {
        (b_dir.path(), a.path(), ids[1])
    };
    std::fs::remove_dir_all(from).unwrap();
    // The produce moved the HW: the dir's checkpoint is due, and its write fails.
    let _ = b.rm.log_manager().write_all_checkpoints();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let result = b.produce(1, &tp, batch(1, &["y"])).await;
        if result.error == ErrorCode::KafkaStorageError {
            break;
        }
        assert_eq!(result.error, ErrorCode::None, "{result:?}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "the dir never went offline"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(b.rm.is_partition_offline(tp.topic_id, tp.partition));
    assert_eq!(*events.failed.lock().unwrap(), vec![failed_id]);
    assert!(!b.rm.log_manager().is_log_dir_online(from));
    assert!(b.rm.log_manager().is_log_dir_online(other));
    let fetched = b.fetch(&tp, 0, 0, Duration::ZERO).await;
    assert_eq!(fetched.error, ErrorCode::KafkaStorageError);
    // Metadata naming the partition again (a snapshot reload) does not bring it back.
    b.reload(&bootstrap_records);
    assert!(b.rm.partition(tp.topic_id, tp.partition).is_none());
    assert!(b
        .rm
        .describe_log_dirs(None)
        .iter()
        .any(|d| d.log_dir == abs(from) && d.error_code == ErrorCode::KafkaStorageError.code()));
    background.abort();
}
