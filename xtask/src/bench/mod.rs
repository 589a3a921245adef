//! `cargo xtask bench cleaner`: the log cleaner beside Kafka's on the same log (`cleaner.rs`).
//!
//! `cargo xtask bench groups`: consumer-group rebalance times (classic and KIP-848) and
//! OffsetCommit throughput and latency with a stock client, beside Kafka's (`groups.rs`,
//! which drives `groups.py`).
//!
//! `cargo xtask bench txn`: transactional produce beside non-transactional produce, and the
//! end-to-end latency of a `read_committed` consumer, with a stock client, beside Kafka's
//! (`txn.rs`, which drives `txn.py`).
//!
//! `cargo xtask bench tls`: produce throughput and latency over an SSL and a SASL_SSL
//! (SCRAM-SHA-512) listener beside a PLAINTEXT one, kraftd beside Kafka (`tls.rs`).
//!
//! `cargo xtask bench request-metrics`: the cost of the request metrics per request, p50
//! and p99 of acks=all produce with and without them, two clusters interleaved in one run
//! (`request_metrics.rs`).
//! `cargo xtask bench reassign`: the time to move partitions onto a new broker with
//! `kafka-reassign-partitions --execute --throttle`, beside Kafka's (`reassign.rs`).
//!
//! `cargo xtask bench failover`: kill -9 of the active controller, then CreateTopics through
//! a broker until one succeeds, rounds of it, kraftd beside Kafka, with kraftd's time broken
//! down by step from its logs (`failover.rs`).
//! `cargo xtask bench rebalance`: a broker stopped and started again, then the time until
//! every partition is on its preferred replica (`auto.leader.rebalance.enable`), kraftd
//! beside Kafka with the same check interval (`rebalance.rs`).
//! `cargo xtask bench share`: share groups with KafkaShareConsumer — records/s as consumers
//! share one partition, end-to-end latency, redelivery after a consumer's SIGKILL, beside
//! Kafka's (`share.rs`, its load in `ShareBench.java`).
//! `cargo xtask bench scale --partitions N`: what N partitions cost one combined node
//! (creation, settling, idle CPU, RSS, fds, restarts, a follower's CPU), beside Kafka's
//! (`scale.rs`, its requests in `scale_client.rs`).
//!
//! `cargo xtask bench add-voter --partitions N`: AddRaftVoter of a second controller to a
//! standalone one holding N partitions of metadata: the joiner's snapshot fetch and catch-up,
//! then the time to the response and to its counting toward the HW, beside Kafka's
//! (`add_voter.rs`, its requests in `add_voter_client.rs`).
//!
//! `cargo xtask bench cost`: CPU seconds of all nodes per GiB produced and consumed over
//! PLAINTEXT, SSL and SASL_SSL, at full speed and at a fixed offered rate, and the brokers'
//! memory, with librdkafka's `rdkafka_performance` as the client, beside Kafka's
//! (`cost.rs`; the client built on demand by `rdkafka.rs`).
//!
//! `cargo xtask bench clients`: many clients on one combined node — idle connections,
//! idempotent producers, groups committing offsets, each at two sizes — beside Kafka's
//! (`clients.rs`, its requests in `scale_client.rs`, its node laid out by `scale.rs`).
//!
//! `cargo xtask bench mixed`: one workload on three 3+3 clusters in one run — all Apache
//! Kafka, all kraftd, and a mixed one halfway through a node-by-node migration (controllers
//! 2 Kafka + 1 kraftd, brokers 1 Kafka + 2 kraftd): produce throughput, end-to-end latency,
//! controller failover, broker start to serving, RSS per node by role and kind, the
//! machine's load; one table with the ratios to all Kafka (`mixed.rs`, reusing `load.rs`,
//! `failover.rs`'s rounds and `kraftd.rs`'s and `kafka.rs`'s node starts).
//!
//! `cargo xtask bench produce`: a benchmark, not a test. It prints figures and never asserts
//! on them.
//!
//! It runs kraftd, then Apache Kafka (`--against kraftd|kafka|both`, both by default), one
//! after the other on the same machine, and prints one table with a row per system and batch
//! size and the ratio kraftd/Kafka per batch size.
//!
//! kraftd: 3 controllers and 3 brokers as real release-build `kraftd` processes in a fresh
//! temp directory (configured as `cargo xtask cluster-up` configures them). Kafka: Apache
//! Kafka 4.4.0 from the same jars (`kafka.Kafka`, formatted with `kafka.tools.StorageTool`),
//! 1 controller and 3 brokers, each JVM with a 512 MiB heap: 3 controller JVMs beside 3
//! broker JVMs would take a good part of a small machine's cores for the quorum alone, and the
//! single controller sits outside the produce path (it only holds metadata). Both get a topic
//! with replication factor 3, `min.insync.replicas=2` and the same partitions through Kafka's
//! stock `TopicCommand`, then Kafka's own load generators from the jars the tests use
//! (`target/kafka-jars/`): `ProducerPerformance` (kafka-producer-perf-test) with `acks=all`,
//! 1 KiB records and `batch.size` 64 KiB, 256 KiB and 1 MiB, then `EndToEndLatency` (one
//! record at a time, produce to consume). Beside them it measures the machine's limit once:
//! loopback TCP throughput and disk write bandwidth (plus the latency of a 4 KiB
//! `fdatasync`), and prints min(loopback, disk) / 3 copies and the ratio achieved / limit.
//! Each cluster is stopped before the next starts, on error too (and on Ctrl-C: the nodes
//! share this process group).
//!
//! Map: `produce.rs` the `bench produce` scenario (its arguments, the order of the runs);
//! `load.rs` Kafka's load generators against a running cluster and the parsing of their
//! output; `cluster.rs` the benchmarked nodes as child processes, their readiness and stopping;
//! `kraftd.rs` starting kraftd's nodes; `kafka.rs` Apache Kafka from the jars (fetching them,
//! starting its nodes, running its tools); `machine.rs` the machine's limit and CPU accounting
//! from /proc; `report.rs` the printed table.

mod add_voter;
mod add_voter_client;
mod cleaner;
mod clients;
mod cluster;
mod cost;
mod failover;
mod groups;
pub(crate) mod kafka;
mod kraftd;
mod load;
mod machine;
mod mixed;
mod produce;
mod rdkafka;
mod reassign;
mod rebalance;
mod report;
mod request_metrics;
mod scale;
mod scale_client;
mod share;
mod systems;
mod tls;
mod txn;

use std::path::Path;

use anyhow::Result;

use add_voter::{add_voter, AddVoterArgs};
use cleaner::{cleaner, CleanerArgs};
use clients::{clients, ClientsArgs};
use cost::{cost, CostArgs};
use failover::{failover, FailoverArgs};
use groups::{groups, GroupsArgs};
use mixed::{mixed, MixedArgs};
use produce::{produce, ProduceArgs};
use reassign::{reassign, ReassignArgs};
use rebalance::{rebalance, RebalanceArgs};
use request_metrics::{request_metrics, RequestMetricsArgs};
use scale::{scale, ScaleArgs};
use share::{share, ShareArgs};
use tls::{tls, TlsArgs};

pub(crate) use groups::stock_python;
use txn::{txn, TxnArgs};

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand, Debug)]
enum What {
    /// Produce throughput and latency (acks=all, RF 3) beside the machine's limit.
    Produce(ProduceArgs),
    /// Log cleaner throughput (one thread) beside Apache Kafka 4.4.0's on the same log.
    Cleaner(CleanerArgs),
    /// Consumer-group rebalance times (classic and KIP-848) and OffsetCommit throughput and
    /// latency with a stock client, beside Apache Kafka 4.4.0's.
    Groups(GroupsArgs),
    /// Transactional produce beside non-transactional (records/s, commit latency,
    /// read_committed end-to-end latency) with a stock client, beside Apache Kafka 4.4.0's.
    Txn(TxnArgs),
    /// Produce throughput and p50/p99 latency over SSL and SASL_SSL (SCRAM-SHA-512) beside
    /// PLAINTEXT, beside Apache Kafka 4.4.0's with the same settings.
    Tls(TlsArgs),
    /// The request metrics' cost: acks=all produce p50/p99 latency with them on and off
    /// (`request.metrics.enable`), two kraftd clusters interleaved in one run.
    RequestMetrics(RequestMetricsArgs),
    /// The time to move partitions onto a new broker with kafka-reassign-partitions
    /// --execute --throttle, beside Apache Kafka 4.4.0's.
    Reassign(ReassignArgs),
    /// kill -9 of the active controller, then CreateTopics through a broker until one
    /// succeeds: rounds of it, kraftd beside Apache Kafka 4.4.0, kraftd's time by step.
    Failover(FailoverArgs),
    /// A broker stopped and started again: the time until every partition is led by its
    /// preferred replica again, beside Apache Kafka 4.4.0 with the same check interval.
    Rebalance(RebalanceArgs),
    /// Share groups (KIP-932) with KafkaShareConsumer: records/s with 1, 4 and 16 consumers
    /// on one partition and 16 on 16, end-to-end latency, redelivery after a consumer's
    /// SIGKILL, beside Apache Kafka 4.4.0's.
    Share(ShareArgs),
    /// What many partitions cost one combined node (creation, settling, idle CPU, RSS, fds,
    /// restarts, a follower's CPU per partition), beside Apache Kafka 4.4.0's.
    Scale(ScaleArgs),
    /// AddRaftVoter of a second controller to a standalone one holding many partitions of
    /// metadata: snapshot fetch, catch-up, the time to the response and to the new voter
    /// counting toward the HW, beside Apache Kafka 4.4.0's.
    AddVoter(AddVoterArgs),
    /// CPU seconds of all nodes per GiB produced and consumed (RF 3, acks=all) over
    /// PLAINTEXT, SSL and SASL_SSL, at full speed and at a fixed rate, and the brokers' RSS,
    /// with librdkafka's rdkafka_performance, beside Apache Kafka 4.4.0's.
    Cost(CostArgs),
    /// Many clients on one combined node: idle connections (memory, CPU, fds, time to
    /// accept), idempotent producers (producer state), groups committing offsets, at two
    /// sizes each, beside Apache Kafka 4.4.0's.
    Clients(ClientsArgs),
    /// One workload on all-Kafka, all-kraftd and mixed 3+3 clusters (a node-by-node
    /// migration's midpoint) in one run: produce, end-to-end latency, controller failover,
    /// broker start to serving, RSS per node.
    Mixed(MixedArgs),
}

pub fn run(root: &Path, args: BenchArgs) -> Result<()> {
    match args.what {
        What::Produce(args) => produce(root, args),
        What::Cleaner(args) => cleaner(root, args),
        What::Groups(args) => groups(root, args),
        What::Txn(args) => txn(root, args),
        What::Tls(args) => tls(root, args),
        What::RequestMetrics(args) => request_metrics(root, args),
        What::Reassign(args) => reassign(root, args),
        What::Failover(args) => failover(root, args),
        What::Rebalance(args) => rebalance(root, args),
        What::Share(args) => share(root, args),
        What::Scale(args) => scale(root, args),
        What::AddVoter(args) => add_voter(root, args),
        What::Cost(args) => cost(root, args),
        What::Clients(args) => clients(root, args),
        What::Mixed(args) => mixed(root, args),
    }
}
