//! The end-of-run checks, on a settled cluster: every controller's committed image is the
//! same and equals a replay of the committed log from scratch; the log holds the
//! controllers' batches in the order they were proposed; every acknowledged operation is in
//! the log exactly once and visible in the final image; acknowledged producer-id blocks are
//! disjoint and increase in acknowledgement order.

use std::collections::{BTreeMap, HashMap};

use kraftd_controller::image::ConfigResource;
use kraftd_controller::image::ConfigResourceType;
use kraftd_controller::image::ScramMechanism;
use kraftd_controller::MetadataImage;
use kraftd_protocol::records::Batches;
use kraftd_protocol::MetadataRecord;
use kraftd_raft::RaftLog;

use crate::cluster::{decode_batch, Cluster, OpKind, Outcome, Resp};

/// One batch of the committed log.
struct LogBatch {
    epoch: i32,
    last_offset: i64,
    is_control: bool,
    records: Vec<(i64, MetadataRecord)>,
}

/// What the checks found, for the report.
#[derive(Debug, Default, Clone, Copy)]
pub struct Summary {
    pub log_end: i64,
    pub acknowledged: u64,
    pub ok_with_error: u64,
    pub not_controller: u64,
    pub lost: u64,
    pub topics: usize,
}

/// Runs every check; returns the violations (empty when all hold).
pub fn check(cluster: &Cluster) -> (Vec<String>, Summary) {
    let mut v: Vec<String> = Vec::new();
    let mut summary = Summary::default();
    let Some(leader) = cluster.sim.leader() else {
        return (vec!["no leader at the end".into()], summary);
    };
    let core = cluster.sim.core(leader);
    let hw = core.high_watermark();
    summary.log_end = hw;

    // The committed log, decoded from the leader's log from scratch.
    let mut log: BTreeMap<i64, LogBatch> = BTreeMap::new();
    let mut expected_next = core.log().start_offset();
    if expected_next != 0 {
        v.push(format!("leader's log starts at {expected_next}, not 0"));
    }
    for (base, epoch, bytes) in core.log().batches() {
        if base >= hw {
            break;
        }
        let Some(Ok(batch)) = Batches::new(bytes.clone()).next() else {
            v.push(format!("batch at {base} does not parse"));
            continue;
        };
        if base != expected_next {
            v.push(format!(
                "log gap: batch at {base}, expected {expected_next}"
            ));
        }
        expected_next = batch.next_offset();
        match decode_batch(
            epoch,
            batch.last_offset(),
            batch.is_control(),
            bytes.clone(),
        ) {
            Ok(decoded) => {
                log.insert(
                    base,
                    LogBatch {
                        epoch,
                        last_offset: decoded.last_offset,
                        is_control: batch.is_control(),
                        records: decoded.records,
                    },
                );
            }
            Err(e) => v.push(format!("batch at {base} does not decode: {e}")),
        }
    }
    let records: Vec<&MetadataRecord> = log
        .values()
        .flat_map(|b| b.records.iter().map(|r| &r.1))
        .collect();
    let replayed = match MetadataImage::empty().replay_all(records.iter().copied()) {
        Ok(image) => image,
        Err(e) => {
            v.push(format!(
                "the committed log does not replay from scratch: {e}"
            ));
            return (v, summary);
        }
    };
    if let Err(e) = replayed.check_invariants() {
        v.push(format!("replayed image breaks an invariant: {e}"));
    }
    summary.topics = replayed.topics.len();

    // Every node's image is that image.
    for (id, c) in &cluster.controllers {
        if c.committed_offset() != hw - 1 {
            v.push(format!(
                "node {id}: controller at {} but the HW is {hw}",
                c.committed_offset()
            ));
        }
        if c.committed_image() != &replayed {
            v.push(format!(
                "node {id}: committed image differs from a replay of the committed log"
            ));
        }
    }
    if cluster.controllers.len() != cluster.sim.ids().len() {
        v.push("not every node has a controller at the end".into());
    }

    // The controllers' batches are in the log in the order they were proposed, each one
    // proposed by the leader of its epoch.
    let mut last_seq = 0;
    for (base, b) in &log {
        if b.is_control {
            continue;
        }
        match cluster.proposals.get(&(b.epoch, *base)) {
            None => v.push(format!(
                "batch at {base} (epoch {}) in the log, but no controller proposed it",
                b.epoch
            )),
            Some(p) => {
                if p.last_offset != b.last_offset {
                    v.push(format!(
                        "batch at {base}: proposed up to {}, committed up to {}",
                        p.last_offset, b.last_offset
                    ));
                }
                if p.seq <= last_seq {
                    v.push(format!(
                        "batch at {base} (proposal #{} by node {}, operation {:?}) committed after a later proposal #{last_seq}",
                        p.seq, p.node, p.op
                    ));
                }
                last_seq = last_seq.max(p.seq);
            }
        }
    }

    // Counts of the unique values, over the whole committed log.
    let mut topic_ids: HashMap<[u8; 16], (usize, String)> = HashMap::new();
    let mut removed_ids: HashMap<[u8; 16], usize> = HashMap::new();
    let mut principals: HashMap<&str, usize> = HashMap::new();
    let mut salts: HashMap<&[u8], usize> = HashMap::new();
    let mut config_values: HashMap<(&str, &str), usize> = HashMap::new();
    let mut producer_blocks: HashMap<i64, usize> = HashMap::new();
    let mut registrations: HashMap<i64, usize> = HashMap::new();
    let mut at_offset: HashMap<i64, &MetadataRecord> = HashMap::new();
    for b in log.values() {
        for (offset, r) in &b.records {
            at_offset.insert(*offset, r);
            match r {
                MetadataRecord::Topic(t) => {
                    let e = topic_ids.entry(t.topic_id.0).or_insert((0, t.name.clone()));
                    e.0 += 1;
                }
                MetadataRecord::RemoveTopic(t) => {
                    *removed_ids.entry(t.topic_id.0).or_default() += 1
                }
                MetadataRecord::AccessControlEntry(a) => {
                    *principals.entry(a.principal.as_str()).or_default() += 1
                }
                MetadataRecord::UserScramCredential(s) => {
                    *salts.entry(&s.salt[..]).or_default() += 1
                }
                MetadataRecord::Config(c) => {
                    if let Some(value) = &c.value {
                        *config_values
                            .entry((c.name.as_str(), value.as_str()))
                            .or_default() += 1;
                    }
                }
                MetadataRecord::ProducerIds(p) => {
                    *producer_blocks.entry(p.next_producer_id).or_default() += 1
                }
                MetadataRecord::RegisterBroker(r) => {
                    *registrations.entry(r.broker_epoch).or_default() += 1
                }
                _ => {}
            }
        }
    }
    for (id, (count, name)) in &topic_ids {
        if *count != 1 {
            v.push(format!("topic id {id:02x?} ({name}) created {count} times"));
        }
    }

    // Each acknowledged operation: in the log once, visible in the final image.
    let mut blocks: Vec<(u64, i64, i64)> = Vec::new();
    // The last proposal per config key, to check the final value.
    let mut last_config: BTreeMap<&str, (u64, usize)> = BTreeMap::new();
    // Deletion submissions per topic name.
    let mut deletes: HashMap<&str, Vec<u64>> = HashMap::new();
    for op in &cluster.ops {
        if let OpKind::DeleteTopic { name } = &op.kind {
            deletes
                .entry(name.as_str())
                .or_default()
                .push(op.submit_seq);
        }
    }
    let default_broker = ConfigResource::new(ConfigResourceType::Broker, "");
    for (i, op) in cluster.ops.iter().enumerate() {
        if let (OpKind::SetConfig { key, .. }, Some(p)) = (&op.kind, op.proposal) {
            let e = last_config.entry(key.as_str()).or_insert((p.3, i));
            if p.3 >= e.0 {
                *e = (p.3, i);
            }
        }
        let resp = match &op.outcome {
            Outcome::Ok(resp) => resp,
            Outcome::Failed(_) => {
                summary.not_controller += 1;
                continue;
            }
            Outcome::Lost => {
                summary.lost += 1;
                continue;
            }
            Outcome::InFlight => {
                v.push(format!(
                    "operation {i} ({:?}) at node {} never completed",
                    op.kind, op.node
                ));
                continue;
            }
        };
        // An acknowledged write that proposed records: its batch is committed, in its epoch.
        if let Some((epoch, base, last, _)) = op.proposal {
            match log.get(&base) {
                Some(b) if b.epoch == epoch && b.last_offset == last => {}
                _ => v.push(format!(
                    "acknowledged operation {i} ({:?}) proposed at {base} in epoch {epoch}, not in the committed log",
                    op.kind
                )),
            }
        }
        let what = format!("acknowledged operation {i} ({:?})", op.kind);
        let mut ok = true;
        match (&op.kind, resp) {
            (OpKind::Register { broker }, Resp::Registration(r)) if r.error_code == 0 => {
                match at_offset.get(&r.broker_epoch) {
                    Some(MetadataRecord::RegisterBroker(rec))
                        if rec.broker_id == *broker && rec.broker_epoch == r.broker_epoch => {}
                    other => v.push(format!(
                        "{what}: broker epoch {} is not the offset of its registration record (found {other:?})",
                        r.broker_epoch
                    )),
                }
                if registrations.get(&r.broker_epoch).copied().unwrap_or(0) != 1 {
                    v.push(format!(
                        "{what}: registration with epoch {} not in the log once",
                        r.broker_epoch
                    ));
                }
            }
            (OpKind::CreateTopic { name }, Resp::CreateTopics(r))
                if r.topics.first().is_some_and(|t| t.error_code == 0) =>
            {
                let id = r.topics[0].topic_id;
                match topic_ids.get(&id.0) {
                    Some((1, n)) if n == name => {}
                    other => v.push(format!("{what}: topic id {id:?} in the log as {other:?}")),
                }
                let deleted_later = deletes
                    .get(name.as_str())
                    .is_some_and(|d| d.iter().any(|s| *s > op.submit_seq));
                if !deleted_later && replayed.topics.get(&id).is_none() {
                    v.push(format!("{what}: topic {id:?} missing from the final image"));
                }
            }
            (OpKind::DeleteTopic { .. }, Resp::DeleteTopics(r))
                if r.responses.first().is_some_and(|t| t.error_code == 0) =>
            {
                let id = r.responses[0].topic_id;
                if removed_ids.get(&id.0).copied().unwrap_or(0) != 1 {
                    v.push(format!("{what}: removal of {id:?} not in the log once"));
                }
                if replayed.topics.get(&id).is_some() {
                    v.push(format!(
                        "{what}: deleted topic {id:?} still in the final image"
                    ));
                }
            }
            (OpKind::SetConfig { key, value }, Resp::Configs(r))
                if r.responses.first().is_some_and(|c| c.error_code == 0) =>
            {
                if config_values
                    .get(&(key.as_str(), value.as_str()))
                    .copied()
                    .unwrap_or(0)
                    != 1
                {
                    v.push(format!("{what}: config value not in the log once"));
                }
            }
            (OpKind::CreateAcl { principal }, Resp::Acls(r))
                if r.results.first().is_some_and(|c| c.error_code == 0) =>
            {
                if principals.get(principal.as_str()).copied().unwrap_or(0) != 1 {
                    v.push(format!("{what}: ACL not in the log once"));
                }
                if !replayed.acls.iter().any(|(_, a)| a.principal == *principal) {
                    v.push(format!("{what}: ACL missing from the final image"));
                }
            }
            (OpKind::Scram { user, salt }, Resp::Scram(r))
                if r.results.first().is_some_and(|c| c.error_code == 0) =>
            {
                if salts.get(&salt[..]).copied().unwrap_or(0) != 1 {
                    v.push(format!("{what}: credential not in the log once"));
                }
                match replayed
                    .scram
                    .get(user, ScramMechanism::from_i8(1).expect("SHA-256"))
                {
                    Some(c) if c.salt == *salt => {}
                    other => v.push(format!("{what}: final image has {other:?}")),
                }
            }
            (OpKind::ProducerIds { .. }, Resp::ProducerIds(r)) if r.error_code == 0 => {
                let end = r.producer_id_start + i64::from(r.producer_id_len);
                if producer_blocks.get(&end).copied().unwrap_or(0) != 1 {
                    v.push(format!("{what}: block ending at {end} not in the log once"));
                }
                if replayed.producer_ids.next_producer_id < end {
                    v.push(format!(
                        "{what}: final next producer id {} below the block end {end}",
                        replayed.producer_ids.next_producer_id
                    ));
                }
                blocks.push((op.done_seq.expect("done"), r.producer_id_start, end));
            }
            (OpKind::Bootstrap, Resp::Done) | (OpKind::Heartbeat { .. }, _) => {}
            _ => ok = false,
        }
        if ok {
            summary.acknowledged += 1;
        } else {
            summary.ok_with_error += 1;
        }
    }
    blocks.sort();
    for w in blocks.windows(2) {
        let ((_, s1, e1), (_, s2, _)) = (w[0], w[1]);
        if s2 < e1 {
            v.push(format!(
                "producer id blocks [{s1}, {e1}) and [{s2}, ..) acknowledged in that order overlap or go back"
            ));
        }
    }
    // The last configuration write proposed for a key, if acknowledged, is the final value.
    for (key, (_, i)) in last_config {
        let op = &cluster.ops[i];
        if let (OpKind::SetConfig { value, .. }, Outcome::Ok(Resp::Configs(r))) =
            (&op.kind, &op.outcome)
        {
            if r.responses.first().is_some_and(|c| c.error_code == 0) {
                let actual = replayed.configs.value(&default_broker, key);
                if actual != Some(value.as_str()) {
                    v.push(format!(
                        "config {key}: last acknowledged value {value}, final image has {actual:?}"
                    ));
                }
            }
        }
    }

    // Real-time order: an operation submitted after another was acknowledged is later in
    // the log.
    let mut events: Vec<(u64, bool, i64)> = Vec::new();
    for op in &cluster.ops {
        let (Outcome::Ok(_), Some((_, base, _, _))) = (&op.outcome, op.proposal) else {
            continue;
        };
        events.push((op.submit_seq, false, base));
        events.push((op.done_seq.expect("done"), true, base));
    }
    events.sort();
    let mut max_acked = -1;
    for (seq, acked, base) in events {
        if acked {
            max_acked = max_acked.max(base);
        } else if base <= max_acked {
            v.push(format!(
                "operation submitted at #{seq} landed at {base}, before an operation acknowledged earlier (at {max_acked})"
            ));
        }
    }
    (v, summary)
}
