//! Apache Kafka's own jars for tests that run Kafka's stock tools against kraftd. The README's
//! test command runs on a fresh machine, so the test setup fetches them itself: when
//! `target/kafka-jars/` (or `$KRAFTD_KAFKA_JARS`) lacks them, Maven copies
//! `tools/capture/pom.xml`'s runtime classpath (Kafka 4.4.0 from Maven Central, as
//! `tools/capture/capture.sh` does) into a scratch directory that is renamed into place once
//! complete, under a lock file so concurrent test processes fetch once. Java (17+) is
//! required, and Maven when a fetch is needed: without them the test fails with one line
//! saying what to install, never passes silently.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime};

/// The Kafka release whose jars are fetched (the pom's `kafka.version`).
pub const KAFKA_VERSION: &str = "4.4.0";

/// Jars whose presence means a complete fetch: the tools, the client they drive, and the
/// tools' argument parser.
const REQUIRED_JARS: [&str; 4] = [
    "kafka-tools-4.4.0.jar",
    "kafka-clients-4.4.0.jar",
    "kafka-server-common-4.4.0.jar",
    "argparse4j-0.7.0.jar",
];

/// How long a Maven fetch may take before it is killed (a cold fetch takes seconds).
const FETCH_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// The workspace root (`tools/`, `target/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root exists")
}

/// Where the jars live: `target/kafka-jars/`, as `capture.sh` keeps them, or
/// `$KRAFTD_KAFKA_JARS` (a CI cache, or a cold-fetch check).
pub fn jars_dir() -> PathBuf {
    match std::env::var_os("KRAFTD_KAFKA_JARS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo_root().join("target").join("kafka-jars"),
    }
}

/// The Java classpath (`<dir>/*`) of Kafka's jars, fetched with Maven on first use. Panics
/// with one line when Java or Maven is missing or the fetch fails.
pub fn classpath() -> String {
    static CLASSPATH: OnceLock<Result<String, String>> = OnceLock::new();
    match CLASSPATH.get_or_init(prepare) {
        Ok(classpath) => classpath.clone(),
        Err(e) => panic!("{e}"),
    }
}

/// `-Dlog4j2.configurationFile=...`: Kafka's tools log warnings and errors to stderr only.
pub fn log4j_option() -> String {
    format!(
        "-Dlog4j2.configurationFile={}",
        repo_root()
            .join("tools/capture/log4j2-tools.properties")
            .display()
    )
}

fn prepare() -> Result<String, String> {
    check_java()?;
    let dir = jars_dir();
    if !complete(&dir) {
        let _lock = Lock::acquire(&dir.with_extension("lock"))?;
        // Another process may have fetched them while this one waited.
        if !complete(&dir) {
            fetch(&dir)?;
        }
    }
    Ok(format!("{}/*", dir.display()))
}

fn complete(dir: &Path) -> bool {
    REQUIRED_JARS.iter().all(|jar| dir.join(jar).is_file())
}

/// Java 17 or newer on PATH, as Kafka 4's tools need.
fn check_java() -> Result<(), String> {
    let out = Command::new("java").arg("-version").output().map_err(|e| {
        format!(
            "the stock Kafka tool tests need Java 17+ on PATH, and `java -version` failed ({e}): \
             install a JDK, e.g. `apt-get install openjdk-17-jre-headless`"
        )
    })?;
    // `openjdk version "17.0.15" 2025-04-15` (stderr); "1.8.0_x" for Java 8.
    let text = String::from_utf8_lossy(&out.stderr);
    let major = text
        .split('"')
        .nth(1)
        .and_then(|v| v.split(['.', '-', '+']).next())
        .and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(m) if m >= 17 => Ok(()),
        _ => Err(format!(
            "the stock Kafka tool tests need Java 17+, and `java -version` says {:?}: install a \
             newer JDK, e.g. `apt-get install openjdk-17-jre-headless`",
            text.lines().next().unwrap_or_default()
        )),
    }
}

/// Copies the pom's runtime dependencies into `dir` through a scratch directory.
fn fetch(dir: &Path) -> Result<(), String> {
    let root = repo_root();
    let pom = root.join("tools/capture/pom.xml");
    if Command::new("mvn")
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        return Err(format!(
            "{} lacks Kafka's jars and fetching them needs Maven (`mvn`) on PATH: install it, \
             e.g. `apt-get install maven`",
            dir.display()
        ));
    }
    let scratch = dir.with_extension(format!("part-{}", std::process::id()));
    let log_path = dir.with_extension("fetch.log");
    let _ = fs::remove_dir_all(&scratch);
    let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let started = Instant::now();
    eprintln!(
        "fetching Apache Kafka {KAFKA_VERSION} jars with Maven into {}",
        dir.display()
    );
    let mut child = Command::new("mvn")
        .args(["-q", "-B", "-Dstyle.color=never", "-f"])
        .arg(&pom)
        .arg(format!("-Dkafka.version={KAFKA_VERSION}"))
        .args(["dependency:copy-dependencies", "-DincludeScope=runtime"])
        .arg(format!("-DoutputDirectory={}", scratch.display()))
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .spawn()
        .map_err(|e| format!("starting mvn: {e}"))?;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > FETCH_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            let _ = fs::remove_dir_all(&scratch);
            return Err(format!(
                "fetching Kafka's jars with Maven took over {FETCH_TIMEOUT:?}; see {}",
                log_path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if !status.success() || !complete(&scratch) {
        let _ = fs::remove_dir_all(&scratch);
        let output = fs::read_to_string(&log_path).unwrap_or_default();
        let last = output
            .lines()
            .rev()
            .find(|l| l.contains("ERROR"))
            .or_else(|| output.lines().last())
            .unwrap_or("no output");
        return Err(format!(
            "fetching Kafka {KAFKA_VERSION}'s jars with `mvn -f {}` failed ({status}; Maven \
             Central must be reachable): {last} (full log: {})",
            pom.display(),
            log_path.display()
        ));
    }
    // A directory without every jar is an interrupted fetch: replace it.
    let _ = fs::remove_dir_all(dir);
    fs::rename(&scratch, dir).map_err(|e| format!("renaming {}: {e}", scratch.display()))?;
    eprintln!(
        "fetched Apache Kafka {KAFKA_VERSION} jars into {} in {:.1} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A lock file created exclusively, holding the owner's pid; removed on drop. A lock whose
/// owner is gone (or older than a fetch may take) is stale and taken over.
struct Lock {
    path: PathBuf,
}

impl Lock {
    fn acquire(path: &Path) -> Result<Lock, String> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let deadline = Instant::now() + FETCH_TIMEOUT + Duration::from_secs(60);
        loop {
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut file) => {
                    let _ = write!(file, "{}", std::process::id());
                    return Ok(Lock {
                        path: path.to_path_buf(),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if stale(path) {
                        let _ = fs::remove_file(path);
                        continue;
                    }
                    if Instant::now() > deadline {
                        return Err(format!(
                            "waited too long for {} (another fetch of Kafka's jars)",
                            path.display()
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

fn stale(path: &Path) -> bool {
    let owner_gone = fs::read_to_string(path)
        .ok()
        .and_then(|pid| pid.trim().parse::<u32>().ok())
        .is_some_and(|pid| {
            Path::new("/proc").is_dir() && !Path::new(&format!("/proc/{pid}")).exists()
        });
    let too_old = fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > FETCH_TIMEOUT + Duration::from_secs(60));
    owner_gone || too_old
}
