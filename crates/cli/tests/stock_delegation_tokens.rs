//! Delegation tokens with real processes and Kafka 4.4.0's own tools, as Spark and Flink use
//! them: on a SASL_PLAINTEXT (SCRAM) listener with `delegation.token.secret.key` set,
//! `kafka-delegation-tokens` creates, describes, renews and expires a token; a stock Java
//! producer and consumer log in with it (`tokenauth="true"`, username the token id,
//! password its HMAC) and run as its owner; the token outlives a restart of the controller
//! and the broker (its record replayed); a controller describes it too, over its SCRAM
//! listener; once expired, a login with it fails. Kafka's errors
//! on the way: a renew by someone neither owner nor renewer (DELEGATION_TOKEN_OWNER_MISMATCH),
//! any token request on a PLAINTEXT listener or from a token-authenticated session
//! (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); and without a secret key, DELEGATION_TOKEN_AUTH_DISABLED.

mod common;

use std::path::Path;

use common::kafka_jars::{output_text, run_tool};
use common::python::wait_until_brokers_listed;
use common::secured::{scram_client_config, SCRAM_MODULE};
use common::{addresses, all_logs, free_port, stop_gracefully, Node};

const TOKENS: &str = "org.apache.kafka.tools.DelegationTokenCommand";
const SECRET_LINE: &str = "delegation.token.secret.key=kraftd-token-secret";

fn logs(controllers: &[Node], brokers: &[Node]) -> String {
    format!(
        "--- broker logs ---\n{}\n--- controller logs ---\n{}",
        all_logs(brokers),
        all_logs(controllers)
    )
}

/// A cluster of one controller and one broker with a PLAINTEXT and a SASL_PLAINTEXT
/// listener (the controller's SASL_PLAINTEXT too), SCRAM users alice and bob from `kraftd format --add-scram`, and `extra` lines
/// on both nodes; started, with the SASL listener's address.
fn sasl_cluster(root: &Path, extra: &[&str]) -> (Vec<Node>, Vec<Node>, String) {
    let (_id, mut controllers, mut brokers) = common::formatted_cluster_with_scram(
        root,
        1,
        1,
        &[
            "SCRAM-SHA-512=[name=alice,password=alice-secret]",
            "SCRAM-SHA-256=[name=bob,password=bob-secret]",
        ],
    );
    let sasl = free_port();
    // The controller listener is SCRAM too: the broker logs in to it as alice, and a client
    // with `bootstrap.controllers` can ask it for tokens.
    let controller_jaas = format!(
        "listener.name.controller.scram-sha-512.sasl.jaas.config={SCRAM_MODULE} \
         username=\"alice\" password=\"alice-secret\";"
    );
    let controller_lines = [
        "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.mechanism.controller.protocol=SCRAM-SHA-512",
        controller_jaas.as_str(),
    ];
    for controller in &controllers {
        controller.add_config(&controller_lines);
        controller.add_config(&["listener.security.protocol.map=CONTROLLER:SASL_PLAINTEXT"]);
    }
    let broker = &brokers[0];
    broker.add_config(&controller_lines);
    broker.add_config(&[
        &format!(
            "listeners=PLAINTEXT://127.0.0.1:{},SASL://127.0.0.1:{sasl}",
            broker.port
        ),
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT,\
         CONTROLLER:SASL_PLAINTEXT",
        "inter.broker.listener.name=PLAINTEXT",
    ]);
    for node in controllers.iter().chain(brokers.iter()) {
        node.add_config(extra);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    wait_until_brokers_listed(&addresses(&brokers), 1, || logs(&controllers, &brokers));
    (controllers, brokers, format!("127.0.0.1:{sasl}"))
}

/// Runs `kafka-delegation-tokens` against `bootstrap` with `config`.
fn tokens(bootstrap: &str, config: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--bootstrap-server", bootstrap, "--command-config", config];
    all.extend_from_slice(args);
    run_tool(TOKENS, &all)
}

/// DescribeDelegationToken for `owner`'s tokens (`User:<owner>`) on `controller`'s listener,
/// logged in with `mechanism` as `user`: the answer's error and (token id, base64 HMAC)
/// pairs. Raw, because Kafka's Admin client sends it only to brokers (its node provider does
/// not support `bootstrap.controllers`).
fn describe_on_controller(
    controller: &Node,
    mechanism: &str,
    user: &str,
    password: &str,
    owner: &str,
) -> (i16, Vec<(String, String)>) {
    use base64::Engine as _;
    use kraftd_protocol::messages::describe_delegation_token_request::DescribeDelegationTokenOwner;
    use kraftd_protocol::messages::DescribeDelegationTokenRequest;
    use kraftd_protocol::{RequestBody, ResponseBody};
    let mut raw = common::raw::Raw::connect(&format!("127.0.0.1:{}", controller.port));
    raw.scram_login(mechanism, user, password);
    let answer = raw.call(
        3,
        RequestBody::DescribeDelegationToken(DescribeDelegationTokenRequest {
            owners: Some(vec![DescribeDelegationTokenOwner {
                principal_type: "User".into(),
                principal_name: owner.into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    );
    let ResponseBody::DescribeDelegationToken(r) = answer else {
        panic!("{answer:?}")
    };
    let tokens = r
        .tokens
        .iter()
        .map(|t| {
            (
                t.token_id.clone(),
                base64::engine::general_purpose::STANDARD.encode(&t.hmac),
            )
        })
        .collect();
    (r.error_code, tokens)
}

/// The token id and base64 HMAC of the first token in the tool's table.
fn first_token(out: &std::process::Output) -> (String, String) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = stdout
        .lines()
        .skip_while(|l| !l.starts_with("TOKENID"))
        .skip(1)
        .find(|l| !l.trim().is_empty())
        .unwrap_or_else(|| panic!("no token row:\n{}", output_text(out)));
    let mut fields = row.split_whitespace();
    (
        fields.next().unwrap().to_string(),
        fields.next().unwrap().to_string(),
    )
}

#[test]
fn a_token_is_created_used_by_stock_clients_renewed_survives_a_restart_and_expires() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let (mut controllers, mut brokers, sasl) = sasl_cluster(dir, &[SECRET_LINE]);
    let plaintext = addresses(&brokers);
    let alice = scram_client_config(dir, "alice", 512, "alice", "alice-secret", false);
    let bob = scram_client_config(dir, "bob", 256, "bob", "bob-secret", false);

    let created = tokens(
        &sasl,
        &alice,
        &[
            "--create",
            "--max-life-time-period",
            "-1",
            "--renewer-principal",
            "User:carol",
        ],
    );
    assert!(
        created.status.success(),
        "{}\n{}",
        output_text(&created),
        logs(&controllers, &brokers)
    );
    let (token_id, hmac) = first_token(&created);
    let created_text = String::from_utf8_lossy(&created.stdout);
    assert!(created_text.contains("User:alice"), "{created_text}");
    assert!(created_text.contains("User:carol"), "{created_text}");

    // Kafka 4.4's tool sends an empty owner list without --owner-principal, which Kafka
    // answers with no token; naming the owner lists it.
    let described = tokens(
        &sasl,
        &alice,
        &["--describe", "--owner-principal", "User:alice"],
    );
    assert!(described.status.success(), "{}", output_text(&described));
    assert_eq!(first_token(&described), (token_id.clone(), hmac.clone()));
    // A controller answers it too, from its own image (Kafka 4.4's controllers advertise
    // DescribeDelegationToken but answer UNKNOWN_SERVER_ERROR).
    assert_eq!(
        describe_on_controller(
            &controllers[0],
            "SCRAM-SHA-512",
            "alice",
            "alice-secret",
            "alice"
        ),
        (0, vec![(token_id.clone(), hmac.clone())]),
        "{}",
        logs(&controllers, &brokers)
    );

    // A stock producer and consumer log in with the token, over both SCRAM mechanisms.
    let token512 = scram_client_config(dir, "token512", 512, &token_id, &hmac, true);
    let token256 = scram_client_config(dir, "token256", 256, &token_id, &hmac, true);
    let produced = run_tool(
        "org.apache.kafka.tools.ProducerPerformance",
        &[
            "--topic",
            "token-topic",
            "--num-records",
            "10",
            "--record-size",
            "20",
            "--throughput",
            "-1",
            "--producer.config",
            &token512,
            "--producer-props",
            &format!("bootstrap.servers={sasl}"),
            "acks=all",
        ],
    );
    assert!(
        produced.status.success(),
        "{}\n{}",
        output_text(&produced),
        logs(&controllers, &brokers)
    );
    let consumed = run_tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            &sasl,
            "--topic",
            "token-topic",
            "--from-beginning",
            "--max-messages",
            "10",
            "--timeout-ms",
            "60000",
            "--consumer.config",
            &token256,
        ],
    );
    assert!(consumed.status.success(), "{}", output_text(&consumed));
    assert!(
        String::from_utf8_lossy(&consumed.stderr).contains("Processed a total of 10 messages"),
        "{}",
        output_text(&consumed)
    );

    // Kafka's refusals: bob neither owns nor renews it; no token request on PLAINTEXT or
    // from a session that logged in with a token.
    let by_bob = tokens(
        &sasl,
        &bob,
        &["--renew", "--hmac", &hmac, "--renew-time-period", "-1"],
    );
    assert!(
        output_text(&by_bob).contains("DelegationTokenOwnerMismatchException"),
        "{}",
        output_text(&by_bob)
    );
    let plain_config = dir.join("plain.properties");
    std::fs::write(&plain_config, "security.protocol=PLAINTEXT\n").unwrap();
    let on_plaintext = tokens(&plaintext, &plain_config.to_string_lossy(), &["--describe"]);
    assert!(
        output_text(&on_plaintext).contains("UnsupportedByAuthenticationException"),
        "{}",
        output_text(&on_plaintext)
    );
    let with_token = tokens(
        &sasl,
        &token512,
        &["--create", "--max-life-time-period", "-1"],
    );
    assert!(
        output_text(&with_token).contains("UnsupportedByAuthenticationException"),
        "{}",
        output_text(&with_token)
    );
    let renewed = tokens(
        &sasl,
        &alice,
        &["--renew", "--hmac", &hmac, "--renew-time-period", "-1"],
    );
    assert!(
        renewed.status.success()
            && String::from_utf8_lossy(&renewed.stdout).contains("Completed renew operation"),
        "{}",
        output_text(&renewed)
    );

    // Both nodes restart: the token comes back from the metadata log.
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    wait_until_brokers_listed(&plaintext, 1, || logs(&controllers, &brokers));
    let list = |config: &str| {
        run_tool(
            "org.apache.kafka.tools.TopicCommand",
            &[
                "--bootstrap-server",
                &sasl,
                "--command-config",
                config,
                "--list",
            ],
        )
    };
    let listed = list(&token512);
    assert!(
        listed.status.success() && String::from_utf8_lossy(&listed.stdout).contains("token-topic"),
        "{}\n{}",
        output_text(&listed),
        logs(&controllers, &brokers)
    );

    // Expired at once: the token is gone and a login with it fails.
    let expired = tokens(
        &sasl,
        &alice,
        &["--expire", "--hmac", &hmac, "--expiry-time-period", "-1"],
    );
    assert!(
        expired.status.success()
            && String::from_utf8_lossy(&expired.stdout).contains("Completed expire operation"),
        "{}",
        output_text(&expired)
    );
    let refused = list(&token512);
    assert!(
        !refused.status.success()
            && output_text(&refused).contains("Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"),
        "{}",
        output_text(&refused)
    );
    let none_left = tokens(
        &sasl,
        &alice,
        &["--describe", "--owner-principal", "User:alice"],
    );
    assert!(
        String::from_utf8_lossy(&none_left.stdout).contains("Total number of tokens : 0"),
        "{}",
        output_text(&none_left)
    );
    let all = logs(&controllers, &brokers);
    assert!(!all.contains(&hmac), "the HMAC stays out of the logs");
    assert!(
        !all.contains("kraftd-token-secret"),
        "the secret stays out of the logs"
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}

#[test]
fn without_a_secret_key_token_requests_are_refused_as_disabled() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    let (mut controllers, mut brokers, sasl) = sasl_cluster(dir, &[]);
    let alice = scram_client_config(dir, "alice", 512, "alice", "alice-secret", false);
    for args in [
        &["--create", "--max-life-time-period", "-1"][..],
        &["--describe"][..],
    ] {
        let out = tokens(&sasl, &alice, args);
        assert!(
            output_text(&out).contains("DelegationTokenDisabledException"),
            "{args:?}: {}",
            output_text(&out)
        );
    }
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
