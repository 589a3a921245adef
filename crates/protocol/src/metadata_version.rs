//! `metadata.version` (Kafka's `org.apache.kafka.server.common.MetadataVersion`): the levels
//! Apache Kafka 4.4.0 knows, 7 (3.3-IV3) to 33 (4.4-IV2), their release names, and what each
//! level implies on the wire and on disk: the version each metadata record is written at (so
//! the metadata log stays byte for byte what a Kafka controller at the same level writes) and
//! the Fetch version a replica fetcher sends. Every gate a level opens is a method here, named
//! as Kafka names it, so a reader of Kafka's code finds the same question answered in one place.

use crate::MetadataRecord;

/// A `metadata.version` feature level Kafka 4.4.0 knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MetadataVersion(i16);

/// Every level Kafka 4.4.0 defines, oldest first: (feature level, release, sub-version, whether
/// the metadata format changed), as Kafka's enum constants.
const VERSIONS: [(i16, &str, &str, bool); 27] = [
    (7, "3.3", "IV3", true),
    (8, "3.4", "IV0", true),
    (9, "3.5", "IV0", false),
    (10, "3.5", "IV1", false),
    (11, "3.5", "IV2", true),
    (12, "3.6", "IV0", false),
    (13, "3.6", "IV1", true),
    (14, "3.6", "IV2", true),
    (15, "3.7", "IV0", true),
    (16, "3.7", "IV1", false),
    (17, "3.7", "IV2", true),
    (18, "3.7", "IV3", false),
    (19, "3.7", "IV4", false),
    (20, "3.8", "IV0", false),
    (21, "3.9", "IV0", false),
    (22, "4.0", "IV0", false),
    (23, "4.0", "IV1", true),
    (24, "4.0", "IV2", false),
    (25, "4.0", "IV3", false),
    (26, "4.1", "IV0", false),
    (27, "4.1", "IV1", false),
    (28, "4.2", "IV0", false),
    (29, "4.2", "IV1", false),
    (30, "4.3", "IV0", true),
    (31, "4.4", "IV0", false),
    (32, "4.4", "IV1", true),
    (33, "4.4", "IV2", true),
];

/// Why a level or release name is not a `metadata.version`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataVersionError {
    #[error(
        "No MetadataVersion with feature level {0}. Valid feature levels are from {min} to {max}.",
        min = MetadataVersion::MINIMUM.0,
        max = MetadataVersion::LATEST_PRODUCTION.0
    )]
    UnknownLevel(i16),
    #[error("Unknown metadata.version '{0}'. Supported metadata.version are: {list}", list = MetadataVersion::all_names())]
    UnknownRelease(String),
}

impl MetadataVersion {
    /// 3.3-IV3, Kafka's oldest KRaft metadata version.
    pub const MINIMUM: MetadataVersion = MetadataVersion(7);
    /// 3.4-IV0: KIP-866's RegisterBrokerRecord v2.
    pub const IBP_3_4_IV0: MetadataVersion = MetadataVersion(8);
    /// 3.5-IV0: Fetch v14 (tiered storage).
    pub const IBP_3_5_IV0: MetadataVersion = MetadataVersion(9);
    /// 3.5-IV1: Fetch v15 (KIP-903 replica epochs).
    pub const IBP_3_5_IV1: MetadataVersion = MetadataVersion(10);
    /// 3.5-IV2: SCRAM credentials in the metadata log.
    pub const IBP_3_5_IV2: MetadataVersion = MetadataVersion(11);
    /// 3.6-IV0: no leader epoch bump when the controller shrinks an ISR (KAFKA-15021).
    pub const IBP_3_6_IV0: MetadataVersion = MetadataVersion(12);
    /// 3.6-IV1: metadata transactions.
    pub const IBP_3_6_IV1: MetadataVersion = MetadataVersion(13);
    /// 3.6-IV2: delegation tokens.
    pub const IBP_3_6_IV2: MetadataVersion = MetadataVersion(14);
    /// 3.7-IV0: controller registration (KIP-919).
    pub const IBP_3_7_IV0: MetadataVersion = MetadataVersion(15);
    /// 3.7-IV2: replica directories (KIP-858, JBOD).
    pub const IBP_3_7_IV2: MetadataVersion = MetadataVersion(17);
    /// 3.7-IV4: Fetch v16 (KIP-951).
    pub const IBP_3_7_IV4: MetadataVersion = MetadataVersion(19);
    /// 3.9-IV0: Fetch v17.
    pub const IBP_3_9_IV0: MetadataVersion = MetadataVersion(21);
    /// 4.0-IV0: the bootstrap version of `group.version` 1 (KIP-848).
    pub const IBP_4_0_IV0: MetadataVersion = MetadataVersion(22);
    /// 4.0-IV1: eligible leader replicas in the records (KIP-966).
    pub const IBP_4_0_IV1: MetadataVersion = MetadataVersion(23);
    /// 4.0-IV2: the bootstrap version of `transaction.version` 1 and 2 (KIP-890).
    pub const IBP_4_0_IV2: MetadataVersion = MetadataVersion(24);
    /// 4.0-IV3: async remote ListOffsets (KIP-1075).
    pub const IBP_4_0_IV3: MetadataVersion = MetadataVersion(25);
    /// 4.1-IV0: ELR on by default in new clusters (KIP-966).
    pub const IBP_4_1_IV0: MetadataVersion = MetadataVersion(26);
    /// 4.1-IV1: the replica fetcher sends Fetch v18 (KIP-1166).
    pub const IBP_4_1_IV1: MetadataVersion = MetadataVersion(27);
    /// 4.2-IV0: share groups on by default in new clusters (KIP-932).
    pub const IBP_4_2_IV0: MetadataVersion = MetadataVersion(28);
    /// 4.2-IV1: streams groups on by default in new clusters (KIP-1071).
    pub const IBP_4_2_IV1: MetadataVersion = MetadataVersion(29);
    /// 4.3-IV0: cordoned log directories (KIP-1066).
    pub const IBP_4_3_IV0: MetadataVersion = MetadataVersion(30);
    /// 4.4-IV0: share groups' dead-letter queues (KIP-1191) by default.
    pub const IBP_4_4_IV0: MetadataVersion = MetadataVersion(31);
    /// 4.4-IV1: CIDR ACL host patterns (KIP-1276).
    pub const IBP_4_4_IV1: MetadataVersion = MetadataVersion(32);
    /// 4.4-IV2: controller unregistration (KIP-1312).
    pub const IBP_4_4_IV2: MetadataVersion = MetadataVersion(33);
    /// The newest level Kafka 4.4.0 formats by default (`kafka-storage format` without
    /// `--release-version`; `kafka-features version-mapping` prints it).
    pub const LATEST_PRODUCTION: MetadataVersion = MetadataVersion(33);

    /// The level `level`, if Kafka 4.4.0 defines it.
    pub fn from_feature_level(level: i16) -> Result<MetadataVersion, MetadataVersionError> {
        if (Self::MINIMUM.0..=Self::LATEST_PRODUCTION.0).contains(&level) {
            Ok(MetadataVersion(level))
        } else {
            Err(MetadataVersionError::UnknownLevel(level))
        }
    }

    /// Kafka's `fromVersionString`: "3.8", "3.8-IV0", "3.8.1" (only the first two segments
    /// count); a bare release names its newest level.
    pub fn from_version_string(text: &str) -> Result<MetadataVersion, MetadataVersionError> {
        let key = text.splitn(3, '.').take(2).collect::<Vec<_>>().join(".");
        VERSIONS
            .iter()
            .rev()
            .find(|(_, release, sub, _)| key == *release || key == format!("{release}-{sub}"))
            .map(|(level, ..)| MetadataVersion(*level))
            .ok_or_else(|| MetadataVersionError::UnknownRelease(text.to_string()))
    }

    /// The feature level.
    pub fn level(self) -> i16 {
        self.0
    }

    /// Kafka's `version()`: "4.4-IV2".
    pub fn version(self) -> String {
        let (_, release, sub, _) = self.entry();
        format!("{release}-{sub}")
    }

    /// Kafka's `shortVersion()`: the release, "4.4".
    pub fn short_version(self) -> &'static str {
        self.entry().1
    }

    /// Whether this level changed the metadata format (Kafka's `didMetadataChange`).
    pub fn did_metadata_change(self) -> bool {
        self.entry().3
    }

    /// Kafka's `MetadataVersion.checkIfMetadataChanged`: whether any level after the lower
    /// of `a` and `b`, up to the higher, changed the metadata (so moving between them could
    /// lose information).
    pub fn check_if_metadata_changed(a: MetadataVersion, b: MetadataVersion) -> bool {
        let (low, high) = if a <= b { (a, b) } else { (b, a) };
        VERSIONS
            .iter()
            .any(|(level, _, _, changed)| *changed && low.0 < *level && *level <= high.0)
    }

    pub fn is_scram_supported(self) -> bool {
        self >= Self::IBP_3_5_IV2
    }

    pub fn is_leader_epoch_bump_required_on_isr_shrink(self) -> bool {
        self < Self::IBP_3_6_IV0
    }

    pub fn is_metadata_transaction_supported(self) -> bool {
        self >= Self::IBP_3_6_IV1
    }

    pub fn is_delegation_token_supported(self) -> bool {
        self >= Self::IBP_3_6_IV2
    }

    pub fn is_controller_registration_supported(self) -> bool {
        self >= Self::IBP_3_7_IV0
    }

    pub fn is_directory_assignment_supported(self) -> bool {
        self >= Self::IBP_3_7_IV2
    }

    pub fn is_elr_supported(self) -> bool {
        self >= Self::IBP_4_0_IV1
    }

    pub fn is_migration_supported(self) -> bool {
        self >= Self::IBP_3_4_IV0
    }

    pub fn is_cordoned_log_dirs_supported(self) -> bool {
        self >= Self::IBP_4_3_IV0
    }

    pub fn is_cidr_acl_supported(self) -> bool {
        self >= Self::IBP_4_4_IV1
    }

    pub fn is_controller_unregistration_supported(self) -> bool {
        self >= Self::IBP_4_4_IV2
    }

    /// RegisterBrokerRecord: v4 adds cordonedLogDirs, v3 logDirs, v2 isMigratingZkBroker.
    pub fn register_broker_record_version(self) -> i16 {
        if self.is_cordoned_log_dirs_supported() {
            4
        } else if self.is_directory_assignment_supported() {
            3
        } else if self.is_migration_supported() {
            2
        } else {
            1
        }
    }

    /// PartitionRecord: v2 adds the ELR fields, v1 directories.
    pub fn partition_record_version(self) -> i16 {
        if self.is_elr_supported() {
            2
        } else if self.is_directory_assignment_supported() {
            1
        } else {
            0
        }
    }

    /// PartitionChangeRecord: as PartitionRecord.
    pub fn partition_change_record_version(self) -> i16 {
        self.partition_record_version()
    }

    /// The Fetch version the replica fetcher sends at this level.
    pub fn fetch_request_version(self) -> i16 {
        if self >= Self::IBP_4_1_IV1 {
            18
        } else if self >= Self::IBP_3_9_IV0 {
            17
        } else if self >= Self::IBP_3_7_IV4 {
            16
        } else if self >= Self::IBP_3_5_IV1 {
            15
        } else if self >= Self::IBP_3_5_IV0 {
            14
        } else {
            13
        }
    }

    /// The ListOffsets version a replica fetcher sends at this level.
    pub fn list_offset_request_version(self) -> i16 {
        if self >= Self::IBP_4_2_IV1 {
            11
        } else if self >= Self::IBP_4_0_IV3 {
            10
        } else if self >= Self::IBP_3_9_IV0 {
            9
        } else if self >= Self::IBP_3_5_IV0 {
            8
        } else {
            7
        }
    }

    /// The version a Kafka controller at this level writes `record` at. RegisterBroker,
    /// Partition and PartitionChange follow the level; BrokerRegistrationChange takes the
    /// version its call site in Kafka's `ReplicationControlManager` uses, which is the oldest
    /// that carries the fields set (fencing 0, controlled shutdown 1, log dirs 2, cordoned
    /// log dirs 3); every other record has one version.
    pub fn record_version(self, record: &MetadataRecord) -> i16 {
        match record {
            MetadataRecord::RegisterBroker(_) => self.register_broker_record_version(),
            MetadataRecord::Partition(_) => self.partition_record_version(),
            MetadataRecord::PartitionChange(_) => self.partition_change_record_version(),
            MetadataRecord::BrokerRegistrationChange(r) => {
                if r.cordoned_log_dirs.is_some() {
                    3
                } else if !r.log_dirs.is_empty() {
                    2
                } else if r.in_controlled_shutdown != 0 {
                    1
                } else {
                    0
                }
            }
            other => other.key().valid_versions().max,
        }
    }

    /// "3.3-IV3, 3.4-IV0, ..., 4.4-IV2", as Kafka lists them in its error.
    pub fn all_names() -> String {
        VERSIONS
            .iter()
            .map(|(_, release, sub, _)| format!("{release}-{sub}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn entry(self) -> (i16, &'static str, &'static str, bool) {
        VERSIONS[(self.0 - Self::MINIMUM.0) as usize]
    }
}

impl std::fmt::Display for MetadataVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.version())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::BrokerRegistrationChangeRecord;

    #[test]
    fn levels_and_names_are_kafkas() {
        assert_eq!(VERSIONS.len(), 33 - 7 + 1);
        for (i, (level, ..)) in VERSIONS.iter().enumerate() {
            assert_eq!(*level, 7 + i as i16);
        }
        let v = MetadataVersion::from_feature_level(33).unwrap();
        assert_eq!(v.version(), "4.4-IV2");
        assert_eq!(v.to_string(), "4.4-IV2");
        assert_eq!(
            MetadataVersion::from_version_string("4.0").unwrap().level(),
            25
        );
        assert_eq!(
            MetadataVersion::from_version_string("3.9.1")
                .unwrap()
                .level(),
            21
        );
        assert_eq!(
            MetadataVersion::from_version_string("4.4-IV0")
                .unwrap()
                .level(),
            31
        );
        assert_eq!(
            MetadataVersion::from_version_string("4.4").unwrap().level(),
            33
        );
        assert!(MetadataVersion::from_version_string("5.0").is_err());
        assert!(MetadataVersion::from_feature_level(6).is_err());
        assert!(MetadataVersion::from_feature_level(34).is_err());
        assert!(MetadataVersion::from_feature_level(-1).is_err());
    }

    #[test]
    fn record_versions_follow_the_level() {
        let at = |l| MetadataVersion::from_feature_level(l).unwrap();
        assert_eq!(at(7).register_broker_record_version(), 1);
        assert_eq!(at(8).register_broker_record_version(), 2);
        assert_eq!(at(17).register_broker_record_version(), 3);
        assert_eq!(at(29).register_broker_record_version(), 3);
        assert_eq!(at(30).register_broker_record_version(), 4);
        assert_eq!(at(16).partition_record_version(), 0);
        assert_eq!(at(17).partition_record_version(), 1);
        assert_eq!(at(23).partition_change_record_version(), 2);
        assert_eq!(at(26).fetch_request_version(), 17);
        assert_eq!(at(27).fetch_request_version(), 18);
        assert_eq!(at(7).fetch_request_version(), 13);
        assert_eq!(at(29).list_offset_request_version(), 11);
        assert_eq!(at(25).list_offset_request_version(), 10);
        assert!(crate::ApiKey::Fetch
            .valid_versions()
            .contains(at(33).fetch_request_version()));
        let change = |r| at(33).record_version(&MetadataRecord::BrokerRegistrationChange(r));
        assert_eq!(change(BrokerRegistrationChangeRecord::default()), 0);
        assert_eq!(
            change(BrokerRegistrationChangeRecord {
                in_controlled_shutdown: 1,
                ..Default::default()
            }),
            1
        );
        assert_eq!(
            change(BrokerRegistrationChangeRecord {
                cordoned_log_dirs: Some(vec![]),
                ..Default::default()
            }),
            3
        );
    }
}
