//! A node whose properties file sets a broker config kraftd does not support (to anything but
//! Kafka's default) does not start: the real binary exits with one line naming the key, the
//! value and the file, before it touches a log directory.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_kraftd");

#[test]
fn an_unsupported_config_stops_startup_with_one_line() {
    for (line, key, shown) in [
        (
            "metric.reporters=com.example.Reporter",
            "metric.reporters",
            "\"com.example.Reporter\"",
        ),
        // Security settings that would switch on what kraftd does not implement (issue 16).
        (
            "principal.builder.class=com.example.Builder",
            "principal.builder.class",
            "\"com.example.Builder\"",
        ),
        (
            "listener.name.plaintext.ssl.engine.factory.class=com.example.Engine",
            "listener.name.plaintext.ssl.engine.factory.class",
            "\"com.example.Engine\"",
        ),
        (
            "security.providers=com.example.Provider",
            "security.providers",
            "\"com.example.Provider\"",
        ),
        // A SASL listener with Kafka's default mechanism (GSSAPI), or with OAUTHBEARER.
        (
            "listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms",
            "\"GSSAPI\"",
        ),
        (
            "listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
             listener.name.plaintext.sasl.enabled.mechanisms=OAUTHBEARER",
            "listener.name.plaintext.sasl.enabled.mechanisms",
            "\"OAUTHBEARER\"",
        ),
        (
            "client.quota.callback.class=com.example.Quotas",
            "client.quota.callback.class",
            "\"com.example.Quotas\"",
        ),
    ] {
        refused(line, key, shown);
    }
}

/// Starts a combined node whose properties file has `line`; asserts it exits with one line
/// naming `key`, the value as `shown` and the file.
fn refused(line: &str, key: &str, shown: &str) {
    let error = refusal(line, key, shown);
    assert!(error.contains("kraftd does not support"), "{error}");
}

/// Starts a combined node whose properties file has `line`; asserts it exits, before
/// creating anything, with one line naming `key`, the value as `shown` and the file, and
/// returns that line.
fn refusal(line: &str, key: &str, shown: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.properties");
    let logs = dir.path().join("logs");
    std::fs::write(
        &path,
        format!(
            "process.roles=broker,controller\nnode.id=1\n\
             controller.quorum.voters=1@127.0.0.1:1\n\
             listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:1\n\
             controller.listener.names=CONTROLLER\nlog.dirs={}\n\
             {line}\n",
            logs.display()
        ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .arg("combined")
        .arg("--config")
        .arg(&path)
        // As an operator runs it: no backtrace under the error.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .unwrap();
    assert!(!out.status.success(), "{line}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let error = lines[0].to_string();
    assert!(error.contains(&format!("for {key} in")), "{error}");
    assert!(error.contains(shown), "{error}");
    assert!(error.contains(&path.display().to_string()), "{error}");
    assert!(!logs.exists(), "nothing was created");
    error
}

/// Kafka 4.4's floor for the metadata log's segments (8 MiB, the largest Raft batch): below
/// it a large metadata batch would not fit a segment and every leader would renounce.
#[test]
fn a_metadata_segment_below_kafkas_floor_stops_startup_with_one_line() {
    let error = refusal(
        "metadata.log.segment.bytes=4096",
        "metadata.log.segment.bytes",
        "\"4096\"",
    );
    assert!(error.contains("must be at least 8388608"), "{error}");
}

/// Kafka 4 removed `kafka.security.authorizer.AclAuthorizer`; kraftd runs only the
/// StandardAuthorizer and refuses any other class, naming it, before touching anything.
#[test]
fn an_authorizer_other_than_the_standard_one_stops_startup_with_one_line() {
    for class in [
        "kafka.security.authorizer.AclAuthorizer",
        "com.example.MyAuthorizer",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.properties");
        let logs = dir.path().join("logs");
        std::fs::write(
            &path,
            format!(
                "process.roles=broker,controller\nnode.id=1\n\
                 controller.quorum.voters=1@127.0.0.1:1\n\
                 listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:1\n\
                 controller.listener.names=CONTROLLER\nlog.dirs={}\n\
                 authorizer.class.name={class}\n",
                logs.display()
            ),
        )
        .unwrap();
        let out = Command::new(BIN)
            .arg("combined")
            .arg("--config")
            .arg(&path)
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE")
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        let line = lines[0];
        assert!(line.contains("authorizer.class.name"), "{line}");
        assert!(line.contains(&format!("{class:?}")), "{line}");
        assert!(line.contains(&path.display().to_string()), "{line}");
        assert!(!logs.exists(), "nothing was created");
    }
}
