//! The security checks' unit tests: listener prefixes, Kafka's update modes, and the SASL
//! mechanisms refused at startup and dynamically.

use super::*;
use crate::control::config_defs::{
    broker_config_def, broker_config_synonyms, check_static_support, validate_broker_config,
};

#[test]
fn listener_prefixes_split_as_kafka_reads_them() {
    assert_eq!(
        listener_key("listener.name.sasl_ssl.ssl.keystore.location"),
        Some(ListenerKey {
            listener: "sasl_ssl",
            mechanism: None,
            base: "ssl.keystore.location"
        })
    );
    assert_eq!(
        listener_key("listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"),
        Some(ListenerKey {
            listener: "sasl_plaintext",
            mechanism: Some("scram-sha-256"),
            base: "sasl.jaas.config"
        })
    );
    let plain = listener_key("listener.name.external.sasl.jaas.config").unwrap();
    assert_eq!((plain.mechanism, plain.base), (None, "sasl.jaas.config"));
    let server = listener_key("listener.name.x.plain.sasl.server.callback.handler.class").unwrap();
    assert_eq!(server.base, "sasl.server.callback.handler.class");
    // Only the configs a listener reads, and only per mechanism where Kafka has it.
    for name in [
        "listener.name.x.log.retention.ms",
        "listener.name..ssl.keystore.location",
        "listener.name.x.plain.ssl.keystore.location",
        "listener.name.x.sasl.mechanism.inter.broker.protocol",
        "listener.name.x.ssl.no.such.config",
        "ssl.keystore.location",
        "listener.name.x",
    ] {
        assert_eq!(listener_key(name), None, "{name}");
    }
    assert_eq!(
        broker_config_synonyms("listener.name.x.plain.sasl.jaas.config"),
        vec!["listener.name.x.plain.sasl.jaas.config", "sasl.jaas.config"]
    );
    let described =
        described_broker_config_def("listener.name.x.scram-sha-512.sasl.jaas.config").unwrap();
    assert!(described.sensitive);
    assert!(described_broker_config_def("listener.name.x.nothing").is_none());
}

fn refusal(key: &str, cluster_default: bool) -> String {
    check_broker_update(key, cluster_default)
        .unwrap_err()
        .to_string()
}

#[test]
fn update_modes_refuse_with_kafkas_messages() {
    assert_eq!(
        refusal("super.users", false),
        "Cannot update these configs dynamically: [super.users]"
    );
    assert_eq!(
        refusal("log.retention.hours", false),
        "Cannot update these configs dynamically: [log.retention.hours]"
    );
    assert_eq!(
        refusal("ssl.keystore.location", false),
        "These security configs can be dynamically updated only per-listener using the \
         listener prefix: [ssl.keystore.location]"
    );
    let per_broker = "Cannot update these configs at default cluster level, broker id must \
                      be specified";
    assert_eq!(
        refusal("sasl.kerberos.min.time.before.relogin", true),
        format!("{per_broker}: [sasl.kerberos.min.time.before.relogin]")
    );
    assert_eq!(
        refusal("listener.name.ext.ssl.keystore.location", true),
        format!("{per_broker}: [listener.name.ext.ssl.keystore.location]")
    );
    assert!(
        refusal("listener.name.ext.connections.max.reauth.ms", false)
            .starts_with("Cannot update these configs dynamically")
    );
    for ok in [
        ("sasl.kerberos.min.time.before.relogin", false),
        ("listener.name.ext.ssl.keystore.location", false),
        ("max.connection.creation.rate", true),
        ("listener.name.ext.max.connection.creation.rate", true),
        ("max.connections.per.ip", true),
        ("listener.name.ext.max.connections", true),
        ("log.retention.ms", true),
        ("no.such.config", true),
    ] {
        assert!(check_broker_update(ok.0, ok.1).is_ok(), "{ok:?}");
    }
    // The dynamic definitions include listener overrides of dynamic security configs only.
    assert!(broker_config_def("listener.name.ext.ssl.keystore.location").is_some());
    assert!(broker_config_def("listener.name.ext.connections.max.reauth.ms").is_none());
    assert!(broker_config_def("sasl.kerberos.min.time.before.relogin").is_some());
    assert!(broker_config_def("super.users").is_none());
    assert!(broker_config_def("listener.name.ext.max.connections").is_some());
}

#[test]
fn unserved_sasl_mechanisms_are_refused_dynamically() {
    for (key, value) in [
        ("sasl.enabled.mechanisms", "GSSAPI"),
        ("sasl.enabled.mechanisms", "SCRAM-SHA-256,OAUTHBEARER"),
        ("sasl.enabled.mechanisms", "plain"),
        ("sasl.mechanism.inter.broker.protocol", "GSSAPI"),
        ("sasl.mechanism.controller.protocol", "OAUTHBEARER"),
    ] {
        let e = check_sasl_mechanism_value(key, value, false).unwrap_err();
        let text = e.to_string();
        assert!(
            text.starts_with("kraftd does not support the SASL mechanism")
                && text.contains(&format!("({key}={value})")),
            "{text}"
        );
    }
    assert!(
        check_sasl_mechanism_value("sasl.enabled.mechanisms", "PLAIN, SCRAM-SHA-512", false)
            .is_ok()
    );
    assert!(check_sasl_mechanism_value("sasl.kerberos.service.name", "GSSAPI", false).is_ok());
    // Through the dynamic validation: even Kafka's default GSSAPI, and listener overrides.
    let e = validate_broker_config("sasl.enabled.mechanisms", "GSSAPI").unwrap_err();
    assert!(
        matches!(e, ConfigValueError::UnsupportedFeature { .. }),
        "{e}"
    );
    let e = validate_broker_config("listener.name.ext.sasl.enabled.mechanisms", "OAUTHBEARER")
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("(listener.name.ext.sasl.enabled.mechanisms=OAUTHBEARER)"),
        "{e}"
    );
    // A listener's stores are reconfigurable (certificate rotation); its other TLS settings
    // are not, as Kafka's `SslConfigs.RECONFIGURABLE_CONFIGS` says.
    assert!(validate_broker_config("listener.name.ext.ssl.keystore.location", "/k.pem").is_ok());
    let e = validate_broker_config(
        "listener.name.ext.ssl.cipher.suites",
        "TLS_AES_128_GCM_SHA256",
    )
    .unwrap_err();
    assert!(
        e.to_string().contains(
            "kraftd does not support changing listener.name.ext.ssl.cipher.suites dynamically"
        ),
        "{e}"
    );
    // A Kerberos tuning knob is accepted (without effect) on one broker.
    assert!(validate_broker_config("sasl.kerberos.min.time.before.relogin", "120000").is_ok());
    assert!(validate_broker_config("sasl.kerberos.min.time.before.relogin", "soon").is_err());
    // Plugins: only Kafka's default.
    assert!(validate_broker_config(
        "principal.builder.class",
        "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"
    )
    .is_ok());
    let e = validate_broker_config("principal.builder.class", "com.example.Builder").unwrap_err();
    assert!(
        e.to_string()
            .contains("kraftd does not support principal.builder.class"),
        "{e}"
    );
    assert!(validate_broker_config("ssl.engine.factory.class", "com.example.Engine").is_err());
}

fn lookup<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
    move |key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

#[test]
fn unserved_sasl_mechanisms_are_refused_where_a_sasl_listener_enables_them() {
    let none = SaslListeners::default();
    let sasl = SaslListeners {
        sasl_listeners: &["SASL_PLAINTEXT", "EXTERNAL"],
        inter_broker_sasl: true,
        controller_sasl: true,
    };
    // No SASL listener: Kafka ignores the mechanisms, and so do the checks.
    check_static_sasl_mechanisms(lookup(&[("sasl.enabled.mechanisms", "GSSAPI")]), &none).unwrap();
    check_static_sasl_mechanisms(lookup(&[]), &none).unwrap();
    // Unset on a SASL listener: Kafka's default GSSAPI would be served.
    let e = check_static_sasl_mechanisms(lookup(&[]), &sasl).unwrap_err();
    assert!(
        matches!(&e, ConfigValueError::UnsupportedFeature { key, defaulted: true, .. }
            if key == "sasl.enabled.mechanisms"),
        "{e}"
    );
    assert!(e.to_string().contains("Kafka's default is GSSAPI"), "{e}");
    let served = [
        ("sasl.enabled.mechanisms", "SCRAM-SHA-256,PLAIN"),
        ("sasl.mechanism.inter.broker.protocol", "SCRAM-SHA-256"),
        ("sasl.mechanism.controller.protocol", "PLAIN"),
    ];
    check_static_sasl_mechanisms(lookup(&served), &sasl).unwrap();
    // A listener's own list wins over the base list, both ways.
    let mut own = served.to_vec();
    own.push((
        "listener.name.external.sasl.enabled.mechanisms",
        "OAUTHBEARER",
    ));
    let e = check_static_sasl_mechanisms(lookup(&own), &sasl).unwrap_err();
    assert!(
        e.to_string()
            .contains("(listener.name.external.sasl.enabled.mechanisms=OAUTHBEARER)"),
        "{e}"
    );
    let mut overridden = served.to_vec();
    overridden[0] = ("sasl.enabled.mechanisms", "GSSAPI");
    overridden.push((
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
        "PLAIN",
    ));
    overridden.push((
        "listener.name.external.sasl.enabled.mechanisms",
        "SCRAM-SHA-512",
    ));
    check_static_sasl_mechanisms(lookup(&overridden), &sasl).unwrap();
    // The inter-broker and controller mechanisms, when their listeners are SASL.
    let only_listeners = [("sasl.enabled.mechanisms", "PLAIN")];
    let e = check_static_sasl_mechanisms(lookup(&only_listeners), &sasl).unwrap_err();
    assert!(
        e.to_string()
            .contains("sasl.mechanism.inter.broker.protocol"),
        "{e}"
    );
    let controller_only = SaslListeners {
        controller_sasl: true,
        ..SaslListeners::default()
    };
    let e = check_static_sasl_mechanisms(lookup(&[]), &controller_only).unwrap_err();
    assert!(
        e.to_string().contains("sasl.mechanism.controller.protocol"),
        "{e}"
    );
}

#[test]
fn listener_overrides_in_the_properties_file_are_checked_as_their_base() {
    assert!(check_static_support("listener.name.ext.ssl.engine.factory.class", "x").is_err());
    assert!(check_static_support(
        "listener.name.ext.plain.sasl.server.callback.handler.class",
        "x"
    )
    .is_err());
    assert!(check_static_support("listener.name.ext.ssl.keystore.location", "/k.pem").is_ok());
    assert!(check_static_support("listener.name.ext.plain.sasl.jaas.config", "x").is_ok());
    assert!(check_static_support("security.providers", "com.example.Provider").is_err());
    assert!(check_static_support("client.quota.callback.class", "com.example.Cb").is_err());
    assert!(check_static_support("sasl.kerberos.service.name", "kafka").is_ok());
    assert!(check_static_support("super.users", "User:admin").is_ok());
}
