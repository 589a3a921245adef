//! ScramControlManager: AlterUserScramCredentials (upsert, delete, iteration bounds,
//! duplicates, key derivation checked against RFC 5802 values computed independently) and
//! DescribeUserScramCredentials, with records replayed into the image.

use bytes::Bytes;
use kraftd_controller::control::scram::scram_keys;
use kraftd_controller::control::ScramControlManager;
use kraftd_controller::image::ScramMechanism;
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kraftd_protocol::messages::describe_user_scram_credentials_request::UserName;
use kraftd_protocol::messages::{
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
};
use kraftd_protocol::{ErrorCode, MetadataRecord};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// PBKDF2(password "pencil", salt of RFC 7677, 4096) and the keys derived from it (computed
/// with Python's hashlib and hmac).
const SALTED_256: &str = "c4a49510323ab4f952cac1fa99441939e78ea74d6be81ddf7096e87513dc615d";
const STORED_256: &str = "586e5df283e6dceb5c3e791d8b8528ec191e664045ce971792e2e6b5bb13e2a6";
const SERVER_256: &str = "c1f3cbc1c13a9d35a14c0990eed97629ea225863e566a4314ab99f3f00e5d9d5";
const SALTED_512: &str = "f16efe1be67f1d09502ebd5ed9262fddffba5a377ab4f0b687e5ed5ba0f50686b8a4ae166476da8ab3b951d2fa9238b63998f45461bc33a464814949cec9631d";
const STORED_512: &str = "e8002e6f7d3ae446119b216933644dc2a2be7869eb918b8459b5e7d7d2ec12606aceef106825cd735170a675fd3611f684affad1dce3f43a0ee43bd590e1dbbe";
const SERVER_512: &str = "8d91db6230b5687874fe129bc7206e1858c3ae08e02934f57ac03b6b05a229c459d28ff46f5c9611e6c179256490215ec1ff759cb0df285db89af0f99e613aac";

fn upsertion(name: &str, mechanism: i8, iterations: i32) -> ScramCredentialUpsertion {
    let salted = if mechanism == 2 {
        SALTED_512
    } else {
        SALTED_256
    };
    ScramCredentialUpsertion {
        name: name.into(),
        mechanism,
        iterations,
        salt: Bytes::from_static(b"salt"),
        salted_password: Bytes::from(hex(salted)),
        ..Default::default()
    }
}

fn deletion(name: &str, mechanism: i8) -> ScramCredentialDeletion {
    ScramCredentialDeletion {
        name: name.into(),
        mechanism,
        ..Default::default()
    }
}

fn alter(
    image: &MetadataImage,
    deletions: Vec<ScramCredentialDeletion>,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> (MetadataImage, Vec<(String, i16)>, Vec<MetadataRecord>) {
    let request = AlterUserScramCredentialsRequest {
        deletions,
        upsertions,
        ..Default::default()
    };
    let result = ScramControlManager::new().alter_credentials(image, &request);
    let next = image.replay_all(&result.records).unwrap();
    let codes = result
        .response
        .results
        .iter()
        .map(|r| (r.user.clone(), r.error_code))
        .collect();
    (next, codes, result.records)
}

#[test]
fn keys_follow_rfc_5802() {
    let (stored, server) = scram_keys(ScramMechanism::ScramSha256, &hex(SALTED_256));
    assert_eq!(stored.to_vec(), hex(STORED_256));
    assert_eq!(server.to_vec(), hex(SERVER_256));
    let (stored, server) = scram_keys(ScramMechanism::ScramSha512, &hex(SALTED_512));
    assert_eq!(stored.to_vec(), hex(STORED_512));
    assert_eq!(server.to_vec(), hex(SERVER_512));
}

#[test]
fn upsert_then_delete() {
    let image = MetadataImage::empty();
    let (image, codes, records) = alter(
        &image,
        vec![],
        vec![upsertion("alice", 1, 4096), upsertion("bob", 2, 8192)],
    );
    assert_eq!(codes, vec![("alice".into(), 0), ("bob".into(), 0)]);
    assert_eq!(records.len(), 2);
    let MetadataRecord::UserScramCredential(r) = &records[0] else {
        panic!("{:?}", records[0]);
    };
    assert_eq!(r.stored_key.to_vec(), hex(STORED_256));
    assert_eq!(r.server_key.to_vec(), hex(SERVER_256));
    let alice = image
        .scram
        .get("alice", ScramMechanism::ScramSha256)
        .unwrap();
    assert_eq!(alice.iterations, 4096);
    assert_eq!(alice.salt, Bytes::from_static(b"salt"));
    let bob = image.scram.get("bob", ScramMechanism::ScramSha512).unwrap();
    assert_eq!(bob.server_key.to_vec(), hex(SERVER_512));

    let (image, codes, _) = alter(&image, vec![deletion("alice", 1)], vec![]);
    assert_eq!(codes, vec![("alice".into(), 0)]);
    assert!(image
        .scram
        .get("alice", ScramMechanism::ScramSha256)
        .is_none());
    assert!(image
        .scram
        .get("bob", ScramMechanism::ScramSha512)
        .is_some());
}

#[test]
fn bad_alterations_get_kafka_errors() {
    let image = MetadataImage::empty();
    let (next, codes, records) = alter(
        &image,
        vec![
            deletion("ghost", 1),
            deletion("twice", 1),
            deletion("bad", 7),
        ],
        vec![
            upsertion("few", 1, 4095),
            upsertion("many", 1, 16385),
            upsertion("", 1, 4096),
            upsertion("twice", 1, 4096),
            upsertion("ok", 2, 4096),
        ],
    );
    assert_eq!(
        codes,
        vec![
            ("ghost".into(), ErrorCode::ResourceNotFound.code()),
            ("twice".into(), ErrorCode::DuplicateResource.code()),
            ("bad".into(), ErrorCode::UnsupportedSaslMechanism.code()),
            ("few".into(), ErrorCode::UnacceptableCredential.code()),
            ("many".into(), ErrorCode::UnacceptableCredential.code()),
            ("".into(), ErrorCode::UnacceptableCredential.code()),
            ("ok".into(), 0),
        ]
    );
    assert_eq!(records.len(), 1);
    assert_eq!(next.scram.iter().count(), 1);
}

#[test]
fn describe_reads_the_image() {
    let (image, _, _) = alter(
        &MetadataImage::empty(),
        vec![],
        vec![upsertion("alice", 1, 4096), upsertion("bob", 2, 8192)],
    );
    let (image, _, _) = alter(&image, vec![], vec![upsertion("alice", 2, 5000)]);
    let manager = ScramControlManager::new();
    let all = manager.describe_credentials(&image, &DescribeUserScramCredentialsRequest::default());
    assert_eq!(all.error_code, 0);
    let users: Vec<(String, usize)> = all
        .results
        .iter()
        .map(|r| (r.user.clone(), r.credential_infos.len()))
        .collect();
    assert_eq!(users, vec![("alice".into(), 2), ("bob".into(), 1)]);

    let name = |n: &str| UserName {
        name: n.into(),
        ..Default::default()
    };
    let request = DescribeUserScramCredentialsRequest {
        users: Some(vec![
            name("bob"),
            name("nobody"),
            name("alice"),
            name("alice"),
        ]),
        ..Default::default()
    };
    let some = manager.describe_credentials(&image, &request);
    let codes: Vec<(String, i16)> = some
        .results
        .iter()
        .map(|r| (r.user.clone(), r.error_code))
        .collect();
    assert_eq!(
        codes,
        vec![
            ("bob".into(), 0),
            ("nobody".into(), ErrorCode::ResourceNotFound.code()),
            ("alice".into(), ErrorCode::DuplicateResource.code()),
        ]
    );
    assert_eq!(some.results[0].credential_infos[0].iterations, 8192);
    assert_eq!(some.results[0].credential_infos[0].mechanism, 2);
}
