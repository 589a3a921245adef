//! UpdateFeatures with Kafka 4.4.0's `kafka-features`, as an operator upgrades a cluster
//! formatted at an older release: every feature kraftd serves can be upgraded and
//! downgraded (not only `metadata.version` and ELR), each level's dependencies are checked
//! against the levels the whole request leaves (Kafka's `Feature.validateVersion`), and
//! the refusals carry Kafka's messages.

mod common;

use common::kafka_jars::{output_text, run_tool};
use common::python::wait_until_brokers_listed;
use common::{addresses, all_logs, formatted_cluster_with_args, stop_gracefully};

const FEATURES: &str = "org.apache.kafka.tools.FeatureCommand";

/// `kafka-features --bootstrap-server bootstrap args...`.
fn features(bootstrap: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--bootstrap-server", bootstrap];
    all.extend_from_slice(args);
    run_tool(FEATURES, &all)
}

/// The finalized level `kafka-features describe` prints for `name` (a release name such as
/// `4.0-IV1` for metadata.version).
fn finalized(bootstrap: &str, name: &str) -> String {
    let out = features(bootstrap, &["describe"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|words| words.get(1) == Some(&name))
        .and_then(|words| {
            let at = words.iter().position(|w| *w == "FinalizedVersionLevel:")?;
            words.get(at + 1).map(|w| w.to_string())
        })
        .unwrap_or_else(|| panic!("no {name} in:\n{}", output_text(&out)))
}

#[test]
fn kafka_features_upgrades_and_downgrades_every_feature_with_kafkas_checks() {
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) =
        formatted_cluster_with_args(root.path(), 1, 1, &["--release-version", "3.9"]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let logs = || format!("{}\n{}", all_logs(&brokers), all_logs(&controllers));
    wait_until_brokers_listed(&addresses(&brokers), 1, logs);
    let bootstrap = brokers[0].address();
    assert_eq!(finalized(&bootstrap, "group.version"), "0");

    // ELR 1 needs metadata.version 23; the cluster is at 21 (3.9-IV0).
    let refused = features(
        &bootstrap,
        &["upgrade", "--feature", "eligible.leader.replicas.version=1"],
    );
    assert!(
        output_text(&refused).contains(
            "Invalid update version 1 for feature eligible.leader.replicas.version. \
             eligible.leader.replicas.version could not be set to 1 because it depends on \
             metadata.version level 23"
        ),
        "{}",
        output_text(&refused)
    );
    // With metadata.version in the same request, the dependency holds.
    let both = features(
        &bootstrap,
        &[
            "upgrade",
            "--metadata",
            "4.0-IV1",
            "--feature",
            "eligible.leader.replicas.version=1",
            "--feature",
            "group.version=1",
            "--feature",
            "transaction.version=2",
        ],
    );
    assert!(both.status.success(), "{}\n{}", output_text(&both), logs());
    assert_eq!(
        finalized(&bootstrap, "eligible.leader.replicas.version"),
        "1"
    );
    assert_eq!(finalized(&bootstrap, "group.version"), "1");
    assert_eq!(finalized(&bootstrap, "transaction.version"), "2");
    assert_eq!(finalized(&bootstrap, "metadata.version"), "4.0-IV1");

    // A level the nodes do not support names the first that does not.
    let unsupported = features(&bootstrap, &["upgrade", "--feature", "group.version=2"]);
    assert!(
        output_text(&unsupported).contains(
            "Invalid update version 2 for feature group.version. Local controller 1 only \
             supports versions 0-1"
        ),
        "{}",
        output_text(&unsupported)
    );
    let downgraded = features(&bootstrap, &["downgrade", "--feature", "group.version=0"]);
    assert!(downgraded.status.success(), "{}", output_text(&downgraded));
    assert_eq!(finalized(&bootstrap, "group.version"), "0");
    // 4.0-IV1 changed the metadata: no way back to 4.0-IV0.
    let mv_down = features(&bootstrap, &["downgrade", "--metadata", "4.0-IV0"]);
    assert!(
        output_text(&mv_down).contains(
            "Unsupported metadata.version downgrade from 23 to 22. Refusing to perform the \
             requested downgrade because it might delete metadata information."
        ),
        "{}",
        output_text(&mv_down)
    );
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
