//! `kraftd format --add-scram`, as Kafka's `kafka-storage format --add-scram` (`ScramParser`)
//! takes it, so a cluster can start with the credentials of its first users (a super user can
//! log in to a cluster that has never been open): `MECHANISM=[key=value,...]` with the keys
//! `name`, `password` or `saltedpassword` (base64, needs `salt`), `salt` (base64; else a
//! random one drawn as Kafka draws it), `iterations` (default 4096, within the mechanism's
//! bounds). A value may be wrapped in double quotes; components are split at every comma, so
//! no value can hold one (as in Kafka). Each argument becomes one
//! `UserScramCredentialRecord` of the bootstrap metadata, with the stored and server keys
//! derived as the controller derives them (`control::scram`); the password itself is never
//! kept, and no error message repeats a password or salted password.

use std::collections::BTreeMap;

use bytes::Bytes;
use kraftd_controller::control::scram::{
    salted_password, scram_keys, SCRAM_MAX_ITERATIONS, SCRAM_MIN_ITERATIONS,
};
use kraftd_controller::image::ScramMechanism;
use kraftd_protocol::metadata::UserScramCredentialRecord;

/// Kafka's default iteration count for `--add-scram`.
pub const DEFAULT_ITERATIONS: i32 = 4096;

/// One parsed `--add-scram` argument.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramArgument {
    pub mechanism: ScramMechanism,
    pub name: String,
    pub salt: Option<Vec<u8>>,
    pub iterations: Option<i32>,
    password: Option<String>,
    salted_password: Option<Vec<u8>>,
}

impl std::fmt::Debug for ScramArgument {
    /// Never shows the password or the salted password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramArgument")
            .field("mechanism", &self.mechanism)
            .field("name", &self.name)
            .field("salt", &self.salt)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

fn mechanism_name(mechanism: ScramMechanism) -> &'static str {
    match mechanism {
        ScramMechanism::ScramSha256 => "SCRAM-SHA-256",
        ScramMechanism::ScramSha512 => "SCRAM-SHA-512",
    }
}

/// Parses one argument (Kafka's `parsePerMechanismArgument` and `PerMechanismData`); the
/// error says what is wrong in Kafka's words, without repeating a secret.
pub fn parse_scram_argument(input: &str) -> Result<ScramArgument, String> {
    let input = input.trim();
    let (mechanism, config) = input
        .split_once('=')
        .ok_or("Failed to find equals sign in SCRAM argument")?;
    let mechanism = match mechanism {
        "SCRAM-SHA-256" => ScramMechanism::ScramSha256,
        "SCRAM-SHA-512" => ScramMechanism::ScramSha512,
        other => return Err(format!("The add-scram mechanism {other} is not supported.")),
    };
    let config = config
        .strip_prefix('[')
        .ok_or("Expected configuration string to start with [")?
        .strip_suffix(']')
        .ok_or("Expected configuration string to end with ]")?;
    let mut components = BTreeMap::new();
    for (index, component) in config.split(',').enumerate() {
        let (key, value) = component.split_once('=').ok_or_else(|| {
            format!(
                "No equals sign found in SCRAM component {} (of {})",
                index + 1,
                config.split(',').count()
            )
        })?;
        let value = match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            Some(unquoted) if value.len() >= 2 => unquoted,
            _ => value,
        };
        components.insert(key, value);
    }
    let name = components
        .remove("name")
        .ok_or("You must supply 'name' to add-scram")?;
    if name.is_empty() {
        return Err("The 'name' of add-scram must not be empty".into());
    }
    let salt = components
        .remove("salt")
        .map(|s| base64_decode(s).ok_or_else(|| format!("Failed to decode given salt: {s}")))
        .transpose()?;
    let iterations = components
        .remove("iterations")
        .map(|s| {
            s.parse::<i32>()
                .map_err(|_| format!("Failed to parse iterations count: {s}"))
        })
        .transpose()?;
    let password = components.remove("password");
    let salted = components.remove("saltedpassword");
    let (password, salted_password) = match (password, salted) {
        (Some(password), _) => (Some(password.to_string()), None),
        (None, None) => {
            return Err("You must supply one of 'password' or 'saltedpassword' to add-scram".into())
        }
        (None, Some(_)) if salt.is_none() => {
            return Err("You must supply 'salt' with 'saltedpassword' to add-scram".into())
        }
        (None, Some(salted)) => (
            None,
            Some(base64_decode(salted).ok_or("Failed to decode given saltedPassword")?),
        ),
    };
    if !components.is_empty() {
        let unknown: Vec<&str> = components.keys().copied().collect();
        return Err(format!(
            "Unknown SCRAM configurations: {}",
            unknown.join(", ")
        ));
    }
    Ok(ScramArgument {
        mechanism,
        name: name.to_string(),
        salt,
        iterations,
        password,
        salted_password,
    })
}

impl ScramArgument {
    /// The credential record (Kafka's `PerMechanismData.toRecord`): the given salt or
    /// `random_salt()`, the given iterations or 4096 (refused outside the mechanism's
    /// bounds), the keys from the given salted password or the password salted here.
    pub fn to_record(
        &self,
        random_salt: impl FnOnce() -> anyhow::Result<Vec<u8>>,
    ) -> Result<UserScramCredentialRecord, String> {
        let iterations = self.iterations.unwrap_or(DEFAULT_ITERATIONS);
        let mechanism = mechanism_name(self.mechanism);
        if iterations < SCRAM_MIN_ITERATIONS {
            return Err(format!(
                "The 'iterations' value must be >= {SCRAM_MIN_ITERATIONS} for add-scram using {mechanism}"
            ));
        }
        if iterations > SCRAM_MAX_ITERATIONS {
            return Err(format!(
                "The 'iterations' value must be <= {SCRAM_MAX_ITERATIONS} for add-scram using {mechanism}"
            ));
        }
        let salt = match &self.salt {
            Some(salt) => salt.clone(),
            None => random_salt().map_err(|e| format!("drawing a random salt: {e}"))?,
        };
        let salted = match (&self.salted_password, &self.password) {
            (Some(salted), _) => salted.clone(),
            (None, Some(password)) => {
                salted_password(self.mechanism, password, &salt, iterations.unsigned_abs())
            }
            (None, None) => unreachable!("parse_scram_argument requires one of them"),
        };
        let (stored_key, server_key) = scram_keys(self.mechanism, &salted);
        Ok(UserScramCredentialRecord {
            name: self.name.clone(),
            mechanism: self.mechanism.code(),
            salt: Bytes::from(salt),
            stored_key,
            server_key,
            iterations,
            ..Default::default()
        })
    }
}

/// The records of every `--add-scram` argument, in order; an error names the argument by
/// its position, mechanism and user (never by its text, which may hold a password).
pub fn scram_records(
    arguments: &[String],
    mut random_salt: impl FnMut() -> anyhow::Result<Vec<u8>>,
) -> anyhow::Result<Vec<UserScramCredentialRecord>> {
    let mut records = Vec::with_capacity(arguments.len());
    for (index, argument) in arguments.iter().enumerate() {
        let which = |what: &str| format!("--add-scram argument {}{what}", index + 1);
        let parsed =
            parse_scram_argument(argument).map_err(|e| anyhow::anyhow!("{}: {e}", which("")))?;
        let described = format!(
            " ({} for {:?})",
            mechanism_name(parsed.mechanism),
            parsed.name
        );
        let record = parsed
            .to_record(&mut random_salt)
            .map_err(|e| anyhow::anyhow!("{}: {e}", which(&described)))?;
        records.push(record);
    }
    Ok(records)
}

/// A random salt as Kafka's `ScramFormatter.secureRandomBytes` draws it: a 130-bit random
/// number written in base 36, as ASCII bytes (`random` gives 17 random bytes).
pub fn random_salt(random: [u8; 17]) -> Vec<u8> {
    // Keep 130 bits: the top 6 bits of the first byte are dropped.
    let mut number = random;
    number[0] &= 0x03;
    let mut digits = Vec::new();
    while number.iter().any(|&b| b != 0) {
        let mut remainder: u32 = 0;
        for byte in number.iter_mut() {
            let value = (remainder << 8) | u32::from(*byte);
            *byte = (value / 36) as u8;
            remainder = value % 36;
        }
        digits.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[remainder as usize]);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    digits
}

/// Java's `Base64.getDecoder()` (the basic alphabet; `=` padding optional): `None` for any
/// other character or a dangling sextet.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let body = text
        .strip_suffix("==")
        .or_else(|| text.strip_suffix('='))
        .unwrap_or(text);
    let padded = body.len() != text.len();
    if body.len() % 4 == 1 || (padded && text.len() % 4 != 0) {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in body.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
