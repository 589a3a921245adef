//! The principal mapper against Kafka's own `SslPrincipalMapperTest` cases, the subject DN
//! in Java's RFC 2253 form from real certificates, and the settings TLS refuses.

use super::*;

fn mapper(rules: &str) -> SslPrincipalMapper {
    SslPrincipalMapper::parse(rules).unwrap_or_else(|e| panic!("{rules:?}: {e}"))
}

#[test]
fn valid_rules_parse() {
    for rules in [
        "DEFAULT",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
        "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
        "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
        "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
        "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
    ] {
        mapper(rules);
    }
}

#[test]
fn invalid_rules_are_refused() {
    for rules in [
        "default",
        "DEFAUL",
        "DEFAULT/L",
        "DEFAULT/U",
        "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
        "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
        // Beyond Kafka's cases: what the regex engine or the replacement refuses.
        "RULE:^CN=(?<=x)(.*)$/$1/",
        "RULE:^CN=(.*)$/$x/",
        "RULE:^CN=(.*)$/${nope}/",
        "RULE:^CN=.*$/$1/",
    ] {
        let e = SslPrincipalMapper::parse(rules).expect_err(rules);
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn names_map_as_kafka_maps_them() {
    let m = mapper(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, \
         RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L, \
         RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U, \
         RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U, \
         DEFAULT",
    );
    let name = |dn: &str| m.name(dn).unwrap();
    assert_eq!(name("CN=Duke,OU=ServiceUsers,O=Org,C=US"), "duke");
    assert_eq!(
        name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"),
        "duke@sme"
    );
    assert_eq!(name("cn=duke,ou=sme,dc=mycp,dc=com"), "DUKE@SME");
    assert_eq!(name("cN=duke,OU=JavaSoft,O=Sun Microsystems"), "DUKE");
    assert_eq!(
        name("OU=JavaSoft,O=Sun Microsystems,C=US"),
        "OU=JavaSoft,O=Sun Microsystems,C=US"
    );
}

#[test]
fn an_escaped_comma_stays_in_the_name() {
    let m = mapper(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT");
    assert_eq!(
        m.name(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz").unwrap(),
        r"Tkac\, Adam"
    );
}

#[test]
fn no_matching_rule_is_none() {
    let m = mapper("RULE:^CN=(.*?),OU=eng$/$1/");
    assert_eq!(m.name("CN=alice,OU=eng").as_deref(), Some("alice"));
    assert_eq!(m.name("CN=bob,OU=ops"), None);
    assert_eq!(mapper("").name("CN=x"), None);
}

#[test]
fn rules_split_as_kafka_splits_them() {
    let split = |rules: &str| mapper(rules).to_string();
    let cases = [
        ("[]", ""),
        ("[DEFAULT]", "DEFAULT"),
        ("[RULE:/]", "RULE://"),
        ("[RULE:/.*]", "RULE:/.*/"),
        ("[RULE:/.*/L]", "RULE:/.*/L"),
        ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
        ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
        (
            "[RULE:   /     , DEFAULT]",
            "  RULE:   /     / ,  DEFAULT  ",
        ),
        (
            "[RULE:  /     /U, DEFAULT]",
            "  RULE:  /     /U   ,DEFAULT  ",
        ),
        (
            "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
            "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
        ),
        ("[]", ",   , , ,      , , ,   "),
        ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
        (
            "[RULE: /   , DEFAULT]",
            ",  , RULE: /   /    ,,,   DEFAULT, ,   ",
        ),
        (
            "[RULE:   /  /U, DEFAULT]",
            "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,",
        ),
        (r"[RULE:\/\\\(\)\n\t/\/\/]", r"RULE:\/\\\(\)\n\t/\/\//"),
        (
            r"[RULE:\**\/+/*/L, RULE:\/*\**/**]",
            r"RULE:\**\/+/*/L,RULE:\/*\**/**/",
        ),
        (
            r"[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
            r"RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
        ),
    ];
    for (expected, rules) in cases {
        assert_eq!(
            split(rules),
            format!("SslPrincipalMapper(rules = {expected})"),
            "{rules:?}"
        );
    }
}

#[test]
fn back_references_past_the_groups_are_cut_or_literal() {
    // Two groups: `$12` is group 1 then "2"; `$3` names no group and stays literal.
    let m = mapper("RULE:^CN=(.*?),O=(.*)$/$12-$2-$3/");
    assert_eq!(m.name("CN=a,O=b").unwrap(), "a2-b-$3");
    // `\$` is a literal dollar; `$0` the whole match.
    let m = mapper(r"RULE:^CN=(.*)$/\$1=$0/");
    assert_eq!(m.name("CN=x").unwrap(), "$1=CN=x");
}

fn certificate(params: rcgen::CertificateParams) -> Vec<u8> {
    let key = rcgen::KeyPair::generate().unwrap();
    params.self_signed(&key).unwrap().der().to_vec()
}

#[test]
fn the_subject_prints_as_java_prints_it() {
    use rcgen::{CertificateParams, DistinguishedName, DnType, DnValue};
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CountryName, "US");
    dn.push(DnType::OrganizationName, "acme, inc");
    dn.push(DnType::OrganizationalUnitName, "eng");
    dn.push(
        DnType::CommonName,
        DnValue::Utf8String(" alice+bob ".into()),
    );
    params.distinguished_name = dn;
    let subject = subject_dn(&certificate(params)).unwrap();
    assert_eq!(subject, r"CN=\ alice\+bob\ ,OU=eng,O=acme\, inc,C=US");

    // An attribute RFC 2253 has no keyword for: its OID and the value's DER in hex.
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = DistinguishedName::new();
    dn.push(
        DnType::CustomDnType(vec![1, 2, 840, 113549, 1, 9, 1]),
        DnValue::Ia5String("a@b".try_into().unwrap()),
    );
    dn.push(DnType::CommonName, "alice");
    params.distinguished_name = dn;
    let subject = subject_dn(&certificate(params)).unwrap();
    assert_eq!(subject, "CN=alice,1.2.840.113549.1.9.1=#1603614062");
}

#[test]
fn a_broken_certificate_has_no_subject() {
    assert_eq!(subject_dn(&[]), None);
    assert_eq!(subject_dn(&[0x30, 0x82, 0xff]), None);
    assert_eq!(subject_dn(&[0x30, 0x03, 0x30, 0x01, 0x00]), None);
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "x");
    let der = certificate(params);
    for cut in [1, 10, der.len() / 2, der.len() - 1] {
        // Truncated: either no subject or (cut past the subject) still the right one.
        if let Some(s) = subject_dn(&der[..cut]) {
            assert_eq!(s, "CN=x");
        }
    }
}

#[test]
fn unknown_cipher_suites_and_missing_trust_are_refused() {
    let options = TlsOptions {
        versions: vec![],
        cipher_suites: vec!["TLS_RSA_WITH_RC4_128_MD5".into()],
    };
    let e = options.provider().unwrap_err();
    assert!(e.contains("TLS_RSA_WITH_RC4_128_MD5") && e.contains("TLS_AES_128_GCM_SHA256"));
    let e = TlsClient::new(TlsClientSettings {
        identity: None,
        trust: vec![],
        verify_host_name: true,
        options: TlsOptions::default(),
    })
    .unwrap_err();
    assert!(e.contains("truststore"), "{e}");
    assert_eq!(TlsVersion::from_name("TLSv1.1"), None);
    assert_eq!(TlsVersion::from_name("TLSv1.3"), Some(TlsVersion::Tls13));
    assert_eq!(
        ClientAuth::from_name("REQUIRED"),
        Some(ClientAuth::Required)
    );
    assert_eq!(ClientAuth::from_name("sometimes"), None);
}
