//! SASL with real processes and stock clients (`tests/python/sasl.py`): confluent-kafka and
//! kafka-python log in over SASL_PLAINTEXT with SCRAM-SHA-256/-512 (users created with
//! AlterUserScramCredentials over a PLAINTEXT listener, no restart) and PLAIN, are refused
//! with SASL_AUTHENTICATION_FAILED for a wrong password or an unknown user, lose new logins
//! once a credential is deleted, and keep working across several session lifetimes with
//! `connections.max.reauth.ms`; and a cluster whose controller and inter-broker listeners
//! are SASL_PLAINTEXT (PLAIN), its nodes logging in to each other; and a broker whose only
//! listener is SASL_SSL (a CA the test makes), its first user from `kraftd format
//! --add-scram`: that admin logs in over SCRAM-SHA-512, creates a SCRAM-SHA-256 user over
//! the same listener, both clients produce and consume as each, wrong passwords are refused.

mod common;

use common::pki::Pki;
use common::python::{python, run_until_all_ok, wait_until_brokers_listed};
use common::secured::{PLAIN_MODULE, SCRAM_MODULE};
use common::{addresses, all_logs, formatted_cluster, free_port, stop_gracefully, Node};

/// The first user, written into the bootstrap metadata by `kraftd format --add-scram`.
const ADMIN: &str = "SCRAM-SHA-512=[name=admin,password=admin-secret]";

fn logs(controllers: &[Node], brokers: &[Node]) -> String {
    format!(
        "--- broker logs ---\n{}\n--- controller logs ---\n{}",
        all_logs(brokers),
        all_logs(controllers)
    )
}

#[test]
fn stock_clients_log_in_with_scram_and_plain_and_re_authenticate() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    let (sasl, reauth) = (free_port(), free_port());
    let broker = &brokers[0];
    broker.add_config(&[
        &format!(
            "listeners=PLAINTEXT://127.0.0.1:{},SASL://127.0.0.1:{sasl},REAUTH://127.0.0.1:{reauth}",
            broker.port
        ),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,\
         REAUTH:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT",
        "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN",
        &format!(
            "sasl.jaas.config={PLAIN_MODULE} username=\"admin\" password=\"admin-secret\" \
             user_admin=\"admin-secret\" user_alice=\"alice-secret\";"
        ),
        "listener.name.reauth.connections.max.reauth.ms=2000",
    ]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let plaintext = addresses(&brokers);
    wait_until_brokers_listed(&plaintext, 1, || logs(&controllers, &brokers));
    let sasl_bootstrap = format!("127.0.0.1:{sasl}");
    run_until_all_ok("sasl.py", &["logins", &plaintext, &sasl_bootstrap], || {
        logs(&controllers, &brokers)
    });
    let reauth_bootstrap = format!("127.0.0.1:{reauth}");
    run_until_all_ok("sasl.py", &["reauth", &reauth_bootstrap, "7"], || {
        logs(&controllers, &brokers)
    });
    let broker_logs = all_logs(&brokers);
    assert!(
        !broker_logs.contains("SASL session expired"),
        "every client re-authenticated before its session ended:\n{broker_logs}"
    );
    assert!(
        !broker_logs.contains("alice-secret") && !broker_logs.contains("carol-256"),
        "no password in the logs"
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}

#[test]
fn nodes_authenticate_to_each_other_over_sasl_controller_and_inter_broker_listeners() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 3, 2);
    let controller_jaas = format!(
        "listener.name.controller.plain.sasl.jaas.config={PLAIN_MODULE} \
         username=\"kraft\" password=\"kraft-secret\" user_kraft=\"kraft-secret\";"
    );
    let common_lines = [
        "sasl.enabled.mechanisms=PLAIN",
        "sasl.mechanism.controller.protocol=PLAIN",
        controller_jaas.as_str(),
    ];
    for c in &controllers {
        c.add_config(&common_lines);
        c.add_config(&["listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT"]);
    }
    for b in &brokers {
        b.add_config(&common_lines);
        b.add_config(&[
            &format!(
                "listeners=PLAINTEXT://127.0.0.1:{},INTERNAL://127.0.0.1:{}",
                b.port,
                free_port()
            ),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT,\
             CONTROLLER:SASL_PLAINTEXT",
            "inter.broker.listener.name=INTERNAL",
            "sasl.mechanism.inter.broker.protocol=PLAIN",
            &format!(
                "listener.name.internal.plain.sasl.jaas.config={PLAIN_MODULE} \
                 username=\"broker\" password=\"broker-secret\" user_broker=\"broker-secret\";"
            ),
        ]);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let plaintext = addresses(&brokers);
    // Registered and unfenced: every broker reached the controllers over SASL.
    wait_until_brokers_listed(&plaintext, 2, || logs(&controllers, &brokers));
    run_until_all_ok("sasl.py", &["replicated", &plaintext], || {
        logs(&controllers, &brokers)
    });
    let all = logs(&controllers, &brokers);
    assert!(
        !all.contains("SASL authentication failed"),
        "no node failed to log in:\n{all}"
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}

#[test]
fn stock_clients_over_sasl_ssl_as_the_formatted_admin_and_a_user_it_creates() {
    python();
    let root = tempfile::tempdir().unwrap();
    let pki = Pki::new(&root.path().join("pki"));
    let (_id, mut controllers, mut brokers) =
        common::formatted_cluster_with_scram(root.path(), 1, 1, &[ADMIN]);
    let broker = &brokers[0];
    // No open listener: the only client listener is SASL_SSL, and the broker logs in to it
    // (its inter-broker listener) as the formatted admin.
    broker.add_config(&[
        &format!("listeners=SECURE://127.0.0.1:{}", broker.port),
        "listener.security.protocol.map=SECURE:SASL_SSL,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name=SECURE",
        "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512",
        &format!(
            "listener.name.secure.scram-sha-512.sasl.jaas.config={SCRAM_MODULE} \
             username=\"admin\" password=\"admin-secret\";"
        ),
    ]);
    let ssl = pki.node_ssl_config();
    broker.add_config(&ssl.iter().map(String::as_str).collect::<Vec<_>>());
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    run_until_all_ok(
        "sasl.py",
        &[
            "sasl-ssl",
            &brokers[0].address(),
            pki.ca_path().to_str().unwrap(),
        ],
        || logs(&controllers, &brokers),
    );
    let broker_logs = all_logs(&brokers);
    assert!(
        !broker_logs.contains("admin-secret") && !broker_logs.contains("carol-256"),
        "no password in the logs"
    );
    // The clients close their TLS connections without close_notify, between frames: a
    // clean close, not a failure.
    assert!(
        !broker_logs.contains("read failed"),
        "a client's close is not a read failure:\n{broker_logs}"
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
