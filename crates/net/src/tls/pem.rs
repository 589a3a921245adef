//! PEM as Kafka reads it for `ssl.keystore.type=PEM` and `ssl.truststore.type=PEM`: files
//! and Kafka's inline values (`ssl.keystore.key`, `ssl.keystore.certificate.chain`,
//! `ssl.truststore.certificates`), which a properties file often holds on one line, so a
//! block is found by its `-----BEGIN X-----`/`-----END X-----` markers whatever the line
//! breaks, and text outside the blocks is ignored, as Kafka's `PemParser` does. Private
//! keys: PKCS#8 (Kafka's format), also PKCS#1 and SEC1; an `ENCRYPTED PRIVATE KEY` (PKCS#8
//! with PBES2) is decrypted with `ssl.key.password`.

use rustls::pki_types::{
    CertificateDer, PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer,
};

/// One `-----BEGIN label-----` ... `-----END label-----` block, decoded.
struct Block {
    label: String,
    der: Vec<u8>,
}

/// Every PEM block of `text`, in order.
fn blocks(text: &str) -> Result<Vec<Block>, String> {
    const BEGIN: &str = "-----BEGIN ";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(BEGIN) {
        let after = &rest[at + BEGIN.len()..];
        let close = after
            .find("-----")
            .ok_or("a BEGIN marker without its closing dashes")?;
        let label = after[..close].trim().to_string();
        let body_and_rest = &after[close + 5..];
        let end_marker = format!("-----END {label}-----");
        let end = body_and_rest
            .find(&end_marker)
            .ok_or_else(|| format!("no END marker for a {label} block"))?;
        let body = &body_and_rest[..end];
        // RFC 1421 headers (`Proc-Type: ...`) come before the base64: not supported.
        if body.contains(':') {
            return Err(format!(
                "the {label} block has encapsulation headers (a legacy encrypted key?); \
                 use PKCS#8 (BEGIN PRIVATE KEY or BEGIN ENCRYPTED PRIVATE KEY)"
            ));
        }
        let der = base64_decode(body).ok_or_else(|| format!("the {label} block is not base64"))?;
        out.push(Block { label, der });
        rest = &body_and_rest[end + end_marker.len()..];
    }
    Ok(out)
}

/// The certificates of `text` (at least one).
pub fn parse_certificates(text: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = blocks(text)?
        .into_iter()
        .filter(|b| b.label == "CERTIFICATE")
        .map(|b| CertificateDer::from(b.der))
        .collect();
    if certs.is_empty() {
        return Err("no CERTIFICATE block found".into());
    }
    Ok(certs)
}

/// The one private key of `text`, decrypted with `password` if it is an `ENCRYPTED
/// PRIVATE KEY`. A password for a key that is not encrypted is refused, as Kafka (which
/// then reads the key as encrypted) fails on it too.
pub fn parse_private_key(
    text: &str,
    password: Option<&str>,
) -> Result<PrivateKeyDer<'static>, String> {
    let mut keys: Vec<Block> = blocks(text)?
        .into_iter()
        .filter(|b| b.label.ends_with("PRIVATE KEY"))
        .collect();
    let key = match keys.len() {
        0 => return Err("no PRIVATE KEY block found".into()),
        1 => keys.remove(0),
        n => return Err(format!("expected one private key, found {n}")),
    };
    match (key.label.as_str(), password) {
        ("ENCRYPTED PRIVATE KEY", Some(password)) => decrypt(&key.der, password),
        ("ENCRYPTED PRIVATE KEY", None) => {
            Err("the private key is encrypted but ssl.key.password is not set".into())
        }
        (_, Some(_)) => Err(format!(
            "ssl.key.password is set but the private key is not encrypted (BEGIN {})",
            key.label
        )),
        ("PRIVATE KEY", None) => Ok(PrivatePkcs8KeyDer::from(key.der).into()),
        ("RSA PRIVATE KEY", None) => Ok(PrivatePkcs1KeyDer::from(key.der).into()),
        ("EC PRIVATE KEY", None) => Ok(PrivateSec1KeyDer::from(key.der).into()),
        (label, None) => Err(format!("unsupported private key type (BEGIN {label})")),
    }
}

/// PKCS#8 `EncryptedPrivateKeyInfo` (PBES2: PBKDF2 or scrypt with AES-CBC) to the key.
fn decrypt(der: &[u8], password: &str) -> Result<PrivateKeyDer<'static>, String> {
    let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der)
        .map_err(|e| format!("the encrypted private key does not parse: {e}"))?;
    let document = info.decrypt(password.as_bytes()).map_err(|_| {
        "the private key does not decrypt with ssl.key.password (wrong password, or a \
         scheme other than PBES2 with AES)"
            .to_string()
    })?;
    Ok(PrivatePkcs8KeyDer::from(document.as_bytes().to_vec()).into())
}

/// Standard base64 with padding, whitespace ignored.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    let mut padding = 0;
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                padding += 1;
                continue;
            }
            _ => return None,
        };
        if padding > 0 {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    (padding <= 2).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_decodes_with_and_without_padding_and_whitespace() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(base64_decode("aGVs\n bG8h").unwrap(), b"hello!");
        assert_eq!(base64_decode("").unwrap(), b"");
        assert!(base64_decode("aGV*").is_none());
        assert!(base64_decode("aG=Vs").is_none());
    }

    #[test]
    fn blocks_are_found_on_one_line_and_between_other_text() {
        let text = "junk -----BEGIN CERTIFICATE----- aGVs bG8= -----END CERTIFICATE-----\
                    -----BEGIN CERTIFICATE-----\naGk=\n-----END CERTIFICATE-----\n";
        let certs = parse_certificates(text).unwrap();
        assert_eq!(certs.len(), 2);
        assert_eq!(certs[0].as_ref(), b"hello");
        assert_eq!(certs[1].as_ref(), b"hi");
        assert!(parse_certificates("nothing here").is_err());
        assert!(parse_certificates("-----BEGIN CERTIFICATE-----aGk=").is_err());
    }

    #[test]
    fn key_passwords_must_match_the_key() {
        let plain = "-----BEGIN PRIVATE KEY-----aGk=-----END PRIVATE KEY-----";
        assert!(parse_private_key(plain, None).is_ok());
        let e = parse_private_key(plain, Some("pw")).unwrap_err();
        assert!(e.contains("not encrypted"), "{e}");
        let encrypted =
            "-----BEGIN ENCRYPTED PRIVATE KEY-----aGk=-----END ENCRYPTED PRIVATE KEY-----";
        let e = parse_private_key(encrypted, None).unwrap_err();
        assert!(e.contains("ssl.key.password is not set"), "{e}");
        let e = parse_private_key(&format!("{plain}{plain}"), None).unwrap_err();
        assert!(e.contains("expected one private key"), "{e}");
        let e = parse_private_key(
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\naGk=\n-----END RSA PRIVATE KEY-----",
            None,
        )
        .unwrap_err();
        assert!(e.contains("PKCS#8"), "{e}");
    }
}
