//! A disk failure under a running driver: the metadata log's directory disappears, the next
//! segment roll cannot create its file, and the node stops with an error naming the
//! directory and the operation (no panic); its handle's calls fail, its event channel
//! closes, and `shutdown` reports the failure.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kraftd_raft::driver::{DriverConfig, DriverError, QuorumConfig, RaftDriver, VoterEndpoint};
use tokio::net::TcpListener;
use tokio::sync::broadcast::error::RecvError;
use tokio::time::{timeout, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_failure_stops_the_driver_with_an_error_naming_the_directory() {
    let root = tempfile::tempdir().expect("temp dir");
    let dir = root.path().join("node-1/__cluster_metadata-0");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let voters = BTreeMap::from([(
        1,
        VoterEndpoint {
            id: 1,
            host: "127.0.0.1".into(),
            port,
        },
    )]);
    let mut c = DriverConfig::new(
        1,
        QuorumConfig::new("kraftd-network-test-AAAAAA", voters, dir.clone()),
    );
    // Small segments: a few appends roll, and a roll creates a file in the directory.
    c.log_config.segment_bytes = 1024;
    c.quorum.raft.append_linger_ms = 0;
    let mut driver = RaftDriver::start(c, listener).await.expect("start");
    let h = driver.handle();
    let mut events = driver.take_events();
    let record = || vec![Bytes::from(vec![b'r'; 200])];
    let by = Instant::now() + Duration::from_secs(30);
    loop {
        match h.propose_committed(record()).await {
            Ok(_) => break,
            Err(e) => assert!(Instant::now() < by, "never committed: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    std::fs::remove_dir_all(&dir).expect("remove the log directory");
    let mut stopped = false;
    for _ in 0..50 {
        match h.propose_committed(record()).await {
            Ok(_) => continue,
            Err(DriverError::Stopped) => {
                stopped = true;
                break;
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
    assert!(stopped, "the driver kept committing without a directory");

    // Subscribers see the channel close after the events sent before the failure.
    let closed = timeout(Duration::from_secs(10), async {
        loop {
            match events.recv().await {
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the event channel never closed");
    assert!(matches!(h.subscribe().recv().await, Err(RecvError::Closed)));

    let reason = h.stop_reason().expect("a stop reason");
    assert!(
        reason.contains(&dir.display().to_string()) && reason.contains("append failed"),
        "{reason}"
    );
    match driver.shutdown().await {
        Err(DriverError::Fatal(r)) => assert_eq!(r, reason),
        other => panic!("shutdown after a disk failure: {other:?}"),
    }
}
