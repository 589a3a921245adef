//! The disks the harness can fail (`--disks`): every broker gets a second log dir on a
//! small tmpfs of its own, mounted by the harness in the run's directory, seen by the broker
//! through a FUSE passthrough the harness serves (`fusefs.rs`), and both unmounted when the
//! run ends (also when it fails: [`Disks`] unmounts on drop). The disk-full fault
//! ([`Disks::fill`]) writes a ballast file beside the log dir on that tmpfs until the kernel
//! answers ENOSPC, so the broker's next append, roll or checkpoint in the dir fails as on a
//! full disk; the failing-disk fault ([`Disks::fail`]) has the passthrough answer every
//! write, fsync, create, truncate, rename and unlink with EIO. [`Disks::heal`] deletes the
//! ballast and has the passthrough pass again.
//!
//! Why a second dir and not the broker's only one: with one dir (which then also holds the
//! metadata log) a full disk halts the broker (Kafka's "Shutdown broker because all log
//! dirs ... have failed"), which is a kill -9 by other means and already covered by
//! `stock_jbod`; with two, the broker must do what Kafka does with JBOD — take the failed
//! dir offline, have the controller move leadership and ISR off its replicas, and keep
//! serving the replicas of its healthy dir (the metadata log's) — while the workload runs
//! and the other faults come and go. The harness then restarts it once space is freed, as
//! an operator would: Kafka brings an offline dir back only at a restart.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::fusefs;

/// Each broker's tmpfs: large enough for hours of the workload's records in half of a
/// broker's replicas, small enough that filling it costs little memory.
pub(super) const TMPFS_SIZE: &str = "256m";

/// Where a broker's faultable disk (the tmpfs) is mounted, under its node directory; the
/// data of its log dir is in [`LOG_DIR`] (the ballast goes beside it, out of the broker's
/// sight).
const MOUNT: &str = "disk";
/// Where a broker's second log dir's files are, under its node directory (the segment
/// readers look here: the files themselves, not through the passthrough).
pub(super) const LOG_DIR: &str = "disk/log";
/// Where the passthrough of [`LOG_DIR`] is mounted, under the node directory: the log dir
/// the broker is configured with.
const SEEN: &str = "log2";

/// One broker's faultable disk.
struct Disk {
    id: u32,
    /// Where the tmpfs is mounted.
    mount: PathBuf,
    /// The passthrough the broker sees its log dir through, and where it is mounted.
    fuse: Option<(fusefs::Mounted, PathBuf)>,
}

/// The brokers' faultable disks of one run.
pub(super) struct Disks {
    disks: Vec<Disk>,
}

impl Disks {
    /// Mounts a tmpfs of [`TMPFS_SIZE`] for each of `brokers` under `run_dir`, makes its log
    /// dir there and mounts the passthrough of it the broker is to use.
    pub(super) fn mount(run_dir: &Path, brokers: &[u32]) -> Result<Disks> {
        let mut disks = Disks { disks: Vec::new() };
        for &id in brokers {
            let mount = run_dir.join(format!("node-{id}")).join(MOUNT);
            std::fs::create_dir_all(&mount)?;
            run(
                "mount",
                &[
                    "-t",
                    "tmpfs",
                    "-o",
                    &format!("size={TMPFS_SIZE}"),
                    "tmpfs",
                    &mount.display().to_string(),
                ],
            )
            .context("mounting a broker's tmpfs (--disks needs root)")?;
            let node_dir = mount.parent().context("a node directory")?.to_path_buf();
            disks.disks.push(Disk {
                id,
                mount,
                fuse: None,
            });
            let (backing, seen) = (node_dir.join(LOG_DIR), node_dir.join(SEEN));
            std::fs::create_dir_all(&backing)?;
            std::fs::create_dir_all(&seen)?;
            let mounted = fusefs::mount(&backing, &seen)?;
            if let Some(disk) = disks.disks.last_mut() {
                disk.fuse = Some((mounted, seen));
            }
        }
        Ok(disks)
    }

    fn disk(&self, id: u32) -> Result<&Disk> {
        self.disks
            .iter()
            .find(|d| d.id == id)
            .with_context(|| format!("broker {id} has no faultable disk"))
    }

    /// Broker `id`'s second log dir as it sees it: the passthrough of its faultable disk.
    pub(super) fn log_dir(&self, id: u32) -> Result<PathBuf> {
        let disk = self.disk(id)?;
        Ok(disk.mount.with_file_name(SEEN))
    }

    /// Has broker `id`'s passthrough fail every write with EIO until [`Disks::heal`].
    pub(super) fn fail(&self, id: u32) -> Result<()> {
        let disk = self.disk(id)?;
        let (fuse, _) = disk.fuse.as_ref().context("no passthrough mounted")?;
        fuse.set_failing(true);
        Ok(())
    }

    fn ballast(&self, id: u32) -> Result<PathBuf> {
        Ok(self.disk(id)?.mount.join("ballast"))
    }

    /// Fills broker `id`'s disk with a ballast file until ENOSPC; the bytes written.
    pub(super) fn fill(&self, id: u32) -> Result<u64> {
        let path = self.ballast(id)?;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        let chunk = vec![0u8; 1 << 20];
        // A full chunk, then pages: a write that does not fit writes what does and then
        // fails, so the disk ends full to the page.
        for size in [chunk.len(), 4096] {
            loop {
                match file.write_all(&chunk[..size]) {
                    Ok(()) => continue,
                    Err(e) if e.raw_os_error() == Some(28) => break, // ENOSPC
                    Err(e) => bail!("filling {}: {e}", path.display()),
                }
            }
        }
        Ok(file.metadata()?.len())
    }

    /// Makes broker `id`'s disk healthy: its ballast deleted (if any), its passthrough
    /// passing writes again.
    pub(super) fn heal(&self, id: u32) -> Result<()> {
        if let Some((fuse, _)) = &self.disk(id)?.fuse {
            fuse.set_failing(false);
        }
        match std::fs::remove_file(self.ballast(id)?) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}

impl Drop for Disks {
    fn drop(&mut self) {
        for disk in self.disks.drain(..) {
            // Lazy: a process still holding a file in it does not keep it mounted. The
            // passthrough first (its serving thread ends with it), then the tmpfs under it.
            let seen = disk.fuse.as_ref().map(|(_, seen)| seen.clone());
            for dir in seen.iter().chain([&disk.mount]) {
                if let Err(e) = run("umount", &["-l", &dir.display().to_string()]) {
                    eprintln!("chaos: unmounting {}: {e:#}", dir.display());
                }
            }
            drop(disk.fuse);
        }
    }
}

/// `program args...`, failing with its stderr.
fn run(program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running `{program}`"))?;
    if !out.status.success() {
        bail!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
