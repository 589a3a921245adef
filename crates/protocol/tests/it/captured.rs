//! Frames captured from real clients (librdkafka, kafka-python, Kafka's Java tools and Kafka's
//! own node-to-node traffic) talking to Apache Kafka 4.4.0, by `tools/capture/capture.sh`.
//! Every request and response decodes in our codecs and re-encodes to the identical bytes.
//!
//! Kafka itself ignores bytes past the end of a request body; librdkafka sends a few such
//! frames, which `MANIFEST.tsv` marks `trailing(..)`. Those must re-encode to the bytes read.

use bytes::Bytes;
use kraftd_protocol::header::{
    decode_request, decode_response, encode_request, encode_response, RequestError,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/captured")
}

/// stem → unread bytes Kafka reported for the request, from MANIFEST.tsv.
fn trailing() -> BTreeMap<String, usize> {
    let manifest = std::fs::read_to_string(dir().join("MANIFEST.tsv")).expect("MANIFEST.tsv");
    manifest
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            let n = cols
                .get(5)?
                .strip_prefix("trailing(")?
                .split(' ')
                .next()?
                .parse()
                .ok()?;
            Some((cols[0].to_string(), n))
        })
        .collect()
}

fn stems() -> Vec<String> {
    let mut stems: Vec<String> = std::fs::read_dir(dir())
        .expect("captured frames")
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().to_string();
            name.strip_suffix(".request").map(str::to_string)
        })
        .collect();
    stems.sort();
    stems
}

#[test]
fn captured_client_frames_decode_and_reencode_identically() {
    let trailing = trailing();
    let stems = stems();
    assert!(stems.len() > 300, "only {} captured requests", stems.len());
    let (mut requests, mut responses) = (0, 0);
    let mut newer = std::collections::BTreeSet::new();
    let mut apis = std::collections::BTreeSet::new();
    for stem in &stems {
        let raw = Bytes::from(std::fs::read(dir().join(format!("{stem}.request"))).unwrap());
        let request = match decode_request(raw.clone()) {
            Ok(r) => r,
            // Kafka 4.4's clients speak a few versions newer than our schemas (from trunk
            // between 4.2 and 4.4): the header still decodes, and a server answers
            // UNSUPPORTED_VERSION (for ApiVersions, KIP-511's v0 answer) instead.
            Err(RequestError::UnsupportedVersion { api_key, header }) => {
                assert!(
                    header.request_api_version > api_key.valid_versions().max,
                    "{stem}: version {} is within the schema's range",
                    header.request_api_version
                );
                newer.insert((api_key.name(), header.request_api_version));
                continue;
            }
            Err(e) => panic!("{stem}.request does not decode: {e}"),
        };
        let again = encode_request(&request.header, &request.body)
            .unwrap_or_else(|e| panic!("{stem}.request does not re-encode: {e}"))
            .into_bytes();
        let unread = trailing.get(stem).copied().unwrap_or(0);
        assert_eq!(again.len() + unread, raw.len(), "{stem}.request: length");
        assert_eq!(&again[..], &raw[..again.len()], "{stem}.request: bytes");
        requests += 1;
        apis.insert(request.api_key);

        let path = dir().join(format!("{stem}.response"));
        let Ok(raw) = std::fs::read(&path) else {
            continue;
        };
        let raw = Bytes::from(raw);
        let version = request.header.request_api_version;
        let (header, body) = decode_response(request.api_key, version, raw.clone())
            .unwrap_or_else(|e| panic!("{stem}.response does not decode: {e}"));
        assert_eq!(
            header.correlation_id, request.header.correlation_id,
            "{stem}"
        );
        let again = encode_response(header.correlation_id, version, &body)
            .unwrap_or_else(|e| panic!("{stem}.response does not re-encode: {e}"))
            .into_bytes();
        assert_eq!(again, raw, "{stem}.response: bytes");
        responses += 1;
    }
    eprintln!(
        "{requests} requests and {responses} responses over {} APIs; newer than our schemas: {newer:?}",
        apis.len()
    );
    assert!(
        newer.len() <= 4,
        "many versions newer than our schemas: {newer:?}"
    );
    assert!(apis.len() >= 60, "only {} APIs captured", apis.len());
}

/// The Raft Fetch responses Kafka's controllers sent each other carry real
/// `__cluster_metadata` batches: every batch's CRC holds, every control record decodes with
/// its schema, and every metadata record decodes and re-encodes to Kafka's exact bytes.
#[test]
fn kafka_metadata_log_batches_decode_and_reencode_identically() {
    use kraftd_protocol::metadata_record::{decode_metadata_record, encode_metadata_record};
    use kraftd_protocol::records::{Batches, ControlRecord};
    use kraftd_protocol::ResponseBody;

    let (mut metadata, mut control) = (0, 0);
    let mut kinds = std::collections::BTreeSet::new();
    for stem in stems().iter().filter(|s| s.starts_with("kraftnode-Fetch")) {
        let Ok(raw) = std::fs::read(dir().join(format!("{stem}.response"))) else {
            continue;
        };
        let request = std::fs::read(dir().join(format!("{stem}.request"))).unwrap();
        let request = decode_request(Bytes::from(request)).unwrap();
        let version = request.header.request_api_version;
        let (_, body) = decode_response(request.api_key, version, Bytes::from(raw)).unwrap();
        let ResponseBody::Fetch(fetch) = body else {
            panic!("{stem}: not a fetch response")
        };
        for partition in fetch.responses.iter().flat_map(|t| &t.partitions) {
            let Some(records) = partition.records.clone() else {
                continue;
            };
            for batch in Batches::new(records) {
                let batch = batch.unwrap_or_else(|e| panic!("{stem}: {e}"));
                batch
                    .validate_crc()
                    .unwrap_or_else(|e| panic!("{stem}: {e}"));
                for record in batch.records().unwrap() {
                    let record = record.unwrap_or_else(|e| panic!("{stem}: {e}"));
                    let value = record.value.clone().expect("metadata records have values");
                    if batch.is_control() {
                        let key = record.key.as_ref().expect("control records have keys");
                        let decoded = ControlRecord::decode(key, value.clone())
                            .unwrap_or_else(|e| panic!("{stem}: {e}"));
                        assert_eq!(decoded.encode_value().unwrap(), value, "{stem}");
                        control += 1;
                    } else {
                        let (decoded, v) = decode_metadata_record(value.clone())
                            .unwrap_or_else(|e| panic!("{stem}: {e}"));
                        assert_eq!(
                            encode_metadata_record(&decoded, v).unwrap(),
                            value,
                            "{stem}"
                        );
                        kinds.insert(format!("{:?}", decoded.key()));
                        metadata += 1;
                    }
                }
            }
        }
    }
    eprintln!("{metadata} metadata records of kinds {kinds:?}, {control} control records");
    assert!(
        metadata > 0 && control > 0,
        "no metadata-log records in the captured Raft fetches"
    );
}
