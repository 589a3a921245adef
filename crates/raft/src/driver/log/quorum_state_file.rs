//! The `quorum-state` file's JSON form: Kafka's `FileQuorumStateStore`, which writes the
//! generated [`QuorumStateData`] through `QuorumStateDataJsonConverter` and adds a
//! `data_version` field, on one line without a trailing newline. This is the one codec of
//! that file; the core keeps its small `(epoch, leader, vote)` triple
//! ([`crate::core::quorum_state::QuorumStateData`]) and the driver converts at
//! [`super::MetadataLog`]'s read and write.
//!
//! Writing emits exactly the converter's field names and order for the version
//! (`data_version` last):
//!
//! - 1: `{"leaderId":..,"leaderEpoch":..,"votedId":..,"votedDirectoryId":"<base64>","data_version":1}`
//! - 0: `{"clusterId":"..","leaderId":..,"leaderEpoch":..,"votedId":..,"appliedOffset":..,"currentVoters":[{"voterId":..}],"data_version":0}`
//!
//! Reading follows `FileQuorumStateStore.readStateFromFile` and the converter: the file
//! must be one JSON object with an integer `data_version` in 0..=1, every field of that
//! version must be present with its type (int32 and int64 as JSON integers in range,
//! strings, the base64 uuid, `currentVoters` an array of `{"voterId": int32}` or null).
//! Fields the version does not have, and fields nobody knows, are ignored, as Kafka's
//! converter ignores them. Anything else is a [`QuorumStateFileError`] saying what is
//! wrong with the file.

use kraftd_protocol::messages::quorum_state_data::Voter;
use kraftd_protocol::messages::QuorumStateData;
use kraftd_protocol::Uuid;
use serde::Serialize;
use serde_json::{Map, Value};

/// The `data_version` field Kafka adds to the converter's object.
const DATA_VERSION: &str = "data_version";

/// The `data_version`s Kafka 4.x reads and writes (`FileQuorumStateStore`'s
/// `LOWEST_SUPPORTED_VERSION`/`HIGHEST_SUPPORTED_VERSION`).
pub const LOWEST_SUPPORTED_VERSION: i16 = 0;
pub const HIGHEST_SUPPORTED_VERSION: i16 = 1;

/// What is wrong with a `quorum-state` file (or a state that cannot be written at a version).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct QuorumStateFileError(String);

fn bad(reason: impl Into<String>) -> QuorumStateFileError {
    QuorumStateFileError(reason.into())
}

/// Version 1, in the converter's field order.
#[derive(Serialize)]
struct V1<'a> {
    #[serde(rename = "leaderId")]
    leader_id: i32,
    #[serde(rename = "leaderEpoch")]
    leader_epoch: i32,
    #[serde(rename = "votedId")]
    voted_id: i32,
    #[serde(rename = "votedDirectoryId")]
    voted_directory_id: &'a str,
    data_version: i16,
}

/// Version 0, in the converter's field order.
#[derive(Serialize)]
struct V0<'a> {
    #[serde(rename = "clusterId")]
    cluster_id: &'a str,
    #[serde(rename = "leaderId")]
    leader_id: i32,
    #[serde(rename = "leaderEpoch")]
    leader_epoch: i32,
    #[serde(rename = "votedId")]
    voted_id: i32,
    #[serde(rename = "appliedOffset")]
    applied_offset: i64,
    #[serde(rename = "currentVoters")]
    current_voters: Option<Vec<V0Voter>>,
    data_version: i16,
}

#[derive(Serialize)]
struct V0Voter {
    #[serde(rename = "voterId")]
    voter_id: i32,
}

/// The file's bytes for `data` at `version`, as Kafka writes them. Refused, as the
/// converter refuses, for a version outside 0..=1 or a field set that `version` does not
/// have (a cluster id, applied offset or voters in version 1, a directory id in version 0).
pub fn encode(data: &QuorumStateData, version: i16) -> Result<Vec<u8>, QuorumStateFileError> {
    let not_in = |field: &str| {
        bad(format!(
            "{field} is not in quorum-state data_version {version}"
        ))
    };
    let json = match version {
        1 => {
            if !data.cluster_id.is_empty() {
                return Err(not_in("clusterId"));
            }
            if data.applied_offset != 0 {
                return Err(not_in("appliedOffset"));
            }
            if !matches!(&data.current_voters, Some(v) if v.is_empty()) {
                return Err(not_in("currentVoters"));
            }
            serde_json::to_vec(&V1 {
                leader_id: data.leader_id,
                leader_epoch: data.leader_epoch,
                voted_id: data.voted_id,
                voted_directory_id: &data.voted_directory_id.to_base64(),
                data_version: version,
            })
        }
        0 => {
            if data.voted_directory_id != Uuid::ZERO {
                return Err(not_in("votedDirectoryId"));
            }
            serde_json::to_vec(&V0 {
                cluster_id: &data.cluster_id,
                leader_id: data.leader_id,
                leader_epoch: data.leader_epoch,
                voted_id: data.voted_id,
                applied_offset: data.applied_offset,
                current_voters: data.current_voters.as_ref().map(|voters| {
                    voters
                        .iter()
                        .map(|v| V0Voter {
                            voter_id: v.voter_id,
                        })
                        .collect()
                }),
                data_version: version,
            })
        }
        _ => {
            return Err(bad(format!(
                "quorum-state data_version {version} is not within the supported versions \
                 {LOWEST_SUPPORTED_VERSION} to {HIGHEST_SUPPORTED_VERSION}"
            )))
        }
    };
    json.map_err(|e| bad(format!("cannot serialize quorum-state: {e}")))
}

/// The state in a `quorum-state` file and its `data_version`.
pub fn decode(bytes: &[u8]) -> Result<(QuorumStateData, i16), QuorumStateFileError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    let Value::Object(object) = value else {
        return Err(bad(format!("not a JSON object but {}", kind(&value))));
    };
    let version = match object.get(DATA_VERSION) {
        None => return Err(bad(format!("no {DATA_VERSION} field"))),
        Some(v) => int::<i16>(v, DATA_VERSION)?,
    };
    if !(LOWEST_SUPPORTED_VERSION..=HIGHEST_SUPPORTED_VERSION).contains(&version) {
        return Err(bad(format!(
            "{DATA_VERSION} {version} is not within the supported versions \
             {LOWEST_SUPPORTED_VERSION} to {HIGHEST_SUPPORTED_VERSION}"
        )));
    }
    let mut data = QuorumStateData {
        leader_id: int(required(&object, "leaderId", version)?, "leaderId")?,
        leader_epoch: int(required(&object, "leaderEpoch", version)?, "leaderEpoch")?,
        voted_id: int(required(&object, "votedId", version)?, "votedId")?,
        ..QuorumStateData::default()
    };
    if version >= 1 {
        let field = "votedDirectoryId";
        let text = string(required(&object, field, version)?, field)?;
        data.voted_directory_id = Uuid::from_base64(text)
            .ok_or_else(|| bad(format!("{field} {text:?} is not a base64 uuid")))?;
    } else {
        data.cluster_id = string(required(&object, "clusterId", version)?, "clusterId")?.into();
        data.applied_offset = int(
            required(&object, "appliedOffset", version)?,
            "appliedOffset",
        )?;
        data.current_voters = match required(&object, "currentVoters", version)? {
            Value::Null => None,
            Value::Array(voters) => Some(
                voters
                    .iter()
                    .map(|v| {
                        let Value::Object(voter) = v else {
                            return Err(bad(format!(
                                "currentVoters holds {} where an object belongs",
                                kind(v)
                            )));
                        };
                        let id = voter
                            .get("voterId")
                            .ok_or_else(|| bad("a currentVoters entry has no voterId"))?;
                        Ok(Voter {
                            voter_id: int(id, "voterId")?,
                            ..Voter::default()
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
            other => {
                return Err(bad(format!(
                    "currentVoters is {}, not an array",
                    kind(other)
                )))
            }
        };
    }
    Ok((data, version))
}

fn required<'a>(
    object: &'a Map<String, Value>,
    field: &str,
    version: i16,
) -> Result<&'a Value, QuorumStateFileError> {
    object.get(field).ok_or_else(|| {
        bad(format!(
            "no {field} field, which {DATA_VERSION} {version} requires"
        ))
    })
}

/// A JSON integer that fits `T` (Kafka's `jsonNodeToInt`/`jsonNodeToLong` take no strings
/// and no fractions).
fn int<T: TryFrom<i64>>(value: &Value, field: &str) -> Result<T, QuorumStateFileError> {
    let n = value
        .as_i64()
        .ok_or_else(|| bad(format!("{field} is {}, not an integer", kind(value))))?;
    T::try_from(n).map_err(|_| bad(format!("{field} {n} is out of range")))
}

fn string<'a>(value: &'a Value, field: &str) -> Result<&'a str, QuorumStateFileError> {
    value
        .as_str()
        .ok_or_else(|| bad(format!("{field} is {}, not a string", kind(value))))
}

/// What a JSON value is, for an error message (with the value when short).
fn kind(value: &Value) -> String {
    let what = match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    match value {
        Value::Array(_) | Value::Object(_) | Value::Null => what.to_string(),
        _ => format!("{what} ({value})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Kafka 4.4.0's `FileQuorumStateStore.writeElectionState` wrote (run from the
    /// jars in `target/kafka-jars`): `ElectionState.withElectedLeader(643, 1003, empty, {1,2,3})`
    /// with `KRaftVersion.KRAFT_VERSION_1`, byte for byte (no trailing newline).
    const KAFKA_V1_LEADER: &str = r#"{"leaderId":1003,"leaderEpoch":643,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}"#;
    /// `withVotedCandidate(5, ReplicaKey.of(2, NO_DIRECTORY_ID), {1,2,3})`, version 1.
    const KAFKA_V1_VOTED: &str = r#"{"leaderId":-1,"leaderEpoch":5,"votedId":2,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}"#;
    /// `withVotedCandidate(5, ReplicaKey.of(2, NO_DIRECTORY_ID), {1,2,3})` with
    /// `KRAFT_VERSION_0` (a static quorum): Kafka writes data_version 0.
    const KAFKA_V0_VOTED: &str = r#"{"clusterId":"","leaderId":-1,"leaderEpoch":5,"votedId":2,"appliedOffset":0,"currentVoters":[{"voterId":2},{"voterId":3},{"voterId":1}],"data_version":0}"#;

    fn state(leader_epoch: i32, leader_id: i32, voted_id: i32) -> QuorumStateData {
        QuorumStateData {
            leader_epoch,
            leader_id,
            voted_id,
            voted_directory_id: Uuid::ZERO,
            ..QuorumStateData::default()
        }
    }

    fn error(json: &str) -> String {
        decode(json.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn version_1_is_kafkas_bytes() {
        assert_eq!(
            encode(&state(643, 1003, -1), 1).unwrap(),
            KAFKA_V1_LEADER.as_bytes()
        );
        assert_eq!(
            encode(&state(5, -1, 2), 1).unwrap(),
            KAFKA_V1_VOTED.as_bytes()
        );
        assert_eq!(
            decode(KAFKA_V1_LEADER.as_bytes()).unwrap(),
            (state(643, 1003, -1), 1)
        );
    }

    #[test]
    fn version_0_is_read_and_written_as_kafka_does() {
        let (data, version) = decode(KAFKA_V0_VOTED.as_bytes()).unwrap();
        assert_eq!(version, 0);
        assert_eq!(
            (data.leader_epoch, data.leader_id, data.voted_id),
            (5, -1, 2)
        );
        let voters: Vec<i32> = data
            .current_voters
            .as_ref()
            .unwrap()
            .iter()
            .map(|v| v.voter_id)
            .collect();
        assert_eq!(voters, [2, 3, 1]);
        assert_eq!(encode(&data, 0).unwrap(), KAFKA_V0_VOTED.as_bytes());
        // Kafka's own example of the format (FileQuorumStateStore's doc).
        let (data, _) = decode(
            br#"{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[],"data_version":0}"#,
        )
        .unwrap();
        assert_eq!(
            (data.leader_epoch, data.leader_id, data.voted_id),
            (2, 1, -1)
        );
        // Null voters are allowed in version 0.
        let (data, _) = decode(
            br#"{"clusterId":"c","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":7,"currentVoters":null,"data_version":0}"#,
        )
        .unwrap();
        assert_eq!(data.current_voters, None);
        assert_eq!(data.applied_offset, 7);
    }

    #[test]
    fn round_trips_at_both_versions() {
        let mut v1 = state(i32::MAX, 3, 3);
        v1.voted_directory_id = Uuid::from_base64("J8aAPcfLQt2bqs1JT_rMgQ").unwrap();
        assert_eq!(decode(&encode(&v1, 1).unwrap()).unwrap(), (v1.clone(), 1));
        let mut v0 = state(0, -1, -1);
        v0.cluster_id = "cluster \"x\"".into();
        v0.applied_offset = i64::MAX;
        v0.current_voters = Some(vec![Voter {
            voter_id: 9,
            ..Voter::default()
        }]);
        assert_eq!(decode(&encode(&v0, 0).unwrap()).unwrap(), (v0.clone(), 0));
        // Fields a version lacks are refused on write.
        assert!(encode(&v0, 1).is_err());
        assert!(encode(&v1, 0).is_err());
        assert!(encode(&state(1, 1, 1), 2).is_err());
    }

    #[test]
    fn unknown_and_out_of_version_fields_are_ignored() {
        let (data, _) = decode(
            br#"{"leaderId":1,"leaderEpoch":2,"votedId":-1,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","clusterId":"x","future":[1],"data_version":1}"#,
        )
        .unwrap();
        assert_eq!(data, state(2, 1, -1));
    }

    #[test]
    fn malformed_files_are_refused_with_the_reason() {
        assert!(error("").contains("not valid JSON"));
        assert!(error("{\"leaderId\":1,").contains("not valid JSON"));
        assert!(error(&format!("{KAFKA_V1_LEADER} x")).contains("not valid JSON"));
        assert!(error("[1]").contains("not a JSON object"));
        assert!(error(r#"{"leaderId":1,"leaderEpoch":2,"votedId":-1}"#).contains("no data_version"));
        for v in ["2", "-1", "99999"] {
            let e = error(
                &KAFKA_V1_LEADER.replace("\"data_version\":1", &format!("\"data_version\":{v}")),
            );
            assert!(
                e.contains("not within the supported versions") || e.contains("out of range"),
                "{e}"
            );
        }
        assert!(
            error(&KAFKA_V1_LEADER.replace("\"data_version\":1", "\"data_version\":\"1\""))
                .contains("data_version is a string")
        );
        assert!(error(&KAFKA_V1_LEADER.replace("\"leaderEpoch\":643,", ""))
            .contains("no leaderEpoch field, which data_version 1 requires"));
        assert!(
            error(&KAFKA_V1_LEADER.replace("643", "\"643\"")).contains("leaderEpoch is a string")
        );
        assert!(error(&KAFKA_V1_LEADER.replace("643", "6.5")).contains("leaderEpoch is a number"));
        assert!(error(&KAFKA_V1_LEADER.replace("643", "2147483648"))
            .contains("leaderEpoch 2147483648 is out of range"));
        assert!(error(&KAFKA_V1_LEADER.replace("1003", "null")).contains("leaderId is null"));
        assert!(
            error(&KAFKA_V1_LEADER.replace("AAAAAAAAAAAAAAAAAAAAAA", "nope"))
                .contains("votedDirectoryId \"nope\" is not a base64 uuid")
        );
        assert!(error(&KAFKA_V0_VOTED.replace(",\"appliedOffset\":0", ""))
            .contains("no appliedOffset field, which data_version 0 requires"));
        assert!(error(&KAFKA_V0_VOTED.replace("{\"voterId\":2}", "2"))
            .contains("currentVoters holds a number"));
        assert!(error(&KAFKA_V0_VOTED.replace("{\"voterId\":2}", "{}")).contains("no voterId"));
        assert!(
            error(&KAFKA_V0_VOTED.replace("\"clusterId\":\"\"", "\"clusterId\":1"))
                .contains("clusterId is a number")
        );
    }
}
