//! `kraftd format` and `kraftd random-uuid`, as Kafka's `kafka-storage format` and
//! `kafka-storage random-uuid`: every log directory gets a `meta.properties` (version 1,
//! node.id, cluster.id, a fresh directory.id), and the metadata log directory gets
//! `bootstrap.checkpoint`, the records the first active controller writes to an empty
//! metadata log: the feature levels (`--release-version`, `--feature`: [`features`]), then
//! the `--add-scram` credentials (UserScramCredentialRecords, as Kafka's `Formatter` appends
//! them; SCRAM needs metadata.version 3.5-IV2). A dynamic quorum's controller
//! (`--standalone`, `--initial-controllers`, `--no-initial-controllers`: [`dynamic`]) also
//! gets Kafka's bootstrap snapshot with `kraft.version` and the initial voters, and its
//! metadata directory's `directory.id` is the one its `--initial-controllers` entry names.
//! `meta.properties` is written last, so a directory whose format failed is not formatted.
//! A node refuses to start on a directory that is not formatted, or formatted for another
//! node or cluster.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use kraftd_controller::image::METADATA_VERSION_FEATURE;
use kraftd_protocol::metadata::{FeatureLevelRecord, UserScramCredentialRecord};
use kraftd_protocol::metadata_record::{decode_metadata_record, encode_metadata_record};
use kraftd_protocol::MetadataRecord;
use kraftd_raft::snapshot::{read_snapshot, SnapshotWriter};

use crate::config::NodeConfig;
use crate::properties::Properties;

pub mod dynamic;
pub mod features;

pub use dynamic::QuorumFlag;
pub use features::{FeatureArgs, FinalizedLevels};

/// The file Kafka keeps in every log directory.
pub const META_PROPERTIES: &str = "meta.properties";
/// The bootstrap metadata in the metadata log directory.
pub const BOOTSTRAP_CHECKPOINT: &str = "bootstrap.checkpoint";
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
    /// The dir's `meta.properties`; None when it has none (not formatted). An error when
    /// it cannot be read (the dir not a directory, an I/O error) or says nothing usable.
    pub fn read(dir: &Path) -> Result<Option<MetaProperties>> {
        let path = dir.join(META_PROPERTIES);
        match std::fs::metadata(&path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => bail!("reading {}: {e}", path.display()),
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

/// Formats every directory of `config` for `cluster_id`, with the feature levels `features`
/// asks for ([`features::finalized_levels`]), `scram` credentials in the bootstrap metadata
/// and the quorum `flag` (`--standalone`, `--initial-controllers`,
/// `--no-initial-controllers`; [`dynamic`]). A directory already formatted for the same
/// cluster and node is left alone when `ignore_formatted`, else refused.
pub fn format(
    config: &NodeConfig,
    cluster_id: &str,
    ignore_formatted: bool,
    scram: &[UserScramCredentialRecord],
    flag: &QuorumFlag,
    features: &FeatureArgs,
) -> Result<()> {
    check_cluster_id(cluster_id)?;
    let levels = features::finalized_levels(features, !matches!(flag, QuorumFlag::None))?;
    if !scram.is_empty() && !levels.metadata_version.is_scram_supported() {
        bail!("SCRAM is only supported in {METADATA_VERSION_FEATURE} 3.5-IV2 or later.");
    }
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
            write_bootstrap(&dir, &levels, scram)?;
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

/// The records that finalize `levels`, as Kafka's `BootstrapMetadata.fromVersions`:
/// `metadata.version` first, then every other feature above level 0 by name (`kraft.version`
/// lives in the bootstrap snapshot's KRaftVersionRecord, not here).
pub fn bootstrap_records(levels: &FinalizedLevels) -> Vec<MetadataRecord> {
    let record = |name: &str, feature_level: i16| {
        MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: name.to_string(),
            feature_level,
            ..Default::default()
        })
    };
    std::iter::once(record(
        METADATA_VERSION_FEATURE,
        levels.metadata_version.level(),
    ))
    .chain(
        levels
            .features
            .iter()
            .filter(|(name, level)| **level > 0 && *name != features::KRAFT_VERSION_FEATURE)
            .map(|(name, level)| record(name, *level)),
    )
    .collect()
}

fn write_bootstrap(
    dir: &Path,
    levels: &FinalizedLevels,
    scram: &[UserScramCredentialRecord],
) -> Result<()> {
    let now = kraftd_log::clock::unix_ms();
    let mut writer = SnapshotWriter::new(0, 0, now).context("writing bootstrap.checkpoint")?;
    let credentials = scram
        .iter()
        .cloned()
        .map(MetadataRecord::UserScramCredential);
    for record in bootstrap_records(levels).into_iter().chain(credentials) {
        let version = levels.metadata_version.record_version(&record);
        let value =
            encode_metadata_record(&record, version).context("encoding a bootstrap record")?;
        writer
            .append(value)
            .context("writing bootstrap.checkpoint")?;
    }
    let bytes = writer.finish().context("writing bootstrap.checkpoint")?;
    write_atomically(&dir.join(BOOTSTRAP_CHECKPOINT), &bytes)
}

/// Reads the bootstrap records of a formatted metadata log directory: kraftd's
/// `bootstrap.checkpoint`, else the bootstrap snapshot
/// (`__cluster_metadata-0/00000000000000000000-0000000000.checkpoint`), the one place
/// Kafka 4.4's `kafka-storage format` writes them, so a kraftd controller starts on a Kafka
/// controller's directories (a node swapped in place). A directory with neither (a Kafka
/// controller's whose bootstrap snapshot was cleaned away once its log moved past it) gets
/// Kafka's `BootstrapMetadata.fromDirectory` default: `metadata.version` at the latest
/// production level, which matters only if the metadata log is empty.
pub fn read_bootstrap(dir: &Path) -> Result<Vec<MetadataRecord>> {
    let mut path = dir.join(BOOTSTRAP_CHECKPOINT);
    if !path.exists() {
        let snapshot = dynamic::bootstrap_snapshot_path(dir);
        if !snapshot.exists() {
            return Ok(vec![MetadataRecord::FeatureLevel(FeatureLevelRecord {
                name: METADATA_VERSION_FEATURE.to_string(),
                feature_level:
                    kraftd_protocol::metadata_version::MetadataVersion::LATEST_PRODUCTION.level(),
                ..Default::default()
            })]);
        }
        path = snapshot;
    }
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
pub fn check_formatted(config: &NodeConfig, config_file: &str) -> Result<Formatted> {
    let mut cluster: Option<String> = None;
    let mut unreadable: Vec<(PathBuf, String)> = Vec::new();
    let mut metas = Vec::new();
    for dir in all_dirs(config) {
        match MetaProperties::read(&dir) {
            Ok(meta) => metas.push((dir, meta)),
            Err(e) => {
                tracing::error!(dir = %dir.display(), error = %format!("{e:#}"), "error while reading meta.properties");
                unreadable.push((dir, format!("{e:#}")));
            }
        }
    }
    // Kafka's `MetaPropertiesEnsemble.verify` (REQUIRE_AT_LEAST_ONE_VALID,
    // REQUIRE_METADATA_LOG_DIR): another dir that cannot be read is only offline.
    if metas.is_empty() {
        bail!(
            "No readable meta.properties files found in log directories {}",
            unreadable
                .iter()
                .map(|(d, e)| format!("{} ({e})", d.display()))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some((dir, e)) = unreadable
        .iter()
        .find(|(d, _)| *d == config.metadata_log_dir)
    {
        bail!(
            "Encountered I/O error in metadata log directory {} ({e}). Cannot continue.",
            dir.display()
        );
    }
    let mut formatted_dirs = Vec::with_capacity(metas.len());
    for (dir, meta) in metas {
        let meta = meta.ok_or_else(|| {
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
            _ => cluster = Some(meta.cluster_id.clone()),
        }
        formatted_dirs.push((dir, meta));
    }
    let cluster_id = cluster.ok_or_else(|| anyhow!("no log directory configured"))?;
    Ok(Formatted {
        cluster_id,
        dirs: formatted_dirs,
        unreadable,
    })
}

/// What [`check_formatted`] found.
#[derive(Debug, Default)]
pub struct Formatted {
    pub cluster_id: String,
    /// The directories read, each formatted for this node and cluster, with their
    /// `meta.properties` as read: the roles take their `directory.id`s from here rather
    /// than read the files again.
    pub dirs: Vec<(PathBuf, MetaProperties)>,
    /// Log dirs whose `meta.properties` could not be read, with the error (Kafka's
    /// `errorLogDirs`): the broker starts with them offline.
    pub unreadable: Vec<(PathBuf, String)>,
}

impl Formatted {
    /// The `directory.id` of `dir` as read at start; None for a dir not read (unreadable,
    /// or not one of this node's).
    pub fn directory_id(&self, dir: &Path) -> Result<Option<kraftd_protocol::Uuid>> {
        self.dirs
            .iter()
            .find(|(d, _)| d == dir)
            .map(|(_, meta)| parse_uuid(&meta.directory_id))
            .transpose()
    }
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

    /// A metadata directory `kafka-storage format` wrote holds its bootstrap records in the
    /// bootstrap snapshot only; one with neither file reads as Kafka's default.
    #[test]
    fn bootstrap_records_are_read_from_kafkas_bootstrap_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            read_bootstrap(dir.path()).unwrap(),
            vec![MetadataRecord::FeatureLevel(FeatureLevelRecord {
                name: METADATA_VERSION_FEATURE.to_string(),
                feature_level: 33,
                ..Default::default()
            })]
        );
        let levels = features::finalized_levels(
            &FeatureArgs {
                release_version: Some("4.2".to_string()),
                features: Vec::new(),
            },
            false,
        )
        .unwrap();
        let records = bootstrap_records(&levels);
        let mut writer = SnapshotWriter::new(0, 0, 0).unwrap();
        for record in &records {
            let version = levels.metadata_version.record_version(record);
            writer
                .append(encode_metadata_record(record, version).unwrap())
                .unwrap();
        }
        let path = dynamic::bootstrap_snapshot_path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, writer.finish().unwrap()).unwrap();
        assert_eq!(read_bootstrap(dir.path()).unwrap(), records);
        // kraftd's own file wins over the snapshot.
        let own = features::finalized_levels(
            &FeatureArgs {
                release_version: Some("4.0".to_string()),
                features: Vec::new(),
            },
            false,
        )
        .unwrap();
        write_bootstrap(dir.path(), &own, &[]).unwrap();
        assert_ne!(bootstrap_records(&own), records);
        assert_eq!(read_bootstrap(dir.path()).unwrap(), bootstrap_records(&own));
    }

    #[test]
    fn uuids_parse_back() {
        let bytes = [0xfb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xff];
        let text = kraftd_protocol::Uuid(bytes).to_base64();
        assert_eq!(parse_uuid(&text).unwrap().0, bytes);
        assert!(parse_uuid("not-a-uuid").is_err());
    }
}
