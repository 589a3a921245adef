//! Headless Chromium for the console's browser tests: Debian's `chromium` package
//! (`/usr/bin/chromium`), installed on first use with `apt-get install -y chromium` when
//! absent (the test machines run as root; Chromium's shared libraries make the `dpkg -x`
//! route kcat takes impractical). Each run gets a fresh `--user-data-dir` and the flags
//! that keep it off the network (no sync, no component updates, no QUIC), loads one URL
//! and lets the page's JavaScript run for a virtual-time budget before it dumps the DOM or
//! writes a screenshot. A run is killed after [`RUN_LIMIT`]; any failure panics with one
//! line naming the command.
//!
//! [`Browser`] drives one Chromium through the DevTools protocol instead, for what a
//! one-shot run cannot do: keep a session cookie across pages, type into a form and click.
//! It talks over `--remote-debugging-pipe` (JSON messages ended by a NUL byte, Chromium
//! reading fd 3 and writing fd 4), so no websocket client is needed: `sh` hands the child's
//! stdin and stdout to Chromium as fds 3 and 4.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

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

/// The flags every run takes: headless, off the network, a fixed window.
const FLAGS: [&str; 10] = [
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
];

/// Runs headless Chromium on `url` with `extra` flags; its stdout.
fn run(url: &str, extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut command = Command::new(chromium());
    command
        .args(FLAGS)
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

/// One headless Chromium driven through the DevTools protocol, with one page (tab) whose
/// cookies last as long as the browser. Killed when dropped.
pub struct Browser {
    child: Child,
    to_browser: ChildStdin,
    /// The browser's messages (answers and events), as the reader thread parses them.
    from_browser: mpsc::Receiver<Value>,
    next_id: u64,
    /// The page's flattened session.
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium with a blank page attached.
    pub fn launch() -> Browser {
        let profile = tempfile::tempdir().unwrap();
        // fd 3 is what Chromium reads commands from, fd 4 where it writes answers: the
        // pipes this process holds as the child's stdin and stdout.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("exec \"$0\" \"$@\" 3<&0 4>&1 0</dev/null 1>/dev/null")
            .arg(chromium())
            .args(FLAGS)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("--remote-debugging-pipe")
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {CHROMIUM} --remote-debugging-pipe: {e}"));
        let to_browser = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, from_browser) = mpsc::channel();
        std::thread::spawn(move || loop {
            let mut message = Vec::new();
            match stdout.read_until(0, &mut message) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if message.last() == Some(&0) {
                message.pop();
            }
            match serde_json::from_slice::<Value>(&message) {
                Ok(v) => {
                    if tx.send(v).is_err() {
                        return;
                    }
                }
                Err(e) => panic!(
                    "chromium sent a message that is not JSON ({e}): {}",
                    String::from_utf8_lossy(&message)
                ),
            }
        });
        let mut browser = Browser {
            child,
            to_browser,
            from_browser,
            next_id: 0,
            session: String::new(),
            _profile: profile,
        };
        let target = browser.send(None, "Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].as_str().unwrap().to_string();
        let attached = browser.send(
            None,
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        browser.session = attached["sessionId"].as_str().unwrap().to_string();
        browser.call("Page.enable", json!({}));
        browser
    }

    /// Sends `method` to the browser (`session` `None`) or a page; its `result`. Events
    /// met while waiting are dropped (nothing here subscribes to any).
    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .and_then(|()| self.to_browser.flush())
            .unwrap_or_else(|e| panic!("chromium {method}: writing to its pipe: {e}"));
        let deadline = Instant::now() + RUN_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let answer = self
                .from_browser
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("chromium {method}: no answer ({e})"));
            if answer["id"].as_u64() != Some(id) {
                continue;
            }
            assert!(
                answer["error"].is_null(),
                "chromium {method} {}: {}",
                message["params"],
                answer["error"]
            );
            return answer["result"].clone();
        }
    }

    /// `method` on the page.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(Some(&session), method, params)
    }

    /// Loads `url` in the page (a new document; the cookies stay).
    pub fn navigate(&mut self, url: &str) {
        let r = self.call("Page.navigate", json!({"url": url}));
        assert!(r["errorText"].is_null(), "navigating to {url}: {r}");
    }

    /// The value of JavaScript `expression` in the page (a promise is awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            r["exceptionDetails"].is_null(),
            "evaluating {expression}: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Waits until `expression` is neither false, null nor undefined; its value. Panics
    /// with `what` and the page's text after [`RUN_LIMIT`].
    pub fn wait_for(&mut self, what: &str, expression: &str) -> Value {
        let deadline = Instant::now() + RUN_LIMIT;
        loop {
            let v = self.eval(expression);
            if !(v.is_null() || v == json!(false)) {
                return v;
            }
            if Instant::now() > deadline {
                let text = self.eval("document.body ? document.body.innerText : ''");
                panic!("{what}: not seen in {RUN_LIMIT:?}; the page shows: {text}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A left click in the middle of the element `selector` names, as the mouse does it.
    pub fn click(&mut self, selector: &str) {
        let js = format!(
            "(() => {{ const e = document.querySelector({sel}); if (!e) return null; \
             e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
             return [r.left + r.width / 2, r.top + r.height / 2]; }})()",
            sel = json!(selector)
        );
        let at = self.wait_for(&format!("the element {selector}"), &js);
        let (x, y) = (at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            );
        }
    }

    /// Types `text` where the focus is, as a keyboard's input method would.
    pub fn type_text(&mut self, text: &str) {
        self.call("Input.insertText", json!({"text": text}));
    }

    /// Presses and releases a non-printing key (`Tab`, `ArrowDown`, `Enter`, ...) with its
    /// Windows virtual key code, which Chromium dispatches on.
    pub fn press(&mut self, key: &str, key_code: u32) {
        for kind in ["rawKeyDown", "keyUp"] {
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": kind, "key": key, "code": key,
                       "windowsVirtualKeyCode": key_code, "nativeVirtualKeyCode": key_code}),
            );
        }
    }

    /// Clicks into the field `selector` and types `text` into it.
    pub fn fill(&mut self, selector: &str, text: &str) {
        self.click(selector);
        self.type_text(text);
    }

    /// A PNG of the page as it is now, written to `path`.
    pub fn screenshot(&mut self, path: &Path) {
        use base64::Engine as _;
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}));
        let png = base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, png).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
