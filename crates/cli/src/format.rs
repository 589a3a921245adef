//! `kraftd format` and `kraftd random-uuid`, as Kafka's `kafka-storage format` and
//! `kafka-storage random-uuid`: every log directory gets a `meta.properties` (version 1,
//! node.id, cluster.id, a fresh directory.id), and the metadata log directory gets
//! `bootstrap.checkpoint`, the records the first active controller writes to an empty
//! metadata log: the feature levels, then the `--add-scram` credentials
//! (UserScramCredentialRecords, as Kafka's `Formatter` appends them; the metadata.version
//! kraftd formats with supports SCRAM, which needs 3.5-IV2). A dynamic quorum's controller
//! (`--standalone`, `--initial-controllers`, `--no-initial-controllers`: [`dynamic`]) also
//! gets Kafka's bootstrap snapshot with `kraft.version` and the initial voters, and its
//! metadata directory's `directory.id` is the one its `--initial-controllers` entry names.
//! `--feature NAME=LEVEL` (Kafka's `kafka-storage format --feature`) sets a feature's
//! starting level instead of the default, within the range kraftd supports
//! ([`parse_feature_levels`]).
//! `meta.properties` is written last, so a directory whose format failed is not formatted.
//! A node refuses to start on a directory that is not formatted, or formatted for another
//! node or cluster.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use kraftd_controller::control::replication::ELIGIBLE_LEADER_REPLICAS_VERSION_FEATURE;
use kraftd_controller::image::METADATA_VERSION_FEATURE;
use kraftd_protocol::metadata::{FeatureLevelRecord, UserScramCredentialRecord};
use kraftd_protocol::metadata_record::{decode_metadata_record, encode_metadata_record};
use kraftd_protocol::MetadataRecord;
use kraftd_raft::snapshot::{read_snapshot, SnapshotWriter};

use crate::config::NodeConfig;
use crate::properties::Properties;

pub mod dynamic;

pub use dynamic::QuorumFlag;

/// The file Kafka keeps in every log directory.
pub const META_PROPERTIES: &str = "meta.properties";
/// The bootstrap metadata in the metadata log directory.
pub const BOOTSTRAP_CHECKPOINT: &str = "bootstrap.checkpoint";
/// The `metadata.version` a new cluster starts at (4.0-IV3, the highest kraftd speaks).
pub const BOOTSTRAP_METADATA_VERSION: i16 = 25;

/// `N` bytes from the system's random source.
fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut file = std::fs::File::open("/dev/urandom").context("opening /dev/urandom")?;
    let mut bytes = [0u8; N];
    file.read_exact(&mut bytes)
        .context("reading /dev/urandom")?;
    Ok(bytes)
}

/// A 16-byte random id as Kafka prints it: URL-safe base64 without padding (22 chars),
/// never starting with `-` (Kafka draws again so the id cannot look like a flag).
pub fn random_uuid() -> Result<String> {
    loop {
        let bytes = random_bytes::<16>()?;
        let text = kraftd_protocol::Uuid(bytes).to_base64();
        if !text.starts_with('-') && bytes != [0; 16] {
            return Ok(text);
        }
    }
}

/// A random SCRAM salt for `--add-scram`, drawn as Kafka draws it
/// ([`crate::scram_args::random_salt`]).
pub fn random_scram_salt() -> Result<Vec<u8>> {
    Ok(crate::scram_args::random_salt(random_bytes::<17>()?))
}

/// Kafka's string form of a uuid (URL-safe base64, no padding) back to its 16 bytes.
pub fn parse_uuid(text: &str) -> Result<kraftd_protocol::Uuid> {
    kraftd_protocol::Uuid::from_base64(text)
        .ok_or_else(|| anyhow!("{text:?} is not a 22-character URL-safe base64 uuid"))
}

/// Checks a cluster id the way Kafka does: the base64 form of 16 bytes.
pub fn check_cluster_id(id: &str) -> Result<()> {
    let valid = id.len() == 22
        && id
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_');
    if !valid {
        bail!("cluster id {id:?} is not a 22-character URL-safe base64 uuid (see `kraftd random-uuid`)");
    }
    Ok(())
}

/// What `meta.properties` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    pub cluster_id: String,
    pub node_id: i32,
    pub directory_id: String,
}

impl MetaProperties {
    pub fn read(dir: &Path) -> Result<Option<MetaProperties>> {
        let path = dir.join(META_PROPERTIES);
        if !path.exists() {
            return Ok(None);
        }
        let props = Properties::load(&path)?;
        let get = |k: &str| {
            props
                .get(k)
                .map(str::to_string)
                .ok_or_else(|| anyhow!("{} has no {k}", path.display()))
        };
        let version = get("version")?;
        if version != "1" {
            bail!(
                "{}: version {version} is not supported (expected 1)",
                path.display()
            );
        }
        let node_id = get("node.id")?;
        Ok(Some(MetaProperties {
            cluster_id: get("cluster.id")?,
            node_id: node_id
                .parse()
                .map_err(|_| anyhow!("{}: node.id {node_id:?} is not a number", path.display()))?,
            directory_id: get("directory.id")?,
        }))
    }

    fn write(&self, dir: &Path) -> Result<()> {
        let mut props = Properties::new();
        props.set("version", "1");
        props.set("cluster.id", &self.cluster_id);
        props.set("node.id", self.node_id.to_string());
        props.set("directory.id", &self.directory_id);
        write_atomically(
            &dir.join(META_PROPERTIES),
            props.to_text("\n#Written by kraftd format").as_bytes(),
        )
    }
}

/// Every directory a node keeps data in: the log dirs and the metadata log dir.
pub fn all_dirs(config: &NodeConfig) -> Vec<PathBuf> {
    let mut dirs = config.log_dirs.clone();
    if !dirs.contains(&config.metadata_log_dir) {
        dirs.push(config.metadata_log_dir.clone());
    }
    dirs
}

/// Formats every directory of `config` for `cluster_id`, with `scram` credentials in the
/// bootstrap metadata and the quorum `flag` (`--standalone`, `--initial-controllers`,
/// `--no-initial-controllers`; [`dynamic`]). A directory already formatted for the same
/// cluster and node is left alone when `ignore_formatted`, else refused.
pub fn format(
    config: &NodeConfig,
    cluster_id: &str,
    ignore_formatted: bool,
    scram: &[UserScramCredentialRecord],
    flag: &QuorumFlag,
    features: &[(String, i16)],
) -> Result<()> {
    check_cluster_id(cluster_id)?;
    let plan = dynamic::plan(config, flag, || parse_uuid(&random_uuid()?))?;
    for dir in all_dirs(config) {
        if let Some(existing) = MetaProperties::read(&dir)? {
            if ignore_formatted
                && existing.cluster_id == cluster_id
                && existing.node_id == config.node_id
            {
                continue;
            }
            bail!(
                "{} is already formatted (cluster {}, node {}); use --ignore-formatted to skip it",
                dir.display(),
                existing.cluster_id,
                existing.node_id
            );
        }
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating log directory {}", dir.display()))?;
        let is_metadata_dir = dir == config.metadata_log_dir;
        let directory_id = match plan.own_directory_id(config.node_id) {
            Some(id) if is_metadata_dir => id.to_base64(),
            _ => random_uuid()?,
        };
        if is_metadata_dir {
            dynamic::write_bootstrap_snapshot(&dir, &plan)?;
            write_bootstrap(&dir, scram, features)?;
        }
        MetaProperties {
            cluster_id: cluster_id.to_string(),
            node_id: config.node_id,
            directory_id,
        }
        .write(&dir)?;
    }
    Ok(())
}

/// The feature levels a new cluster starts at: `metadata.version` and, with it, eligible
/// leader replicas on (KIP-966), KIP-848 consumer groups (`group.version` 1),
/// transactions V2 (`transaction.version` 2, KIP-890) and KIP-932 share groups
/// (`share.version` 1), as Kafka 4.4 formats a new cluster.
pub fn bootstrap_records() -> Vec<MetadataRecord> {
    vec![
        MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.to_string(),
            feature_level: BOOTSTRAP_METADATA_VERSION,
            ..Default::default()
        }),
        MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: ELIGIBLE_LEADER_REPLICAS_VERSION_FEATURE.to_string(),
            feature_level: 1,
            ..Default::default()
        }),
        MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: "group.version".to_string(),
            feature_level: 1,
            ..Default::default()
        }),
        MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: "transaction.version".to_string(),
            feature_level: 2,
            ..Default::default()
        }),
        // Kafka 4.4's format finalizes share.version 1 with its default release (4.3-IV0);
        // Kafka ties level 1 to metadata.version 4.2-IV0 (28) for that default only (no
        // dependency checked on update), which is above kraftd's 25: kraftd finalizes it
        // with its own metadata.version, so that share groups are on as in Kafka 4.4.
        MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: "share.version".to_string(),
            feature_level: 1,
            ..Default::default()
        }),
    ]
}

/// The `--feature NAME=LEVEL` arguments, checked as Kafka's `StorageTool` and `Formatter`
/// check them: `NAME=LEVEL` with a short level, a feature kraftd supports, at a level within
/// its supported range.
pub fn parse_feature_levels(args: &[String]) -> Result<Vec<(String, i16)>> {
    let supported = kraftd_broker::server::supported_features();
    let mut out: Vec<(String, i16)> = Vec::new();
    for arg in args {
        let Some((name, level)) = arg.split_once('=') else {
            bail!("Can't parse feature=level string {arg}: equals sign not found.");
        };
        let name = name.trim();
        let level_text = level.trim();
        let level: i16 = level_text.parse().map_err(|_| {
            anyhow!(
                "Can't parse feature=level string {arg}: unable to parse {level_text} as a short."
            )
        })?;
        let Some(feature) = supported.iter().find(|f| f.name == name) else {
            let mut names: Vec<&str> = supported
                .iter()
                .map(|f| f.name.as_str())
                .filter(|n| *n != METADATA_VERSION_FEATURE)
                .collect();
            names.sort_unstable();
            bail!(
                "Unsupported feature: {name}. Supported features are: {}",
                names.join(", ")
            );
        };
        if level < feature.min_supported_version || level > feature.max_supported_version {
            bail!("No feature:{name} with feature level {level}");
        }
        out.retain(|(n, _)| n != name);
        out.push((name.to_string(), level));
    }
    Ok(out)
}

/// The bootstrap records with the `--feature` levels in place of the defaults.
pub fn bootstrap_records_with(features: &[(String, i16)]) -> Vec<MetadataRecord> {
    let mut records = bootstrap_records();
    for (name, level) in features {
        let existing = records.iter_mut().find_map(|r| match r {
            MetadataRecord::FeatureLevel(f) if f.name == *name => Some(f),
            _ => None,
        });
        match existing {
            Some(f) => f.feature_level = *level,
            None => records.push(MetadataRecord::FeatureLevel(FeatureLevelRecord {
                name: name.clone(),
                feature_level: *level,
                ..Default::default()
            })),
        }
    }
    records
}

fn write_bootstrap(
    dir: &Path,
    scram: &[UserScramCredentialRecord],
    features: &[(String, i16)],
) -> Result<()> {
    let now = kraftd_log::clock::unix_ms();
    let mut writer = SnapshotWriter::new(0, 0, now).context("writing bootstrap.checkpoint")?;
    let credentials = scram
        .iter()
        .cloned()
        .map(MetadataRecord::UserScramCredential);
    for record in bootstrap_records_with(features)
        .into_iter()
        .chain(credentials)
    {
        let value = encode_metadata_record(&record, record.key().valid_versions().max)
            .context("encoding a bootstrap record")?;
        writer
            .append(value)
            .context("writing bootstrap.checkpoint")?;
    }
    let bytes = writer.finish().context("writing bootstrap.checkpoint")?;
    write_atomically(&dir.join(BOOTSTRAP_CHECKPOINT), &bytes)
}

/// Reads the bootstrap records of a formatted metadata log directory.
pub fn read_bootstrap(dir: &Path) -> Result<Vec<MetadataRecord>> {
    let path = dir.join(BOOTSTRAP_CHECKPOINT);
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let snapshot = read_snapshot(Bytes::from(bytes))
        .map_err(|e| anyhow!("{} is not a valid checkpoint: {e}", path.display()))?;
    snapshot
        .values()
        .map(|v| {
            decode_metadata_record(v.clone())
                .map(|(r, _)| r)
                .map_err(|e| anyhow!("{}: {e}", path.display()))
        })
        .collect()
}

/// Checks that every directory is formatted for this node and one cluster; returns the
/// cluster id.
pub fn check_formatted(config: &NodeConfig, config_file: &str) -> Result<String> {
    let mut cluster: Option<String> = None;
    for dir in all_dirs(config) {
        let meta = MetaProperties::read(&dir)?.ok_or_else(|| {
            anyhow!(
                "log directory {} is not formatted; run `kraftd format --config {config_file} \
                 --cluster-id $(kraftd random-uuid)` first",
                dir.display()
            )
        })?;
        if meta.node_id != config.node_id {
            bail!(
                "{} belongs to node {}, but node.id is {}",
                dir.join(META_PROPERTIES).display(),
                meta.node_id,
                config.node_id
            );
        }
        match &cluster {
            Some(c) if *c != meta.cluster_id => bail!(
                "{} belongs to cluster {}, other directories to {c}",
                dir.join(META_PROPERTIES).display(),
                meta.cluster_id
            ),
            _ => cluster = Some(meta.cluster_id),
        }
    }
    cluster.ok_or_else(|| anyhow!("no log directory configured"))
}

/// Writes through a temporary file, fsyncs it, renames it over `path` and fsyncs the
/// directory, so a crash leaves the old file or the new one.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut file =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    if let Some(parent) = path.parent() {
        if let Ok(dir) = std::fs::File::open(parent) {
            let _ = dir.sync_all();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_uuids_look_like_kafkas() {
        let id = random_uuid().unwrap();
        assert_eq!(id.len(), 22);
        check_cluster_id(&id).unwrap();
        assert_ne!(id, random_uuid().unwrap());
        assert!(check_cluster_id("short").is_err());
    }

    #[test]
    fn uuids_parse_back() {
        let bytes = [0xfb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff];
        let text = kraftd_protocol::Uuid(bytes).to_base64();
        assert_eq!(parse_uuid(&text).unwrap().0, bytes);
        assert!(parse_uuid("not-a-uuid").is_err());
    }
}
