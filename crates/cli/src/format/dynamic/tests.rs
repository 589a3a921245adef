//! Unit tests of the dynamic-quorum format flags: Kafka's parsing of
//! `--initial-controllers`, its refusals, and the bootstrap snapshot read back.

use super::*;
use crate::properties::Properties;

const DIR_A: &str = "9Vg4R8DnQWe_t8pfqvgjqQ";
const DIR_B: &str = "MvDxzVmcRsaTz33bUuRU6A";

fn config(text: &str) -> NodeConfig {
    NodeConfig::from_properties(Properties::parse(text)).unwrap()
}

fn dynamic_controller() -> NodeConfig {
    config(
        "process.roles=controller\nnode.id=1\ncontroller.quorum.bootstrap.servers=localhost:9093\n\
         listeners=CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n",
    )
}

fn no_uuid() -> Result<Uuid> {
    Ok(Uuid([7; 16]))
}

#[test]
fn initial_controllers_parse_like_kafkas_dynamic_voters() {
    let list =
        parse_initial_controllers(&format!("1@localhost:9093:{DIR_A}, 2@[::1]:9094:{DIR_B}"))
            .unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(
        (list[0].id, list[0].host.as_str(), list[0].port),
        (1, "localhost", 9093)
    );
    assert_eq!(list[0].directory_id.to_base64(), DIR_A);
    assert_eq!((list[1].host.as_str(), list[1].port), ("[::1]", 9094));
}

#[test]
fn a_malformed_initial_controller_is_one_line_naming_the_entry() {
    for (value, why) in [
        (
            "1@localhost:9093".to_string(),
            "no colon following the port",
        ),
        ("1@localhost:9093:bad".to_string(), "directory id"),
        (format!("x@localhost:9093:{DIR_A}"), "node id"),
        (format!("1localhost:9093:{DIR_A}"), "expected id@host:port"),
        (format!("1@localhost:0:{DIR_A}"), "port"),
        (format!("1@:9093:{DIR_A}"), "host is empty"),
        (format!("1@h:1:{DIR_A},1@h:2:{DIR_B}"), "more than once"),
        (format!("1@h:1:{DIR_A},"), "empty entry"),
    ] {
        let e = parse_initial_controllers(&value).unwrap_err().to_string();
        assert!(e.contains(why), "{value}: {e}");
        assert!(!e.contains('\n'), "{e}");
        assert!(e.contains("--initial-controllers"), "{e}");
    }
}

#[test]
fn kafkas_refusals_of_the_quorum_flags() {
    let static_controller = config(
        "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:9093\n\
         listeners=CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n",
    );
    let broker = config(
        "process.roles=broker\nnode.id=4\ncontroller.quorum.bootstrap.servers=localhost:9093\n\
         listeners=PLAINTEXT://:9092\ncontroller.listener.names=CONTROLLER\n",
    );
    let with_voters = plan(&static_controller, &QuorumFlag::Standalone, no_uuid)
        .unwrap_err()
        .to_string();
    assert!(
        with_voters.contains("controller.quorum.voters"),
        "{with_voters}"
    );
    let listed = QuorumFlag::InitialControllers(format!("1@h:1:{DIR_A}"));
    assert!(plan(&static_controller, &listed, no_uuid).is_err());
    assert_eq!(
        plan(
            &static_controller,
            &QuorumFlag::NoInitialControllers,
            no_uuid
        )
        .unwrap(),
        QuorumPlan::Static
    );
    let on_broker = plan(&broker, &QuorumFlag::Standalone, no_uuid).unwrap_err();
    assert_eq!(
        on_broker.to_string(),
        "You can only use --standalone on a controller."
    );
    assert_eq!(
        plan(&broker, &listed, no_uuid).unwrap(),
        QuorumPlan::DynamicBroker
    );
    let no_flag = plan(&dynamic_controller(), &QuorumFlag::None, no_uuid)
        .unwrap_err()
        .to_string();
    assert!(no_flag.contains("--standalone, --initial-controllers, or --no-initial-controllers"));
}

#[test]
fn standalone_is_this_controller_at_its_advertised_endpoint() {
    let p = plan(&dynamic_controller(), &QuorumFlag::Standalone, no_uuid).unwrap();
    assert_eq!(p.own_directory_id(1), Some(Uuid([7; 16])));
    let QuorumPlan::Dynamic {
        voters: Some(voters),
        listener_name,
    } = p
    else {
        panic!("{p:?}")
    };
    assert_eq!(listener_name, "CONTROLLER");
    assert_eq!(
        (voters[0].id, voters[0].host.as_str(), voters[0].port),
        (1, "localhost", 9093)
    );
    let advertised = config(
        "process.roles=controller\nnode.id=1\ncontroller.quorum.bootstrap.servers=c:9093\n\
         listeners=CONTROLLER://:9093\nadvertised.listeners=CONTROLLER://c1.example:19093\n\
         controller.listener.names=CONTROLLER\n",
    );
    assert_eq!(
        advertised_controller_endpoint(&advertised).unwrap(),
        ("c1.example".to_string(), 19093)
    );
}

#[test]
fn a_node_missing_from_the_initial_controllers_is_formatted_as_an_observer() {
    let flag = QuorumFlag::InitialControllers(format!("2@h:1:{DIR_A}"));
    let p = plan(&dynamic_controller(), &flag, no_uuid).unwrap();
    assert_eq!(
        p.own_directory_id(1),
        None,
        "Kafka formats it, with a random id"
    );
    assert_eq!(p.own_directory_id(2).unwrap().to_base64(), DIR_A);
}

#[test]
fn the_bootstrap_snapshot_reads_back_with_kraft_version_1_and_the_voters() {
    let voters =
        parse_initial_controllers(&format!("1@h1:9093:{DIR_A},2@[::1]:9094:{DIR_B}")).unwrap();
    let record = voters_record(&voters, "CONTROLLER");
    let bytes = bootstrap_snapshot(Some(&record), 1_700_000_000_000).unwrap();
    let snapshot = kraftd_raft::snapshot::read_snapshot(bytes).unwrap();
    assert_eq!(snapshot.kraft_version.as_ref().unwrap().k_raft_version, 1);
    let read = snapshot.voters.clone().unwrap();
    assert_eq!(read, record);
    assert_eq!(read.voters[1].endpoints[0].host, "::1");
    assert_eq!(snapshot.values().count(), 0);

    let bare = bootstrap_snapshot(None, 0).unwrap();
    let snapshot = kraftd_raft::snapshot::read_snapshot(bare).unwrap();
    assert_eq!(snapshot.kraft_version.unwrap().k_raft_version, 1);
    assert!(snapshot.voters.is_none());
}
