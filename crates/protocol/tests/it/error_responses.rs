//! Every error answer (`error_response`) encodes at every version of its API: a node answers
//! an error at the version the client asked for, and an answer that does not encode closes
//! the client's connection instead.

use kraftd_protocol::error_response::error_response;
use kraftd_protocol::header::encode_response;
use kraftd_protocol::testing::SampleRng;
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody};

/// Found in a rolling migration: a JoinGroup v5 (librdkafka's) answered NOT_COORDINATOR
/// held a null protocol name, which JoinGroup allows only from v7 (Kafka's
/// `JoinGroupResponse` writes an empty one before that), and the connection was closed.
#[test]
fn every_error_answer_encodes_at_every_version() {
    let mut rng = SampleRng::new(7);
    let mut failures = Vec::new();
    for &key in ApiKey::ALL {
        for v in key.valid_versions().iter() {
            let request = RequestBody::sample(key, &mut rng, v);
            for code in [
                ErrorCode::NotCoordinator,
                ErrorCode::CoordinatorLoadInProgress,
            ] {
                let Some(response) = error_response(&request, code) else {
                    continue;
                };
                if let Err(e) = encode_response(1, v, &response) {
                    failures.push(format!("{} v{v} {code:?}: {e}", key.name()));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
