//! The `--add-scram` parser against Kafka's `ScramParserTest` cases, the records it makes, and
//! its errors (one line, no secret).

use super::*;

/// Kafka's `ScramParserTest.TEST_SALT` ("1lv4pdnw4fwq7notcxm0yy1k7q") in base64.
const TEST_SALT_B64: &str = "MWx2NHBkbnc0ZndxN25vdGN4bTB5eTFrN3E=";
const TEST_SALTED_PASSWORD_B64: &str = "mT0yyUUxnlJaC99HXgRTSYlbuqa4FSGtJCJfTMvjYCE=";

fn err(input: &str) -> String {
    parse_scram_argument(input).unwrap_err()
}

fn no_random() -> anyhow::Result<Vec<u8>> {
    panic!("the salt was given")
}

#[test]
fn arguments_parse_as_kafkas_scram_parser() {
    let a = parse_scram_argument("SCRAM-SHA-512=[name=scram-admin,password=scram-user-secret]")
        .unwrap();
    assert_eq!(a.mechanism, ScramMechanism::ScramSha512);
    assert_eq!(a.name, "scram-admin");
    assert_eq!(a.password.as_deref(), Some("scram-user-secret"));
    assert_eq!((a.salt.clone(), a.iterations), (None, None));
    let a = parse_scram_argument(&format!(
        " SCRAM-SHA-256=[name=bob,password=my pass,iterations=8192,salt=\"{TEST_SALT_B64}\"] "
    ))
    .unwrap();
    assert_eq!(a.salt.as_deref(), Some(&b"1lv4pdnw4fwq7notcxm0yy1k7q"[..]));
    assert_eq!(a.iterations, Some(8192));
    assert_eq!(a.password.as_deref(), Some("my pass"));
    // Quotes are stripped from any value, and an empty quoted value is empty.
    let a = parse_scram_argument("SCRAM-SHA-256=[name=\"alice\",password=\"\"]").unwrap();
    assert_eq!(
        (a.name.as_str(), a.password.as_deref()),
        ("alice", Some(""))
    );
    // A salted password needs the salt; with both, the password wins (as in Kafka).
    let a = parse_scram_argument(&format!(
        "SCRAM-SHA-256=[name=alice,salt=\"{TEST_SALT_B64}\",saltedpassword=\"{TEST_SALTED_PASSWORD_B64}\"]"
    ))
    .unwrap();
    assert_eq!(a.salted_password.as_ref().map(Vec::len), Some(32));
    assert!(a.password.is_none());
    // The Debug form hides the secrets.
    let shown = format!("{a:?}");
    assert!(
        !shown.contains("salted_password") && !shown.contains("password:"),
        "{shown}"
    );
}

#[test]
fn bad_arguments_are_refused_in_kafkas_words() {
    assert_eq!(
        err("SCRAM-SHA-512"),
        "Failed to find equals sign in SCRAM argument"
    );
    assert_eq!(
        err("SCRAM-SHA-UNSUPPORTED=[name=scram-admin,password=scram-user-secret]"),
        "The add-scram mechanism SCRAM-SHA-UNSUPPORTED is not supported."
    );
    assert_eq!(
        err("scram-sha-256=[name=a,password=b]"),
        "The add-scram mechanism scram-sha-256 is not supported."
    );
    assert_eq!(
        err("SCRAM-SHA-256=name=scram-admin,password=scram-user-secret"),
        "Expected configuration string to start with ["
    );
    assert_eq!(
        err("SCRAM-SHA-256=[name=scram-admin,password=scram-user-secret"),
        "Expected configuration string to end with ]"
    );
    assert_eq!(
        err("SCRAM-SHA-256=[password=mypass]"),
        "You must supply 'name' to add-scram"
    );
    assert_eq!(
        err("SCRAM-SHA-256=[name=bar]"),
        "You must supply one of 'password' or 'saltedpassword' to add-scram"
    );
    assert_eq!(
        err("SCRAM-SHA-256=[name=bob,password=mypass,unknown=something,unknown2=somethingelse]"),
        "Unknown SCRAM configurations: unknown, unknown2"
    );
    assert_eq!(
        err(&format!(
            "SCRAM-SHA-256=[name=alice,saltedpassword=\"{TEST_SALTED_PASSWORD_B64}\"]"
        )),
        "You must supply 'salt' with 'saltedpassword' to add-scram"
    );
    assert_eq!(
        err("SCRAM-SHA-256=[name=a,password=b,iterations=many]"),
        "Failed to parse iterations count: many"
    );
    assert_eq!(
        err("SCRAM-SHA-256=[name=a,password=b,salt=not*base64]"),
        "Failed to decode given salt: not*base64"
    );
    assert_eq!(
        err("SCRAM-SHA-256=[name=a,salt=QUJD,saltedpassword=sec%ret]"),
        "Failed to decode given saltedPassword"
    );
    assert_eq!(
        err("SCRAM-SHA-256=[name=,password=b]"),
        "The 'name' of add-scram must not be empty"
    );
    // A password holding a comma splits into a component with no equals sign: the message
    // does not repeat it.
    let e = err("SCRAM-SHA-256=[name=a,password=se,cret]");
    assert_eq!(e, "No equals sign found in SCRAM component 3 (of 3)");
}

#[test]
fn records_carry_kafkas_keys_salt_and_iterations() {
    let salt = b"1lv4pdnw4fwq7notcxm0yy1k7q".to_vec();
    // From a salted password (Kafka's testPerMechanismDataToRecord): the keys of it.
    let a = parse_scram_argument(&format!(
        "SCRAM-SHA-512=[name=alice,salt=\"{TEST_SALT_B64}\",saltedpassword=\"{TEST_SALTED_PASSWORD_B64}\"]"
    ))
    .unwrap();
    let record = a.to_record(no_random).unwrap();
    let salted = base64_decode(TEST_SALTED_PASSWORD_B64).unwrap();
    let (stored, server) = scram_keys(ScramMechanism::ScramSha512, &salted);
    assert_eq!(record.name, "alice");
    assert_eq!(record.mechanism, 2);
    assert_eq!(record.salt.as_ref(), &salt[..]);
    assert_eq!((record.stored_key, record.server_key), (stored, server));
    assert_eq!(record.iterations, DEFAULT_ITERATIONS);
    // From a password: salted with the given salt and iterations (Python's
    // hashlib.pbkdf2_hmac("sha256", b"admin-secret", salt, 8192) is the expected value).
    let a = parse_scram_argument(&format!(
        "SCRAM-SHA-256=[name=admin,password=admin-secret,salt={TEST_SALT_B64},iterations=8192]"
    ))
    .unwrap();
    let record = a.to_record(no_random).unwrap();
    let expected = base64_decode("Va6VMYnefDe6zjWeaMchfQ7Q1tEBp4g++35JjU/abpM=").unwrap();
    assert_eq!(
        (record.stored_key.clone(), record.server_key.clone()),
        scram_keys(ScramMechanism::ScramSha256, &expected)
    );
    assert_eq!((record.mechanism, record.iterations), (1, 8192));
    // Without a salt, a random one.
    let a = parse_scram_argument("SCRAM-SHA-256=[name=bob,password=my pass]").unwrap();
    let record = a.to_record(|| Ok(b"drawn".to_vec())).unwrap();
    assert_eq!(record.salt.as_ref(), b"drawn");
    // Iterations outside the mechanism's bounds.
    for (iterations, bound) in [("4095", ">= 4096"), ("16385", "<= 16384")] {
        let a = parse_scram_argument(&format!(
            "SCRAM-SHA-512=[name=a,password=b,iterations={iterations}]"
        ))
        .unwrap();
        let e = a.to_record(|| Ok(vec![1])).unwrap_err();
        assert_eq!(
            e,
            format!("The 'iterations' value must be {bound} for add-scram using SCRAM-SHA-512")
        );
    }
}

#[test]
fn errors_name_the_argument_without_its_secrets() {
    let args = vec![
        "SCRAM-SHA-256=[name=admin,password=admin-secret]".to_string(),
        "SCRAM-SHA-512=[name=bob,password=hunter2,iterations=100]".to_string(),
    ];
    let e = scram_records(&args, || Ok(vec![7; 4]))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "--add-scram argument 2 (SCRAM-SHA-512 for \"bob\"): The 'iterations' value must be \
         >= 4096 for add-scram using SCRAM-SHA-512"
    );
    let e = scram_records(&["SCRAM-SHA-256=[password=hunter2]".to_string()], || {
        Ok(vec![7])
    })
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "--add-scram argument 1: You must supply 'name' to add-scram"
    );
    assert!(!e.contains("hunter2"));
    let records = scram_records(&args[..1], || Ok(vec![7; 4])).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].salt.as_ref(), &[7; 4]);
}

#[test]
fn random_salts_are_base36_like_kafkas() {
    assert_eq!(random_salt([0; 17]), b"0");
    // 2^130 - 1 in base 36.
    let max = random_salt([0xff; 17]);
    assert_eq!(max, b"1omfro7zwmumr3umxudzyj6scf");
    assert_eq!(
        random_salt([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 36]),
        b"10"
    );
}

#[test]
fn base64_decodes_as_javas_basic_decoder() {
    assert_eq!(base64_decode("QUJD").unwrap(), b"ABC");
    assert_eq!(base64_decode("QUI=").unwrap(), b"AB");
    assert_eq!(base64_decode("QUI").unwrap(), b"AB");
    assert_eq!(base64_decode("QQ==").unwrap(), b"A");
    assert_eq!(base64_decode("").unwrap(), b"");
    assert!(base64_decode("Q").is_none());
    assert!(base64_decode("QUI-").is_none());
    assert!(base64_decode("QQ=").is_none());
}
