//! ClientQuotaControlManager: AlterClientQuotas (entities, keys, types, removal, only-changed
//! records, validate-only) and DescribeClientQuotas filters, with records replayed.

use kraftd_controller::control::quotas::{
    MATCH_TYPE_DEFAULT, MATCH_TYPE_EXACT, MATCH_TYPE_SPECIFIED,
};
use kraftd_controller::control::ClientQuotaControlManager;
use kraftd_controller::image::ClientQuotaEntity;
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kraftd_protocol::messages::describe_client_quotas_request::ComponentData;
use kraftd_protocol::messages::{AlterClientQuotasRequest, DescribeClientQuotasRequest};
use kraftd_protocol::ErrorCode;

fn entry(entity: &[(&str, Option<&str>)], ops: &[(&str, f64, bool)]) -> EntryData {
    EntryData {
        entity: entity
            .iter()
            .map(|(t, n)| EntityData {
                entity_type: t.to_string(),
                entity_name: n.map(str::to_string),
                ..Default::default()
            })
            .collect(),
        ops: ops
            .iter()
            .map(|(k, v, remove)| OpData {
                key: k.to_string(),
                value: *v,
                remove: *remove,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn alter(image: &MetadataImage, entries: Vec<EntryData>) -> (MetadataImage, Vec<i16>, usize) {
    let request = AlterClientQuotasRequest {
        entries,
        ..Default::default()
    };
    let result = ClientQuotaControlManager::new().alter_client_quotas(image, &request);
    let next = image.replay_all(&result.records).unwrap();
    let codes = result
        .response
        .entries
        .iter()
        .map(|e| e.error_code)
        .collect();
    (next, codes, result.records.len())
}

fn entity(pairs: &[(&str, Option<&str>)]) -> ClientQuotaEntity {
    ClientQuotaEntity(
        pairs
            .iter()
            .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
            .collect(),
    )
}

fn seeded() -> MetadataImage {
    let (image, codes, n) = alter(
        &MetadataImage::empty(),
        vec![
            entry(
                &[("user", Some("alice"))],
                &[("producer_byte_rate", 1024.0, false)],
            ),
            entry(&[("user", None)], &[("consumer_byte_rate", 2048.0, false)]),
            entry(
                &[("user", Some("alice")), ("client-id", Some("app"))],
                &[("request_percentage", 12.5, false)],
            ),
            entry(
                &[("ip", Some("10.0.0.1"))],
                &[("connection_creation_rate", 5.0, false)],
            ),
        ],
    );
    assert_eq!(codes, vec![0; 4]);
    assert_eq!(n, 4);
    image
}

#[test]
fn alter_sets_and_removes() {
    let image = seeded();
    let alice = entity(&[("user", Some("alice"))]);
    assert_eq!(
        image
            .client_quotas
            .get(&alice)
            .unwrap()
            .get("producer_byte_rate"),
        Some(&1024.0)
    );
    // The same value writes nothing; a removal of an absent key writes nothing.
    let (next, codes, n) = alter(
        &image,
        vec![entry(
            &[("user", Some("alice"))],
            &[
                ("producer_byte_rate", 1024.0, false),
                ("consumer_byte_rate", 0.0, true),
            ],
        )],
    );
    assert_eq!((codes, n), (vec![0], 0));
    let (next, codes, n) = alter(
        &next,
        vec![entry(
            &[("user", Some("alice"))],
            &[("producer_byte_rate", 0.0, true)],
        )],
    );
    assert_eq!((codes, n), (vec![0], 1));
    assert!(next.client_quotas.get(&alice).is_none());
}

#[test]
fn bad_entries_get_invalid_request() {
    let image = MetadataImage::empty();
    let (next, codes, n) = alter(
        &image,
        vec![
            entry(&[], &[("producer_byte_rate", 1.0, false)]),
            entry(
                &[("group", Some("g"))],
                &[("producer_byte_rate", 1.0, false)],
            ),
            entry(
                &[("user", Some("a")), ("user", Some("b"))],
                &[("producer_byte_rate", 1.0, false)],
            ),
            entry(
                &[("ip", Some("1.2.3.4")), ("user", Some("a"))],
                &[("connection_creation_rate", 1.0, false)],
            ),
            entry(
                &[("ip", Some("not-an-ip"))],
                &[("connection_creation_rate", 1.0, false)],
            ),
            entry(&[("user", Some("a"))], &[("no_such_quota", 1.0, false)]),
            entry(
                &[("user", Some("a"))],
                &[("producer_byte_rate", 1.5, false)],
            ),
            entry(&[("ip", None)], &[("producer_byte_rate", 1.0, false)]),
            entry(&[("ip", None)], &[("connection_creation_rate", 3.0, false)]),
        ],
    );
    let bad = ErrorCode::InvalidRequest.code();
    assert_eq!(codes, vec![bad, bad, bad, bad, bad, bad, bad, bad, 0]);
    assert_eq!(n, 1);
    assert!(next.client_quotas.get(&entity(&[("ip", None)])).is_some());

    let request = AlterClientQuotasRequest {
        entries: vec![entry(
            &[("user", Some("v"))],
            &[("producer_byte_rate", 1.0, false)],
        )],
        validate_only: true,
        ..Default::default()
    };
    let result = ClientQuotaControlManager::new().alter_client_quotas(&image, &request);
    assert_eq!(result.response.entries[0].error_code, 0);
    assert!(result.records.is_empty());
}

fn component(entity_type: &str, match_type: i8, m: Option<&str>) -> ComponentData {
    ComponentData {
        entity_type: entity_type.into(),
        match_type,
        r#match: m.map(str::to_string),
        ..Default::default()
    }
}

fn describe(
    image: &MetadataImage,
    components: Vec<ComponentData>,
    strict: bool,
) -> Result<usize, i16> {
    let request = DescribeClientQuotasRequest {
        components,
        strict,
        ..Default::default()
    };
    let response = ClientQuotaControlManager::new().describe_client_quotas(image, &request);
    if response.error_code != 0 {
        return Err(response.error_code);
    }
    Ok(response.entries.unwrap().len())
}

#[test]
fn describe_filters() {
    let image = seeded();
    assert_eq!(describe(&image, vec![], false), Ok(4));
    assert_eq!(describe(&image, vec![], true), Ok(0));
    let alice = component("user", MATCH_TYPE_EXACT, Some("alice"));
    assert_eq!(describe(&image, vec![alice.clone()], false), Ok(2));
    assert_eq!(describe(&image, vec![alice], true), Ok(1));
    assert_eq!(
        describe(
            &image,
            vec![component("user", MATCH_TYPE_DEFAULT, None)],
            false
        ),
        Ok(1)
    );
    assert_eq!(
        describe(
            &image,
            vec![component("user", MATCH_TYPE_SPECIFIED, None)],
            false
        ),
        Ok(2)
    );
    let bad = ErrorCode::InvalidRequest.code();
    assert_eq!(
        describe(
            &image,
            vec![component("user", MATCH_TYPE_EXACT, None)],
            false
        ),
        Err(bad)
    );
    assert_eq!(
        describe(
            &image,
            vec![
                component("ip", MATCH_TYPE_DEFAULT, None),
                component("user", MATCH_TYPE_DEFAULT, None)
            ],
            false
        ),
        Err(bad)
    );
}
