//! The salted password (`Hi`) against PBKDF2's published vectors, and the keys derived from it.

use super::*;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn salted_password_is_pbkdf2_with_the_mechanisms_hmac() {
    // PBKDF2-HMAC-SHA256 and -SHA512 vectors (password "password", salt "salt").
    assert_eq!(
        hex(&salted_password(
            ScramMechanism::ScramSha256,
            "password",
            b"salt",
            4096
        )),
        "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a"
    );
    assert_eq!(
        hex(&salted_password(
            ScramMechanism::ScramSha512,
            "password",
            b"salt",
            1
        )),
        "867f70cf1ade02cff3752599a3a53dc4af34c7a669815ae5d513554e1c8cf252\
         c02d470a285a0501bad999bfe943c08f050235d7d68b1da55e63f73b60a57fce"
    );
    let salted = salted_password(ScramMechanism::ScramSha256, "pencil", b"NaCl", 4096);
    let (stored, server) = scram_keys(ScramMechanism::ScramSha256, &salted);
    assert_eq!((stored.len(), server.len()), (32, 32));
    assert_ne!(stored, server);
}
