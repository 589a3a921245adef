//! The clean-shutdown marker of a log directory (KIP-966): written last on an orderly
//! shutdown, holding the broker epoch it was written under; read and removed on startup.
//! Its absence at startup means the previous run ended uncleanly, which KIP-966's ELR
//! logic must know (an unclean replica may have lost unflushed data and must not count as
//! having it). Kafka's name and JSON format are kept: `.kafka_cleanshutdown` holding
//! `{"version":0,"brokerEpoch":N}`.

use std::path::Path;

use crate::error::{LogError, Result};
use crate::fsutil;

/// The marker's file name, as Kafka names it.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";

/// Writes the marker for `broker_epoch` into `dir`, atomically and durably. Call it after
/// every log in `dir` has been flushed and closed.
pub fn write_clean_shutdown_marker(dir: &Path, broker_epoch: i64) -> Result<()> {
    let text = format!("{{\"version\":0,\"brokerEpoch\":{broker_epoch}}}");
    fsutil::atomic_write(&dir.join(CLEAN_SHUTDOWN_FILE), text.as_bytes())
}

/// Reads and removes the marker in `dir`: `Some(broker epoch)` after a clean shutdown,
/// `None` after an unclean one (no marker). A marker that cannot be parsed counts as an
/// unclean shutdown (and is removed), since trusting it could hide data loss.
pub fn take_clean_shutdown_marker(dir: &Path) -> Result<Option<i64>> {
    let path = dir.join(CLEAN_SHUTDOWN_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LogError::io("read", &path)(e)),
    };
    let epoch = parse_broker_epoch(&text);
    if epoch.is_none() {
        tracing::warn!(path = %path.display(), "unparsable clean-shutdown marker; treating the shutdown as unclean");
    }
    fsutil::remove_if_exists(&path)?;
    fsutil::sync_dir(dir)?;
    Ok(epoch)
}

fn parse_broker_epoch(text: &str) -> Option<i64> {
    let rest = text.split_once("\"brokerEpoch\"")?.1.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let end = rest
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
        .map_or(rest.len(), |(i, _)| i);
    rest.get(..end)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_round_trip_and_removal() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(take_clean_shutdown_marker(dir.path()).unwrap(), None);
        write_clean_shutdown_marker(dir.path(), 42).unwrap();
        let text = std::fs::read_to_string(dir.path().join(CLEAN_SHUTDOWN_FILE)).unwrap();
        assert_eq!(text, "{\"version\":0,\"brokerEpoch\":42}");
        assert_eq!(take_clean_shutdown_marker(dir.path()).unwrap(), Some(42));
        assert_eq!(take_clean_shutdown_marker(dir.path()).unwrap(), None);
        std::fs::write(dir.path().join(CLEAN_SHUTDOWN_FILE), "garbage").unwrap();
        assert_eq!(take_clean_shutdown_marker(dir.path()).unwrap(), None);
        assert!(!dir.path().join(CLEAN_SHUTDOWN_FILE).exists());
        assert_eq!(
            parse_broker_epoch("{\"version\": 0, \"brokerEpoch\": -1}"),
            Some(-1)
        );
    }
}
