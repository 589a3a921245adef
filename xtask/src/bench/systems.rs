//! The frame of a bench that runs kraftd, then Apache Kafka, one after the other on this
//! machine (`--against kraftd|kafka|both`): kraftd built in release, Kafka's classpath, a
//! temp directory per system (kept when a run failed, or with `--keep`), a failed system
//! recorded in its figures and the next one run anyway. `scale` and `add-voter` use it.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;

use super::kafka::kafka_classpath;
use super::produce::{loadavg, Against, System};
use super::scale::Nodes;

/// What the frame records in each system's figures: the load average before its run, and
/// the error that ended it early.
#[derive(Debug, Default)]
pub(super) struct RunStatus {
    pub(super) load_before: String,
    pub(super) error: Option<String>,
}

/// A bench's per-system figures, holding a [`RunStatus`].
pub(super) trait RunFigures: Default {
    fn status(&mut self) -> &mut RunStatus;
}

/// How a bench runs its systems.
pub(super) struct Frame<'a> {
    pub(super) root: &'a Path,
    /// Names the temp directory: `kraftd-bench-<name>-<pid>`.
    pub(super) name: &'a str,
    pub(super) against: Against,
    pub(super) keep: bool,
    /// Kafka's jars are needed for kraftd's run too (its load tools).
    pub(super) kafka_tools: bool,
    /// What a run sets up, printed as it starts.
    pub(super) what: &'a str,
    /// A kraftd binary to run as it is; `None`: `target/release/kraftd`, built first.
    pub(super) kraftd_bin: Option<&'a Path>,
}

/// What a system's run is given.
#[derive(Clone, Copy)]
pub(super) struct SystemRun<'a> {
    pub(super) system: System,
    /// kraftd's release binary.
    pub(super) bin: &'a Path,
    /// Kafka's classpath (empty when not needed).
    pub(super) classpath: &'a str,
    /// The system's own directory.
    pub(super) dir: &'a Path,
}

/// Runs `drive` for each system `frame.against` names (the nodes a run started are stopped
/// after it, whatever happened), then `report` over their figures, then how long it all took.
pub(super) fn run_systems<F: RunFigures>(
    frame: Frame<'_>,
    mut drive: impl FnMut(&SystemRun<'_>, &mut Nodes, &mut F) -> Result<()>,
    report: impl FnOnce(&[(System, F)]),
) -> Result<()> {
    let started = Instant::now();
    let systems = match frame.against {
        Against::Kraftd => vec![System::Kraftd],
        Against::Kafka => vec![System::Kafka],
        Against::Both => vec![System::Kraftd, System::Kafka],
    };
    let bin = frame.kraftd_bin.map_or_else(
        || frame.root.join("target").join("release").join("kraftd"),
        Path::to_path_buf,
    );
    if systems.contains(&System::Kraftd) && frame.kraftd_bin.is_none() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        crate::run(
            frame.root,
            &cargo,
            &["build", "--release", "--bin", "kraftd"],
        )?;
    }
    let classpath = if frame.kafka_tools || systems.contains(&System::Kafka) {
        kafka_classpath(frame.root)?
    } else {
        String::new()
    };
    let dir = std::env::temp_dir().join(format!(
        "kraftd-bench-{}-{}",
        frame.name,
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("bench directory: {}", dir.display());
    let mut runs = Vec::new();
    for system in systems {
        let sys_dir = dir.join(system.name().to_lowercase());
        std::fs::create_dir_all(&sys_dir)?;
        let mut figures = F::default();
        let load = loadavg();
        println!(
            "==> {}: {} (load average {load})",
            system.name(),
            frame.what
        );
        figures.status().load_before = load;
        let mut nodes = Nodes(Vec::new());
        let run = SystemRun {
            system,
            bin: &bin,
            classpath: &classpath,
            dir: &sys_dir,
        };
        if let Err(e) = drive(&run, &mut nodes, &mut figures) {
            eprintln!(
                "{}: {e:#}; its logs are in {} (kept)",
                system.name(),
                sys_dir.display()
            );
            figures.status().error = Some(format!("{e:#}"));
        }
        drop(nodes);
        runs.push((system, figures));
    }
    if !frame.keep && runs.iter_mut().all(|(_, f)| f.status().error.is_none()) {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report(&runs);
    println!(
        "(bench took {:.0} s; load average at the end {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}
