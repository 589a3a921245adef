//! JAAS parsing as Kafka's `JaasConfig` does it, and the SASL settings a node config loads
//! or refuses.

use super::*;
use crate::config::NodeConfig;

#[test]
fn jaas_parses_kafkas_plain_server_config() {
    let j = parse_jaas(
        r#"org.apache.kafka.common.security.plain.PlainLoginModule required
           username="admin" password="admin-secret"
           user_admin="admin-secret" user_alice="a \"quoted\" secret;=" ;"#,
    )
    .unwrap();
    assert_eq!(j.login_module, PLAIN_LOGIN_MODULE);
    assert_eq!(j.flag, "required");
    assert_eq!(j.options["username"], "admin");
    assert_eq!(j.options["user_alice"], "a \"quoted\" secret;=");
    assert_eq!(j.options.len(), 4);
    assert!(!format!("{j:?}").contains("secret"), "Debug hides values");
    // Unquoted values and comments, as Java's StreamTokenizer reads them.
    let j = parse_jaas(
        "org.apache.kafka.common.security.scram.ScramLoginModule required /* c */ \
         username=bob // trailing\n password=x-y_z;",
    )
    .unwrap();
    assert_eq!(j.options["username"], "bob");
    assert_eq!(j.options["password"], "x-y_z");
}

#[test]
fn bad_jaas_is_refused_without_quoting_values() {
    for bad in [
        "",
        "Module;",
        "Module sometimes;",
        r#"Module required username="a""#,
        r#"Module required username="a" password;"#,
        r#"Module required username= ;"#,
        r#"Module required username="unterminated;"#,
        r#"A required; B required;"#,
        r#"Module required /* open"#,
    ] {
        let e = parse_jaas(bad).unwrap_err();
        assert!(!e.contains("unterminated;"), "{e}");
    }
}

const BASE: &str = "process.roles=broker,controller\nnode.id=1\n\
                    controller.quorum.voters=1@127.0.0.1:9093\n\
                    controller.listener.names=CONTROLLER\n";

fn load(extra: &str) -> Result<NodeConfig> {
    NodeConfig::from_properties(Properties::parse(&format!("{BASE}{extra}")))
}

const SASL_LISTENERS: &str = "listeners=PLAINTEXT://:9092,SASL://:9094,CONTROLLER://:9093\n\
     listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT\n\
     inter.broker.listener.name=PLAINTEXT\n";

#[test]
fn a_sasl_listener_gets_its_mechanisms_users_and_session_lifetime() {
    let c = load(&format!(
        "{SASL_LISTENERS}\
         listener.name.sasl.sasl.enabled.mechanisms=SCRAM-SHA-256, PLAIN,SCRAM-SHA-512\n\
         sasl.enabled.mechanisms=GSSAPI\n\
         listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
           username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";\n\
         connections.max.reauth.ms=5000\n\
         listener.name.sasl.plain.connections.max.reauth.ms=0\n\
         listener.name.sasl.sasl.server.max.receive.size=1000\n\
         connection.failed.authentication.delay.ms=250\n"
    ))
    .unwrap();
    let s = &c.sasl.servers["SASL"];
    assert_eq!(
        s.mechanisms,
        vec![
            SaslMechanism::ScramSha256,
            SaslMechanism::Plain,
            SaslMechanism::ScramSha512
        ]
    );
    assert!(s.plain_users.check("alice", "alice-secret"));
    assert!(s.plain_users.check("admin", "admin-secret"));
    assert!(!s.plain_users.check("username", "admin"));
    assert_eq!(s.session_lifetime(SaslMechanism::Plain), None);
    assert_eq!(
        s.session_lifetime(SaslMechanism::ScramSha256),
        Some(Duration::from_secs(5))
    );
    assert_eq!(s.max_receive_size, 1000);
    assert_eq!(s.failed_authentication_delay, Duration::from_millis(250));
    assert!(c.sasl.clients.is_empty(), "no SASL listener to log in to");
    let l = c.listeners.iter().find(|l| l.name == "SASL").unwrap();
    assert!(c.listener_security(l).sasl.is_some());
    let l = c.listeners.iter().find(|l| l.name == "PLAINTEXT").unwrap();
    assert!(c.listener_security(l).sasl.is_none());
}

#[test]
fn unsupported_or_missing_sasl_settings_refuse_startup_in_one_line() {
    let plain_jaas = "listener.name.sasl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"hunter2\";\n";
    for (extra, expect) in [
        ("", "GSSAPI"), // Kafka's default mechanism
        ("sasl.enabled.mechanisms=OAUTHBEARER\n", "OAUTHBEARER"),
        ("sasl.enabled.mechanisms=PLAIN,DIGEST-MD5\n", "DIGEST-MD5"),
        ("sasl.enabled.mechanisms= ,\n", "enables no SASL mechanism"),
        ("sasl.enabled.mechanisms=PLAIN\n", "plain.sasl.jaas.config is not set"),
        (
            "sasl.enabled.mechanisms=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n",
            "needs org.apache.kafka.common.security.plain.PlainLoginModule",
        ),
        (
            "sasl.enabled.mechanisms=PLAIN\nlistener.name.sasl.plain.sasl.jaas.config=Broken hunter2\n",
            "[hidden]",
        ),
        (
            &format!("sasl.enabled.mechanisms=PLAIN\n{plain_jaas}connections.max.reauth.ms=soon\n"),
            "connections.max.reauth.ms",
        ),
    ] {
        let e = load(&format!("{SASL_LISTENERS}{extra}")).unwrap_err().to_string();
        assert!(e.contains(expect), "{extra}: {e}");
        assert!(!e.contains('\n') && !e.contains("hunter2"), "{e}");
    }
}

#[test]
fn the_nodes_own_logins_come_from_the_listeners_jaas_config() {
    let sasl_everywhere = "listeners=BROKER://:9092,CONTROLLER://:9093\n\
        listener.security.protocol.map=BROKER:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT\n\
        inter.broker.listener.name=BROKER\n\
        sasl.enabled.mechanisms=PLAIN\n\
        listener.name.broker.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
          username=\"broker\" password=\"b-secret\" user_broker=\"b-secret\";\n\
        listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
          username=\"ctl\" password=\"c-secret\" user_ctl=\"c-secret\";\n";
    let e = load(sasl_everywhere).unwrap_err().to_string();
    assert!(
        e.contains("sasl.mechanism.") && e.contains("GSSAPI"),
        "Kafka's default GSSAPI is refused: {e}"
    );
    let c = load(&format!(
        "{sasl_everywhere}sasl.mechanism.controller.protocol=PLAIN\n\
         sasl.mechanism.inter.broker.protocol=PLAIN\n"
    ))
    .unwrap();
    let ctl = c.client_security("CONTROLLER").sasl.unwrap();
    assert_eq!(
        (ctl.username.as_str(), ctl.password.as_str()),
        ("ctl", "c-secret")
    );
    let broker = c.client_security("BROKER").sasl.unwrap();
    assert_eq!(broker.username, "broker");
    assert!(!format!("{broker:?}").contains("b-secret"));
    // SCRAM for the node's own login needs a ScramLoginModule entry with a password.
    let e = load(&format!(
        "{sasl_everywhere}sasl.mechanism.controller.protocol=PLAIN\n\
         sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512\n\
         listener.name.broker.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n\
         listener.name.broker.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"broker\";\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(e.contains("no password option"), "{e}");
}
