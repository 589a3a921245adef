//! The consumer-group workload's checker: members of a classic and a `group.protocol=consumer`
//! group (`workload.py member`) consume the workload's topic during the faults and commit
//! what they consumed; their files say what each commit did and which partitions each
//! member held when. Anomalies:
//!
//! - `offset backwards`: a group's committed offset of a partition went back in real time —
//!   a commit that returned before another was sent had a higher offset than it. A member
//!   commits only what it consumed from where the group's committed offset stood when it got
//!   the partition, so this is a commit applied by a member that no longer held the partition
//!   (a zombie the coordinator failed to fence) or a new owner that started from an offset
//!   older than one already committed (a committed offset lost). Commits whose intervals
//!   overlap are not ordered, and not compared.
//! - `commit past end`: a committed offset beyond the partition's end offset after the
//!   faults (an offset no record reached: read above the high watermark, or truncated).
//! - `two owners`: two members of a group held one partition at once (by their assignment
//!   callbacks) for longer than the group's session timeout; shorter overlaps are the
//!   callbacks' own lag (a member learns of its revocation on its next heartbeat).
//!
//! That every group is Stable with every partition assigned after the faults is checked on
//! the live cluster (`workload.py groups`, `group not stable` in `mod.rs`).
//!
//! With `--zombie` members are also killed (and replaced by new ones: each is a member of
//! its own here, its holds ending at the kill) and paused past their session timeout; a
//! paused member commits at once when it wakes (a late commit). Its session expired, the
//! coordinator must refuse it; one it took anyway shows as `offset backwards` (the new owner
//! committed further meanwhile), and its holds as `two owners` if it never learned it lost
//! them. The summary counts the late commits taken and refused (by error): one taken is not
//! an anomaly by itself, since a coordinator that failed over meanwhile starts the sessions
//! again (as Kafka's does when it loads a group).

use std::collections::{BTreeMap, BTreeSet};

use super::checker::Anomaly;

/// What the members saw, and the topic's end offsets after the faults.
#[derive(Debug, Default)]
pub(super) struct GroupHistory {
    pub(super) members: Vec<Member>,
    pub(super) end_offsets: BTreeMap<i32, i64>,
}

#[derive(Debug, Default)]
pub(super) struct Member {
    pub(super) group: String,
    pub(super) name: String,
    /// The group's session timeout (how long two owners may overlap).
    pub(super) session_timeout_ms: u64,
    /// Successful commits of one partition's offset each.
    pub(super) commits: Vec<Commit>,
    pub(super) failed_commits: u64,
    /// The partitions it held from each time on (Unix ms), in order.
    pub(super) held: Vec<(u64, BTreeSet<i32>)>,
    /// Its last line's time: where an assignment still held ends.
    pub(super) last_ms: u64,
    /// Offsets of its late commits (after a pause) the coordinator took.
    pub(super) late_commits: u64,
    /// Offsets of its late commits refused, by error.
    pub(super) late_refused: BTreeMap<String, u64>,
    /// Killed by the harness (its file's last line says so).
    pub(super) killed: bool,
    /// Its pauses (`--zombie`): from the SIGSTOP until its first commit or assignment change
    /// after the SIGCONT (Unix ms). Frozen, it cannot learn that it lost its partitions;
    /// what it held then does not count for `two owners` (what it did after, its late
    /// commit, counts for `offset backwards`).
    pub(super) paused: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Commit {
    pub(super) partition: i32,
    pub(super) offset: i64,
    /// When the member called commit, and when it returned (Unix ms).
    pub(super) sent_ms: u64,
    pub(super) ms: u64,
}

/// The summary's figures.
#[derive(Debug, Default)]
pub(super) struct GroupCounts {
    pub(super) commits: usize,
    pub(super) failed_commits: u64,
    pub(super) assignment_changes: usize,
    /// The longest time two members of a group held one partition at once.
    pub(super) max_overlap_ms: u64,
    /// Members the harness killed (`--zombie`).
    pub(super) killed: usize,
    /// Late commits' offsets taken, and refused by error (`--zombie`).
    pub(super) late_commits: u64,
    pub(super) late_refused: BTreeMap<String, u64>,
}

/// A member's hold of a partition: (member, from, to, the group's session timeout).
type Hold<'a> = (&'a str, u64, u64, u64);

pub(super) fn check(h: &GroupHistory) -> (Vec<Anomaly>, GroupCounts) {
    let mut anomalies = Vec::new();
    let mut counts = GroupCounts::default();
    // Per (group, partition): every successful commit, with its member.
    let mut commits: BTreeMap<(&str, i32), Vec<(&str, Commit)>> = BTreeMap::new();
    for m in &h.members {
        counts.commits += m.commits.len();
        counts.failed_commits += m.failed_commits;
        counts.assignment_changes += m.held.len();
        counts.killed += usize::from(m.killed);
        counts.late_commits += m.late_commits;
        for (err, n) in &m.late_refused {
            *counts.late_refused.entry(err.clone()).or_default() += n;
        }
        for c in &m.commits {
            commits
                .entry((m.group.as_str(), c.partition))
                .or_default()
                .push((m.name.as_str(), *c));
            if let Some(&end) = h.end_offsets.get(&c.partition) {
                if c.offset > end {
                    anomalies.push(Anomaly {
                        kind: "commit past end",
                        detail: format!(
                            "group {} member {} committed offset {} of partition {} at {}, \
                             beyond its end offset {end} after the faults",
                            m.group,
                            m.name,
                            c.offset,
                            c.partition,
                            super::utc(c.ms)
                        ),
                        at_ms: Some(c.ms),
                    });
                }
            }
        }
    }
    for ((group, partition), mut list) in commits {
        // Sweep by send time, keeping the highest offset of the commits that had returned
        // before: a lower offset sent after that is the committed offset going back.
        let mut by_return = list.clone();
        by_return.sort_by_key(|(_, c)| c.ms);
        list.sort_by_key(|(_, c)| c.sent_ms);
        let mut returned = by_return.iter().peekable();
        let mut highest: Option<(&str, Commit)> = None;
        for &(member, c) in &list {
            while let Some(&&(m, r)) = returned.peek() {
                if r.ms >= c.sent_ms {
                    break;
                }
                if highest.is_none_or(|(_, h)| r.offset > h.offset) {
                    highest = Some((m, r));
                }
                returned.next();
            }
            if let Some((hm, hc)) = highest {
                if c.offset < hc.offset {
                    anomalies.push(Anomaly {
                        kind: "offset backwards",
                        detail: format!(
                            "group {group} partition {partition}: member {member} committed \
                             offset {} (sent {}, returned {}) after member {hm}'s commit of \
                             {} had returned at {}",
                            c.offset,
                            super::utc(c.sent_ms),
                            super::utc(c.ms),
                            hc.offset,
                            super::utc(hc.ms)
                        ),
                        at_ms: Some(c.ms),
                    });
                }
            }
        }
    }
    // Who held what when: (group, partition) -> [(member, from, to, session timeout)].
    let mut holds: BTreeMap<(&str, i32), Vec<Hold>> = BTreeMap::new();
    for m in &h.members {
        for (i, (from, parts)) in m.held.iter().enumerate() {
            let to = m.held.get(i + 1).map_or(m.last_ms, |(next, _)| *next);
            for (from, to) in unpaused(*from, to, &m.paused) {
                for &p in parts {
                    holds.entry((m.group.as_str(), p)).or_default().push((
                        m.name.as_str(),
                        from,
                        to,
                        m.session_timeout_ms,
                    ));
                }
            }
        }
    }
    for ((group, partition), list) in holds {
        for (i, &(a, a_from, a_to, timeout)) in list.iter().enumerate() {
            for &(b, b_from, b_to, _) in &list[i + 1..] {
                if a == b {
                    continue;
                }
                let (from, to) = (a_from.max(b_from), a_to.min(b_to));
                let overlap = to.saturating_sub(from);
                counts.max_overlap_ms = counts.max_overlap_ms.max(overlap);
                if overlap > timeout {
                    anomalies.push(Anomaly {
                        kind: "two owners",
                        detail: format!(
                            "group {group} partition {partition}: members {a} and {b} both \
                             held it from {} to {} ({overlap} ms; the session timeout is \
                             {timeout} ms)",
                            super::utc(from),
                            super::utc(to)
                        ),
                        at_ms: Some(from),
                    });
                }
            }
        }
    }
    (anomalies, counts)
}

/// The parts of `from..to` outside the `paused` windows.
fn unpaused(from: u64, to: u64, paused: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut parts = vec![(from, to)];
    for &(p_from, p_to) in paused {
        parts = parts
            .into_iter()
            .flat_map(|(a, b)| {
                [(a, b.min(p_from)), (a.max(p_to), b)]
                    .into_iter()
                    .filter(|(x, y)| x < y)
            })
            .collect();
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, commits: &[(i64, u64, u64)], held: &[(u64, &[i32])]) -> Member {
        Member {
            group: "g".into(),
            name: name.into(),
            session_timeout_ms: 10_000,
            commits: commits
                .iter()
                .map(|&(offset, sent_ms, ms)| Commit {
                    partition: 0,
                    offset,
                    sent_ms,
                    ms,
                })
                .collect(),
            held: held
                .iter()
                .map(|&(ms, ps)| (ms, ps.iter().copied().collect()))
                .collect(),
            last_ms: 100_000,
            ..Default::default()
        }
    }

    fn kinds(h: &GroupHistory) -> Vec<&'static str> {
        check(h).0.iter().map(|a| a.kind).collect()
    }

    #[test]
    fn a_lower_commit_sent_after_a_higher_one_returned_goes_backwards() {
        let h = GroupHistory {
            members: vec![
                member("a", &[(10, 1_000, 1_100), (50, 2_000, 2_100)], &[]),
                member("b", &[(40, 3_000, 3_100)], &[]),
            ],
            end_offsets: [(0, 100)].into(),
        };
        assert_eq!(kinds(&h), ["offset backwards"]);
    }

    #[test]
    fn overlapping_commits_are_not_ordered_and_rising_ones_pass() {
        let h = GroupHistory {
            members: vec![
                member("a", &[(10, 1_000, 1_100), (50, 2_000, 2_500)], &[]),
                member("b", &[(40, 2_200, 2_300), (60, 3_000, 3_100)], &[]),
            ],
            end_offsets: [(0, 100)].into(),
        };
        assert!(kinds(&h).is_empty());
    }

    #[test]
    fn a_commit_beyond_the_end_offset_is_one() {
        let h = GroupHistory {
            members: vec![member("a", &[(101, 1_000, 1_100)], &[])],
            end_offsets: [(0, 100)].into(),
        };
        assert_eq!(kinds(&h), ["commit past end"]);
    }

    #[test]
    fn two_holders_past_the_session_timeout_are_two_owners_and_shorter_is_not() {
        let long = GroupHistory {
            members: vec![
                member("a", &[], &[(1_000, &[0]), (30_000, &[])]),
                member("b", &[], &[(5_000, &[0, 1])]),
            ],
            end_offsets: BTreeMap::new(),
        };
        assert_eq!(kinds(&long), ["two owners"]);
        let short = GroupHistory {
            members: vec![
                member("a", &[], &[(1_000, &[0]), (6_000, &[])]),
                member("b", &[], &[(5_000, &[0, 1])]),
            ],
            end_offsets: BTreeMap::new(),
        };
        assert!(kinds(&short).is_empty());
        assert_eq!(check(&short).1.max_overlap_ms, 1_000);
        // a paused from 2 s until it learned at 29 s: its frozen holding does not count,
        // what it held after it learned does.
        let mut paused = long;
        paused.members[0].paused = vec![(2_000, 29_000)];
        assert!(kinds(&paused).is_empty());
        assert_eq!(check(&paused).1.max_overlap_ms, 1_000);
        paused.members[0].paused = vec![(2_000, 10_000)];
        assert_eq!(kinds(&paused), ["two owners"]);
    }

    /// `--zombie`'s files: a member paused whose late commit was refused, one killed (the
    /// harness's last line after a torn one) and its replacement, read as three members.
    #[test]
    fn killed_replaced_and_late_members_are_read_and_judged() {
        let dir = std::env::temp_dir().join(format!("chaos-groups-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files = [
            (
                "member-chaos-classic-0.jsonl",
                "{\"held\":[0,1],\"ms\":1000}\n\
                 {\"commit\":[[0,5]],\"failed\":[],\"sent\":1100,\"ms\":1200}\n\
                 {\"paused\":12000,\"ms\":20000}\n\
                 {\"commit\":[],\"failed\":[[1,7,\"UNKNOWN_MEMBER_ID\"]],\"sent\":20000,\
                 \"ms\":20100,\"late\":true}\n{\"held\":[],\"ms\":20200}\n{\"done\":true}\n",
            ),
            (
                "member-chaos-classic-1.jsonl",
                "{\"held\":[2],\"ms\":1000}\n{\"commit\":[[2,3]],\"failed\":[],\"sent\":1100,\
                 \"ms\":1200}\n{\"commit\":[[2,\n{\"held\":[],\"ms\":5000,\"killed\":true}\n",
            ),
            (
                "member-chaos-classic-1.1.jsonl",
                "{\"held\":[2],\"ms\":9000}\n{\"commit\":[[2,4]],\"failed\":[],\"sent\":9100,\
                 \"ms\":9200}\n{\"done\":true}\n",
            ),
            ("final.jsonl", "{\"end\":{\"0\":10,\"1\":10,\"2\":10}}\n"),
        ];
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let h = super::super::workload::read_group_history(&dir)
            .unwrap()
            .expect("members");
        let _ = std::fs::remove_dir_all(&dir);
        let names: Vec<&str> = h.members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            ["chaos-classic-0", "chaos-classic-1", "chaos-classic-1.1"]
        );
        assert_eq!(h.members[0].paused, [(12_000, 20_100)]);
        let (found, counts) = check(&h);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(counts.killed, 1);
        assert_eq!(counts.late_commits, 0);
        assert_eq!(
            counts.late_refused,
            [("UNKNOWN_MEMBER_ID".to_string(), 1)].into()
        );
        // Had the replacement committed less after the late commit... the zombie's late
        // commit taken below the new owner's is the offset going back.
        let mut late = h;
        late.members[0].commits.push(Commit {
            partition: 2,
            offset: 2,
            sent_ms: 20_000,
            ms: 20_100,
        });
        assert_eq!(kinds(&late), ["offset backwards"]);
    }
}
