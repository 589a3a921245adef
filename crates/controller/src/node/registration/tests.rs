//! Unit tests of the registration manager's decision: wait until a leader is known and the
//! metadata supports registrations, register locally when active, else at the active
//! controller's registered (or static) endpoint, and stop once registered.

use super::*;
use crate::control::controller_registration::register_controller;
use crate::image::delta::MetadataDelta;
use crate::MetadataImage;
use kraftd_protocol::metadata::FeatureLevelRecord;
use kraftd_protocol::MetadataRecord;

fn config(node_id: i32) -> RegistrationConfig {
    RegistrationConfig {
        node_id,
        incarnation_id: Uuid([node_id as u8; 16]),
        listeners: vec![(
            "CONTROLLER".into(),
            "127.0.0.1".into(),
            9090 + node_id as u16,
            0,
        )],
        features: vec![("kraft.version".into(), 0, 1)],
        controller_listener_name: "CONTROLLER".into(),
        voters: BTreeMap::new(),
        client_security: ClientSecurity::default(),
    }
}

fn status(leader: Option<i32>, active: bool, records: &[MetadataRecord]) -> ControllerStatus {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    delta
        .replay(&MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.into(),
            feature_level: 25,
            ..Default::default()
        }))
        .unwrap();
    for r in records {
        delta.replay(r).unwrap();
    }
    ControllerStatus {
        leader_id: leader,
        active,
        image: delta.apply(),
        ..Default::default()
    }
}

fn registered(c: &RegistrationConfig) -> Vec<MetadataRecord> {
    register_controller(&status(None, false, &[]).image, &c.request()).records
}

#[test]
fn waits_for_a_leader_then_registers_where_the_leader_is() {
    let me = config(2);
    assert_eq!(next(&me, &status(None, false, &[])), Next::Wait);
    assert_eq!(next(&me, &status(Some(2), true, &[])), Next::Local);
    // The leader's address: its registration, else nothing known yet.
    assert_eq!(next(&me, &status(Some(1), false, &[])), Next::Wait);
    let leader = registered(&config(1));
    assert_eq!(
        next(&me, &status(Some(1), false, &leader)),
        Next::Remote("127.0.0.1:9091".into())
    );
    let mut with_voters = me.clone();
    with_voters.voters = kraftd_raft::driver::parse_voters("1@c1:9093,2@c2:9093").unwrap();
    assert_eq!(
        next(&with_voters, &status(Some(1), false, &[])),
        Next::Remote("c1:9093".into())
    );
}

#[test]
fn registered_under_this_incarnation_it_waits_and_a_new_incarnation_registers_again() {
    let me = config(2);
    let mine = registered(&me);
    assert_eq!(next(&me, &status(Some(2), true, &mine)), Next::Wait);
    let mut restarted = me.clone();
    restarted.incarnation_id = Uuid([9; 16]);
    assert_eq!(next(&restarted, &status(Some(2), true, &mine)), Next::Local);
}
