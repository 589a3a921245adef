//! The ReplicaManager's periodic work (ISR shrink checks, the offset checkpoints, retention),
//! the ISR changes it sends to the controller, and the clean shutdown.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kraftd_log::checkpoint::CheckpointKind;
use kraftd_log::clock::unix_ms;
use kraftd_protocol::ErrorCode;
use tracing::warn;

use super::ReplicaManager;

/// Kafka's `producer.id.expiration.ms`, dynamic (`DynamicProducerStateManagerConfig`).
const PRODUCER_ID_EXPIRATION_MS: &str = "producer.id.expiration.ms";
use crate::replica::alter_partition::AlterPartitionItem;
use crate::replica::partition::{HostedPartition, IsrChange};

impl ReplicaManager {
    /// Starts the periodic work: ISR shrink checks (every half `replica.lag.time.max.ms`,
    /// as Kafka), the three offset checkpoints (each at its own interval, writing only the
    /// log dirs where something changed) and retention. Ends when the manager is dropped.
    pub fn start_background(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        self.watch_log_dir_failures();
        let weak = Arc::downgrade(self);
        let isr_every =
            Duration::from_millis((self.config.replica_lag_time_max_ms / 2).max(10) as u64);
        let hw_every = self.config.hw_checkpoint_interval;
        let retention_every = self.config.retention_check_interval;
        let recovery_every = self.config.recovery_point_checkpoint_interval;
        let start_every = self.config.log_start_checkpoint_interval;
        // No flusher by default (Kafka's Long.MAX_VALUE): a period that never comes.
        let flush_every = self
            .config
            .flush_scheduler_interval
            .unwrap_or(Duration::from_secs(100 * 365 * 24 * 3600));
        let expiry_every = self.config.producer_id_expiration_check_interval;
        tokio::spawn(async move {
            let mut isr = tokio::time::interval(isr_every);
            let mut hw = tokio::time::interval(hw_every);
            let mut retention = tokio::time::interval(retention_every);
            let mut recovery = tokio::time::interval(recovery_every);
            let mut start = tokio::time::interval(start_every);
            let mut flush = tokio::time::interval(flush_every);
            let mut expiry = tokio::time::interval(expiry_every);
            for t in [
                &mut expiry,
                &mut isr,
                &mut hw,
                &mut retention,
                &mut recovery,
                &mut start,
                &mut flush,
            ] {
                t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            }
            loop {
                tokio::select! {
                    _ = isr.tick() => {
                        let Some(rm) = weak.upgrade() else { return };
                        rm.maybe_shrink_isrs();
                    }
                    _ = hw.tick() => {
                        let Some(rm) = weak.upgrade() else { return };
                        let _ = tokio::task::spawn_blocking(move || rm.checkpoint(CheckpointKind::HighWatermark)).await;
                    }
                    _ = recovery.tick() => {
                        let Some(rm) = weak.upgrade() else { return };
                        let _ = tokio::task::spawn_blocking(move || rm.checkpoint(CheckpointKind::RecoveryPoint)).await;
                    }
                    _ = start.tick() => {
                        let Some(rm) = weak.upgrade() else { return };
                        let _ = tokio::task::spawn_blocking(move || rm.checkpoint(CheckpointKind::LogStart)).await;
                    }
                    _ = flush.tick() => {
                        let Some(rm) = weak.upgrade() else { return };
                        let _ = tokio::task::spawn_blocking(move || rm.flush_dirty_logs()).await;
                    }
                    _ = expiry.tick() => {
                        let Some(rm) = weak.upgrade() else { return };
                        let _ = tokio::task::spawn_blocking(move || rm.remove_expired_producers()).await;
                    }
                    _ = retention.tick() => {
                        let Some(rm) = weak.upgrade() else { return };
                        let _ = tokio::task::spawn_blocking(move || rm.apply_retention()).await;
                    }
                }
            }
        })
    }

    /// Kafka's `LogManager.flushDirtyLogs`: every hosted log whose `flush.ms` has passed
    /// since its last flush is flushed (its recovery point moves to its end), an idle one
    /// included; a log that fails to flush is logged and the others go on.
    pub(crate) fn flush_dirty_logs(&self) {
        let now = kraftd_log::clock::unix_ms();
        for hosted in self.all_partitions() {
            let mut p = hosted.lock();
            if let Err(e) = p.log_mut().maybe_flush(now) {
                tracing::warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, error = %e, "periodic flush failed");
            }
        }
    }

    /// Kafka's `PeriodicProducerExpirationCheck`: every hosted log forgets the producers idle
    /// longer than `producer.id.expiration.ms` (this broker's dynamic value, else the
    /// properties file's) unless their transaction is open.
    pub(crate) fn remove_expired_producers(&self) {
        let expiration_ms = self
            .config
            .dynamic_configs
            .broker_config(PRODUCER_ID_EXPIRATION_MS)
            .and_then(|v| v.trim().parse::<i64>().ok())
            .filter(|ms| *ms >= 0)
            .unwrap_or(self.config.producer_id_expiration_ms);
        let now = kraftd_log::clock::unix_ms();
        for hosted in self.all_partitions() {
            let mut p = hosted.lock();
            let state = p.log_mut().producer_state_mut();
            state.set_producer_id_expiration_ms(expiration_ms);
            let removed = state.remove_expired_producers(now);
            if removed > 0 {
                tracing::debug!(topic = %hosted.tp.topic, partition = hosted.tp.partition, removed, "expired producer ids");
            }
        }
    }

    /// Sends an ISR change to the controller and applies the answer when it comes.
    pub(super) fn submit_isr_change(&self, hosted: &Arc<HostedPartition>, change: IsrChange) {
        let rx = self.alter_partition.submit(AlterPartitionItem {
            topic_id: hosted.tp.topic_id,
            partition: hosted.tp.partition,
            leader_epoch: change.leader_epoch,
            new_isr: change.new_isr,
            leader_recovery_state: change.leader_recovery_state,
            partition_epoch: change.partition_epoch,
        });
        let hosted = Arc::clone(hosted);
        tokio::spawn(async move {
            let result = match rx.await {
                Ok(Ok(state)) => Ok((state.leader_epoch, state.partition_epoch, state.isr)),
                Ok(Err(code)) => Err(code),
                Err(_) => Err(ErrorCode::UnknownServerError),
            };
            let moved = hosted.lock().complete_isr_change(result, unix_ms());
            if moved {
                hosted.changed.notify_waiters();
            }
        });
    }

    fn maybe_shrink_isrs(&self) {
        let now = unix_ms();
        for hosted in self.all_partitions() {
            if hosted.lock().maybe_advance_high_watermark(now) {
                hosted.changed.notify_waiters();
            }
            let change = hosted.lock().maybe_shrink_isr(now);
            if let Some(change) = change {
                self.metrics.isr_shrinks.fetch_add(1, Ordering::Relaxed);
                self.submit_isr_change(&hosted, change);
            }
        }
    }

    /// Rewrites the `kind` checkpoint of the log dirs where one of its partitions changed
    /// it (each partition queued itself when it did: no pass over all partitions).
    fn checkpoint(&self, kind: CheckpointKind) {
        if let Err(e) = self.log_manager.write_checkpoints(kind) {
            warn!(error = %e, file = kind.file_name(), "offset checkpoint failed");
        }
    }

    fn apply_retention(&self) {
        let now = unix_ms();
        for hosted in self.all_partitions() {
            let result = hosted.lock().apply_retention(now);
            if let Err(e) = result {
                warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, error = %e, "retention failed");
            }
        }
    }

    /// Clean shutdown: flush every log, snapshot producer state, write the three offset
    /// checkpoints (the owner writes the clean-shutdown markers after this).
    pub fn shutdown(&self) {
        self.fetchers.shutdown();
        for hosted in self.all_partitions() {
            let mut p = hosted.lock();
            if let Err(e) = p.log_mut().flush() {
                warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, error = %e, "flush at shutdown failed");
            }
            p.snapshot_producer_state();
            p.flush_future_log();
        }
        if let Err(e) = self.log_manager.write_all_checkpoints() {
            warn!(error = %e, "offset checkpoints at shutdown failed");
        }
    }
}
