//! kcat (the librdkafka command-line producer and consumer) for tests that drive kraftd with
//! it. The machine need not have it installed: on first use the Debian packages (`kcat` and
//! the libraries it links that a Debian base image lacks, `librdkafka1` and `libyajl2`) are
//! fetched with `apt-get download` (no root needed) into a scratch directory, unpacked with
//! `dpkg -x`, and the directory is renamed to `target/kcat/` once `kcat -V` runs from it.
//! Concurrent test processes each build their own scratch directory; the first rename wins.
//! `target/kcat/kcat` is a wrapper script that points `LD_LIBRARY_PATH` at the unpacked
//! libraries. Any failed step panics with one line naming the command.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use super::kafka_jars::repo_root;

/// The Debian packages unpacked: kcat and the libraries it links beyond a base system's.
pub const PACKAGES: [&str; 3] = ["kcat", "librdkafka1", "libyajl2"];

/// A runnable kcat (the wrapper script `target/kcat/kcat`), fetching it on first use.
pub fn kcat() -> PathBuf {
    static KCAT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match KCAT.get_or_init(prepare) {
        Ok(path) => path.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn prepare() -> Result<PathBuf, String> {
    let dir = repo_root().join("target").join("kcat");
    let wrapper = dir.join("kcat");
    if works(&wrapper).is_ok() {
        return Ok(wrapper);
    }
    let scratch = repo_root()
        .join("target")
        .join(format!("kcat.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let result = build(&scratch);
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(e);
    }
    // A leftover `target/kcat` that does not work (an interrupted older layout) is replaced.
    if dir.exists() && works(&wrapper).is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    if std::fs::rename(&scratch, &dir).is_err() {
        // Another test process won the race; use its copy.
        let _ = std::fs::remove_dir_all(&scratch);
    }
    works(&wrapper)?;
    Ok(wrapper)
}

/// Downloads, unpacks and wraps kcat in `scratch`, whose path is written into the wrapper
/// as its final `target/kcat` path.
fn build(scratch: &Path) -> Result<(), String> {
    std::fs::create_dir_all(scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    run(Command::new("apt-get")
        .arg("download")
        .args(PACKAGES)
        .current_dir(scratch))?;
    let root = scratch.join("root");
    let mut debs: Vec<PathBuf> = std::fs::read_dir(scratch)
        .map_err(|e| format!("{}: {e}", scratch.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "deb"))
        .collect();
    debs.sort();
    if debs.len() < PACKAGES.len() {
        return Err(format!(
            "`apt-get download {}` in {} left only {debs:?}",
            PACKAGES.join(" "),
            scratch.display()
        ));
    }
    for deb in &debs {
        run(Command::new("dpkg").arg("-x").arg(deb).arg(&root))?;
    }
    // The unpacked library directory (`usr/lib/x86_64-linux-gnu` on amd64), named by where
    // librdkafka landed, and written as it will be once the directory is renamed.
    let final_root = repo_root().join("target").join("kcat").join("root");
    let lib = find(&root.join("usr/lib"), "librdkafka.so.1")
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .ok_or_else(|| format!("no librdkafka.so.1 under {}", root.display()))?;
    let lib_rel = lib.strip_prefix(&root).unwrap();
    let script = format!(
        "#!/bin/sh\n\
         # kcat from Debian's packages, unpacked here by crates/cli/tests/common/kcat.rs\n\
         LD_LIBRARY_PATH={lib}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} exec {bin} \"$@\"\n",
        lib = final_root.join(lib_rel).display(),
        bin = final_root.join("usr/bin/kcat").display(),
    );
    let wrapper = scratch.join("kcat");
    std::fs::write(&wrapper, script).map_err(|e| format!("{}: {e}", wrapper.display()))?;
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", wrapper.display()))?;
    // Checked through the scratch paths: the unpacked binary and libraries load.
    let out = Command::new(root.join("usr/bin/kcat"))
        .arg("-V")
        .env("LD_LIBRARY_PATH", &lib)
        .output()
        .map_err(|e| format!("running the unpacked kcat -V: {e}"))?;
    if !out.status.success() {
        let ldd = Command::new("ldd")
            .arg(root.join("usr/bin/kcat"))
            .env("LD_LIBRARY_PATH", &lib)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        return Err(format!(
            "the unpacked kcat -V failed ({}): {} (missing libraries: {})",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            ldd.lines()
                .filter(|l| l.contains("not found"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    Ok(())
}

fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
        if path.is_dir() {
            if let Some(found) = find(&path, name) {
                return Some(found);
            }
        }
    }
    None
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("fetching kcat: {shown} could not start: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "fetching kcat: {shown} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `kcat -V` through `wrapper` succeeds.
fn works(wrapper: &Path) -> Result<(), String> {
    let out = Command::new(wrapper)
        .arg("-V")
        .output()
        .map_err(|e| format!("{} -V: {e}", wrapper.display()))?;
    if out.status.success() && String::from_utf8_lossy(&out.stdout).contains("librdkafka") {
        Ok(())
    } else {
        Err(format!(
            "{} -V failed ({}): {}",
            wrapper.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `kcat -b BOOTSTRAP -P -t TOPIC -p PARTITION -K : [extra...]` with `records` as
/// `key:value` lines on stdin (keys and values must not contain `:` or newlines); kcat
/// flushes before it exits. Its output, whatever the exit status.
pub fn produce(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    records: &[(String, String)],
    extra: &[&str],
) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(kcat())
        .args(["-b", bootstrap, "-P", "-t", topic, "-p"])
        .arg(partition.to_string())
        .args(["-K", ":"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kcat starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut input = String::new();
    for (k, v) in records {
        assert!(
            !k.contains([':', '\n']) && !v.contains('\n'),
            "kcat line {k:?}:{v:?}"
        );
        input.push_str(&format!("{k}:{v}\n"));
    }
    // Written from a thread so a kcat that stops reading cannot block the test.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("kcat runs");
    let _ = writer.join();
    out
}

/// One record as `kcat -C -f '%o %k %s\n'` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumed {
    pub offset: i64,
    pub key: String,
    pub value: String,
}

/// `kcat -b BOOTSTRAP -C -t TOPIC -p PARTITION -o beginning -e -f '%o %k %s\n'`: every
/// record from the start of the partition to its end as of when kcat reached it, parsed.
/// Panics (with kcat's stderr) if kcat fails or prints a line it cannot parse.
pub fn consume(bootstrap: &str, topic: &str, partition: i32, extra: &[&str]) -> Vec<Consumed> {
    let out = Command::new(kcat())
        .args(["-b", bootstrap, "-C", "-t", topic, "-p"])
        .arg(partition.to_string())
        .args(["-o", "beginning", "-e", "-f", "%o %k %s\\n"])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .expect("kcat runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "kcat -C -t {topic} -p {partition} failed ({}): {stderr}",
        out.status
    );
    stdout
        .lines()
        .map(|line| {
            let mut parts = line.splitn(3, ' ');
            let parsed = (|| {
                Some(Consumed {
                    offset: parts.next()?.parse().ok()?,
                    key: parts.next()?.to_string(),
                    value: parts.next()?.to_string(),
                })
            })();
            parsed.unwrap_or_else(|| panic!("kcat printed {line:?}; stderr: {stderr}"))
        })
        .collect()
}

/// What reading `records` back should show: each (key, value) at consecutive offsets from
/// `first_offset`.
pub fn consumed_from(first_offset: i64, records: &[(String, String)]) -> Vec<Consumed> {
    records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| Consumed {
            offset: first_offset + i as i64,
            key: k.clone(),
            value: v.clone(),
        })
        .collect()
}

/// Produces `records` with kcat to `topic`/`partition` and reads the partition back from the
/// beginning with kcat, asserting kcat's producer succeeded and that the records read are
/// the ones written, in order, at consecutive offsets starting from the partition's first
/// record read (`expected_first_offset`, 0 for a new partition).
pub fn produce_and_check(
    bootstrap: &str,
    topic: &str,
    partition: i32,
    records: &[(String, String)],
    expected_first_offset: i64,
) -> Vec<Consumed> {
    let out = produce(bootstrap, topic, partition, records, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("ERROR") && !stderr.contains("failed"),
        "kcat -P -t {topic} -p {partition} failed ({}): {stderr}",
        out.status
    );
    let read = consume(bootstrap, topic, partition, &[]);
    let expected = consumed_from(expected_first_offset, records);
    assert_eq!(
        read.len(),
        expected.len(),
        "kcat read {} records from {topic}/{partition}, produced {}",
        read.len(),
        expected.len()
    );
    for (got, want) in read.iter().zip(&expected) {
        assert_eq!(got, want, "kcat read back {topic}/{partition}");
    }
    read
}
