//! `cargo xtask fuzz <target>`: seed the target's corpus from the captured frames under
//! crates/protocol/tests/data/captured, then run it with cargo-fuzz (installed if missing) and
//! report how many inputs it executed.
//!
//! The fuzz crate (fuzz/) is outside the workspace; cargo-fuzz needs nightly flags, which a
//! stable toolchain accepts with `RUSTC_BOOTSTRAP=1`.

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use kraftd_protocol::header::{decode_request, decode_response, encode_request};
use kraftd_protocol::messages::RequestHeader;
use kraftd_protocol::metadata_record::encode_metadata_record;
use kraftd_protocol::records::{Compression, ControlRecordType, Header, RecordBatchBuilder};
use kraftd_protocol::{ApiKey, MetadataRecord, MetadataRecordType, RequestBody, ResponseBody};
use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The fuzz targets in fuzz/fuzz_targets.
pub const TARGETS: &[&str] = &["decode_request", "record_batch"];

#[derive(clap::Args, Debug)]
pub struct FuzzArgs {
    /// The target to run: decode_request or record_batch.
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(TARGETS))]
    target: String,
    /// Stop after this many executions (libFuzzer -runs).
    #[arg(long, conflicts_with = "seconds")]
    runs: Option<u64>,
    /// Stop after this many seconds (libFuzzer -max_total_time).
    #[arg(long)]
    seconds: Option<u64>,
    /// The sanitizer to build with (cargo fuzz -s): address, none, ...
    #[arg(long, default_value = "address")]
    sanitizer: String,
    /// Keep fuzzing after a crash (libFuzzer -fork=1 -ignore_crashes=1: one worker process,
    /// each crash saved under fuzz/artifacts/<target>/), to collect every distinct crash.
    #[arg(long)]
    keep_going: bool,
    /// Only seed the corpus; do not build or run.
    #[arg(long)]
    seed_only: bool,
    /// Further libFuzzer arguments, after `--` (e.g. `-- -max_len=65536 -jobs=1`).
    #[arg(last = true)]
    libfuzzer_args: Vec<String>,
}

pub fn run(root: &Path, args: FuzzArgs) -> Result<()> {
    let corpus = root.join("fuzz/corpus").join(&args.target);
    fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
    let seeds = match args.target.as_str() {
        "decode_request" => request_seeds(root)?,
        "record_batch" => record_batch_seeds(root)?,
        other => bail!("unknown fuzz target {other}"),
    };
    let mut seeds = seeds;
    seeds.extend(regression_seeds(root, &args.target)?);
    let written = write_corpus(&corpus, &seeds)?;
    println!(
        "==> {} seeds for {} ({} new) in {}",
        seeds.len(),
        args.target,
        written,
        corpus.display()
    );
    if args.seed_only {
        return Ok(());
    }

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    ensure_cargo_fuzz(root, &cargo)?;

    let corpus_arg = format!("fuzz/corpus/{}", args.target);
    let mut cmd_args: Vec<String> = vec![
        "fuzz".into(),
        "run".into(),
        "--fuzz-dir".into(),
        "fuzz".into(),
        "--sanitizer".into(),
        args.sanitizer.clone(),
        args.target.clone(),
        corpus_arg,
        "--".into(),
        "-print_final_stats=1".into(),
    ];
    if let Some(n) = args.runs {
        cmd_args.push(format!("-runs={n}"));
    }
    if let Some(s) = args.seconds {
        cmd_args.push(format!("-max_total_time={s}"));
    }
    if args.keep_going {
        cmd_args.extend(["-fork=1".into(), "-ignore_crashes=1".into()]);
    }
    cmd_args.extend(args.libfuzzer_args.iter().cloned());
    println!("==> RUSTC_BOOTSTRAP=1 {cargo} {}", cmd_args.join(" "));
    let artifacts_dir = root.join("fuzz/artifacts").join(&args.target);
    let artifacts_before = list_files(&artifacts_dir);

    let mut child = Command::new(&cargo)
        .args(&cmd_args)
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .stderr(Stdio::piped())
        .spawn()
        .context("starting cargo fuzz")?;
    // libFuzzer reports on stderr: pass it through, keeping the lines the summary needs.
    let mut stats = Stats::default();
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines() {
            let line = line.context("reading cargo fuzz output")?;
            eprintln!("{line}");
            stats.observe(&line);
        }
    }
    let status = child.wait().context("waiting for cargo fuzz")?;
    println!("==> {}: {}", args.target, stats.summary());
    let new_artifacts: Vec<PathBuf> = list_files(&artifacts_dir)
        .into_iter()
        .filter(|p| !artifacts_before.contains(p))
        .collect();
    for p in &new_artifacts {
        println!("==> new artifact: {}", p.display());
    }
    if status.success() && !new_artifacts.is_empty() {
        bail!(
            "{} crashing inputs found (see above); reproduce one with \
             `RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz {} <file>`",
            new_artifacts.len(),
            args.target
        );
    }
    if !status.success() {
        bail!(
            "`cargo fuzz run {}` failed ({status}); a crashing input is under fuzz/artifacts/{}/ \
             (copy it to fuzz/regressions/{}/ to keep it)",
            args.target,
            args.target,
            args.target
        );
    }
    Ok(())
}

fn list_files(dir: &Path) -> HashSet<PathBuf> {
    fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

/// The numbers libFuzzer's output ends with.
#[derive(Default, Debug)]
struct Stats {
    /// From the final `Done N runs` / `stat::number_of_executed_units` lines.
    executions: Option<u64>,
    /// From the last `#N ...` progress line (all there is in -fork mode).
    last_progress: Option<u64>,
    seconds: Option<u64>,
    cov: Option<u64>,
    ft: Option<u64>,
    corpus: Option<String>,
    peak_rss_mb: Option<u64>,
    /// -fork mode's `oom/timeout/crash: a/b/c` counts.
    failures: Option<String>,
}

impl Stats {
    fn observe(&mut self, line: &str) {
        let line = line.trim();
        // "Done 123456 runs in 300 second(s)"
        if let Some(rest) = line.strip_prefix("Done ") {
            let mut words = rest.split_whitespace();
            self.executions = words
                .next()
                .and_then(|n| n.parse().ok())
                .or(self.executions);
            self.seconds = words.nth(2).and_then(|n| n.parse().ok()).or(self.seconds);
        } else if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
            self.executions = n.trim().parse().ok().or(self.executions);
        } else if let Some(n) = line.strip_prefix("stat::peak_rss_mb:") {
            self.peak_rss_mb = n.trim().parse().ok();
        } else if let Some(rest) = line.strip_prefix('#') {
            // "#1234 NEW cov: 567 ft: 890 corp: 12/3456b ...", and in -fork mode
            // "#1234: cov: 567 ft: 890 corp: 12 exec/s: 99 oom/timeout/crash: 0/0/1 time: 30s".
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            self.last_progress = digits.parse().ok().or(self.last_progress);
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                match pair[0] {
                    "cov:" => self.cov = pair[1].parse().ok().or(self.cov),
                    "ft:" => self.ft = pair[1].parse().ok().or(self.ft),
                    "corp:" => self.corpus = Some(pair[1].to_string()),
                    "time:" => {
                        let t = pair[1].trim_end_matches('s');
                        self.seconds = t.parse().ok().or(self.seconds);
                    }
                    "oom/timeout/crash:" => self.failures = Some(pair[1].to_string()),
                    _ => {}
                }
            }
        }
    }

    fn summary(&self) -> String {
        let show = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
        let mut s = format!(
            "{} executions in {} s, cov {} ft {}, corpus {}, peak rss {} MB",
            show(self.executions.or(self.last_progress)),
            show(self.seconds),
            show(self.cov),
            show(self.ft),
            self.corpus.as_deref().unwrap_or("?"),
            show(self.peak_rss_mb),
        );
        if let Some(f) = &self.failures {
            s.push_str(&format!(", oom/timeout/crash {f}"));
        }
        s
    }
}

fn ensure_cargo_fuzz(root: &Path, cargo: &str) -> Result<()> {
    let installed = Command::new(cargo)
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        crate::run(root, cargo, &["install", "cargo-fuzz", "--locked"])?;
    }
    Ok(())
}

/// A captured frame: `<client>-<ApiName>-k<apiKey>-v<version>-<seq>.request|.response`.
struct Captured {
    stem: String,
    api_key: i16,
    version: i16,
    request: bool,
    bytes: Bytes,
}

fn captured(root: &Path) -> Result<Vec<Captured>> {
    let dir = root.join("crates/protocol/tests/data/captured");
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(&dir) else {
        println!("==> no captured frames in {}", dir.display());
        return Ok(out);
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let request = match path.extension().and_then(|e| e.to_str()) {
            Some("request") => true,
            Some("response") => false,
            _ => continue,
        };
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        // Parse from the right: the client name could hold dashes.
        let parts: Vec<&str> = stem.rsplitn(4, '-').collect();
        let (Some(v), Some(k)) = (parts.get(1), parts.get(2)) else {
            continue;
        };
        let (Some(Ok(version)), Some(Ok(api_key))) = (
            v.strip_prefix('v').map(str::parse),
            k.strip_prefix('k').map(str::parse),
        ) else {
            continue;
        };
        let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        out.push(Captured {
            stem: stem.to_string(),
            api_key,
            version,
            request,
            bytes: Bytes::from(bytes),
        });
    }
    Ok(out)
}

/// Seeds for decode_request: every captured request frame, plus, for every api key and
/// version, a small valid request built by decoding a filler body (to reach the versions no
/// client was captured using).
fn request_seeds(root: &Path) -> Result<Vec<(String, Bytes)>> {
    let mut seeds: Vec<(String, Bytes)> = captured(root)?
        .into_iter()
        .filter(|c| c.request)
        .map(|c| (c.stem, c.bytes))
        .collect();
    for &key in ApiKey::ALL {
        for version in key.valid_versions().iter() {
            let Some(body) = filler_request(key, version) else {
                continue;
            };
            let header = RequestHeader {
                request_api_key: key.code(),
                request_api_version: version,
                correlation_id: 1,
                client_id: Some("kraftd-fuzz".into()),
                ..Default::default()
            };
            if let Ok(frame) = encode_request(&header, &body) {
                seeds.push((
                    format!("synthetic-{}-v{version}", key.name()),
                    frame.into_bytes(),
                ));
            }
        }
    }
    Ok(seeds)
}

/// A request body at `version` decoded from bytes of one repeated value: zeros give empty
/// strings and arrays in non-flexible versions, ones give empty compact ones in flexible
/// versions.
fn filler_request(key: ApiKey, version: i16) -> Option<RequestBody> {
    [0u8, 1].into_iter().find_map(|fill| {
        let mut b = Bytes::from(vec![fill; 256]);
        RequestBody::decode(key, version, &mut b).ok()
    })
}

/// Seeds for record_batch: the `records` of every captured Produce request, and of every
/// captured Fetch/ShareFetch response (FetchSnapshot's snapshot chunks too), plus batches
/// written with every codec holding one metadata record of every type and version, control
/// records and headers.
fn record_batch_seeds(root: &Path) -> Result<Vec<(String, Bytes)>> {
    let mut seeds = Vec::new();
    let mut failed = 0usize;
    for c in captured(root)? {
        let mut records: Vec<Bytes> = Vec::new();
        if c.request {
            if c.api_key != ApiKey::Produce.code() {
                continue;
            }
            match decode_request(c.bytes.clone()) {
                Ok(req) => {
                    if let RequestBody::Produce(p) = req.body {
                        for t in p.topic_data {
                            records.extend(t.partition_data.into_iter().filter_map(|p| p.records));
                        }
                    }
                }
                Err(_) => failed += 1,
            }
        } else {
            let Some(key) = ApiKey::from_i16(c.api_key) else {
                continue;
            };
            if !matches!(
                key,
                ApiKey::Fetch | ApiKey::ShareFetch | ApiKey::FetchSnapshot
            ) {
                continue;
            }
            match decode_response(key, c.version, c.bytes.clone()) {
                Ok((_, ResponseBody::Fetch(f))) => {
                    for t in f.responses {
                        records.extend(t.partitions.into_iter().filter_map(|p| p.records));
                    }
                }
                Ok((_, ResponseBody::ShareFetch(f))) => {
                    for t in f.responses {
                        records.extend(t.partitions.into_iter().filter_map(|p| p.records));
                    }
                }
                Ok((_, ResponseBody::FetchSnapshot(f))) => {
                    for t in f.topics {
                        records.extend(t.partitions.into_iter().map(|p| p.unaligned_records));
                    }
                }
                Ok(_) => {}
                Err(_) => failed += 1,
            }
        }
        for (i, r) in records.into_iter().filter(|r| !r.is_empty()).enumerate() {
            seeds.push((format!("{}-records{i}", c.stem), r));
        }
    }
    if failed > 0 {
        println!("==> {failed} captured Produce/Fetch frames did not decode; seeded without them");
    }
    seeds.extend(synthetic_batches()?);
    Ok(seeds)
}

/// Every metadata record type at every version, as `__cluster_metadata` values.
fn metadata_values() -> Vec<Bytes> {
    let mut out = Vec::new();
    for &kind in MetadataRecordType::ALL {
        for version in kind.valid_versions().iter() {
            let record = [0u8, 1].into_iter().find_map(|fill| {
                let mut b = Bytes::from(vec![fill; 128]);
                MetadataRecord::decode(kind, version, &mut b).ok()
            });
            if let Some(value) = record.and_then(|r| encode_metadata_record(&r, version).ok()) {
                out.push(value);
            }
        }
    }
    out
}

fn synthetic_batches() -> Result<Vec<(String, Bytes)>> {
    let values = metadata_values();
    let mut seeds = Vec::new();
    for codec in Compression::ALL {
        // A KRaft-style batch: one metadata record per value.
        let mut b = RecordBatchBuilder::new(0)
            .partition_leader_epoch(1)
            .compression(codec);
        for v in values.iter().take(64) {
            b.append(1_700_000_000_000, None, Some(v.clone()), vec![])?;
        }
        seeds.push((format!("synthetic-metadata-{}", codec.name()), b.build()?));

        // A data batch from an idempotent producer, with keys, headers and a tombstone.
        let mut b = RecordBatchBuilder::new(0)
            .producer(4000, 0, 0)
            .compression(codec);
        b.append(
            1_700_000_000_000,
            Some(Bytes::from_static(b"key")),
            Some(Bytes::from_static(b"value")),
            vec![
                Header::new("trace", Some(Bytes::from_static(b"abc"))),
                Header::new("n", None),
            ],
        )?;
        b.append(
            1_700_000_000_005,
            Some(Bytes::from_static(b"key")),
            None,
            vec![],
        )?;
        b.append_with_offset(5, 1_699_999_999_999, None, Some(Bytes::new()), vec![])?;
        let data = b.build()?;

        // Transaction markers after it: two batches in one buffer, as a fetch returns them.
        let mut m = RecordBatchBuilder::new(6)
            .producer(4000, 0, -1)
            .transactional(true)
            .control(true);
        m.append(
            1_700_000_000_010,
            Some(ControlRecordType::Commit.encode_key()),
            Some(Bytes::from_static(&[0, 0, 0, 0, 0, 1])),
            vec![],
        )?;
        let mut two = data.to_vec();
        two.extend_from_slice(&m.build()?);
        seeds.push((format!("synthetic-data-{}", codec.name()), data));
        seeds.push((
            format!("synthetic-data-and-marker-{}", codec.name()),
            Bytes::from(two),
        ));
    }
    Ok(seeds)
}

/// Inputs that once crashed a target, kept in fuzz/regressions/<target>/.
fn regression_seeds(root: &Path, target: &str) -> Result<Vec<(String, Bytes)>> {
    let dir = root.join("fuzz/regressions").join(target);
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(&dir) else {
        return Ok(out);
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        if !path.is_file() || path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let name = format!("regression-{}", entry.file_name().to_string_lossy());
        out.push((name, Bytes::from(fs::read(&path)?)));
    }
    Ok(out)
}

/// Writes the seeds not already present (by name), skipping duplicate contents; returns how
/// many were written. libFuzzer's own corpus files (named by hash) are left alone.
fn write_corpus(dir: &Path, seeds: &[(String, Bytes)]) -> Result<usize> {
    let mut contents = HashSet::new();
    let mut written = 0;
    for (name, bytes) in seeds {
        if !contents.insert(bytes.clone()) {
            continue;
        }
        let path = dir.join(format!("seed-{name}"));
        if path.exists() {
            continue;
        }
        fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
        written += 1;
    }
    Ok(written)
}
