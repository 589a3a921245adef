//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them: both ends
//! of the exchange as pure state machines over the SASL tokens, and the crypto they share.
//!
//! The server (Kafka's `ScramSaslServer`) checks the client's proof against the stored key
//! and proves itself with the server key; it never sees a password. Only the gs2 header
//! `n,,` (or `n,a=<user>,`) is accepted: no channel binding, and an authzid only when it
//! names the user. Of the SCRAM extensions (`key=value` after the nonce) Kafka knows one,
//! `tokenauth=true`: the user name is then a delegation token's id, the password the token's
//! HMAC, and the login runs as the token's owner; any other extension is ignored, as Kafka
//! ignores it. An unknown user (or token) is walked through the whole exchange with a
//! made-up salt and fails at the proof, like a wrong password, so the failure point tells
//! nothing. The client (Kafka's `ScramSaslClient`) is what a node's own channels log in with.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

use super::{ScramCredentialData, ScramHash};
use crate::principal::KafkaPrincipal;

/// The largest SCRAM message either end accepts. Real ones are a few hundred bytes (a user
/// name, a nonce, a proof); anything near this is hostile.
pub const MAX_SCRAM_MESSAGE_BYTES: usize = 8 * 1024;

/// The iterations the made-up credential of an unknown user claims (Kafka's minimum).
const DECOY_ITERATIONS: i32 = 4096;

/// Why an exchange failed. Only logged (at debug, never with a secret); the peer gets
/// Kafka's generic message whatever the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScramError(pub String);

fn err(why: impl Into<String>) -> ScramError {
    ScramError(why.into())
}

impl ScramHash {
    /// HMAC(key, data).
    pub fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => {
                let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
            ScramHash::Sha512 => {
                let mut m = <Hmac<Sha512> as Mac>::new_from_slice(key).expect("any key length");
                m.update(data);
                m.finalize().into_bytes().to_vec()
            }
        }
    }

    /// H(data).
    pub fn digest(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramHash::Sha256 => Sha256::digest(data).to_vec(),
            ScramHash::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// The output length of H.
    pub fn output_len(self) -> usize {
        match self {
            ScramHash::Sha256 => 32,
            ScramHash::Sha512 => 64,
        }
    }

    /// Hi(password, salt, i): PBKDF2 with HMAC-H and one block (RFC 5802 §2.2).
    pub fn hi(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut first = salt.to_vec();
        first.extend_from_slice(&1u32.to_be_bytes());
        let mut u = self.hmac(password, &first);
        let mut out = u.clone();
        for _ in 1..iterations {
            u = self.hmac(password, &u);
            out.iter_mut().zip(&u).for_each(|(o, b)| *o ^= b);
        }
        out
    }

    /// The credential a server keeps for `password` (what Kafka's `ScramFormatter`
    /// derives): StoredKey = H(HMAC(salted, "Client Key")), ServerKey = HMAC(salted,
    /// "Server Key").
    pub fn credential(self, password: &str, salt: &[u8], iterations: i32) -> ScramCredentialData {
        let salted = self.hi(password.as_bytes(), salt, iterations.max(1) as u32);
        ScramCredentialData {
            salt: salt.to_vec(),
            stored_key: self.digest(&self.hmac(&salted, b"Client Key")),
            server_key: self.hmac(&salted, b"Server Key"),
            iterations,
        }
    }
}

/// A fresh nonce: 24 random bytes in base64 (printable, no comma, as RFC 5802 requires).
pub fn random_nonce() -> String {
    let mut bytes = [0u8; 24];
    super::random_bytes(&mut bytes);
    B64.encode(bytes)
}

/// RFC 5802's `saslname`: `=2C` for `,` and `=3D` for `=`; any other `=` is malformed.
fn decode_saslname(s: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(err("malformed saslname escape")),
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

fn encode_saslname(s: &str) -> String {
    s.replace('=', "=3D").replace(',', "=2C")
}

/// A nonce is printable ASCII without a comma (RFC 5802 `printable`).
fn valid_nonce(n: &str) -> bool {
    !n.is_empty() && n.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

/// `message` as UTF-8 within the size bound.
fn text(message: &[u8]) -> Result<&str, ScramError> {
    if message.len() > MAX_SCRAM_MESSAGE_BYTES {
        return Err(err(format!(
            "SCRAM message of {} bytes is over the limit of {MAX_SCRAM_MESSAGE_BYTES}",
            message.len()
        )));
    }
    std::str::from_utf8(message).map_err(|_| err("SCRAM message is not UTF-8"))
}

/// The value of attribute `name` (`n=...`) at the front of `field`.
fn attr(field: Option<&str>, name: char) -> Result<&str, ScramError> {
    let field = field.ok_or_else(|| err(format!("SCRAM message lacks {name}=")))?;
    let mut chars = field.chars();
    if chars.next() != Some(name) || chars.next() != Some('=') {
        return Err(err(format!(
            "SCRAM message has {field:?} where {name}= belongs"
        )));
    }
    Ok(&field[2..])
}

/// What the client's first message asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFirst {
    /// The gs2 header (`n,,` or `n,a=...,`), which the final message's `c=` must repeat.
    pub gs2_header: String,
    pub user: String,
    pub nonce: String,
    /// The `tokenauth=true` extension (Kafka's `ScramExtensions.tokenAuthenticated`): `user`
    /// is a delegation token's id.
    pub token_auth: bool,
    /// `client-first-message-bare`, a part of the AuthMessage.
    pub bare: String,
}

/// Parses `client-first-message` as Kafka's server accepts it.
pub fn parse_client_first(message: &[u8]) -> Result<ClientFirst, ScramError> {
    let message = text(message)?;
    let rest = message
        .strip_prefix("n,")
        .ok_or_else(|| err("only the gs2 header n (no channel binding) is accepted"))?;
    let (authzid, bare) = rest
        .split_once(',')
        .ok_or_else(|| err("the gs2 header is not terminated"))?;
    let authzid = match authzid {
        "" => None,
        a => Some(decode_saslname(attr(Some(a), 'a')?)?),
    };
    let gs2_header = format!("n,{},", &rest[..rest.len() - bare.len() - 1]);
    let mut fields = bare.split(',');
    let first = fields.next();
    if first.is_some_and(|f| f.starts_with("m=")) {
        return Err(err("mandatory SCRAM extensions are not supported"));
    }
    let user = decode_saslname(attr(first, 'n')?)?;
    let nonce = attr(fields.next(), 'r')?.to_string();
    if !valid_nonce(&nonce) {
        return Err(err("the client nonce is not printable"));
    }
    let mut token_auth = false;
    for extension in fields {
        let (key, value) = extension
            .split_once('=')
            .filter(|(k, _)| !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphabetic()))
            .ok_or_else(|| err("a SCRAM extension is not key=value"))?;
        // Kafka's `Boolean.parseBoolean`: "true" in any case; other extensions are ignored.
        if key == "tokenauth" {
            token_auth = value.eq_ignore_ascii_case("true");
        }
    }
    if user.is_empty() {
        return Err(err("no user name"));
    }
    if authzid.as_ref().is_some_and(|a| *a != user) {
        return Err(err("the authorization id differs from the user name"));
    }
    Ok(ClientFirst {
        gs2_header,
        user,
        nonce,
        token_auth,
        bare: bare.to_string(),
    })
}

/// The server side of one SCRAM exchange.
#[derive(Debug)]
pub struct ScramServer {
    hash: ScramHash,
    state: ServerState,
}

#[derive(Debug)]
enum ServerState {
    First,
    Final(Box<AwaitingFinal>),
    Done,
}

/// What the server keeps between its challenge and the client's final message.
#[derive(Debug)]
struct AwaitingFinal {
    first: ClientFirst,
    server_first: String,
    nonce: String,
    /// `None` for an unknown user: the proof check then fails.
    credential: Option<ScramLogin>,
}

/// What a SCRAM login checks the proof against and who it then runs as: a user's own
/// credential (the principal is the user), or a delegation token's (the principal is the
/// token's owner, flagged token-authenticated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramLogin {
    pub credential: ScramCredentialData,
    pub principal: KafkaPrincipal,
    /// How long the session may last (a token's time to its expiry), if bounded.
    pub lifetime_ms: Option<i64>,
}

/// What a SCRAM server step produced.
#[derive(Debug, PartialEq, Eq)]
pub enum ServerStep {
    /// Send this challenge and wait for the next message.
    Challenge(Vec<u8>),
    /// Authenticated; send the server-final message.
    Authenticated {
        login: Box<ScramLogin>,
        server_final: Vec<u8>,
    },
}

impl ScramServer {
    pub fn new(hash: ScramHash) -> Self {
        ScramServer {
            hash,
            state: ServerState::First,
        }
    }

    /// Takes the client's next message. `lookup` finds the credential of the client-first
    /// message's user (or token, with `tokenauth`); `server_nonce`
    /// is appended to the client's nonce (random in production, fixed in tests); `decoy`
    /// makes an unknown user's salt (stable per user, so probing shows nothing).
    pub fn step(
        &mut self,
        message: &[u8],
        lookup: impl FnOnce(&ClientFirst) -> Option<ScramLogin>,
        server_nonce: &str,
        decoy: impl FnOnce(&str) -> Vec<u8>,
    ) -> Result<ServerStep, ScramError> {
        match std::mem::replace(&mut self.state, ServerState::Done) {
            ServerState::First => {
                let first = parse_client_first(message)?;
                let credential = lookup(&first);
                let (salt, iterations) = match &credential {
                    Some(c) => (c.credential.salt.clone(), c.credential.iterations),
                    None => (decoy(&first.user), DECOY_ITERATIONS),
                };
                let nonce = format!("{}{server_nonce}", first.nonce);
                let server_first = format!("r={nonce},s={},i={iterations}", B64.encode(&salt));
                let challenge = server_first.clone().into_bytes();
                self.state = ServerState::Final(Box::new(AwaitingFinal {
                    first,
                    server_first,
                    nonce,
                    credential,
                }));
                Ok(ServerStep::Challenge(challenge))
            }
            ServerState::Final(f) => {
                self.finish(message, &f.first, &f.server_first, &f.nonce, f.credential)
            }
            ServerState::Done => Err(err("the SCRAM exchange is over")),
        }
    }

    fn finish(
        &self,
        message: &[u8],
        first: &ClientFirst,
        server_first: &str,
        nonce: &str,
        login: Option<ScramLogin>,
    ) -> Result<ServerStep, ScramError> {
        let message = text(message)?;
        let (without_proof, proof) = message
            .rsplit_once(",p=")
            .ok_or_else(|| err("the final message has no proof"))?;
        let mut fields = without_proof.split(',');
        let binding = attr(fields.next(), 'c')?;
        if B64.decode(binding).ok().as_deref() != Some(first.gs2_header.as_bytes()) {
            return Err(err("the channel binding does not repeat the gs2 header"));
        }
        if attr(fields.next(), 'r')? != nonce {
            return Err(err("the final message's nonce is not the exchange's"));
        }
        // Extensions of the final message are ignored, as Kafka's ScramSaslServer does.
        let proof = B64
            .decode(proof)
            .map_err(|_| err("the proof is not base64"))?;
        let h = self.hash;
        if proof.len() != h.output_len() {
            return Err(err("the proof has the wrong length"));
        }
        let auth_message = format!("{},{server_first},{without_proof}", first.bare);
        let Some(login) = login else {
            return Err(err("no such user"));
        };
        let credential = &login.credential;
        let signature = h.hmac(&credential.stored_key, auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        let stored = h.digest(&client_key);
        if !bool::from(stored.ct_eq(&credential.stored_key)) {
            return Err(err("the proof does not match"));
        }
        let server_signature = h.hmac(&credential.server_key, auth_message.as_bytes());
        Ok(ServerStep::Authenticated {
            login: Box::new(login),
            server_final: format!("v={}", B64.encode(server_signature)).into_bytes(),
        })
    }
}

/// The client side of one SCRAM exchange.
#[derive(Debug)]
pub struct ScramClient {
    hash: ScramHash,
    password: String,
    bare: String,
    nonce: String,
    /// Set by the server-first message: the server signature the final message must carry.
    expected_server_signature: Option<Vec<u8>>,
}

impl ScramClient {
    /// A client for `user` that will send `nonce` (random in production).
    pub fn new(hash: ScramHash, user: &str, password: &str, nonce: &str) -> Self {
        ScramClient {
            hash,
            password: password.to_string(),
            bare: format!("n={},r={nonce}", encode_saslname(user)),
            nonce: nonce.to_string(),
            expected_server_signature: None,
        }
    }

    /// The client-first message.
    pub fn first_message(&self) -> Vec<u8> {
        format!("n,,{}", self.bare).into_bytes()
    }

    /// Answers the server-first message with the client-final message.
    pub fn final_message(&mut self, server_first: &[u8]) -> Result<Vec<u8>, ScramError> {
        let server_first = text(server_first)?;
        let mut fields = server_first.split(',');
        let nonce = attr(fields.next(), 'r')?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(err("the server's nonce does not extend ours"));
        }
        let salt = B64
            .decode(attr(fields.next(), 's')?)
            .map_err(|_| err("the salt is not base64"))?;
        let iterations: u32 = attr(fields.next(), 'i')?
            .parse()
            .ok()
            .filter(|i| (1..=1_000_000).contains(i))
            .ok_or_else(|| err("bad iteration count"))?;
        let h = self.hash;
        let salted = h.hi(self.password.as_bytes(), &salt, iterations);
        let client_key = h.hmac(&salted, b"Client Key");
        let stored_key = h.digest(&client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.bare);
        let signature = h.hmac(&stored_key, auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = h.hmac(&salted, b"Server Key");
        self.expected_server_signature = Some(h.hmac(&server_key, auth_message.as_bytes()));
        Ok(format!("{without_proof},p={}", B64.encode(proof)).into_bytes())
    }

    /// Checks the server-final message: the server knew our credential.
    pub fn verify_server_final(&self, server_final: &[u8]) -> Result<(), ScramError> {
        let server_final = text(server_final)?;
        if let Some(e) = server_final.strip_prefix("e=") {
            return Err(err(format!("the server refused: {e}")));
        }
        let signature = B64
            .decode(attr(Some(server_final), 'v')?)
            .map_err(|_| err("the server signature is not base64"))?;
        match &self.expected_server_signature {
            Some(expected) if bool::from(expected.ct_eq(&signature)) => Ok(()),
            _ => Err(err("the server signature does not match")),
        }
    }
}
