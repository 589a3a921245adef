//! The run's summary (`summary.txt`): what the faults, the workloads and the checkers
//! found, printed as a table, and for each anomaly the history around it and the command
//! that replays the seed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Result};

use super::checker::Anomaly;
use super::faults::{self, Kind};
use super::group_checker::GroupCounts;
use super::txn_checker::TxnCounts;
use super::{
    cycles_checker, meta_checker, pipe_checker, reassign_checker, utc, voters_checker, zombies,
    ChaosArgs, History, SystemArg,
};

/// What a run found.
pub(super) struct Report {
    pub(super) faults: BTreeMap<Kind, u32>,
    /// Faults injected beside another (`--overlap`), counted in `faults` too.
    pub(super) overlapped: u32,
    pub(super) acked: usize,
    /// Acknowledged by librdkafka without an offset (see [`super::checker::Ack::offset`]).
    pub(super) acked_without_offset: usize,
    pub(super) failed: BTreeMap<String, u64>,
    /// The producer without idempotence's duplicates and reorderings, by kind.
    pub(super) tolerated: BTreeMap<&'static str, usize>,
    /// Findings the checker explains rather than counts as anomalies (see
    /// [`super::checker::Verdict::classified`]).
    pub(super) classified: BTreeMap<&'static str, usize>,
    /// The transactional workload's counts (`--txn`).
    pub(super) txn: Option<TxnCounts>,
    /// The consumer groups' counts, and how long after the faults they were Stable.
    pub(super) groups: Option<GroupCounts>,
    /// The metadata workload's operations (`--meta`).
    pub(super) meta: Option<meta_checker::MetaCounts>,
    /// The exactly-once pipeline's counts (`--txn`).
    pub(super) pipe: Option<pipe_checker::PipeCounts>,
    /// The concurrent writers' counts (`--cycles`).
    pub(super) cycles: Option<cycles_checker::CyclesCounts>,
    /// What the zombie steps did (`--zombie`).
    pub(super) zombies: Option<zombies::ZombieCounts>,
    /// The reassignment workload's counts (`--reassign`).
    pub(super) reassign: Option<reassign_checker::ReassignCounts>,
    /// The voter-change workload's counts (`--voters`).
    pub(super) voters: Option<voters_checker::VotersCounts>,
    pub(super) groups_stable_secs: Option<f64>,
    pub(super) live_reads: usize,
    pub(super) final_records: usize,
    pub(super) heal_secs: Option<f64>,
    pub(super) anomalies: Vec<Anomaly>,
}

impl Report {
    pub(super) fn print(&self, args: &ChaosArgs, history: &History, dir: &Path) -> Result<()> {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\nchaos summary: seed {}, {} min of faults, {} brokers, {:?}",
            args.seed,
            args.minutes,
            args.brokers(),
            args.system
        );
        let _ = writeln!(out, "  {:<34} {:>6}", "fault", "count");
        for kind in &faults::kinds(args.txn, args.disks, args.clock, args.voters) {
            let count = self.faults.get(kind).copied().unwrap_or(0);
            let _ = writeln!(out, "  {:<34} {count:>6}", kind.name());
        }
        let total: u32 = self.faults.values().sum();
        let _ = writeln!(out, "  {:<34} {total:>6}", "total");
        if args.overlap {
            let _ = writeln!(
                out,
                "  {:<34} {:>6}",
                "of them beside another", self.overlapped
            );
        }
        let _ = writeln!(
            out,
            "  records acknowledged      {} ({} without an offset)",
            self.acked, self.acked_without_offset
        );
        let _ = writeln!(out, "  deliveries failed         {:?}", self.failed);
        let _ = writeln!(
            out,
            "  at-least-once resends     {:?} (producer plain: allowed)",
            self.tolerated
        );
        if !self.classified.is_empty() {
            let _ = writeln!(
                out,
                "  classified, not anomalies {:?} (checker.rs says why)",
                self.classified
            );
        }
        let _ = writeln!(out, "  records read live         {}", self.live_reads);
        let _ = writeln!(out, "  records in the final log  {}", self.final_records);
        let _ = writeln!(
            out,
            "  healed after faults in    {}",
            self.heal_secs
                .map_or("NOT HEALED".to_string(), |s| format!("{s:.1} s"))
        );
        if let Some(t) = &self.txn {
            let _ = writeln!(
                out,
                "  transactions              {} committed, {} aborted, {} unknown ({} of them \
                 committed); read_committed: {} live, {} final",
                t.committed,
                t.aborted,
                t.unknown,
                t.unknown_committed,
                t.live_reads,
                t.final_records
            );
        }
        if let Some(c) = &self.cycles {
            let _ = writeln!(
                out,
                "  concurrent transactions   {} committed, {} aborted, {} unknown; {} partition \
                 reads inside transactions ({} in committed ones); dependencies {:?}",
                c.committed, c.aborted, c.unknown, c.reads, c.committed_reads, c.edges
            );
            let _ = writeln!(
                out,
                "  cycles Kafka allows       {:?} (docs/chaos.md says why); forbidden: {}; reads \
                 that missed their writer's own earlier commit: {}",
                c.cycles, c.forbidden, c.own_unseen
            );
            for (class, example) in &c.examples {
                let _ = writeln!(out, "    a {class} cycle: {example}");
            }
        }
        if let Some(p) = &self.pipe {
            let _ = writeln!(
                out,
                "  exactly-once pipeline     transactions {:?}; {} input records covered by \
                 the group's offsets, {} in the committed output",
                p.outcomes, p.covered, p.output
            );
            if p.instances > 1 {
                let _ = writeln!(
                    out,
                    "  pipeline zombies          {} processes; stopped on fencing errors {:?}; \
                     transactions begun after being fenced, by outcome and error {:?}",
                    p.instances, p.fenced_exits, p.after_fenced
                );
            }
        }
        if let Some(z) = &self.zombies {
            let _ = writeln!(
                out,
                "  zombie steps              pipeline taken over {} times ({} resumed within \
                 the session timeout), {} stopped by themselves, {} killed; members killed {}, \
                 paused {}",
                z.takeovers,
                z.resumed_early,
                z.exited,
                z.killed,
                z.members_killed,
                z.members_paused
            );
        }
        if let Some(g) = &self.groups {
            let _ = writeln!(
                out,
                "  consumer groups           {} offsets committed ({} failed), {} assignment \
                 changes, two owners at once {} ms at most; Stable {}",
                g.commits,
                g.failed_commits,
                g.assignment_changes,
                g.max_overlap_ms,
                self.groups_stable_secs
                    .map_or("NOT STABLE".to_string(), |s| format!(
                        "{s:.1} s after the faults"
                    ))
            );
            if g.killed > 0 || g.late_commits > 0 || !g.late_refused.is_empty() {
                let _ = writeln!(
                    out,
                    "  group zombies             {} members killed; late commits after a pause: \
                     {} offsets taken, refused {:?}",
                    g.killed, g.late_commits, g.late_refused
                );
            }
        }
        if let Some(m) = &self.meta {
            let _ = writeln!(
                out,
                "  metadata operations       acknowledged {:?}, unknown outcome {:?}",
                m.acked, m.unknown
            );
        }
        if let Some(v) = &self.voters {
            let _ = writeln!(
                out,
                "  voter changes             {} adds and {} removes acknowledged, {} refused, {} \
                 of unknown outcome; voters after the faults {:?}",
                v.added, v.removed, v.refused, v.unknown, v.final_voters
            );
        }
        if let Some(r) = &self.reassign {
            let _ = writeln!(
                out,
                "  reassignments             {} moves acknowledged ({} seen complete), {} \
                 cancelled in flight, {} cancels too late (completed first), {} refused, {} \
                 of unknown outcome; {} partitions on other replicas than at the start",
                r.moves,
                r.completed_seen,
                r.cancelled,
                r.cancel_too_late,
                r.refused,
                r.unknown,
                r.partitions_moved
            );
        }
        let mut by_kind: BTreeMap<&str, usize> = BTreeMap::new();
        for a in &self.anomalies {
            *by_kind.entry(a.kind).or_default() += 1;
        }
        let _ = writeln!(
            out,
            "  anomalies                 {} {by_kind:?}",
            self.anomalies.len()
        );
        for a in self.anomalies.iter().take(10) {
            let _ = writeln!(out, "\nANOMALY [{}] {}", a.kind, a.detail);
            if let Some(at) = a.at_ms {
                let _ = writeln!(out, "  seen at {}; the history around it:", utc(at));
                out.push_str(&history.slice(at));
            }
        }
        print!("{out}");
        std::fs::write(dir.join("summary.txt"), &out)?;
        if !self.anomalies.is_empty() {
            bail!(
                "{} anomalies with seed {} (replay: cargo xtask chaos --seed {} --minutes {} \
                 --brokers {}{}{}{}{}{}{}{}{}{}{}); the run's files are in {}",
                self.anomalies.len(),
                args.seed,
                args.seed,
                args.minutes,
                args.brokers(),
                if args.txn { " --txn" } else { "" },
                if args.cycles { " --cycles" } else { "" },
                if args.overlap { " --overlap" } else { "" },
                if args.disks { " --disks" } else { "" },
                if args.meta { " --meta" } else { "" },
                if args.clock { " --clock" } else { "" },
                if args.reassign { " --reassign" } else { "" },
                if args.voters { " --voters" } else { "" },
                if args.zombie { " --zombie" } else { "" },
                if args.system == SystemArg::Kafka {
                    " --system kafka"
                } else {
                    ""
                },
                dir.display()
            );
        }
        println!("no anomalies; the run's files are in {}", dir.display());
        Ok(())
    }
}
