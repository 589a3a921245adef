//! `ScramControlManager`: SCRAM credentials (KIP-554), as Kafka's
//! `org.apache.kafka.controller.ScramControlManager`. AlterUserScramCredentials upserts and
//! deletes credentials for SCRAM-SHA-256 and SCRAM-SHA-512; DescribeUserScramCredentials
//! reads the image.
//!
//! The client sends the salted password (Hi(password, salt, i), RFC 5802); the controller
//! derives `StoredKey = H(HMAC(salted, "Client Key"))` and `ServerKey = HMAC(salted, "Server
//! Key")` and writes only those with the salt and iterations, never the salted password.
//!
//! Pure: reads the image, returns records.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use hmac::{Hmac, Mac};
use kraftd_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kraftd_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kraftd_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};
use kraftd_protocol::metadata::{RemoveUserScramCredentialRecord, UserScramCredentialRecord};
use kraftd_protocol::{ErrorCode, MetadataRecord};
use sha2::{Digest, Sha256, Sha512};

use crate::control::result::ControllerResult;
use crate::image::{MetadataImage, ScramMechanism};

/// Kafka's `ScramMechanism.minIterations()` (RFC 7677's recommended minimum).
pub const SCRAM_MIN_ITERATIONS: i32 = 4096;
/// Kafka's `ScramMechanism.maxIterations()`.
pub const SCRAM_MAX_ITERATIONS: i32 = 16384;

/// Alters and describes SCRAM credentials. Holds nothing: all state is the image.
#[derive(Debug, Clone, Default)]
pub struct ScramControlManager;

/// An error for one user: the code and Kafka's message.
type UserError = (ErrorCode, String);

impl ScramControlManager {
    pub fn new() -> Self {
        ScramControlManager
    }

    /// AlterUserScramCredentials: one result per user named; a user named more than once in
    /// the request (deletion or upsertion) gets DUPLICATE_RESOURCE and nothing is written for
    /// it, as in Kafka.
    pub fn alter_credentials(
        &self,
        image: &MetadataImage,
        request: &AlterUserScramCredentialsRequest,
    ) -> ControllerResult<AlterUserScramCredentialsResponse> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        let names = request
            .deletions
            .iter()
            .map(|d| d.name.as_str())
            .chain(request.upsertions.iter().map(|u| u.name.as_str()));
        let mut order = Vec::new();
        for name in names {
            let count = counts.entry(name).or_insert(0);
            if *count == 0 {
                order.push(name);
            }
            *count += 1;
        }
        let mut outcomes: BTreeMap<&str, Result<MetadataRecord, UserError>> = BTreeMap::new();
        for d in &request.deletions {
            outcomes.insert(&d.name, delete(image, &d.name, d.mechanism));
        }
        for u in &request.upsertions {
            outcomes.insert(
                &u.name,
                upsert(
                    &u.name,
                    u.mechanism,
                    u.iterations,
                    &u.salt,
                    &u.salted_password,
                ),
            );
        }
        let mut records = Vec::new();
        let mut response = AlterUserScramCredentialsResponse::default();
        for name in order {
            let outcome = if counts[name] > 1 {
                Err((
                    ErrorCode::DuplicateResource,
                    "A user credential cannot be altered twice in the same request".into(),
                ))
            } else {
                outcomes
                    .remove(name)
                    .expect("every named user has an outcome")
            };
            let (error_code, error_message) = match outcome {
                Ok(record) => {
                    records.push(record);
                    (0, None)
                }
                Err((code, message)) => (code.code(), Some(message)),
            };
            response.results.push(AlterUserScramCredentialsResult {
                user: name.to_string(),
                error_code,
                error_message,
                ..Default::default()
            });
        }
        ControllerResult::atomic_of(records, response)
    }

    /// DescribeUserScramCredentials: the mechanisms and iterations of each user (all users
    /// when none are named), never the keys.
    pub fn describe_credentials(
        &self,
        image: &MetadataImage,
        request: &DescribeUserScramCredentialsRequest,
    ) -> DescribeUserScramCredentialsResponse {
        let mut by_user: BTreeMap<&str, Vec<CredentialInfo>> = BTreeMap::new();
        for (key, credential) in image.scram.iter() {
            by_user.entry(&key.user).or_default().push(CredentialInfo {
                mechanism: key.mechanism.code(),
                iterations: credential.iterations,
                ..Default::default()
            });
        }
        let mut response = DescribeUserScramCredentialsResponse {
            error_message: None,
            ..Default::default()
        };
        let named: Vec<&str> = request
            .users
            .iter()
            .flatten()
            .map(|u| u.name.as_str())
            .collect();
        if named.is_empty() {
            for (user, infos) in by_user {
                response.results.push(DescribeUserScramCredentialsResult {
                    user: user.to_string(),
                    error_message: None,
                    credential_infos: infos,
                    ..Default::default()
                });
            }
            return response;
        }
        let mut seen = BTreeSet::new();
        let duplicates: BTreeSet<&str> = named
            .iter()
            .filter(|n| !seen.insert(**n))
            .copied()
            .collect();
        let mut reported = BTreeSet::new();
        for name in named {
            if !reported.insert(name) {
                continue;
            }
            let mut result = DescribeUserScramCredentialsResult {
                user: name.to_string(),
                error_message: None,
                ..Default::default()
            };
            if duplicates.contains(name) {
                result.error_code = ErrorCode::DuplicateResource.code();
                result.error_message = Some(
                    "Cannot describe SCRAM credentials for the same user twice in a single \
                     request"
                        .into(),
                );
            } else if let Some(infos) = by_user.get(name) {
                result.credential_infos = infos.clone();
            } else {
                result.error_code = ErrorCode::ResourceNotFound.code();
                result.error_message =
                    Some("Attempt to describe a user credential that does not exist".into());
            }
            response.results.push(result);
        }
        response
    }
}

/// StoredKey and ServerKey from a salted password (RFC 5802 §3).
pub fn scram_keys(mechanism: ScramMechanism, salted_password: &[u8]) -> (Bytes, Bytes) {
    match mechanism {
        ScramMechanism::ScramSha256 => {
            let client_key = hmac_sha256(salted_password, b"Client Key");
            let stored_key = Sha256::digest(&client_key).to_vec();
            let server_key = hmac_sha256(salted_password, b"Server Key");
            (Bytes::from(stored_key), Bytes::from(server_key))
        }
        ScramMechanism::ScramSha512 => {
            let client_key = hmac_sha512(salted_password, b"Client Key");
            let stored_key = Sha512::digest(&client_key).to_vec();
            let server_key = hmac_sha512(salted_password, b"Server Key");
            (Bytes::from(stored_key), Bytes::from(server_key))
        }
    }
}

/// The salted password `Hi(password, salt, iterations)` of RFC 5802 §2.2 (PBKDF2 with the
/// mechanism's HMAC, one block), from the password's UTF-8 bytes, as Kafka's
/// `ScramFormatter.saltedPassword`: what `kraftd format --add-scram` derives the keys from.
pub fn salted_password(
    mechanism: ScramMechanism,
    password: &str,
    salt: &[u8],
    iterations: u32,
) -> Vec<u8> {
    let password = password.as_bytes();
    match mechanism {
        ScramMechanism::ScramSha256 => {
            let keyed =
                Hmac::<Sha256>::new_from_slice(password).expect("HMAC takes a key of any length");
            hi(
                |m| {
                    let mut mac = keyed.clone();
                    mac.update(m);
                    mac.finalize().into_bytes().to_vec()
                },
                salt,
                iterations,
            )
        }
        ScramMechanism::ScramSha512 => {
            let keyed =
                Hmac::<Sha512>::new_from_slice(password).expect("HMAC takes a key of any length");
            hi(
                |m| {
                    let mut mac = keyed.clone();
                    mac.update(m);
                    mac.finalize().into_bytes().to_vec()
                },
                salt,
                iterations,
            )
        }
    }
}

/// `Hi`: U1 = PRF(salt || INT(1)), Ui = PRF(Ui-1), the XOR of U1..Ui.
fn hi(prf: impl Fn(&[u8]) -> Vec<u8>, salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut first = salt.to_vec();
    first.extend_from_slice(&1u32.to_be_bytes());
    let mut u = prf(&first);
    let mut out = u.clone();
    for _ in 1..iterations {
        u = prf(&u);
        for (o, x) in out.iter_mut().zip(&u) {
            *o ^= x;
        }
    }
    out
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

fn hmac_sha512(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha512>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message);
    mac.finalize().into_bytes().to_vec()
}

fn mechanism(id: i8) -> Result<ScramMechanism, UserError> {
    ScramMechanism::from_i8(id).ok_or((
        ErrorCode::UnsupportedSaslMechanism,
        "Unknown SCRAM mechanism".into(),
    ))
}

fn check_name(name: &str) -> Result<(), UserError> {
    if name.is_empty() {
        return Err((
            ErrorCode::UnacceptableCredential,
            "Username must not be empty".into(),
        ));
    }
    Ok(())
}

fn delete(
    image: &MetadataImage,
    name: &str,
    mechanism_id: i8,
) -> Result<MetadataRecord, UserError> {
    check_name(name)?;
    let mechanism = mechanism(mechanism_id)?;
    if image.scram.get(name, mechanism).is_none() {
        return Err((
            ErrorCode::ResourceNotFound,
            "Attempt to delete a user credential that does not exist".into(),
        ));
    }
    Ok(MetadataRecord::RemoveUserScramCredential(
        RemoveUserScramCredentialRecord {
            name: name.to_string(),
            mechanism: mechanism.code(),
            ..Default::default()
        },
    ))
}

fn upsert(
    name: &str,
    mechanism_id: i8,
    iterations: i32,
    salt: &Bytes,
    salted_password: &Bytes,
) -> Result<MetadataRecord, UserError> {
    check_name(name)?;
    let mechanism = mechanism(mechanism_id)?;
    if iterations < SCRAM_MIN_ITERATIONS {
        return Err((
            ErrorCode::UnacceptableCredential,
            "Too few iterations".into(),
        ));
    }
    if iterations > SCRAM_MAX_ITERATIONS {
        return Err((
            ErrorCode::UnacceptableCredential,
            "Too many iterations".into(),
        ));
    }
    if salt.is_empty() || salted_password.is_empty() {
        return Err((
            ErrorCode::UnacceptableCredential,
            "Salt and salted password must not be empty".into(),
        ));
    }
    let (stored_key, server_key) = scram_keys(mechanism, salted_password);
    Ok(MetadataRecord::UserScramCredential(
        UserScramCredentialRecord {
            name: name.to_string(),
            mechanism: mechanism.code(),
            salt: salt.clone(),
            stored_key,
            server_key,
            iterations,
            ..Default::default()
        },
    ))
}

#[cfg(test)]
mod tests;
