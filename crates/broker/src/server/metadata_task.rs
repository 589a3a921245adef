//! The broker's metadata task: feeds Raft's events and high-watermark changes, in order, to
//! the [`MetadataLoader`], which publishes to the MetadataCache and the dynamic-config,
//! SCRAM and ACL publishers once caught up; and tells the lifecycle manager how far it got.

use kraftd_log::clock::unix_ms;
use kraftd_raft::driver::{RaftEvent, RaftHandle, RaftMetrics};
use tokio::sync::{broadcast, watch};
use tracing::error;

use crate::metadata::MetadataLoader;

/// How far the broker's published metadata has come, for the lifecycle manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataStatus {
    /// The offset of the last record published, -1 before any.
    pub last_applied_offset: i64,
    /// Whether the metadata has reached the high watermark once.
    pub caught_up: bool,
}

impl Default for MetadataStatus {
    fn default() -> Self {
        MetadataStatus {
            last_applied_offset: -1,
            caught_up: false,
        }
    }
}

/// Runs until Raft's events stop; returns why, for the broker to stop on.
pub(crate) async fn run(
    mut events: broadcast::Receiver<RaftEvent>,
    mut metrics: watch::Receiver<RaftMetrics>,
    mut loader: MetadataLoader,
    status: watch::Sender<MetadataStatus>,
    raft: RaftHandle,
    stopped: watch::Sender<Option<String>>,
) {
    let reason = follow(&mut events, &mut metrics, &mut loader, &status).await;
    let reason = raft.stop_reason().unwrap_or(reason);
    error!(%reason, "the broker's metadata stopped");
    let _ = stopped.send(Some(reason));
}

async fn follow(
    events: &mut broadcast::Receiver<RaftEvent>,
    metrics: &mut watch::Receiver<RaftMetrics>,
    loader: &mut MetadataLoader,
    status: &watch::Sender<MetadataStatus>,
) -> String {
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(event) => off_the_runtime(|| loader.handle_event(event, unix_ms())),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    return format!("the metadata loader fell {n} Raft events behind; restart the broker");
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return "the Raft driver stopped".to_string();
                }
            },
            changed = metrics.changed() => {
                if changed.is_err() {
                    return "the Raft driver stopped".to_string();
                }
                // The leader's HW, not ours: ours is capped at our log end, so a broker far
                // behind would call itself caught up after its first fetch.
                let hw = metrics.borrow_and_update().leader_high_watermark;
                off_the_runtime(|| loader.handle_high_watermark(hw, unix_ms()));
            }
        }
        if loader.caught_up() {
            if let Some(reason) = super::unsupported_finalized_feature(&loader.image().features) {
                return reason;
            }
        }
        let current = MetadataStatus {
            last_applied_offset: loader.last_applied_offset(),
            caught_up: loader.caught_up(),
        };
        status.send_if_modified(|s| {
            let changed = *s != current;
            *s = current;
            changed
        });
    }
}

/// Runs `f` (publishing metadata: a delta creating or moving 100,000 partitions takes
/// minutes of disk work) without holding one of the runtime's worker threads: on a
/// multi-threaded runtime the worker's other tasks move to another thread meanwhile, so
/// heartbeats, Raft and requests keep running. A current-thread runtime (tests) runs it
/// in place.
fn off_the_runtime<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}
