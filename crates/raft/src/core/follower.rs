//! The follower's and observer's side of Fetch: whom to fetch from (the leader; for an
//! observer without one, or cut off from it, a bootstrap server, and back to the leader as
//! soon as a reply names it: D1, D2), the one Fetch in flight, and what a response does:
//! follow a newer epoch, truncate a diverging log (KIP-279, refusing to cut below the HW),
//! check and append the fetched batches, follow the leader's high watermark. Kafka's
//! `KafkaRaftClient.pollFollower`, `maybeSendFetchOrFetchSnapshot`, `buildFetchRequest` and
//! `handleFetchResponse`; `RequestManager` for the bootstrap servers.

use bytes::Bytes;
use kraftd_log::SnapshotId;
use kraftd_protocol::messages::{fetch_request, FetchRequest, FetchResponse};
use kraftd_protocol::ErrorCode;
use tracing::{debug, error, info, warn};

use super::log::RaftLog;
use super::message::{RaftMessage, CLUSTER_METADATA_PARTITION, CLUSTER_METADATA_TOPIC_ID};
use super::role::Role;
use super::{RaftCore, NOT_LEADER_WARNING_INTERVAL_MS};

impl<L: RaftLog> RaftCore<L> {
    pub(super) fn current_fetch_target(&self) -> Option<i32> {
        match self.quorum.role() {
            Role::Follower(f) => Some(f.fetch_target),
            Role::Unattached(_) if !self.is_voter() => self.bootstrap_target(),
            _ => None,
        }
    }

    /// `controller.quorum.bootstrap.servers`, else the voters. In a dynamic quorum the
    /// voters of the set in effect come after the configured entries (KIP-853: a voter
    /// removed, or a node whose only bootstrap entry is itself, still finds the leader
    /// through the set its log holds).
    fn bootstrap_servers(&self) -> Vec<i32> {
        let mut list: Vec<i32> = if self.config.bootstrap_servers.is_empty() {
            self.voter_set().ids().collect()
        } else {
            self.config.bootstrap_servers.clone()
        };
        if !self.config.bootstrap_servers.is_empty() && self.is_dynamic_quorum() {
            for id in self.voter_set().ids() {
                if !list.contains(&id) {
                    list.push(id);
                }
            }
        }
        list.into_iter().filter(|b| *b != self.node_id).collect()
    }

    fn bootstrap_target(&self) -> Option<i32> {
        let list = self.bootstrap_servers();
        (!list.is_empty()).then(|| list[self.bootstrap_cursor % list.len()])
    }

    /// The next bootstrap server, avoiding `avoid` when another exists.
    fn next_bootstrap(&mut self, avoid: i32) -> Option<i32> {
        let list = self.bootstrap_servers();
        if list.is_empty() {
            return None;
        }
        for _ in 0..list.len() {
            self.bootstrap_cursor = self.bootstrap_cursor.wrapping_add(1);
            let b = list[self.bootstrap_cursor % list.len()];
            if b != avoid {
                return Some(b);
            }
        }
        Some(list[self.bootstrap_cursor % list.len()])
    }

    /// A Fetch to `to` failed. An observer that cannot reach its leader asks a bootstrap
    /// server (D2), and one that cannot reach a bootstrap server tries the leader again.
    pub(super) fn on_fetch_target_unreachable(&mut self, to: i32) {
        let is_voter = self.is_voter();
        let leader = match self.quorum.role() {
            Role::Follower(f) if !is_voter => Some(f.leader_id),
            Role::Unattached(_) if !is_voter => {
                self.next_bootstrap(to);
                return;
            }
            _ => return,
        };
        let Some(leader) = leader else { return };
        let next = if to == leader {
            self.next_bootstrap(leader).unwrap_or(leader)
        } else {
            leader
        };
        if let Role::Follower(f) = self.quorum.role_mut() {
            info!(
                node = self.node_id,
                unreachable = to,
                next,
                "fetch failed; switching fetch target"
            );
            f.fetch_target = next;
        }
    }

    pub(super) fn maybe_send_fetch(&mut self, now_ms: u64) {
        if self.fetch_in_flight.is_some() || now_ms < self.fetch_backoff_until_ms {
            return;
        }
        let Some(target) = self.current_fetch_target() else {
            return;
        };
        if self
            .snapshot_download
            .as_ref()
            .is_some_and(|d| d.epoch != self.epoch())
        {
            // The download belonged to an older epoch's leader; start over by fetching.
            self.snapshot_download = None;
        }
        let msg = match &self.snapshot_download {
            Some(d) => RaftMessage::FetchSnapshotRequest(self.fetch_snapshot_request(d)),
            None => RaftMessage::FetchRequest(self.fetch_request()),
        };
        let corr = self.send(target, msg);
        self.fetch_in_flight = Some((target, corr));
    }

    /// What every reply to our Fetch or FetchSnapshot (`api`) opens with: one that does not
    /// answer the request in flight is stale and ignored; a top-level error means the target
    /// failed us, so we retry after the backoff, elsewhere when we can. Returns the backoff
    /// deadline for the rest of the handling, or `None` when the reply is done with.
    pub(super) fn accept_fetch_reply(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        error_code: i16,
        api: &str,
    ) -> Option<u64> {
        if self.fetch_in_flight != Some((from, corr)) {
            debug!(
                node = self.node_id,
                from, "{api} response not asked for; ignored"
            );
            return None;
        }
        self.fetch_in_flight = None;
        let backoff = now_ms + self.config.retry_backoff_ms;
        if error_code != ErrorCode::None.code() {
            warn!(node = self.node_id, from, code = error_code, "{api} failed");
            self.fetch_backoff_until_ms = backoff;
            self.on_fetch_target_unreachable(from);
            return None;
        }
        Some(backoff)
    }

    /// A reply to our Fetch or FetchSnapshot carried a partition error (after any newer
    /// epoch or leader it named was followed). A reply naming our leader sends us back to it
    /// at once (D1); otherwise retry after the backoff, from another bootstrap server when we
    /// were on one.
    pub(super) fn on_fetch_partition_error(
        &mut self,
        from: i32,
        leader: i32,
        leader_epoch: i32,
        backoff: u64,
    ) {
        let names_our_leader = leader_epoch == self.epoch()
            && matches!(self.quorum.role(), Role::Follower(f) if f.leader_id == leader);
        if names_our_leader && from != leader {
            if let Role::Follower(f) = self.quorum.role_mut() {
                f.fetch_target = leader;
            }
        } else {
            self.fetch_backoff_until_ms = backoff;
            if from != leader {
                self.on_fetch_target_unreachable(from);
            }
        }
    }

    /// A good reply to our Fetch or FetchSnapshot: when it comes from the leader we follow,
    /// the fetch timeout starts again (a voter's; an observer has none) and this returns
    /// true. A reply from anyone else, or while we follow no leader, is done with: false.
    pub(super) fn successful_fetch_from_leader(&mut self, now_ms: u64, from: i32) -> bool {
        let fetch_timeout = self.config.fetch_timeout_ms;
        let Role::Follower(f) = self.quorum.role_mut() else {
            return false;
        };
        if from != f.leader_id {
            return false;
        }
        f.has_fetched_from_leader = true;
        if f.fetch_deadline_ms.is_some() {
            f.fetch_deadline_ms = Some(now_ms + fetch_timeout);
        }
        true
    }

    /// A good reply from a bootstrap server that names no voter (a negative id: another name
    /// for a voter, a load balancer) naming our leader in our epoch came from that leader,
    /// the only node that answers a Fetch without error in its epoch: it counts as the
    /// leader's, and the next Fetch goes to the leader's own endpoint (D2). Returns whom the
    /// reply counts as from.
    fn leader_behind_bootstrap(&mut self, from: i32, leader: i32, leader_epoch: i32) -> i32 {
        if from >= 0 || leader_epoch != self.epoch() {
            return from;
        }
        match self.quorum.role_mut() {
            Role::Follower(f) if f.leader_id == leader => {
                f.fetch_target = leader;
                leader
            }
            _ => from,
        }
    }

    pub(super) fn on_fetch_response(
        &mut self,
        now_ms: u64,
        from: i32,
        corr: i32,
        resp: FetchResponse,
    ) {
        let Some(backoff) = self.accept_fetch_reply(now_ms, from, corr, resp.error_code, "fetch")
        else {
            return;
        };
        let Some(p) = resp
            .responses
            .iter()
            .find(|t| t.topic_id == CLUSTER_METADATA_TOPIC_ID)
            .and_then(|t| {
                t.partitions
                    .iter()
                    .find(|p| p.partition_index == CLUSTER_METADATA_PARTITION)
            })
            .cloned()
        else {
            warn!(
                node = self.node_id,
                from, "fetch response without the metadata partition"
            );
            self.fetch_backoff_until_ms = backoff;
            return;
        };
        let leader = p.current_leader.leader_id;
        let leader_epoch = p.current_leader.leader_epoch;
        if p.error_code == ErrorCode::NotLeaderOrFollower.code() {
            self.stats.not_leader_or_follower_replies += 1;
            let due = self
                .last_not_leader_warning_ms
                .is_none_or(|t| t + NOT_LEADER_WARNING_INTERVAL_MS <= now_ms);
            if due {
                self.last_not_leader_warning_ms = Some(now_ms);
                warn!(
                    node = self.node_id,
                    asked = from,
                    named_leader = leader,
                    named_epoch = leader_epoch,
                    total = self.stats.not_leader_or_follower_replies,
                    "fetch answered NOT_LEADER_OR_FOLLOWER"
                );
            }
        }
        if self.maybe_follow(now_ms, leader, leader_epoch) {
            return;
        }
        if p.error_code != ErrorCode::None.code() {
            self.on_fetch_partition_error(from, leader, leader_epoch, backoff);
            return;
        }
        let epoch = self.epoch();
        let from = self.leader_behind_bootstrap(from, leader, leader_epoch);
        if !self.successful_fetch_from_leader(now_ms, from) {
            return;
        }
        if p.diverging_epoch.epoch >= 0 && p.diverging_epoch.end_offset >= 0 {
            let (div_epoch, div_end) = (p.diverging_epoch.epoch, p.diverging_epoch.end_offset);
            // KIP-279: cut at the smaller of the two ends of the largest epoch ≤ the
            // leader's (ours ends where our next epoch starts, or at our end). When we hold
            // an older epoch only, its end is below the leader's and we cut there, then ask
            // again.
            let (_, local_end) = self.log.end_offset_for_epoch(div_epoch);
            let target = local_end.min(div_end);
            if target < self.high_watermark {
                let reason = format!(
                    "node {}: leader {from} asks to truncate to {target} (diverging epoch {div_epoch} end {div_end}), below the high watermark {}",
                    self.node_id, self.high_watermark
                );
                error!("{reason}");
                self.fatal = Some(reason);
                return;
            }
            info!(
                node = self.node_id,
                target, div_epoch, "truncating diverged log"
            );
            self.log.truncate_to(target);
            self.log.flush();
            self.on_truncated(now_ms, target);
            return;
        }
        if p.snapshot_id.end_offset >= 0 || p.snapshot_id.epoch >= 0 {
            let id = SnapshotId {
                end_offset: p.snapshot_id.end_offset,
                epoch: p.snapshot_id.epoch,
            };
            self.on_fetch_snapshot_id(now_ms, from, epoch, id, backoff);
            return;
        }
        if let Some(records) = p.records.filter(|r| !r.is_empty()) {
            if let Err(reason) = self.check_fetched_batches(&records, epoch) {
                warn!(node = self.node_id, from, %reason, "fetched batches refused");
                self.fetch_backoff_until_ms = backoff;
                return;
            }
            if let Err(e) = self.log.append_as_follower(records.clone(), epoch) {
                warn!(node = self.node_id, from, error = %e, "fetched batches refused");
                self.fetch_backoff_until_ms = backoff;
                return;
            }
            self.log.flush();
            self.on_appended_as_follower(now_ms, &records);
        }
        if p.high_watermark >= 0 {
            self.leader_high_watermark = self.leader_high_watermark.max(p.high_watermark);
            let hw = p.high_watermark.min(self.log.end_offset());
            if hw > self.high_watermark {
                self.set_high_watermark(hw);
            }
        }
    }

    /// What a follower checks before appending fetched batches, whatever the log does:
    /// each parses, its CRC holds, it starts where the previous ended (the first at our end
    /// offset), and its partition leader epoch is not above the current epoch.
    fn check_fetched_batches(&self, records: &Bytes, epoch: i32) -> Result<(), String> {
        let mut next = self.log.end_offset();
        for batch in kraftd_protocol::records::Batches::new(records.clone()) {
            let batch = batch.map_err(|e| format!("batch does not parse: {e}"))?;
            batch
                .validate_crc()
                .map_err(|e| format!("batch at {}: {e}", batch.base_offset()))?;
            if batch.base_offset() != next {
                return Err(format!(
                    "batch at {} but the log ends at {next}",
                    batch.base_offset()
                ));
            }
            if batch.partition_leader_epoch() > epoch {
                return Err(format!(
                    "batch at {} has epoch {} above the current {epoch}",
                    batch.base_offset(),
                    batch.partition_leader_epoch()
                ));
            }
            next = batch.next_offset();
        }
        Ok(())
    }

    // ----- the messages -----

    fn fetch_request(&self) -> FetchRequest {
        FetchRequest {
            cluster_id: Some(self.config.cluster_id.clone()),
            replica_id: -1,
            replica_state: fetch_request::ReplicaState {
                replica_id: self.node_id,
                replica_epoch: -1,
                ..Default::default()
            },
            max_wait_ms: self.config.fetch_max_wait_ms.min(i32::MAX as u64) as i32,
            min_bytes: 0,
            max_bytes: self.config.fetch_max_bytes.min(i32::MAX as usize) as i32,
            topics: vec![fetch_request::FetchTopic {
                topic_id: CLUSTER_METADATA_TOPIC_ID,
                partitions: vec![fetch_request::FetchPartition {
                    partition: CLUSTER_METADATA_PARTITION,
                    current_leader_epoch: self.epoch(),
                    fetch_offset: self.log.end_offset(),
                    last_fetched_epoch: self.log.last_epoch(),
                    log_start_offset: self.log.start_offset(),
                    partition_max_bytes: self.config.fetch_max_bytes.min(i32::MAX as usize) as i32,
                    high_watermark: self.high_watermark,
                    replica_directory_id: self.config.directory_id,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }
    }
}
