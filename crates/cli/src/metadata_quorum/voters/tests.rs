//! Unit tests of add-controller / remove-controller: the joining controller read from its
//! properties as Kafka's tool reads it, Kafka's messages and output lines.

use super::*;

const DIR: &str = "9Vg4R8DnQWe_t8pfqvgjqQ";

fn formatted(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("meta.properties"),
        format!("version=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qk\nnode.id=4\ndirectory.id={DIR}\n"),
    )
    .unwrap();
}

#[test]
fn the_joining_controller_comes_from_its_own_properties() {
    let root = tempfile::tempdir().unwrap();
    let meta = root.path().join("meta");
    formatted(&meta);
    let props = Properties::parse(&format!(
        "process.roles=controller\nnode.id=4\nlog.dirs=/nowhere\nmetadata.log.dir={}\n\
         listeners=CONTROLLER://:9093,CONTROLLER2://[::1]:9094\n\
         advertised.listeners=CONTROLLER://c4.example:19093\n\
         controller.listener.names=CONTROLLER,CONTROLLER2\n",
        meta.display()
    ));
    let c = joining_controller(&props).unwrap();
    assert_eq!(c.id, 4);
    assert_eq!(c.directory_id.to_base64(), DIR);
    assert_eq!(
        c.endpoints,
        vec![
            ("CONTROLLER".to_string(), "c4.example".to_string(), 19093),
            ("CONTROLLER2".to_string(), "::1".to_string(), 9094),
        ]
    );
    assert_eq!(
        added_text(&c, false),
        format!(
            "Added controller 4 with directory id {DIR} and endpoints: \
             CONTROLLER://c4.example:19093, CONTROLLER2://[::1]:9094"
        )
    );
    let RequestBody::AddRaftVoter(r) = add_request(&c) else {
        panic!()
    };
    assert_eq!(
        (r.voter_id, r.listeners.len(), r.ack_when_committed),
        (4, 2, true)
    );
}

#[test]
fn kafkas_refusals_of_a_controller_file() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    let base = format!(
        "process.roles=controller\nnode.id=4\nlog.dirs={}\nlisteners=CONTROLLER://:9093\n\
         controller.listener.names=CONTROLLER\n",
        dir.display()
    );
    let err = |text: &str| {
        joining_controller(&Properties::parse(text))
            .unwrap_err()
            .to_string()
    };
    assert!(err(&base).contains("Unable to read meta.properties from"));
    formatted(&dir);
    joining_controller(&Properties::parse(&base)).unwrap();
    assert!(err(&base.replace("node.id=4\n", "")).starts_with("node.id not found"));
    assert!(err(&base.replace("node.id=4", "node.id=-1")).contains("negative"));
    assert!(err(&base.replace("=controller", "=broker")).contains("'controller'"));
    assert!(err(&base.replace("CONTROLLER://", "OTHER://"))
        .contains("Cannot find information about controller listener name: CONTROLLER"));
    assert!(
        err(&base.replace("controller.listener.names=CONTROLLER\n", ""))
            .starts_with("controller.listener.names was not found")
    );
}

#[test]
fn remove_controller_checks_and_prints_like_kafka() {
    assert_eq!(
        removal_args(-1, DIR).unwrap_err().to_string(),
        "Invalid negative --controller-id: -1"
    );
    assert!(removal_args(1, "nope")
        .unwrap_err()
        .to_string()
        .starts_with("Failed to parse --controller-directory-id"));
    let id = removal_args(3, DIR).unwrap();
    assert_eq!(
        removed_text(3, &id, false),
        format!("Removed  KRaft controller 3 with directory id {DIR}")
    );
    assert!(removed_text(3, &id, true).starts_with("DRY RUN of removing  KRaft"));
}
