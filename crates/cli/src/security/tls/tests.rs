//! The TLS settings on real PEM files (a CA and certificates the test makes): what loads,
//! the per-listener override, Kafka's inline PEM and encrypted keys, and every refusal as
//! one line naming the setting without showing a secret.

use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};

use crate::config::NodeConfig;
use crate::properties::Properties;

/// A CA, and a server certificate for 127.0.0.1 signed by it, as PEM files in `dir`:
/// `ca.pem`, `keystore.pem` (key and chain), `key.pem`, `cert.pem`.
fn write_pki(dir: &Path) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "test CA");
    let ca = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(
        dir.join("keystore.pem"),
        format!("{}{}", key.serialize_pem(), cert.pem()),
    )
    .unwrap();
}

/// A combined node whose client listener (and, with `controller_ssl`, controller listener)
/// is SSL, with `extra` lines.
fn config(dir: &Path, controller_ssl: bool, extra: &str) -> anyhow::Result<NodeConfig> {
    let controller = if controller_ssl { "SSL" } else { "PLAINTEXT" };
    let text = format!(
        "process.roles=broker,controller\nnode.id=1\n\
         controller.quorum.voters=1@127.0.0.1:9093\n\
         listeners=CLIENT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n\
         controller.listener.names=CONTROLLER\n\
         listener.security.protocol.map=CLIENT:SSL,CONTROLLER:{controller}\n\
         inter.broker.listener.name=CLIENT\n\
         ssl.keystore.type=PEM\nssl.keystore.location={d}/keystore.pem\n\
         ssl.truststore.type=PEM\nssl.truststore.location={d}/ca.pem\n{extra}",
        d = dir.display()
    );
    NodeConfig::from_properties(Properties::parse(&text))
}

fn refused(dir: &Path, extra: &str) -> String {
    let e = config(dir, false, extra).unwrap_err().to_string();
    assert!(!e.contains('\n'), "{e}");
    e
}

#[test]
fn ssl_listeners_and_the_nodes_own_connections_get_tls() {
    let dir = tempfile::tempdir().unwrap();
    write_pki(dir.path());
    let c = config(dir.path(), true, "").unwrap();
    let client = c.listeners.iter().find(|l| l.name == "CLIENT").unwrap();
    let controller = c.controller_listener().unwrap();
    assert!(c.listener_security(client).tls.is_some());
    assert!(c.listener_security(controller).tls.is_some());
    assert!(c.client_security("CLIENT").tls.is_some());
    assert!(c.client_security("CONTROLLER").tls.is_some());
    // A PLAINTEXT controller listener stays plain.
    let c = config(dir.path(), false, "").unwrap();
    assert!(c
        .listener_security(c.controller_listener().unwrap())
        .tls
        .is_none());
    assert!(c.client_security("CONTROLLER").tls.is_none());
}

#[test]
fn store_types_other_than_pem_are_refused_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    write_pki(dir.path());
    for (extra, key) in [
        ("ssl.keystore.type=JKS\n", "ssl.keystore.type"),
        ("ssl.truststore.type=PKCS12\n", "ssl.truststore.type"),
        (
            "listener.name.client.ssl.keystore.type=PKCS12\n",
            "listener.name.client.ssl.keystore.type",
        ),
    ] {
        let e = refused(dir.path(), extra);
        assert!(e.contains(key) && e.contains("PEM"), "{e}");
    }
    // Unset: Kafka's default JKS.
    let text = format!(
        "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n\
         listeners=SSL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n\
         controller.listener.names=CONTROLLER\nssl.keystore.location={}/keystore.pem\n",
        dir.path().display()
    );
    let e = NodeConfig::from_properties(Properties::parse(&text))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ssl.keystore.type is not set") && e.contains("JKS"),
        "{e}"
    );
}

#[test]
fn bad_settings_are_one_line_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    write_pki(dir.path());
    for (extra, says) in [
        (
            "ssl.enabled.protocols=TLSv1.1,TLSv1.2\n",
            "ssl.enabled.protocols",
        ),
        ("ssl.protocol=SSLv3\n", "ssl.protocol"),
        (
            "ssl.enabled.protocols=TLSv1.3\nssl.protocol=TLSv1.2\n",
            "no TLS protocol left",
        ),
        (
            "ssl.cipher.suites=TLS_RSA_WITH_RC4_128_MD5\n",
            "ssl.cipher.suites",
        ),
        ("ssl.client.auth=sometimes\n", "ssl.client.auth"),
        (
            "ssl.principal.mapping.rules=RULE:^CN=(.*)$/$1/X\n",
            "ssl.principal.mapping.rules",
        ),
        (
            "ssl.endpoint.identification.algorithm=ldaps\n",
            "ssl.endpoint.identification.algorithm",
        ),
        ("ssl.keystore.key=x\n", "both"),
        ("ssl.truststore.certificates=x\n", "both"),
        (
            "listener.name.client.ssl.keystore.location=/nonexistent/ks.pem\n",
            "listener.name.client.ssl.keystore.location",
        ),
        (
            "listener.name.client.ssl.truststore.location=/etc/hostname\n",
            "no CERTIFICATE block",
        ),
    ] {
        let e = refused(dir.path(), extra);
        assert!(e.contains(says), "{extra}: {e}");
    }
    // Required client authentication without a truststore.
    let text = format!(
        "process.roles=broker\nnode.id=2\ncontroller.quorum.voters=1@127.0.0.1:9093\n\
         listeners=SSL://127.0.0.1:9092\ncontroller.listener.names=CONTROLLER\n\
         ssl.keystore.type=PEM\nssl.keystore.location={}/keystore.pem\n\
         ssl.client.auth=required\n",
        dir.path().display()
    );
    let e = NodeConfig::from_properties(Properties::parse(&text))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ssl.client.auth") && e.contains("truststore"),
        "{e}"
    );
    // No keystore at all.
    let e = NodeConfig::from_properties(Properties::parse(
        "process.roles=broker\nnode.id=2\ncontroller.quorum.voters=1@127.0.0.1:9093\n\
         listeners=SSL://127.0.0.1:9092\ncontroller.listener.names=CONTROLLER\n",
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("listener SSL") && e.contains("no keystore"),
        "{e}"
    );
}

#[test]
fn a_per_listener_setting_wins_over_the_global_one() {
    let dir = tempfile::tempdir().unwrap();
    write_pki(dir.path());
    // The global value is fine; the listener's own is not, and it is the one read.
    let e = refused(
        dir.path(),
        "ssl.client.auth=none\nlistener.name.client.ssl.client.auth=bogus\n",
    );
    assert!(e.contains("listener.name.client.ssl.client.auth"), "{e}");
    // And a good override of a bad global value loads.
    config(
        dir.path(),
        false,
        "ssl.cipher.suites=bogus\nlistener.name.client.ssl.cipher.suites=TLS_AES_128_GCM_SHA256\n",
    )
    .unwrap();
}

#[test]
fn inline_pem_and_passwords_follow_kafkas_rules() {
    let dir = tempfile::tempdir().unwrap();
    write_pki(dir.path());
    let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap();
    // Kafka's inline PEM, each value on one line of the properties file.
    let one_line = |pem: String| pem.replace('\n', " ");
    let text = format!(
        "process.roles=broker\nnode.id=2\ncontroller.quorum.voters=1@127.0.0.1:9093\n\
         listeners=SSL://127.0.0.1:9092\ncontroller.listener.names=CONTROLLER\n\
         ssl.keystore.type=PEM\nssl.keystore.key={}\nssl.keystore.certificate.chain={}\n\
         ssl.truststore.type=PEM\nssl.truststore.certificates={}\n",
        one_line(read("key.pem")),
        one_line(read("cert.pem")),
        one_line(read("ca.pem")),
    );
    let c = NodeConfig::from_properties(Properties::parse(&text)).unwrap();
    assert!(c.listener_security(&c.listeners[0]).tls.is_some());

    // A store password on a PEM store is refused, and not shown.
    for key in ["ssl.keystore.password", "ssl.truststore.password"] {
        let e = refused(dir.path(), &format!("listener.name.client.{key}=hunter2\n"));
        assert!(e.contains(key) && !e.contains("hunter2"), "{e}");
    }
    // A key password for a key that is not encrypted.
    let e = refused(dir.path(), "ssl.key.password=hunter2\n");
    assert!(e.contains("not encrypted") && !e.contains("hunter2"), "{e}");
}

#[test]
fn an_encrypted_pkcs8_key_loads_with_its_password() {
    let dir = tempfile::tempdir().unwrap();
    write_pki(dir.path());
    let d = dir.path();
    let status = std::process::Command::new("openssl")
        .args([
            "pkcs8",
            "-topk8",
            "-v2",
            "aes-256-cbc",
            "-passout",
            "pass:s3cret",
            "-in",
        ])
        .arg(d.join("key.pem"))
        .arg("-out")
        .arg(d.join("enc.pem"))
        .status()
        .expect("the openssl command");
    assert!(status.success());
    let keystore = format!(
        "{}{}",
        std::fs::read_to_string(d.join("enc.pem")).unwrap(),
        std::fs::read_to_string(d.join("cert.pem")).unwrap()
    );
    std::fs::write(d.join("keystore.pem"), keystore).unwrap();
    config(d, false, "ssl.key.password=s3cret\n").unwrap();
    let e = refused(d, "ssl.key.password=wrong-one\n");
    assert!(
        e.contains("does not decrypt") && !e.contains("wrong-one"),
        "{e}"
    );
    let e = refused(d, "");
    assert!(
        e.contains("encrypted") && e.contains("ssl.key.password"),
        "{e}"
    );
}

#[test]
fn sasl_ssl_listeners_get_tls_then_sasl() {
    let dir = tempfile::tempdir().unwrap();
    write_pki(dir.path());
    let jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required \
                username=\"kraft\" password=\"kraft-secret\";";
    let sasl = format!(
        "listener.security.protocol.map=CLIENT:SASL_SSL,CONTROLLER:SASL_SSL\n\
         sasl.enabled.mechanisms=SCRAM-SHA-512\n\
         sasl.mechanism.controller.protocol=SCRAM-SHA-512\n\
         sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512\n\
         listener.name.client.scram-sha-512.sasl.jaas.config={jaas}\n\
         listener.name.controller.scram-sha-512.sasl.jaas.config={jaas}\n"
    );
    let c = config(dir.path(), false, &sasl).unwrap();
    for listener in [
        c.listeners.iter().find(|l| l.name == "CLIENT").unwrap(),
        c.controller_listener().unwrap(),
    ] {
        let s = c.listener_security(listener);
        assert!(s.tls.is_some() && s.sasl.is_some(), "{}", listener.name);
        let s = c.client_security(&listener.name);
        assert!(s.tls.is_some() && s.sasl.is_some(), "{}", listener.name);
    }
    // SASL_SSL without a keystore: refused, naming what is missing.
    for protocol in ["SASL_SSL", "SSL"] {
        let text = format!(
            "process.roles=broker\nnode.id=2\ncontroller.quorum.voters=1@127.0.0.1:9093\n\
             listeners=S://127.0.0.1:9092\ncontroller.listener.names=CONTROLLER\n\
             listener.security.protocol.map=S:{protocol},CONTROLLER:PLAINTEXT\n\
             sasl.enabled.mechanisms=PLAIN\nsasl.mechanism.inter.broker.protocol=PLAIN\n\
             sasl.jaas.config={PLAIN}\n",
            PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                     username=\"a\" password=\"b\" user_a=\"b\";"
        );
        let e = NodeConfig::from_properties(Properties::parse(&text))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("listener S ") && e.contains("has no keystore"),
            "{e}"
        );
    }
}
