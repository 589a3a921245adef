//! Every security setting Kafka 4.4 defines for a broker, so a stock client or a Kafka
//! properties file may set any of them by name: `BrokerSecurityConfigs` (every `ssl.*` and
//! `sasl.*`, `principal.builder.class`, `connections.max.reauth.ms`, `security.providers`),
//! the SASL mechanisms for inter-broker and controller traffic, `listener.security.protocol.map`,
//! `security.inter.broker.protocol`, `authorizer.class.name` with StandardAuthorizer's
//! `super.users` and `allow.everyone.if.no.acl.found`, `DelegationTokenManagerConfigs`,
//! `QuotaConfig` and the connection limits. Each has Kafka's type, default, importance,
//! documentation (first sentence) and dynamic update mode (`DynamicBrokerConfig`), checked
//! against Kafka's own jars by `crates/cli/tests/kafka_security_configs.rs`.
//!
//! [`SECURITY_SUPPORT`] says what kraftd does with each, as [`CONFIG_SUPPORT`] does for the
//! other tables; a setting that would switch on something kraftd does not implement (a Java
//! plugin class) is refused unless it is
//! Kafka's default. SASL mechanisms other than PLAIN and SCRAM are refused by
//! [`super::security_checks`], which also handles listener prefixes and update modes.
//!
//! [`CONFIG_SUPPORT`]: super::config_support::CONFIG_SUPPORT

use super::config_defs::{
    def, int, long, ConfigDef, ConfigType, Importance, UpdateMode, ANY_DOUBLE, ANY_LIST, BOOLEAN,
    STRING,
};
use super::config_support::{
    honoured, honoured_static, no_effect, refused, ConfigScope, ConfigSupport,
};

const HIGH: Importance = Importance::High;
const MEDIUM: Importance = Importance::Medium;
const LOW: Importance = Importance::Low;
const READ_ONLY: UpdateMode = UpdateMode::ReadOnly;
const CLUSTER_WIDE: UpdateMode = UpdateMode::ClusterWide;
const PER_BROKER: UpdateMode = UpdateMode::PerBroker;
const PER_LISTENER: UpdateMode = UpdateMode::PerListener;
const CLASS: ConfigType = ConfigType::Class;
const SHORT: ConfigType = ConfigType::Short { min: i16::MIN };
const fn int_range(min: i32, max: i32) -> ConfigType {
    ConfigType::Int { min, max }
}

/// Kafka's broker security configs, in name order. A `PASSWORD` config is `sensitive`: its
/// value never leaves the node.
pub const SECURITY_CONFIGS: &[ConfigDef] = &[
    def("allow.everyone.if.no.acl.found", BOOLEAN)
        .default("false")
        .read_only()
        .doc("StandardAuthorizer: whether a resource that no ACL matches is open to every principal (otherwise only super users may use it)."),
    def("alter.log.dirs.replication.quota.window.num", int(1))
        .default("11")
        .kafka(LOW, READ_ONLY)
        .doc("The number of samples to retain in memory for alter log dirs replication quotas"),
    def("alter.log.dirs.replication.quota.window.size.seconds", int(1))
        .default("1")
        .kafka(LOW, READ_ONLY)
        .doc("The time span of each sample for alter log dirs replication quotas"),
    def("authorizer.class.name", STRING)
        .default("")
        .kafka(LOW, READ_ONLY)
        .doc("The fully qualified name of a class that implements org.apache.kafka.server.authorizer.Authorizer interface, which is used by the broker for authorization."),
    def("client.quota.callback.class", CLASS)
        .kafka(LOW, READ_ONLY)
        .doc("The fully qualified name of a class that implements the ClientQuotaCallback interface, which is used to determine quota limits applied to client requests."),
    def("connection.failed.authentication.delay.ms", int(0))
        .default("100")
        .kafka(LOW, READ_ONLY)
        .doc("Connection close delay on failed authentication: this is the time (in milliseconds) by which connection close will be delayed on authentication failure."),
    def("connections.max.reauth.ms", long(i64::MIN))
        .default("0")
        .kafka(MEDIUM, READ_ONLY)
        .doc("When explicitly set to a positive number (the default is 0, not a positive number), a session lifetime that will not exceed the configured value will be communicated to v2.2.0 or later clients when they authenticate."),
    def("controller.quota.window.num", int(1))
        .default("11")
        .kafka(LOW, READ_ONLY)
        .doc("The number of samples to retain in memory for controller mutation quotas"),
    def("controller.quota.window.size.seconds", int(1))
        .default("1")
        .kafka(LOW, READ_ONLY)
        .doc("The time span of each sample for controller mutations quotas"),
    def("delegation.token.expiry.check.interval.ms", long(1))
        .default("3600000")
        .kafka(LOW, READ_ONLY)
        .doc("Scan interval to remove expired delegation tokens."),
    def("delegation.token.expiry.time.ms", long(1))
        .default("86400000")
        .kafka(MEDIUM, READ_ONLY)
        .doc("The token validity time in milliseconds before the token needs to be renewed."),
    def("delegation.token.max.lifetime.ms", long(1))
        .default("604800000")
        .kafka(MEDIUM, READ_ONLY)
        .doc("The token has a maximum lifetime beyond which it cannot be renewed anymore."),
    def("delegation.token.secret.key", STRING)
        .sensitive()
        .kafka(MEDIUM, READ_ONLY)
        .doc("Secret key to generate and verify delegation tokens."),
    def("listener.security.protocol.map", STRING)
        .default("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT")
        .kafka(LOW, PER_BROKER)
        .doc("Map between listener names and security protocols."),
    def("max.connection.creation.rate", int(0))
        .default("2147483647")
        .kafka(MEDIUM, CLUSTER_WIDE)
        .doc("The maximum connection creation rate we allow in the broker at any time."),
    def("max.connections.per.ip", int(0))
        .default("2147483647")
        .kafka(MEDIUM, CLUSTER_WIDE)
        .doc("The maximum number of connections we allow from each ip address."),
    def("max.connections.per.ip.overrides", STRING)
        .default("")
        .kafka(MEDIUM, CLUSTER_WIDE)
        .doc("A comma-separated list of per-ip or hostname overrides to the default maximum number of connections."),
    def("principal.builder.class", CLASS)
        .default("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder")
        .kafka(MEDIUM, PER_BROKER)
        .doc("The fully qualified name of a class that implements the KafkaPrincipalBuilder interface, which is used to build the KafkaPrincipal object used during authorization."),
    def("quota.window.num", int(1))
        .default("11")
        .kafka(LOW, READ_ONLY)
        .doc("The number of samples to retain in memory for client quotas"),
    def("quota.window.size.seconds", int(1))
        .default("1")
        .kafka(LOW, READ_ONLY)
        .doc("The time span of each sample for client quotas"),
    def("replication.quota.window.num", int(1))
        .default("11")
        .kafka(LOW, READ_ONLY)
        .doc("The number of samples to retain in memory for replication quotas"),
    def("replication.quota.window.size.seconds", int(1))
        .default("1")
        .kafka(LOW, READ_ONLY)
        .doc("The time span of each sample for replication quotas"),
    def("sasl.client.callback.handler.class", CLASS)
        .kafka(MEDIUM, READ_ONLY)
        .doc("The fully qualified name of a SASL client callback handler class that implements the AuthenticateCallbackHandler interface."),
    def("sasl.enabled.mechanisms", ANY_LIST)
        .default("GSSAPI")
        .kafka(MEDIUM, PER_BROKER)
        .doc("The list of SASL mechanisms enabled in the Kafka server."),
    def("sasl.jaas.config", STRING)
        .sensitive()
        .kafka(MEDIUM, PER_BROKER)
        .doc("JAAS login context parameters for SASL connections in the format used by JAAS configuration files."),
    def("sasl.kerberos.kinit.cmd", STRING)
        .default("/usr/bin/kinit")
        .kafka(MEDIUM, PER_BROKER)
        .doc("Kerberos kinit command path."),
    def("sasl.kerberos.min.time.before.relogin", long(i64::MIN))
        .default("60000")
        .kafka(MEDIUM, PER_BROKER)
        .doc("Login thread sleep time between refresh attempts."),
    def("sasl.kerberos.principal.to.local.rules", ANY_LIST)
        .default("DEFAULT")
        .kafka(MEDIUM, PER_BROKER)
        .doc("A list of rules for mapping from principal names to short names (typically operating system usernames)."),
    def("sasl.kerberos.service.name", STRING)
        .kafka(MEDIUM, PER_BROKER)
        .doc("The Kerberos principal name that Kafka runs as."),
    def("sasl.kerberos.ticket.renew.jitter", ANY_DOUBLE)
        .default("0.05")
        .kafka(MEDIUM, PER_BROKER)
        .doc("Percentage of random jitter added to the renewal time."),
    def("sasl.kerberos.ticket.renew.window.factor", ANY_DOUBLE)
        .default("0.8")
        .kafka(MEDIUM, PER_BROKER)
        .doc("Login thread will sleep until the specified window factor of time from last refresh to ticket's expiry has been reached, at which time it will try to renew the ticket."),
    def("sasl.login.callback.handler.class", CLASS)
        .kafka(MEDIUM, READ_ONLY)
        .doc("The fully qualified name of a SASL login callback handler class that implements the AuthenticateCallbackHandler interface."),
    def("sasl.login.class", CLASS)
        .kafka(MEDIUM, READ_ONLY)
        .doc("The fully qualified name of a class that implements the Login interface."),
    def("sasl.login.connect.timeout.ms", int(i32::MIN))
        .kafka(LOW, READ_ONLY)
        .doc("The (optional) value in milliseconds for the external authentication provider connection timeout."),
    def("sasl.login.read.timeout.ms", int(i32::MIN))
        .kafka(LOW, READ_ONLY)
        .doc("The (optional) value in milliseconds for the external authentication provider read timeout."),
    def("sasl.login.refresh.buffer.seconds", SHORT)
        .default("300")
        .kafka(MEDIUM, PER_BROKER)
        .doc("The amount of buffer time before credential expiration to maintain when refreshing a credential, in seconds."),
    def("sasl.login.refresh.min.period.seconds", SHORT)
        .default("60")
        .kafka(MEDIUM, PER_BROKER)
        .doc("The desired minimum time for the login refresh thread to wait before refreshing a credential, in seconds."),
    def("sasl.login.refresh.window.factor", ANY_DOUBLE)
        .default("0.8")
        .kafka(MEDIUM, PER_BROKER)
        .doc("Login refresh thread will sleep until the specified window factor relative to the credential's lifetime has been reached, at which time it will try to refresh the credential."),
    def("sasl.login.refresh.window.jitter", ANY_DOUBLE)
        .default("0.05")
        .kafka(MEDIUM, PER_BROKER)
        .doc("The maximum amount of random jitter relative to the credential's lifetime that is added to the login refresh thread's sleep time."),
    def("sasl.login.retry.backoff.max.ms", long(i64::MIN))
        .default("10000")
        .kafka(LOW, READ_ONLY)
        .doc("The (optional) value in milliseconds for the maximum wait between login attempts to the external authentication provider."),
    def("sasl.login.retry.backoff.ms", long(i64::MIN))
        .default("100")
        .kafka(LOW, READ_ONLY)
        .doc("The (optional) value in milliseconds for the initial wait between login attempts to the external authentication provider."),
    def("sasl.mechanism.controller.protocol", STRING)
        .default("GSSAPI")
        .kafka(HIGH, READ_ONLY)
        .doc("SASL mechanism used for communication with controllers."),
    def("sasl.mechanism.inter.broker.protocol", STRING)
        .default("GSSAPI")
        .kafka(MEDIUM, PER_BROKER)
        .doc("SASL mechanism used for inter-broker communication."),
    def("sasl.oauthbearer.allow.unverified.audience", BOOLEAN)
        .default("false")
        .kafka(MEDIUM, READ_ONLY)
        .doc("The (optional) setting that allows the broker to validate JWTs without verifying the audience."),
    def("sasl.oauthbearer.allow.unverified.issuer", BOOLEAN)
        .default("false")
        .kafka(MEDIUM, READ_ONLY)
        .doc("The (optional) setting that allows the broker to validate JWTs without verifying the issuer."),
    def("sasl.oauthbearer.assertion.algorithm", ConfigType::CaseInsensitiveString { valid: &["ES256", "RS256"] })
        .default("RS256")
        .kafka(MEDIUM, READ_ONLY)
        .doc("The algorithm the Apache Kafka client should use to sign the assertion sent to the identity provider."),
    def("sasl.oauthbearer.assertion.claim.aud", STRING)
        .kafka(MEDIUM, READ_ONLY)
        .doc("The JWT aud (Audience) claim which will be included in the client JWT assertion created locally."),
    def("sasl.oauthbearer.assertion.claim.exp.seconds", int_range(0, 86400))
        .default("300")
        .kafka(LOW, READ_ONLY)
        .doc("The number of seconds in the future for which the JWT is valid."),
    def("sasl.oauthbearer.assertion.claim.iss", STRING)
        .kafka(MEDIUM, READ_ONLY)
        .doc("The value to be used as the iss (Issuer) claim which will be included in the client JWT assertion created locally."),
    def("sasl.oauthbearer.assertion.claim.jti.include", BOOLEAN)
        .default("false")
        .kafka(MEDIUM, READ_ONLY)
        .doc("Flag that determines if the JWT assertion should generate a unique ID for the JWT and include it in the jti (JWT ID) claim."),
    def("sasl.oauthbearer.assertion.claim.nbf.seconds", int_range(0, 3600))
        .default("60")
        .kafka(LOW, READ_ONLY)
        .doc("The number of seconds in the past from which the JWT is valid."),
    def("sasl.oauthbearer.assertion.claim.sub", STRING)
        .kafka(MEDIUM, READ_ONLY)
        .doc("The value to be used as the sub (Subject) claim which will be included in the client JWT assertion created locally."),
    def("sasl.oauthbearer.assertion.file", STRING)
        .kafka(MEDIUM, READ_ONLY)
        .doc("File that contains a pre-generated JWT assertion."),
    def("sasl.oauthbearer.assertion.private.key.file", STRING)
        .kafka(MEDIUM, READ_ONLY)
        .doc("File that contains a private key in the standard PEM format which is used to sign the JWT assertion sent to the identity provider."),
    def("sasl.oauthbearer.assertion.private.key.passphrase", STRING)
        .sensitive()
        .kafka(MEDIUM, READ_ONLY)
        .doc("The optional passphrase to decrypt the private key file specified by sasl.oauthbearer.assertion.private.key.file."),
    def("sasl.oauthbearer.assertion.template.file", STRING)
        .kafka(MEDIUM, READ_ONLY)
        .doc("This optional configuration specifies the file containing the JWT headers and/or payload claims to be used when creating the JWT assertion."),
    def("sasl.oauthbearer.client.credentials.client.id", STRING)
        .kafka(MEDIUM, READ_ONLY)
        .doc("The ID (defined in/by the OAuth identity provider) to identify the client requesting the token."),
    def("sasl.oauthbearer.client.credentials.client.secret", STRING)
        .sensitive()
        .kafka(MEDIUM, READ_ONLY)
        .doc("The secret (defined by either the user or preassigned, depending on the identity provider) of the client requesting the token."),
    def("sasl.oauthbearer.clock.skew.seconds", int(i32::MIN))
        .default("30")
        .kafka(LOW, READ_ONLY)
        .doc("The (optional) value in seconds to allow for differences between the time of the OAuth/OIDC identity provider and the broker."),
    def("sasl.oauthbearer.expected.audience", ANY_LIST)
        .default("")
        .kafka(HIGH, READ_ONLY)
        .doc("The comma-delimited setting for the broker to use to verify that the JWT was issued for one of the expected audiences."),
    def("sasl.oauthbearer.expected.issuer", STRING)
        .kafka(HIGH, READ_ONLY)
        .doc("The setting for the broker to use to verify that the JWT was created by the expected issuer."),
    def("sasl.oauthbearer.jwks.endpoint.refresh.ms", long(i64::MIN))
        .default("3600000")
        .kafka(LOW, READ_ONLY)
        .doc("The (optional) value in milliseconds for the broker to wait between refreshing its JWKS (JSON Web Key Set) cache that contains the keys to verify the signature of the JWT."),
    def("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", long(i64::MIN))
        .default("10000")
        .kafka(LOW, READ_ONLY)
        .doc("The (optional) value in milliseconds for the maximum wait between attempts to retrieve the JWKS (JSON Web Key Set) from the external authentication provider."),
    def("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", long(i64::MIN))
        .default("100")
        .kafka(LOW, READ_ONLY)
        .doc("The (optional) value in milliseconds for the initial wait between JWKS (JSON Web Key Set) retrieval attempts from the external authentication provider."),
    def("sasl.oauthbearer.jwks.endpoint.url", STRING)
        .kafka(MEDIUM, READ_ONLY)
        .doc("The OAuth/OIDC provider URL from which the provider's JWKS (JSON Web Key Set) can be retrieved."),
    def("sasl.oauthbearer.jwt.retriever.class", CLASS)
        .default("org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever")
        .kafka(MEDIUM, READ_ONLY)
        .doc("The fully-qualified class name of a JwtRetriever implementation used to request tokens from the identity provider."),
    def("sasl.oauthbearer.jwt.validator.class", CLASS)
        .default("org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator")
        .kafka(MEDIUM, READ_ONLY)
        .doc("The fully-qualified class name of a JwtValidator implementation used to validate the JWT from the identity provider."),
    def("sasl.oauthbearer.scope", STRING)
        .kafka(MEDIUM, READ_ONLY)
        .doc("This is the level of access a client application is granted to a resource or API which is included in the token request."),
    def("sasl.oauthbearer.scope.claim.name", STRING)
        .default("scope")
        .kafka(LOW, READ_ONLY)
        .doc("The OAuth claim for the scope is often named \"scope\", but this (optional) setting can provide a different name to use for the scope included in the JWT payload's claims if the OAuth/OIDC provider uses a different name for that claim."),
    def("sasl.oauthbearer.sub.claim.name", STRING)
        .default("sub")
        .kafka(LOW, READ_ONLY)
        .doc("The OAuth claim for the subject is often named \"sub\", but this (optional) setting can provide a different name to use for the subject included in the JWT payload's claims if the OAuth/OIDC provider uses a different name for that claim."),
    def("sasl.oauthbearer.token.endpoint.url", STRING)
        .kafka(MEDIUM, READ_ONLY)
        .doc("The URL for the OAuth/OIDC identity provider."),
    def("sasl.server.callback.handler.class", CLASS)
        .kafka(MEDIUM, READ_ONLY)
        .doc("The fully qualified name of a SASL server callback handler class that implements the AuthenticateCallbackHandler interface."),
    def("sasl.server.max.receive.size", int(i32::MIN))
        .default("524288")
        .kafka(MEDIUM, READ_ONLY)
        .doc("The maximum receive size allowed before and during initial SASL authentication."),
    def("security.inter.broker.protocol", ConfigType::String { valid: &["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] })
        .default("PLAINTEXT")
        .kafka(MEDIUM, READ_ONLY)
        .doc("Security protocol used to communicate between brokers."),
    def("security.providers", STRING)
        .kafka(LOW, READ_ONLY)
        .doc("A list of configurable creator classes each returning a provider implementing security algorithms."),
    def("ssl.allow.dn.changes", BOOLEAN)
        .default("false")
        .kafka(LOW, READ_ONLY)
        .doc("Indicates whether changes to the certificate distinguished name should be allowed during a dynamic reconfiguration of certificates or not."),
    def("ssl.allow.san.changes", BOOLEAN)
        .default("false")
        .kafka(LOW, READ_ONLY)
        .doc("Indicates whether changes to the certificate subject alternative names should be allowed during a dynamic reconfiguration of certificates or not."),
    def("ssl.cipher.suites", ANY_LIST)
        .default("")
        .kafka(MEDIUM, PER_BROKER)
        .doc("A list of cipher suites."),
    def("ssl.client.auth", ConfigType::String { valid: &["required", "requested", "none"] })
        .default("none")
        .kafka(MEDIUM, PER_BROKER)
        .doc("Configures kafka broker to request client authentication."),
    def("ssl.enabled.protocols", ANY_LIST)
        .default("TLSv1.2,TLSv1.3")
        .kafka(MEDIUM, PER_BROKER)
        .doc("The list of protocols enabled for SSL connections."),
    def("ssl.endpoint.identification.algorithm", STRING)
        .default("https")
        .kafka(LOW, PER_BROKER)
        .doc("The endpoint identification algorithm to validate server hostname using server certificate."),
    def("ssl.engine.factory.class", CLASS)
        .kafka(LOW, PER_BROKER)
        .doc("The class of type org.apache.kafka.common.security.auth.SslEngineFactory to provide SSLEngine objects."),
    def("ssl.key.password", STRING)
        .sensitive()
        .kafka(MEDIUM, PER_LISTENER)
        .doc("The password of the private key in the key store file or the PEM key specified in 'ssl.keystore.key'."),
    def("ssl.keymanager.algorithm", STRING)
        .default("SunX509")
        .kafka(MEDIUM, PER_BROKER)
        .doc("The algorithm used by key manager factory for SSL connections."),
    def("ssl.keystore.certificate.chain", STRING)
        .sensitive()
        .kafka(MEDIUM, PER_LISTENER)
        .doc("Certificate chain in the format specified by 'ssl.keystore.type'."),
    def("ssl.keystore.key", STRING)
        .sensitive()
        .kafka(MEDIUM, PER_LISTENER)
        .doc("Private key in the format specified by 'ssl.keystore.type'."),
    def("ssl.keystore.location", STRING)
        .kafka(MEDIUM, PER_LISTENER)
        .doc("The location of the key store file."),
    def("ssl.keystore.password", STRING)
        .sensitive()
        .kafka(MEDIUM, PER_LISTENER)
        .doc("The store password for the key store file."),
    def("ssl.keystore.type", STRING)
        .default("JKS")
        .kafka(MEDIUM, PER_LISTENER)
        .doc("The file format of the key store file."),
    def("ssl.principal.mapping.rules", STRING)
        .default("DEFAULT")
        .kafka(LOW, READ_ONLY)
        .doc("A list of rules for mapping from distinguished name from the client certificate to short name."),
    def("ssl.protocol", STRING)
        .default("TLSv1.3")
        .kafka(MEDIUM, PER_BROKER)
        .doc("The SSL protocol used to generate the SSLContext."),
    def("ssl.provider", STRING)
        .kafka(MEDIUM, PER_BROKER)
        .doc("The name of the security provider used for SSL connections."),
    def("ssl.secure.random.implementation", STRING)
        .kafka(LOW, PER_BROKER)
        .doc("The SecureRandom PRNG implementation to use for SSL cryptography operations."),
    def("ssl.trustmanager.algorithm", STRING)
        .default("PKIX")
        .kafka(MEDIUM, PER_BROKER)
        .doc("The algorithm used by trust manager factory for SSL connections."),
    def("ssl.truststore.certificates", STRING)
        .sensitive()
        .kafka(MEDIUM, PER_LISTENER)
        .doc("Trusted certificates in the format specified by 'ssl.truststore.type'."),
    def("ssl.truststore.location", STRING)
        .kafka(MEDIUM, PER_LISTENER)
        .doc("The location of the trust store file."),
    def("ssl.truststore.password", STRING)
        .sensitive()
        .kafka(MEDIUM, PER_LISTENER)
        .doc("The password for the trust store file."),
    def("ssl.truststore.type", STRING)
        .default("JKS")
        .kafka(MEDIUM, PER_LISTENER)
        .doc("The file format of the trust store file."),
    def("super.users", STRING)
        .read_only()
        .doc("StandardAuthorizer: the principals allowed every operation, separated by semicolons (User:alice;User:bob)."),
];

const SASL: &str = "SASL_PLAINTEXT and SASL_SSL listeners and the node's own SASL clients, from the properties file";
const TLS: &str =
    "SSL and SASL_SSL listeners and the node's own TLS clients, from the properties file";
const TLS_JSSE: &str = "tunes Java's TLS implementation (JSSE); kraftd's TLS has its own";
const TLS_RELOAD: &str = "checked when a listener's keystore changes on a live node (kraftd_net::tls::validate_reconfiguration, as Kafka's SslFactory)";
const TLS_STORES: &str = "SSL and SASL_SSL listeners and the node's own TLS clients; set for one listener of one broker (listener.name.<l>.), a live broker re-reads the stores for new connections, established ones continue (cli security/tls.rs, TlsReconfigurer)";
const KERBEROS: &str = "Kerberos (GSSAPI) only, which kraftd refuses";
const OAUTH: &str = "OAUTHBEARER only, which kraftd refuses";
const LOGIN_REFRESH: &str = "refreshes expiring logins (GSSAPI, OAUTHBEARER), which kraftd refuses; PLAIN and SCRAM logins do not expire";
const PLUGIN: &str = "a Java plugin class; kraftd loads none";
const PRINCIPAL_BUILDER: &str = "a principal builder is a Java class and kraftd loads none: it builds principals as Kafka's default, DefaultKafkaPrincipalBuilder, does (SSL subjects through ssl.principal.mapping.rules, SASL users by name)";
const AUTH_DELAY: &str =
    "a failed SASL login's connection closes this long after its answer (KIP-306)";
const AUTHORIZER: &str = "the authorizer (StandardAuthorizer semantics), from the properties file";
const QUOTAS: &str = "client quota enforcement, from the properties file";
const REPLICATION_QUOTA: &str =
    "the replication throttles' windows (replica/replication_quota.rs), from the properties file";
const ALTER_LOG_DIRS_QUOTA: &str =
    "the window of replica.alter.log.dirs.io.max.bytes.per.second (replica/replication_quota.rs), from the properties file";
const TOKENS: &str = "delegation tokens (control/delegation_tokens.rs), from the properties file";
const PROTOCOL_MAP: &str = "each listener's security protocol, from the properties file";
/// Where the connection limits take effect (shared with `max.connections` in
/// `config_support.rs`).
pub(crate) const CONNECTION_QUOTAS: &str = "every accepted connection of the role's listeners, as Kafka's ConnectionQuotas (kraftd_net::connection_quotas); dynamic per broker, as the cluster default and, for max.connections and max.connection.creation.rate, per listener (listener.name.<l>.); the connection_creation_rate client quota of entity ip too";
const INTER_BROKER_PROTOCOL: &str = "kraftd takes the inter-broker listener from inter.broker.listener.name (else the first client listener); set that instead";

use ConfigScope::{Broker as B, StaticBroker as S};

/// The [`ConfigSupport`] of every key of [`SECURITY_CONFIGS`]: dynamic ones in the broker
/// scope, read-only ones in the static scope.
pub const SECURITY_SUPPORT: &[ConfigSupport] = &[
    honoured(S, "allow.everyone.if.no.acl.found", AUTHORIZER),
    honoured(
        S,
        "alter.log.dirs.replication.quota.window.num",
        ALTER_LOG_DIRS_QUOTA,
    ),
    honoured(
        S,
        "alter.log.dirs.replication.quota.window.size.seconds",
        ALTER_LOG_DIRS_QUOTA,
    ),
    honoured(S, "authorizer.class.name", AUTHORIZER),
    refused(S, "client.quota.callback.class", PLUGIN),
    honoured(S, "connection.failed.authentication.delay.ms", AUTH_DELAY),
    honoured(S, "connections.max.reauth.ms", SASL),
    honoured(S, "controller.quota.window.num", "the samples of the controller's controller_mutation_rate quota (ControllerMutationQuotaManager)"),
    honoured(S, "controller.quota.window.size.seconds", "the sample length of the controller's controller_mutation_rate quota (ControllerMutationQuotaManager)"),
    honoured(S, "delegation.token.expiry.check.interval.ms", TOKENS),
    honoured(S, "delegation.token.expiry.time.ms", TOKENS),
    honoured(S, "delegation.token.max.lifetime.ms", TOKENS),
    honoured(S, "delegation.token.secret.key", TOKENS),
    honoured_static(B, "listener.security.protocol.map", PROTOCOL_MAP),
    honoured(B, "max.connection.creation.rate", CONNECTION_QUOTAS),
    honoured(B, "max.connections.per.ip", CONNECTION_QUOTAS),
    honoured(B, "max.connections.per.ip.overrides", CONNECTION_QUOTAS),
    refused(B, "principal.builder.class", PRINCIPAL_BUILDER),
    honoured(S, "quota.window.num", QUOTAS),
    honoured(S, "quota.window.size.seconds", QUOTAS),
    honoured(S, "replication.quota.window.num", REPLICATION_QUOTA),
    honoured(
        S,
        "replication.quota.window.size.seconds",
        REPLICATION_QUOTA,
    ),
    refused(S, "sasl.client.callback.handler.class", PLUGIN),
    honoured_static(B, "sasl.enabled.mechanisms", SASL),
    honoured_static(B, "sasl.jaas.config", SASL),
    no_effect(B, "sasl.kerberos.kinit.cmd", KERBEROS),
    no_effect(B, "sasl.kerberos.min.time.before.relogin", KERBEROS),
    no_effect(B, "sasl.kerberos.principal.to.local.rules", KERBEROS),
    no_effect(B, "sasl.kerberos.service.name", KERBEROS),
    no_effect(B, "sasl.kerberos.ticket.renew.jitter", KERBEROS),
    no_effect(B, "sasl.kerberos.ticket.renew.window.factor", KERBEROS),
    refused(S, "sasl.login.callback.handler.class", PLUGIN),
    refused(S, "sasl.login.class", PLUGIN),
    no_effect(S, "sasl.login.connect.timeout.ms", OAUTH),
    no_effect(S, "sasl.login.read.timeout.ms", OAUTH),
    no_effect(B, "sasl.login.refresh.buffer.seconds", LOGIN_REFRESH),
    no_effect(B, "sasl.login.refresh.min.period.seconds", LOGIN_REFRESH),
    no_effect(B, "sasl.login.refresh.window.factor", LOGIN_REFRESH),
    no_effect(B, "sasl.login.refresh.window.jitter", LOGIN_REFRESH),
    no_effect(S, "sasl.login.retry.backoff.max.ms", OAUTH),
    no_effect(S, "sasl.login.retry.backoff.ms", OAUTH),
    honoured(S, "sasl.mechanism.controller.protocol", SASL),
    honoured_static(B, "sasl.mechanism.inter.broker.protocol", SASL),
    no_effect(S, "sasl.oauthbearer.allow.unverified.audience", OAUTH),
    no_effect(S, "sasl.oauthbearer.allow.unverified.issuer", OAUTH),
    no_effect(S, "sasl.oauthbearer.assertion.algorithm", OAUTH),
    no_effect(S, "sasl.oauthbearer.assertion.claim.aud", OAUTH),
    no_effect(S, "sasl.oauthbearer.assertion.claim.exp.seconds", OAUTH),
    no_effect(S, "sasl.oauthbearer.assertion.claim.iss", OAUTH),
    no_effect(S, "sasl.oauthbearer.assertion.claim.jti.include", OAUTH),
    no_effect(S, "sasl.oauthbearer.assertion.claim.nbf.seconds", OAUTH),
    no_effect(S, "sasl.oauthbearer.assertion.claim.sub", OAUTH),
    no_effect(S, "sasl.oauthbearer.assertion.file", OAUTH),
    no_effect(S, "sasl.oauthbearer.assertion.private.key.file", OAUTH),
    no_effect(
        S,
        "sasl.oauthbearer.assertion.private.key.passphrase",
        OAUTH,
    ),
    no_effect(S, "sasl.oauthbearer.assertion.template.file", OAUTH),
    no_effect(S, "sasl.oauthbearer.client.credentials.client.id", OAUTH),
    no_effect(
        S,
        "sasl.oauthbearer.client.credentials.client.secret",
        OAUTH,
    ),
    no_effect(S, "sasl.oauthbearer.clock.skew.seconds", OAUTH),
    no_effect(S, "sasl.oauthbearer.expected.audience", OAUTH),
    no_effect(S, "sasl.oauthbearer.expected.issuer", OAUTH),
    no_effect(S, "sasl.oauthbearer.jwks.endpoint.refresh.ms", OAUTH),
    no_effect(
        S,
        "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
        OAUTH,
    ),
    no_effect(S, "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", OAUTH),
    no_effect(S, "sasl.oauthbearer.jwks.endpoint.url", OAUTH),
    no_effect(S, "sasl.oauthbearer.jwt.retriever.class", OAUTH),
    no_effect(S, "sasl.oauthbearer.jwt.validator.class", OAUTH),
    no_effect(S, "sasl.oauthbearer.scope", OAUTH),
    no_effect(S, "sasl.oauthbearer.scope.claim.name", OAUTH),
    no_effect(S, "sasl.oauthbearer.sub.claim.name", OAUTH),
    no_effect(S, "sasl.oauthbearer.token.endpoint.url", OAUTH),
    refused(S, "sasl.server.callback.handler.class", PLUGIN),
    honoured(S, "sasl.server.max.receive.size", SASL),
    refused(S, "security.inter.broker.protocol", INTER_BROKER_PROTOCOL),
    refused(S, "security.providers", PLUGIN),
    honoured(S, "ssl.allow.dn.changes", TLS_RELOAD),
    honoured(S, "ssl.allow.san.changes", TLS_RELOAD),
    honoured_static(B, "ssl.cipher.suites", TLS),
    honoured_static(B, "ssl.client.auth", TLS),
    honoured_static(B, "ssl.enabled.protocols", TLS),
    honoured_static(B, "ssl.endpoint.identification.algorithm", TLS),
    refused(B, "ssl.engine.factory.class", PLUGIN),
    honoured(B, "ssl.key.password", TLS_STORES),
    no_effect(B, "ssl.keymanager.algorithm", TLS_JSSE),
    honoured(B, "ssl.keystore.certificate.chain", TLS_STORES),
    honoured(B, "ssl.keystore.key", TLS_STORES),
    honoured(B, "ssl.keystore.location", TLS_STORES),
    honoured(B, "ssl.keystore.password", TLS_STORES),
    honoured(B, "ssl.keystore.type", TLS_STORES),
    honoured(S, "ssl.principal.mapping.rules", TLS),
    honoured_static(B, "ssl.protocol", TLS),
    no_effect(B, "ssl.provider", TLS_JSSE),
    no_effect(B, "ssl.secure.random.implementation", TLS_JSSE),
    no_effect(B, "ssl.trustmanager.algorithm", TLS_JSSE),
    honoured(B, "ssl.truststore.certificates", TLS_STORES),
    honoured(B, "ssl.truststore.location", TLS_STORES),
    honoured(B, "ssl.truststore.password", TLS_STORES),
    honoured(B, "ssl.truststore.type", TLS_STORES),
    honoured(S, "super.users", AUTHORIZER),
];
