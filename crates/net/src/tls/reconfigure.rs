//! Kafka's checks before a listener's TLS stores change on a live node
//! (`SslFactory.createNewSslEngineFactory`): a truststore is not added to a listener that had
//! none; the new keystore's certificate keeps the old one's subject
//! (`CertificateEntries.ensureCompatibleDNs`) unless `ssl.allow.dn.changes`, and all of its
//! subject alternative names (`ensureCompatibleSANs`) unless `ssl.allow.san.changes`; on the
//! inter-broker listener the old and the new stores must trust each other's certificate
//! (`SslEngineValidator`: the other brokers still hold the old ones). The messages are Kafka's.

use rustls::pki_types::UnixTime;
use rustls::server::WebPkiClientVerifier;

use super::{root_store, subject_alt_names, subject_dn, CertificateDer, TlsServer};

/// What [`validate_reconfiguration`] checks beyond the stores themselves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReconfigurationChecks {
    /// `ssl.allow.dn.changes`.
    pub allow_dn_changes: bool,
    /// `ssl.allow.san.changes`.
    pub allow_san_changes: bool,
    /// The listener is the inter-broker one (Kafka's `keystoreVerifiableUsingTruststore`).
    pub verify_with_truststores: bool,
}

/// The alias Kafka gives a PEM keystore's one entry.
const PEM_ALIAS: &str = "kafka";

/// Whether the listener may move from `old` to `new`; Kafka's message when not, prefixed as
/// `SslFactory` prefixes it.
pub fn validate_reconfiguration(
    old: &TlsServer,
    new: &TlsServer,
    checks: ReconfigurationChecks,
) -> Result<(), String> {
    check(old, new, checks)
        .map_err(|e| format!("Validation of dynamic config update of SSLFactory failed: {e}"))
}

fn check(old: &TlsServer, new: &TlsServer, checks: ReconfigurationChecks) -> Result<(), String> {
    let (old_chain, new_chain) = (old.certificates(), new.certificates());
    let (old_trust, new_trust) = (old.trusted(), new.trusted());
    let old_entry = old_chain.first().ok_or("the listener has no keystore")?;
    let new_entry = new_chain.first().ok_or(
        "Cannot remove the SSL keystore from an existing listener for which a keystore was \
         configured.",
    )?;
    let dn = |c: &CertificateDer<'_>| subject_dn(c).unwrap_or_default();
    if !checks.allow_dn_changes && !dn(old_entry).eq_ignore_ascii_case(&dn(new_entry)) {
        return Err(format!(
            "Keystore DistinguishedName does not match:  existing={{alias={PEM_ALIAS}, DN={}}}, \
             new={{alias={PEM_ALIAS}, DN={}}}",
            dn(old_entry),
            dn(new_entry)
        ));
    }
    let sans = |c: &CertificateDer<'_>| subject_alt_names(c).unwrap_or_default();
    let (old_sans, new_sans) = (sans(old_entry), sans(new_entry));
    if !checks.allow_san_changes && !old_sans.iter().all(|s| new_sans.contains(s)) {
        return Err(format!(
            "Keystore SubjectAltNames do not match:  existing={{alias={PEM_ALIAS}, SAN={}}}, \
             new={{alias={PEM_ALIAS}, SAN={}}}",
            java_list(&old_sans),
            java_list(&new_sans)
        ));
    }
    if old_trust.is_empty() && !new_trust.is_empty() {
        return Err(
            "Cannot add SSL truststore to an existing listener for which no \
                    truststore was configured."
                .into(),
        );
    }
    if checks.verify_with_truststores {
        trusted_by(&new_chain, &old_trust).map_err(|e| {
            format!("the new keystore's certificate is not trusted by the current truststore: {e}")
        })?;
        trusted_by(&old_chain, &new_trust).map_err(|e| {
            format!("the current keystore's certificate is not trusted by the new truststore: {e}")
        })?;
    }
    Ok(())
}

/// Whether `chain` verifies against `trust` (without a truststore there is nothing to check).
fn trusted_by(
    chain: &[CertificateDer<'static>],
    trust: &[CertificateDer<'static>],
) -> Result<(), String> {
    let Some((end_entity, intermediates)) = chain.split_first() else {
        return Ok(());
    };
    if trust.is_empty() {
        return Ok(());
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(
        root_store(trust)?,
        std::sync::Arc::new(rustls::crypto::ring::default_provider()),
    )
    .build()
    .map_err(|e| e.to_string())?;
    verifier
        .verify_client_cert(end_entity, intermediates, UnixTime::now())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Subject alternative names as Java prints the list (`[[2, localhost], [7, 127.0.0.1]]`).
fn java_list(names: &[(u8, String)]) -> String {
    let items: Vec<String> = names.iter().map(|(t, v)| format!("[{t}, {v}]")).collect();
    format!("[{}]", items.join(", "))
}
