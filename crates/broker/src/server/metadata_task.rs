//! The broker's metadata task: Raft's events in order, replayed into images through the one
//! replay path, published to the request handlers only once the broker has caught up with
//! the high watermark (a restarted broker never serves stale topics as current), then after
//! every committed batch.

use kraftd_controller::node::decode_committed;
use kraftd_controller::snapshot::load_image_snapshot;
use kraftd_controller::{MetadataDelta, MetadataImage};
use kraftd_raft::driver::{RaftEvent, RaftMetrics};
use tokio::sync::{broadcast, watch};
use tracing::{error, info};

/// How far the broker's metadata has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetadataStatus {
    /// The offset of the last record applied, -1 before any.
    pub last_applied_offset: i64,
    /// Whether the applied metadata has reached the high watermark once.
    pub caught_up: bool,
    /// Records or batches that could not be applied (each logged with its offset).
    pub apply_errors: u64,
}

impl Default for MetadataStatus {
    fn default() -> Self {
        MetadataStatus {
            last_applied_offset: -1,
            caught_up: false,
            apply_errors: 0,
        }
    }
}

impl MetadataStatus {
    /// Appends the metrics in Prometheus' text format under Kafka's
    /// `broker-metadata-metrics` names.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        use std::fmt::Write;
        let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
            let _ = writeln!(out, "# HELP kafka_broker_metadata_metrics_{name} {help}");
            let _ = writeln!(out, "# TYPE kafka_broker_metadata_metrics_{name} {kind}");
            let _ = writeln!(
                out,
                "kafka_broker_metadata_metrics_{name}{{node=\"{node_id}\"}} {value}"
            );
        };
        metric(
            "last_applied_record_offset",
            "gauge",
            "The offset of the last metadata record applied.",
            self.last_applied_offset as f64,
        );
        metric(
            "metadata_apply_error_count",
            "counter",
            "Metadata batches or records that could not be applied.",
            self.apply_errors as f64,
        );
        metric(
            "caught_up",
            "gauge",
            "1 once the applied metadata reached the high watermark.",
            if self.caught_up { 1.0 } else { 0.0 },
        );
    }
}

pub(crate) async fn run(
    mut events: broadcast::Receiver<RaftEvent>,
    mut metrics: watch::Receiver<RaftMetrics>,
    images: watch::Sender<MetadataImage>,
    status: watch::Sender<MetadataStatus>,
) {
    let mut image = MetadataImage::empty();
    // Bumped when `image` changes; compared with what was published (cheaper than
    // comparing images).
    let mut version = 0u64;
    let mut published = 0u64;
    let mut current = MetadataStatus::default();
    loop {
        tokio::select! {
            event = events.recv() => match event {
                Ok(RaftEvent::Committed(batch)) => match decode_committed(&batch) {
                    Ok(committed) => {
                        let mut delta = MetadataDelta::new(&image);
                        let mut failed = false;
                        for (offset, record) in &committed.records {
                            if let Err(e) = delta.replay(record) {
                                error!(offset, error = %e, "metadata record does not apply");
                                failed = true;
                                break;
                            }
                        }
                        if failed {
                            current.apply_errors += 1;
                        } else if !committed.records.is_empty() {
                            image = delta.apply();
                            version += 1;
                        }
                        current.last_applied_offset = batch.last_offset;
                    }
                    Err(e) => {
                        error!(offset = batch.base_offset, error = %e, "metadata batch does not decode");
                        current.apply_errors += 1;
                        current.last_applied_offset = batch.last_offset;
                    }
                },
                Ok(RaftEvent::Snapshot { id, bytes }) => match load_image_snapshot(bytes) {
                    Ok(loaded) => {
                        info!(?id, "loaded a metadata snapshot");
                        image = loaded;
                        version += 1;
                        current.last_applied_offset = id.end_offset - 1;
                    }
                    Err(e) => {
                        error!(?id, error = %e, "metadata snapshot does not load");
                        current.apply_errors += 1;
                    }
                },
                Ok(RaftEvent::LeaderChange { .. }) => {}
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    error!(missed = n, "the metadata task fell behind Raft's events; stopping");
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            changed = metrics.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
        let hw = metrics.borrow().high_watermark;
        if !current.caught_up && hw > 0 && current.last_applied_offset + 1 >= hw {
            info!(
                offset = current.last_applied_offset,
                hw, "metadata caught up"
            );
            current.caught_up = true;
        }
        if current.caught_up && published != version {
            published = version;
            let _ = images.send(image.clone());
        }
        status.send_if_modified(|s| {
            let changed = *s != current;
            *s = current;
            changed
        });
    }
}
