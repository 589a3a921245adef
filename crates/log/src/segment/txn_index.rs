//! A segment's aborted-transaction index, `<base offset>.txnindex` (Kafka's
//! `TransactionIndex`): one 34-byte entry per abort marker in the segment, in marker order —
//! version i16 (0), producer id i64, first offset i64, last offset i64, last stable offset
//! i64, all big-endian. The entries are small and rare, so they are kept in memory; the file
//! exists only once an entry was written, as Kafka creates it lazily.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{LogError, Result};
use crate::producer_state::AbortedTxn;

/// Suffix of aborted-transaction index files (Kafka's `LogFileUtils.TXN_INDEX_FILE_SUFFIX`).
pub const TXN_INDEX_FILE_SUFFIX: &str = "txnindex";

/// Kafka's `AbortedTxn.CURRENT_VERSION`.
const CURRENT_VERSION: i16 = 0;
/// Kafka's `AbortedTxn.TOTAL_SIZE`.
pub const ABORTED_TXN_ENTRY_BYTES: usize = 34;

/// What [`TxnIndex::collect`] found (Kafka's `TxnIndexSearchResult`).
#[derive(Debug, Default)]
pub(crate) struct TxnIndexSearch {
    pub aborted: Vec<AbortedTxn>,
    /// No later segment can hold an entry the reader needs.
    pub complete: bool,
}

/// One segment's aborted transactions.
#[derive(Debug)]
pub(crate) struct TxnIndex {
    path: PathBuf,
    entries: Vec<AbortedTxn>,
    /// Written since the last flush.
    dirty: bool,
}

/// Kafka's `AbortedTxn` buffer layout.
pub fn encode_aborted_txn(t: &AbortedTxn) -> [u8; ABORTED_TXN_ENTRY_BYTES] {
    let mut b = [0u8; ABORTED_TXN_ENTRY_BYTES];
    b[..2].copy_from_slice(&CURRENT_VERSION.to_be_bytes());
    b[2..10].copy_from_slice(&t.producer_id.to_be_bytes());
    b[10..18].copy_from_slice(&t.first_offset.to_be_bytes());
    b[18..26].copy_from_slice(&t.last_offset.to_be_bytes());
    b[26..34].copy_from_slice(&t.last_stable_offset.to_be_bytes());
    b
}

fn decode_aborted_txn(b: &[u8]) -> Option<AbortedTxn> {
    let i64_at = |at: usize| {
        b.get(at..at + 8)
            .and_then(|s| <[u8; 8]>::try_from(s).ok())
            .map(i64::from_be_bytes)
    };
    let version = i16::from_be_bytes(b.get(..2)?.try_into().ok()?);
    if version != CURRENT_VERSION {
        return None;
    }
    let t = AbortedTxn {
        producer_id: i64_at(2)?,
        first_offset: i64_at(10)?,
        last_offset: i64_at(18)?,
        last_stable_offset: i64_at(26)?,
    };
    (t.first_offset <= t.last_offset && t.first_offset >= 0).then_some(t)
}

impl TxnIndex {
    /// The index at `path`, loaded if the file exists. Entries are kept up to the first one
    /// that is unreadable (wrong version, torn) or out of order or at or past `next_offset`
    /// (the segment's end), and the file is cut there: the entries are rebuilt from the
    /// markers by the producer-state replay.
    pub fn open(path: PathBuf, next_offset: i64) -> Result<TxnIndex> {
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(LogError::io("read", &path)(e)),
        };
        let mut entries: Vec<AbortedTxn> = Vec::new();
        for chunk in bytes.chunks(ABORTED_TXN_ENTRY_BYTES) {
            let Some(t) = decode_aborted_txn(chunk) else {
                break;
            };
            if t.last_offset >= next_offset
                || entries
                    .last()
                    .is_some_and(|l| l.last_offset >= t.last_offset)
            {
                break;
            }
            entries.push(t);
        }
        let mut index = TxnIndex {
            path,
            entries,
            dirty: false,
        };
        if index.entries.len() * ABORTED_TXN_ENTRY_BYTES != bytes.len() {
            tracing::warn!(
                file = %index.path.display(),
                kept = index.entries.len(),
                bytes = bytes.len(),
                "cutting an unsound transaction index"
            );
            index.rewrite_len()?;
        }
        Ok(index)
    }

    /// A placeholder until the segment's end is known and [`TxnIndex::open`] loads it.
    pub fn unloaded(path: PathBuf) -> TxnIndex {
        TxnIndex {
            path,
            entries: Vec::new(),
            dirty: false,
        }
    }

    /// An empty index whose file (if any) is removed.
    pub fn create(path: PathBuf) -> Result<TxnIndex> {
        crate::fsutil::remove_if_exists(&path)?;
        Ok(TxnIndex {
            path,
            entries: Vec::new(),
            dirty: false,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// Appends an entry; one whose marker is not past the last entry's is already there (a
    /// replay of markers the index holds) and is skipped. Returns whether it was written.
    pub fn append(&mut self, t: AbortedTxn) -> Result<bool> {
        if self
            .entries
            .last()
            .is_some_and(|l| l.last_offset >= t.last_offset)
        {
            return Ok(false);
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(LogError::io("open", &self.path))?;
        file.write_all(&encode_aborted_txn(&t))
            .map_err(LogError::io("write", &self.path))?;
        self.entries.push(t);
        self.dirty = true;
        Ok(true)
    }

    /// Kafka's `truncateTo`: removes the entries whose marker is at or past `offset`.
    pub fn truncate_to(&mut self, offset: i64) -> Result<()> {
        let keep = self
            .entries
            .iter()
            .take_while(|t| t.last_offset < offset)
            .count();
        if keep == self.entries.len() {
            return Ok(());
        }
        self.entries.truncate(keep);
        self.rewrite_len()
    }

    fn rewrite_len(&mut self) -> Result<()> {
        if self.entries.is_empty() {
            crate::fsutil::remove_if_exists(&self.path)?;
            self.dirty = false;
            return Ok(());
        }
        let file = OpenOptions::new()
            .write(true)
            .open(&self.path)
            .map_err(LogError::io("open", &self.path))?;
        file.set_len((self.entries.len() * ABORTED_TXN_ENTRY_BYTES) as u64)
            .map_err(LogError::io("truncate", &self.path))?;
        self.dirty = true;
        Ok(())
    }

    /// Syncs the file if written since the last flush.
    pub fn flush(&mut self) -> Result<()> {
        if !self.dirty {
            return Ok(());
        }
        match std::fs::File::open(&self.path) {
            Ok(f) => f.sync_all().map_err(LogError::io("fsync", &self.path))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io("open", &self.path)(e)),
        }
        self.dirty = false;
        Ok(())
    }

    /// Kafka's `collectAbortedTxns`: the entries overlapping `[fetch_offset,
    /// upper_bound_offset)`; complete once an entry's last stable offset reaches the bound.
    pub fn collect(&self, fetch_offset: i64, upper_bound_offset: i64) -> TxnIndexSearch {
        let mut search = TxnIndexSearch::default();
        for t in &self.entries {
            if t.last_offset >= fetch_offset && t.first_offset < upper_bound_offset {
                search.aborted.push(*t);
            }
            if t.last_stable_offset >= upper_bound_offset {
                search.complete = true;
                return search;
            }
        }
        search
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn txn_index_round_trip_truncate_and_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        let mut index = TxnIndex::create(path.clone()).unwrap();
        assert!(!path.exists());
        let a = AbortedTxn {
            producer_id: 7,
            first_offset: 1,
            last_offset: 4,
            last_stable_offset: 1,
        };
        let b = AbortedTxn {
            producer_id: 8,
            first_offset: 2,
            last_offset: 9,
            last_stable_offset: 10,
        };
        assert!(index.append(a).unwrap());
        assert!(index.append(b).unwrap());
        assert!(!index.append(a).unwrap());
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 68);
        assert_eq!(&bytes[..34], &encode_aborted_txn(&a));
        let reopened = TxnIndex::open(path.clone(), 10).unwrap();
        assert_eq!(reopened.entries(), &[a, b]);
        // An entry past the segment's end (its marker cut by recovery) goes.
        let cut = TxnIndex::open(path.clone(), 9).unwrap();
        assert_eq!(cut.entries(), &[a]);
        assert_eq!(std::fs::read(&path).unwrap().len(), 34);
        // Torn tail.
        let mut bytes = encode_aborted_txn(&a).to_vec();
        bytes.extend_from_slice(&[0, 0, 1]);
        std::fs::write(&path, &bytes).unwrap();
        let mut torn = TxnIndex::open(path.clone(), 10).unwrap();
        assert_eq!(torn.entries(), &[a]);
        assert_eq!(std::fs::read(&path).unwrap().len(), 34);
        torn.truncate_to(4).unwrap();
        assert!(torn.entries().is_empty());
        assert!(!path.exists());
        // Garbage never panics.
        std::fs::write(&path, [0xffu8; 100]).unwrap();
        assert!(TxnIndex::open(path, 10).unwrap().entries().is_empty());
    }

    #[test]
    fn txn_index_collect_stops_at_last_stable_offset() {
        let dir = tempfile::tempdir().unwrap();
        let mut index = TxnIndex::create(dir.path().join("x.txnindex")).unwrap();
        for (pid, first, last, lso) in [(1, 0, 3, 0), (2, 5, 8, 9), (3, 10, 20, 21)] {
            index
                .append(AbortedTxn {
                    producer_id: pid,
                    first_offset: first,
                    last_offset: last,
                    last_stable_offset: lso,
                })
                .unwrap();
        }
        let s = index.collect(4, 9);
        assert_eq!(
            s.aborted.iter().map(|t| t.producer_id).collect::<Vec<_>>(),
            [2]
        );
        assert!(s.complete);
        let s = index.collect(0, 30);
        assert_eq!(s.aborted.len(), 3);
        assert!(!s.complete);
    }
}
