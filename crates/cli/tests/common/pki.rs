//! A test CA and what it signs, as PEM files for kraftd (`ssl.keystore.type=PEM`), Apache
//! Kafka and the stock clients: `ca.pem`, a node certificate for 127.0.0.1 and localhost
//! with its key in `node.pem` (key then chain, as a PEM keystore holds them), and client
//! certificates with the subject a test chooses.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType, IsCa, KeyPair,
};

pub struct Pki {
    pub dir: PathBuf,
    ca: Certificate,
    ca_key: KeyPair,
}

impl Pki {
    /// A new CA under `dir` (created), with `ca.pem` and `node.pem` written.
    pub fn new(dir: &Path) -> Pki {
        std::fs::create_dir_all(dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, "kraftd test CA");
        let ca = params.self_signed(&ca_key).unwrap();
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        let pki = Pki {
            dir: dir.to_path_buf(),
            ca,
            ca_key,
        };
        let (cert, key) = pki.sign(&[("CN", "kraftd-node")], &["127.0.0.1", "localhost"]);
        std::fs::write(dir.join("node.pem"), format!("{key}{cert}")).unwrap();
        pki
    }

    /// A certificate for `subject` (most significant attribute first, as `O`, `OU`, `CN`)
    /// and `names`, signed by the CA: (certificate PEM, key PEM).
    fn sign(&self, subject: &[(&str, &str)], names: &[&str]) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name = DistinguishedName::new();
        for (attr, value) in subject {
            let ty = match *attr {
                "CN" => DnType::CommonName,
                "OU" => DnType::OrganizationalUnitName,
                "O" => DnType::OrganizationName,
                "C" => DnType::CountryName,
                other => panic!("attribute {other}"),
            };
            params.distinguished_name.push(ty, *value);
        }
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A client certificate for `subject`: the paths of `<name>-cert.pem` and
    /// `<name>-key.pem`.
    pub fn client(&self, name: &str, subject: &[(&str, &str)]) -> (PathBuf, PathBuf) {
        let (cert, key) = self.sign(subject, &[]);
        let cert_path = self.dir.join(format!("{name}-cert.pem"));
        let key_path = self.dir.join(format!("{name}-key.pem"));
        std::fs::write(&cert_path, cert).unwrap();
        std::fs::write(&key_path, key).unwrap();
        (cert_path, key_path)
    }

    /// A new node certificate (a new key and serial number) for `subject` and 127.0.0.1
    /// and localhost, written with its key to `path` as a PEM keystore; the certificate's
    /// PEM.
    pub fn node_keystore(&self, path: &Path, subject: &[(&str, &str)]) -> String {
        let (cert, key) = self.sign(subject, &["127.0.0.1", "localhost"]);
        std::fs::write(path, format!("{key}{cert}")).unwrap();
        cert
    }

    pub fn ca_path(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }

    /// The properties lines that give a node the node certificate as its PEM keystore and
    /// the CA as its PEM truststore (for every listener, unprefixed).
    pub fn node_ssl_config(&self) -> Vec<String> {
        vec![
            "ssl.keystore.type=PEM".to_string(),
            format!(
                "ssl.keystore.location={}",
                self.dir.join("node.pem").display()
            ),
            "ssl.truststore.type=PEM".to_string(),
            format!("ssl.truststore.location={}", self.ca_path().display()),
        ]
    }
}
