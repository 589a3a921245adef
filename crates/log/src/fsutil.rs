//! The few file-system primitives the log's durability rests on: directory fsync (so a
//! created, renamed or deleted file name survives a crash) and atomic file replacement
//! (temp file, fsync, rename, directory fsync), used for every small metadata file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::{LogError, Result};

/// Forces `dir`'s entries (creations, renames, deletions) to disk.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(LogError::io("fsync directory", dir))
}

/// Replaces `path` with `contents` so that a crash leaves either the old or the new file,
/// never a mix: write `<path>.tmp`, fsync it, rename it over `path`, fsync the directory.
pub(crate) fn atomic_write(path: &Path, contents: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = Path::new(&tmp);
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(tmp)
        .map_err(LogError::io("create", tmp))?;
    if let Err(e) = f.write_all(contents).and_then(|()| f.sync_all()) {
        // A torn temporary file is of no use, and on a full disk it holds space.
        drop(f);
        let _ = std::fs::remove_file(tmp);
        return Err(LogError::io("write", tmp)(e));
    }
    drop(f);
    std::fs::rename(tmp, path).map_err(LogError::io("rename", tmp))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Removes `path`, treating "already gone" as success.
pub(crate) fn remove_if_exists(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(LogError::io("delete", path)(e)),
    }
}
