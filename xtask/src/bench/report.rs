//! The printed report: the run's setup, the machine's limit, the throughput table with the
//! kraftd/Kafka ratios per batch size, end-to-end latency, and the share of the limit reached.

use super::machine::Limits;
use super::produce::{ProduceArgs, System, SystemRun, BATCH_SIZES, COPIES};

pub(super) fn report(
    args: &ProduceArgs,
    records: u64,
    e2e_records: u64,
    limits: &Limits,
    runs: &[SystemRun],
    load_start: &str,
) {
    let limit = limits.loopback_mib_s.min(limits.disk_mib_s) / f64::from(COPIES);
    println!();
    println!(
        "produce benchmark on one host ({} cores): topic with {} partitions, RF {COPIES}, \
         min.insync.replicas=2, acks=all, 1 KiB records, {records} records per batch size, \
         linger.ms={}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        args.partitions,
        args.linger_ms
    );
    for run in runs {
        println!(
            "  {:<7} {} (load average before it: {})",
            run.system.name(),
            run.system.topology(),
            run.load_before
        );
    }
    if runs.iter().any(|r| r.system == System::Kafka) {
        println!(
            "  (Kafka runs 1 controller, not 3: six JVMs are too heavy for a small shared host; \
             the controller is off the produce path)"
        );
    }
    println!("  load average before the bench: {load_start}");
    println!();
    println!("machine limit (measured in this run, MiB/s = 2^20 bytes/s):");
    println!(
        "  loopback TCP, 1 MiB writes          {:>9.1} MiB/s",
        limits.loopback_mib_s
    );
    println!(
        "  disk write, 1 MiB + fdatasync       {:>9.1} MiB/s",
        limits.disk_mib_s
    );
    println!(
        "  fdatasync of 4 KiB                  p50 {:.0} us, p99 {:.0} us",
        limits.fsync_p50_us, limits.fsync_p99_us
    );
    println!("  limit = min(loopback, disk) / {COPIES} copies = {limit:.1} MiB/s");
    println!();
    println!(
        "{:<12} | {:>10} | {:>9} | {:>9} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} | {:>9} | {:>7} | {:>7}",
        "system",
        "batch.size",
        "records/s",
        "MiB/s",
        "avg ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "p99.9 ms",
        "of limit",
        "brokers",
        "machine"
    );
    println!("{}", "-".repeat(137));
    let kraftd = runs.iter().find(|r| r.system == System::Kraftd);
    let kafka = runs.iter().find(|r| r.system == System::Kafka);
    for (i, batch_size) in BATCH_SIZES.iter().enumerate() {
        for run in runs {
            let Some(r) = run.perf.get(i) else { continue };
            println!(
                "{:<12} | {:>10} | {:>9.0} | {:>9.2} | {:>8.1} | {:>8.0} | {:>8.0} | {:>8.0} | {:>8.0} | {:>8.0}% | {:>6.0}% | {:>6.0}%",
                run.system.name(),
                format!("{} KiB", batch_size >> 10),
                r.records_per_sec,
                r.mib_per_sec,
                r.avg_ms,
                r.p50_ms,
                r.p95_ms,
                r.p99_ms,
                r.p999_ms,
                100.0 * r.mib_per_sec / limit,
                100.0 * r.broker_cores,
                100.0 * r.machine_busy,
            );
        }
        if let (Some(a), Some(b)) = (
            kraftd.and_then(|r| r.perf.get(i)),
            kafka.and_then(|r| r.perf.get(i)),
        ) {
            println!(
                "{:<12} | {:>10} | {:>9} | {:>9} | {:>8} | {:>8} | {:>8} | {:>8} | {:>8} | {:>9} | {:>7} | {:>7}",
                "kraftd/Kafka",
                format!("{} KiB", batch_size >> 10),
                ratio(a.records_per_sec, b.records_per_sec),
                ratio(a.mib_per_sec, b.mib_per_sec),
                ratio(a.avg_ms, b.avg_ms),
                ratio(a.p50_ms, b.p50_ms),
                ratio(a.p95_ms, b.p95_ms),
                ratio(a.p99_ms, b.p99_ms),
                ratio(a.p999_ms, b.p999_ms),
                "",
                ratio(a.broker_cores, b.broker_cores),
                "",
            );
        }
    }
    println!();
    println!(
        "produce latency: ProducerPerformance's send-to-ack time per record, including the time \
         a record waits in the producer's buffer (at --throughput -1 mostly that queue)."
    );
    println!(
        "brokers: CPU of the 3 broker processes (100% = one core); machine: busy share of all \
         cores (the load generator's JVM included)."
    );
    println!(
        "kraftd/Kafka: above 1 is better for kraftd in records/s and MiB/s, worse in latency \
         and broker CPU."
    );
    println!();
    println!(
        "end-to-end latency (EndToEndLatency, {e2e_records} records one at a time, produce \
         acks=all to consume; the tool reports whole ms):"
    );
    for run in runs {
        let e = &run.e2e;
        println!(
            "  {:<7} avg {:.2} ms, p50 {} ms, p99 {} ms, p99.9 {} ms",
            run.system.name(),
            e.avg_ms,
            e.p50_ms,
            e.p99_ms,
            e.p999_ms
        );
    }
    if let (Some(a), Some(b)) = (kraftd, kafka) {
        println!(
            "  kraftd/Kafka avg {}, p50 {}, p99 {}",
            ratio(a.e2e.avg_ms, b.e2e.avg_ms),
            ratio(a.e2e.p50_ms, b.e2e.p50_ms),
            ratio(a.e2e.p99_ms, b.e2e.p99_ms)
        );
    }
    for run in runs {
        if let Some(note) = &run.e2e_note {
            println!("  note ({}): {note}", run.system.name());
        }
    }
    println!();
    for run in runs {
        if let Some(best) = run.perf.iter().map(|r| r.mib_per_sec).reduce(f64::max) {
            println!(
                "{:<7} best throughput {best:.1} MiB/s = {:.0}% of the limit {limit:.1} MiB/s \
                 (aim: 50%)",
                run.system.name(),
                100.0 * best / limit
            );
        }
    }
}

/// "1.23x", or "-" when the denominator is 0 (latencies the tools round to whole ms).
fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}x", a / b)
    } else {
        "-".into()
    }
}
