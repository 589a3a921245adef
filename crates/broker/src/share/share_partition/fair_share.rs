//! The in-flight window shared among the members fetching a share partition: Kafka gives
//! each fetch up to its max records until `group.share.partition.max.record.locks` is
//! reached, so a work queue on one partition stops scaling at about four consumers; kraftd
//! divides the window among the members that fetched within the acquisition lock duration.

use std::sync::Arc;

use super::{RecordState, SharePartition, SharePartitionConfig};

impl SharePartition {
    /// Notes that `member_id` asked this partition for records at `now_ms`, and forgets the
    /// members that have not asked within the acquisition lock duration (whatever they held
    /// has expired by then).
    pub fn note_fetch(&mut self, member_id: &str, config: &SharePartitionConfig, now_ms: i64) {
        let since = now_ms.saturating_sub(config.record_lock_duration_ms);
        self.fetchers.retain(|_, at| *at >= since);
        match self.fetchers.get_mut(member_id) {
            Some(at) => *at = (*at).max(now_ms),
            None => {
                self.fetchers.insert(Arc::from(member_id), now_ms);
            }
        }
    }

    /// The most records one acquisition takes while several members share this partition:
    /// the in-flight limit divided among the members fetching it, or None with one member.
    ///
    /// Kafka hands each fetch up to its max records (whole batches, 500 by default) until
    /// `group.share.partition.max.record.locks` (2000) is reached, so on one partition only
    /// about four members hold records at a time and the others wait: a work queue stops
    /// scaling at four consumers, whatever their number. With the window divided among the
    /// members that fetch, each one holds a share and every member works. Beyond Kafka, and
    /// within what it allows: max records is a soft limit the broker may answer less than.
    pub(super) fn fair_share(&self, config: &SharePartitionConfig) -> Option<i64> {
        let members = self.fetchers.len() as i64;
        (members > 1).then(|| {
            let limit = config.max_in_flight_records as i64;
            ((limit + members - 1) / members).max(1)
        })
    }

    /// What is left of `member_id`'s share after the records it holds now; None when it
    /// fetches alone.
    pub(super) fn share_left(&self, member_id: &str, config: &SharePartitionConfig) -> Option<i64> {
        let share = self.fair_share(config)?;
        let held = self
            .records
            .iter()
            .filter(|r| {
                r.state == RecordState::Acquired && r.member_id.as_deref() == Some(member_id)
            })
            .count() as i64;
        Some(share - held)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ack, batch, commit, config, fresh};
    use super::super::*;

    /// A work queue on one partition: the in-flight limit is divided among the members that
    /// fetch, so that every one of them holds records, where Kafka's whole fetches of max
    /// records let the first four take the whole window and the others wait.
    #[test]
    fn the_in_flight_window_is_shared_among_the_fetching_members() {
        let mut sp = fresh();
        let cfg = SharePartitionConfig {
            max_in_flight_records: 100,
            ..config()
        };
        let log: Vec<FetchedBatch> = (0..10).map(|i| batch(i * 40, i * 40 + 39)).collect();
        let take = |sp: &mut SharePartition, member: &str, now: i64| -> usize {
            let from = sp.next_fetch_offset();
            let batches: Vec<FetchedBatch> = log
                .iter()
                .filter(|b| b.last_offset >= from)
                .copied()
                .collect();
            sp.acquire(
                member,
                &cfg,
                ShareAcquireMode::BatchOptimized,
                50,
                from,
                &batches,
                None,
                now,
            )
            .count
        };
        // Alone, a member takes whole batches up to its max records, as in Kafka.
        assert_eq!(take(&mut sp, "m0", 0), 80);
        let w = sp.release_acquired_records("m0", &cfg);
        commit(&mut sp, w);
        // Eight members waiting: a share of ceil(100 / 8) = 13 records each, cut inside
        // batches, and every member holds records.
        for m in 0..8 {
            sp.note_fetch(&format!("m{m}"), &cfg, 10);
        }
        for m in 0..8 {
            assert_eq!(take(&mut sp, &format!("m{m}"), 10), 13, "member m{m}");
        }
        assert_eq!(sp.in_flight_records(), 104);
        // A member that holds its share gets nothing more until it acknowledges.
        assert_eq!(take(&mut sp, "m7", 10), 0);
        // The first member accepts: the window moves and it takes a share again.
        let w = sp
            .acknowledge("m0", &cfg, &[ack(0, 12, &[1])], 20)
            .expect("ack");
        commit(&mut sp, w);
        assert_eq!(take(&mut sp, "m0", 20), 13);
        // A member that leaves gives its share back, and members silent for the acquisition
        // lock duration are forgotten.
        let w = sp.release_acquired_records("m1", &cfg);
        commit(&mut sp, w);
        assert_eq!(
            sp.fair_share(&cfg),
            Some(15),
            "seven members: ceil(100 / 7)"
        );
        sp.note_fetch("m0", &cfg, 10 + cfg.record_lock_duration_ms + 1);
        assert_eq!(sp.fair_share(&cfg), None, "only m0 fetched lately");
    }
}
