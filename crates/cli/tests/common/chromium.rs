//! Headless Chromium for the console's browser tests: Debian's `chromium` package
//! (`/usr/bin/chromium`), installed on first use with `apt-get install -y chromium` when
//! absent (the test machines run as root; Chromium's shared libraries make the `dpkg -x`
//! route kcat takes impractical). Each run gets a fresh `--user-data-dir` and the flags
//! that keep it off the network (no sync, no component updates, no QUIC), loads one URL
//! and lets the page's JavaScript run for a virtual-time budget before it dumps the DOM or
//! writes a screenshot. A run is killed after [`RUN_LIMIT`]; any failure panics with one
//! line naming the command.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where Debian installs it.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// The longest one headless run may take.
pub const RUN_LIMIT: Duration = Duration::from_secs(90);

/// Virtual time the page's scripts get before the DOM is read (its fetches complete
/// within it; the console's 2 s poll timer fires a few times).
const VIRTUAL_TIME_BUDGET_MS: u32 = 5_000;

/// The browser, installed on first use.
pub fn chromium() -> PathBuf {
    static READY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match READY.get_or_init(prepare) {
        Ok(path) => path.clone(),
        Err(e) => panic!("{e}"),
    }
}

fn prepare() -> Result<PathBuf, String> {
    let path = PathBuf::from(CHROMIUM);
    if !path.exists() {
        let out = Command::new("apt-get")
            .args(["install", "-y", "chromium"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .output()
            .map_err(|e| format!("apt-get install -y chromium: {e}"))?;
        if !out.status.success() || !path.exists() {
            return Err(format!(
                "apt-get install -y chromium failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    Ok(path)
}

/// Runs headless Chromium on `url` with `extra` flags; its stdout.
fn run(url: &str, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut command = Command::new(chromium());
    command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1280,900",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("starting {CHROMIUM}: {e}"));
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
        out
    });
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = reader.join().unwrap();
            assert!(
                status.success(),
                "chromium {extra:?} {url} exited with {status}"
            );
            return out;
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium {extra:?} {url} did not finish in {RUN_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The DOM of `url` once its scripts had [`VIRTUAL_TIME_BUDGET_MS`] of virtual time.
pub fn dump_dom(url: &str) -> String {
    run(
        url,
        &[
            format!("--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}"),
            "--dump-dom".into(),
        ],
    )
}

/// A PNG of `url` at 1280x900 written to `path`.
pub fn screenshot(url: &str, path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(path);
    run(
        url,
        &[
            format!("--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}"),
            format!("--screenshot={}", path.display()),
        ],
    );
    assert!(
        path.exists(),
        "chromium wrote no screenshot {}",
        path.display()
    );
}

/// The console's own report of its first contentful paint (the Performance API's
/// `first-contentful-paint`, written into `#first-paint` by `console.js`), in ms.
pub fn first_paint_ms(url: &str) -> Option<f64> {
    let dom = dump_dom(url);
    let after = dom.split("id=\"first-paint\">").nth(1)?;
    after.split('<').next()?.trim().parse().ok()
}
