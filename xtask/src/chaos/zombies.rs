//! `--zombie`: workload steps that make zombies of the clients while the faults run — not
//! faults of the cluster, so the fault schedule stays the seed's (these steps draw from a
//! generator of their own).
//!
//! - The exactly-once pipeline (with `--txn`): every 15-30 s the running pipeline process
//!   is paused (SIGSTOP) and a new one started with the same transactional id and group; it
//!   takes over (its InitProducerId fences the old producer epoch and ends its open
//!   transaction, its consumer's join rebalances the group). The old one is resumed
//!   (SIGCONT) after 13-17 s, past its 10 s session timeout, or one time in three after 3-7
//!   s, before it (the new one may not have initialized yet). Its transactions from then on
//!   must fail (PRODUCER_FENCED and the like), and it stops on such an error
//!   (`workload.py pipeline`); `pipe_checker.rs` judges what became visible.
//! - The group members: every 8-20 s one member of one of the two groups (in turn) is
//!   killed with SIGKILL and, 1-4 s later, replaced by a new member (a new process and
//!   member id), or paused for 2-5 s past its group's session timeout (10 s classic, 45 s
//!   consumer protocol) and resumed: it commits at once what it holds (a late commit the
//!   coordinator must refuse), then learns it lost its partitions. `group_checker.rs`
//!   judges the commits and the holds.
//!
//! One step of each kind at a time; every step is in the run's history.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::faults::Rng;
use super::nodes::signal;
use super::workload::{lines, member_name, Workload, GROUPS, GROUP_MEMBERS};
use super::History;

/// The pipeline consumer's session timeout (`workload.py pipeline`).
const PIPE_SESSION_MS: u64 = 10_000;

/// How long a resumed zombie pipeline has to stop by itself before the harness kills it: a
/// transaction it is in may wait out its bounds (45 s to send the offsets, and more to end
/// it) while the faults cut it off.
const ZOMBIE_EXIT_WITHIN: Duration = Duration::from_secs(150);

enum PipeStep {
    Idle {
        next: Instant,
    },
    /// `old` paused since `since`, `new` started in its place; `old` resumed at `until`.
    Paused {
        old: String,
        since: Instant,
        until: Instant,
    },
    Resumed {
        old: String,
        at: Instant,
    },
}

enum MemberStep {
    Idle {
        next: Instant,
    },
    /// Group `group`'s member `i` killed; its `k`-th replacement starts at `until`.
    Killed {
        group: &'static str,
        i: usize,
        k: u32,
        until: Instant,
    },
    /// Member `name` paused since `since_ms` (Unix ms).
    Paused {
        name: String,
        since_ms: u64,
        until: Instant,
    },
}

/// What the steps did, for the summary.
#[derive(Debug, Default, Clone)]
pub(super) struct ZombieCounts {
    /// Pipeline processes superseded by a new one.
    pub(super) takeovers: u32,
    /// Of them resumed before their session timeout.
    pub(super) resumed_early: u32,
    /// Superseded processes that stopped by themselves after their resume.
    pub(super) exited: u32,
    /// Superseded processes the harness killed (not stopped within [`ZOMBIE_EXIT_WITHIN`]).
    pub(super) killed: u32,
    pub(super) members_killed: u32,
    pub(super) members_paused: u32,
}

pub(super) struct Zombies {
    rng: Rng,
    /// None without the pipeline (no `--txn`).
    pipe: Option<PipeStep>,
    member: MemberStep,
    /// The last member started in each place (group, index): its `k`.
    replaced: BTreeMap<(&'static str, usize), u32>,
    turn: usize,
    pub(super) counts: ZombieCounts,
}

impl Zombies {
    pub(super) fn new(seed: u64, pipeline: bool) -> Zombies {
        // A generator of their own: the fault schedule's draws stay the seed's.
        let mut rng = Rng::new(seed ^ 0x7a0b_1e5e_ed00_0001);
        let now = Instant::now();
        let pipe = pipeline.then(|| PipeStep::Idle {
            next: now + ms(&mut rng, 15_000, 30_000),
        });
        let member = MemberStep::Idle {
            next: now + ms(&mut rng, 8_000, 20_000),
        };
        Zombies {
            rng,
            pipe,
            member,
            replaced: BTreeMap::new(),
            turn: 0,
            counts: ZombieCounts::default(),
        }
    }

    /// Advances both steps; called every 100 ms while the faults run.
    pub(super) fn tick(&mut self, workload: &mut Workload, history: &mut History) -> Result<()> {
        self.tick_pipe(workload, history)?;
        self.tick_member(workload, history)
    }

    fn tick_pipe(&mut self, workload: &mut Workload, history: &mut History) -> Result<()> {
        let now = Instant::now();
        let next = match self.pipe.take() {
            None => return Ok(()),
            Some(PipeStep::Idle { next }) if now >= next => {
                let (old, new) = workload.supersede_pipeline()?;
                let early = self.rng.below(3) == 0;
                let pause = if early {
                    ms(&mut self.rng, 3_000, 7_000)
                } else {
                    ms(
                        &mut self.rng,
                        PIPE_SESSION_MS + 3_000,
                        PIPE_SESSION_MS + 7_000,
                    )
                };
                self.counts.takeovers += 1;
                self.counts.resumed_early += u32::from(early);
                history.note(format!(
                    "zombie pipeline: {old} paused (SIGSTOP), {new} started with the same \
                     transactional id and group; {old} resumes in {:.1} s ({} its {} s session \
                     timeout)",
                    pause.as_secs_f64(),
                    if early { "within" } else { "past" },
                    PIPE_SESSION_MS / 1000
                ));
                PipeStep::Paused {
                    old,
                    since: now,
                    until: now + pause,
                }
            }
            Some(PipeStep::Paused { old, since, until }) if now >= until => {
                resume(workload, &old)?;
                history.note(format!(
                    "zombie pipeline: {old} resumed (SIGCONT) after {:.1} s",
                    since.elapsed().as_secs_f64()
                ));
                PipeStep::Resumed { old, at: now }
            }
            Some(PipeStep::Resumed { old, at }) => {
                if let Some(status) = workload.zombie_exited(&old) {
                    self.counts.exited += 1;
                    history.note(format!(
                        "zombie pipeline: {old} stopped by itself ({status}) {:.1} s after its \
                         resume: {}",
                        at.elapsed().as_secs_f64(),
                        last_words(workload, &old)
                    ));
                    PipeStep::Idle {
                        next: now + ms(&mut self.rng, 15_000, 30_000),
                    }
                } else if at.elapsed() > ZOMBIE_EXIT_WITHIN {
                    workload.kill(&old)?;
                    self.counts.killed += 1;
                    history.note(format!(
                        "zombie pipeline: {old} still running {} s after its resume; killed: {}",
                        ZOMBIE_EXIT_WITHIN.as_secs(),
                        last_words(workload, &old)
                    ));
                    PipeStep::Idle {
                        next: now + ms(&mut self.rng, 15_000, 30_000),
                    }
                } else {
                    PipeStep::Resumed { old, at }
                }
            }
            Some(step) => step,
        };
        self.pipe = Some(next);
        Ok(())
    }

    fn tick_member(&mut self, workload: &mut Workload, history: &mut History) -> Result<()> {
        let now = Instant::now();
        let step = std::mem::replace(&mut self.member, MemberStep::Idle { next: now });
        self.member = match step {
            MemberStep::Idle { next } if now >= next => {
                let (group, _, session_ms) = GROUPS[self.turn % GROUPS.len()];
                self.turn += 1;
                let i = self.rng.below(GROUP_MEMBERS as u64) as usize;
                let k = self.replaced.get(&(group, i)).copied().unwrap_or(0);
                let name = member_name(group, i, k);
                if self.rng.below(2) == 0 {
                    workload.kill(&name)?;
                    self.counts.members_killed += 1;
                    let wait = ms(&mut self.rng, 1_000, 4_000);
                    history.note(format!(
                        "zombie members: {name} killed (SIGKILL); a new member replaces it in \
                         {:.1} s",
                        wait.as_secs_f64()
                    ));
                    MemberStep::Killed {
                        group,
                        i,
                        k: k + 1,
                        until: now + wait,
                    }
                } else {
                    let pid = workload.pid(&name).context("the member is not running")?;
                    signal(pid, "STOP")?;
                    self.counts.members_paused += 1;
                    let pause = ms(&mut self.rng, session_ms + 2_000, session_ms + 5_000);
                    history.note(format!(
                        "zombie members: {name} paused (SIGSTOP) for {:.1} s, past its group's \
                         {} s session timeout",
                        pause.as_secs_f64(),
                        session_ms / 1000
                    ));
                    MemberStep::Paused {
                        name,
                        since_ms: super::unix_ms(),
                        until: now + pause,
                    }
                }
            }
            MemberStep::Killed { group, i, k, until } if now >= until => {
                workload.start_member(group, i, k)?;
                self.replaced.insert((group, i), k);
                history.note(format!(
                    "zombie members: {} started in {}'s place",
                    member_name(group, i, k),
                    member_name(group, i, k - 1)
                ));
                MemberStep::Idle {
                    next: now + ms(&mut self.rng, 8_000, 20_000),
                }
            }
            MemberStep::Paused {
                name,
                since_ms,
                until,
            } if now >= until => {
                std::fs::write(workload.resumed_file(&name), since_ms.to_string())?;
                resume(workload, &name)?;
                history.note(format!("zombie members: {name} resumed (SIGCONT)"));
                MemberStep::Idle {
                    next: now + ms(&mut self.rng, 8_000, 20_000),
                }
            }
            step => step,
        };
        Ok(())
    }

    /// The faults are over: a paused process resumed and a killed member replaced now, so
    /// that the cluster heals with every group whole. A resumed zombie pipeline is left to
    /// stop by itself (or with the workload).
    pub(super) fn finish(&mut self, workload: &mut Workload, history: &mut History) -> Result<()> {
        let far = Instant::now();
        if let Some(PipeStep::Paused { until, .. }) = &mut self.pipe {
            *until = far;
        }
        match &mut self.member {
            MemberStep::Killed { until, .. } | MemberStep::Paused { until, .. } => *until = far,
            MemberStep::Idle { next } => *next = far + Duration::from_secs(3600),
        }
        if let Some(PipeStep::Idle { next }) = &mut self.pipe {
            *next = far + Duration::from_secs(3600);
        }
        self.tick(workload, history)
    }
}

/// SIGCONT to workload process `name`.
fn resume(workload: &Workload, name: &str) -> Result<()> {
    let pid = workload
        .pid(name)
        .with_context(|| format!("{name} is not running"))?;
    signal(pid, "CONT")
}

/// A duration drawn in `lo..hi` ms.
fn ms(rng: &mut Rng, lo: u64, hi: u64) -> Duration {
    Duration::from_millis(lo + rng.below(hi - lo))
}

/// What a zombie pipeline's file says of its end: its fencing error and its last
/// transaction.
fn last_words(workload: &Workload, name: &str) -> String {
    let lines = lines(&workload.dir().join(format!("{name}.jsonl"))).unwrap_or_default();
    let fenced = lines
        .iter()
        .rev()
        .find_map(|l| l.get("fenced").map(|f| format!("fenced on {f}")));
    let last = lines
        .iter()
        .rev()
        .find(|l| l.get("batch").is_some())
        .map(|l| {
            format!(
                "its last transaction {} ({} records) {} ({})",
                l["batch"], l["inputs"], l["outcome"], l["err"]
            )
        });
    [fenced, last]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("; ")
}
