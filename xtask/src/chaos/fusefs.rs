//! A failing disk without device-mapper: a small FUSE passthrough file system the harness
//! serves itself (with `fuser`), forwarding every operation on its mount point to a backing
//! directory and, while told to fail ([`Passthrough::failing`]), answering every operation
//! that would change the disk — write, fsync, create, mkdir, truncate, rename, unlink —
//! with EIO, as a disk whose writes fail does. Reads go on working.
//!
//! Why FUSE: this kernel has no device-mapper targets (no `dm-error`, no `dm-flakey`), so a
//! block device cannot be made to fail; FUSE is in the kernel and, as root, needs neither
//! libfuse nor `fusermount`: `fuser` mounts with the mount(2) syscall itself
//! (`fd=...` of `/dev/fuse`) when it runs as root. Every log dir access of the broker then
//! passes through this process; the tmpfs under it still makes a disk-full fault real (the
//! backing write's ENOSPC is answered as it is).
//!
//! Inode numbers are the file system's own, handed out at lookup and kept by path (renames
//! move every path under the renamed one); entries and attributes are cached by the kernel
//! for [`TTL`], which is safe since nothing but this file system changes the backing dir
//! while it is mounted.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{File, Metadata, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use fuser::{
    FileAttr, FileType, Filesystem, KernelConfig, MountOption, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow,
};
use rustix::fs::OFlags;
use rustix::io::Errno;

/// The errors this file system answers itself (the rest are the backing dir's own).
const EIO: i32 = Errno::IO.raw_os_error();
const ENOENT: i32 = Errno::NOENT.raw_os_error();
const EBADF: i32 = Errno::BADF.raw_os_error();
const EINVAL: i32 = Errno::INVAL.raw_os_error();

/// How long the kernel may cache an entry or attributes.
const TTL: Duration = Duration::from_secs(1);
const ROOT: u64 = 1;

/// A mounted passthrough; unmounted when dropped.
pub(super) struct Mounted {
    failing: Arc<AtomicBool>,
    /// Joins the serving thread and unmounts on drop.
    _session: fuser::BackgroundSession,
}

impl Mounted {
    /// Makes every changing operation fail with EIO (`true`) or pass again.
    pub(super) fn set_failing(&self, failing: bool) {
        self.failing.store(failing, Ordering::SeqCst);
    }
}

/// Mounts a passthrough of `backing` at `mountpoint`, served by a thread of this process.
pub(super) fn mount(backing: &Path, mountpoint: &Path) -> Result<Mounted> {
    let failing = Arc::new(AtomicBool::new(false));
    let fs = Passthrough {
        backing: backing.to_path_buf(),
        failing: failing.clone(),
        paths: HashMap::from([(ROOT, PathBuf::new())]),
        inodes: HashMap::from([(PathBuf::new(), ROOT)]),
        next_ino: ROOT + 1,
        files: HashMap::new(),
        next_fh: 1,
    };
    let options = [
        MountOption::FSName("kraftd-chaos".to_string()),
        MountOption::DefaultPermissions,
    ];
    let session = fuser::spawn_mount2(fs, mountpoint, &options).with_context(|| {
        format!(
            "mounting a FUSE passthrough of {} at {} (needs root and /dev/fuse)",
            backing.display(),
            mountpoint.display()
        )
    })?;
    Ok(Mounted {
        failing,
        _session: session,
    })
}

struct Passthrough {
    backing: PathBuf,
    failing: Arc<AtomicBool>,
    /// Each inode's path, relative to the backing dir.
    paths: HashMap<u64, PathBuf>,
    inodes: HashMap<PathBuf, u64>,
    next_ino: u64,
    /// Open files and directories by handle (a directory's handle has no file).
    files: HashMap<u64, Option<File>>,
    next_fh: u64,
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(EIO)
}

fn time(secs: i64, nanos: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nanos as u32)
    } else {
        UNIX_EPOCH
    }
}

fn attr(ino: u64, m: &Metadata) -> FileAttr {
    let kind = if m.is_dir() {
        FileType::Directory
    } else if m.file_type().is_symlink() {
        FileType::Symlink
    } else {
        FileType::RegularFile
    };
    FileAttr {
        ino,
        size: m.size(),
        blocks: m.blocks(),
        atime: time(m.atime(), m.atime_nsec()),
        mtime: time(m.mtime(), m.mtime_nsec()),
        ctime: time(m.ctime(), m.ctime_nsec()),
        crtime: time(m.ctime(), m.ctime_nsec()),
        kind,
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: m.blksize() as u32,
        flags: 0,
    }
}

impl Passthrough {
    fn fails(&self) -> bool {
        self.failing.load(Ordering::SeqCst)
    }

    fn rel(&self, ino: u64) -> Option<PathBuf> {
        self.paths.get(&ino).cloned()
    }

    fn real(&self, rel: &Path) -> PathBuf {
        self.backing.join(rel)
    }

    /// The inode of `rel`, handed out now if it has none.
    fn ino_of(&mut self, rel: &Path) -> u64 {
        if let Some(&ino) = self.inodes.get(rel) {
            return ino;
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(rel.to_path_buf(), ino);
        self.paths.insert(ino, rel.to_path_buf());
        ino
    }

    /// Forgets the path `rel` and every path under it (removed, or renamed over).
    fn drop_path(&mut self, rel: &Path) {
        let gone: Vec<PathBuf> = self
            .inodes
            .keys()
            .filter(|p| p.starts_with(rel))
            .cloned()
            .collect();
        for p in gone {
            if let Some(ino) = self.inodes.remove(&p) {
                self.paths.remove(&ino);
            }
        }
    }

    fn child(&self, parent: u64, name: &OsStr) -> Option<PathBuf> {
        Some(self.paths.get(&parent)?.join(name))
    }

    fn entry(&mut self, rel: &Path, reply: ReplyEntry) {
        match std::fs::symlink_metadata(self.real(rel)) {
            Ok(m) => {
                let ino = self.ino_of(rel);
                reply.entry(&TTL, &attr(ino, &m), 0);
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn handle(&mut self, file: Option<File>) -> u64 {
        let fh = self.next_fh;
        self.next_fh += 1;
        self.files.insert(fh, file);
        fh
    }

    fn file(&self, fh: u64) -> Option<&File> {
        self.files.get(&fh)?.as_ref()
    }
}

impl Filesystem for Passthrough {
    fn init(&mut self, _req: &Request<'_>, _config: &mut KernelConfig) -> Result<(), i32> {
        Ok(())
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        match self.child(parent, name) {
            Some(rel) => self.entry(&rel, reply),
            None => reply.error(ENOENT),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, fh: Option<u64>, reply: ReplyAttr) {
        let m = match (fh.and_then(|fh| self.file(fh)), self.rel(ino)) {
            (Some(file), _) => file.metadata(),
            (None, Some(rel)) => std::fs::symlink_metadata(self.real(&rel)),
            (None, None) => return reply.error(ENOENT),
        };
        match m {
            Ok(m) => reply.attr(&TTL, &attr(ino, &m)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let Some(rel) = self.rel(ino) else {
            return reply.error(ENOENT);
        };
        let real = self.real(&rel);
        if let Some(size) = size {
            if self.fails() {
                return reply.error(EIO);
            }
            let done = match fh.and_then(|fh| self.file(fh)) {
                Some(file) => file.set_len(size),
                None => OpenOptions::new()
                    .write(true)
                    .open(&real)
                    .and_then(|f| f.set_len(size)),
            };
            if let Err(e) = done {
                return reply.error(errno(&e));
            }
        }
        if let Some(mode) = mode {
            let perms = std::fs::Permissions::from_mode(mode & 0o7777);
            if let Err(e) = std::fs::set_permissions(&real, perms) {
                return reply.error(errno(&e));
            }
        }
        match std::fs::symlink_metadata(&real) {
            Ok(m) => reply.attr(&TTL, &attr(ino, &m)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn mkdir(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(ENOENT);
        };
        if self.fails() {
            return reply.error(EIO);
        }
        let made = std::fs::DirBuilder::new()
            .mode(mode & 0o7777)
            .create(self.real(&rel));
        match made {
            Ok(()) => self.entry(&rel, reply),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(ENOENT);
        };
        if self.fails() {
            return reply.error(EIO);
        }
        match std::fs::remove_file(self.real(&rel)) {
            Ok(()) => {
                self.drop_path(&rel);
                reply.ok()
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(ENOENT);
        };
        if self.fails() {
            return reply.error(EIO);
        }
        match std::fs::remove_dir(self.real(&rel)) {
            Ok(()) => {
                self.drop_path(&rel);
                reply.ok()
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        flags: u32,
        reply: ReplyEmpty,
    ) {
        let (Some(from), Some(to)) = (self.child(parent, name), self.child(newparent, newname))
        else {
            return reply.error(ENOENT);
        };
        if flags != 0 {
            // RENAME_NOREPLACE / RENAME_EXCHANGE: std has no way to ask; nothing here uses them.
            return reply.error(EINVAL);
        }
        if self.fails() {
            return reply.error(EIO);
        }
        if let Err(e) = std::fs::rename(self.real(&from), self.real(&to)) {
            return reply.error(errno(&e));
        }
        // What was at `to` is gone; everything at or under `from` is now under `to`.
        self.drop_path(&to);
        let moved: Vec<(PathBuf, u64)> = self
            .inodes
            .iter()
            .filter(|(p, _)| p.starts_with(&from))
            .map(|(p, &ino)| (p.clone(), ino))
            .collect();
        for (old, ino) in moved {
            // Not `to.join("")` for `from` itself: that adds a trailing slash, which a file's
            // path must not have (ENOTDIR).
            let new = match old.strip_prefix(&from) {
                Ok(rest) if !rest.as_os_str().is_empty() => to.join(rest),
                _ => to.clone(),
            };
            self.inodes.remove(&old);
            self.inodes.insert(new.clone(), ino);
            self.paths.insert(ino, new);
        }
        reply.ok()
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        let Some(rel) = self.rel(ino) else {
            return reply.error(ENOENT);
        };
        let access = OFlags::from_bits_retain(flags as u32) & OFlags::ACCMODE;
        let opened = OpenOptions::new()
            .read(access != OFlags::WRONLY)
            .write(access != OFlags::RDONLY)
            .open(self.real(&rel));
        match opened {
            Ok(file) => {
                let fh = self.handle(Some(file));
                reply.opened(fh, 0)
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(ENOENT);
        };
        if self.fails() {
            return reply.error(EIO);
        }
        let flags = OFlags::from_bits_retain(flags as u32);
        let mut options = OpenOptions::new();
        options
            .read(flags & OFlags::ACCMODE != OFlags::WRONLY)
            .write(true)
            .mode(mode & 0o7777);
        if flags.contains(OFlags::EXCL) {
            options.create_new(true);
        } else {
            options.create(true);
        }
        if flags.contains(OFlags::TRUNC) {
            options.truncate(true);
        }
        match options.open(self.real(&rel)) {
            Ok(file) => match file.metadata() {
                Ok(m) => {
                    let ino = self.ino_of(&rel);
                    let fh = self.handle(Some(file));
                    reply.created(&TTL, &attr(ino, &m), 0, fh, 0)
                }
                Err(e) => reply.error(errno(&e)),
            },
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let Some(file) = self.file(fh) else {
            return reply.error(EBADF);
        };
        let mut buf = vec![0u8; size as usize];
        let mut read = 0;
        while read < buf.len() {
            match file.read_at(&mut buf[read..], offset as u64 + read as u64) {
                Ok(0) => break,
                Ok(n) => read += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return reply.error(errno(&e)),
            }
        }
        reply.data(&buf[..read])
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        if self.fails() {
            return reply.error(EIO);
        }
        let Some(file) = self.file(fh) else {
            return reply.error(EBADF);
        };
        // All of it or the error (ENOSPC on a full disk): a short count would make the
        // kernel's writer retry the rest and see the error then, the same in the end.
        match file.write_at(data, offset as u64) {
            Ok(n) => reply.written(n as u32),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _owner: u64, reply: ReplyEmpty) {
        reply.ok()
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.files.remove(&fh);
        reply.ok()
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, fh: u64, datasync: bool, reply: ReplyEmpty) {
        if self.fails() {
            return reply.error(EIO);
        }
        let Some(file) = self.file(fh) else {
            return reply.error(EBADF);
        };
        let synced = if datasync {
            file.sync_data()
        } else {
            file.sync_all()
        };
        match synced {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn opendir(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if !self.paths.contains_key(&ino) {
            return reply.error(ENOENT);
        }
        let fh = self.handle(None);
        reply.opened(fh, 0)
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let Some(rel) = self.rel(ino) else {
            return reply.error(ENOENT);
        };
        let entries = match std::fs::read_dir(self.real(&rel)) {
            Ok(entries) => entries,
            Err(e) => return reply.error(errno(&e)),
        };
        let mut all = vec![
            (ino, FileType::Directory, OsStr::new(".").to_os_string()),
            (ino, FileType::Directory, OsStr::new("..").to_os_string()),
        ];
        for entry in entries.flatten() {
            let name = entry.file_name();
            let kind = match entry.file_type() {
                Ok(t) if t.is_dir() => FileType::Directory,
                Ok(t) if t.is_symlink() => FileType::Symlink,
                _ => FileType::RegularFile,
            };
            let child = self.ino_of(&rel.join(&name));
            all.push((child, kind, name));
        }
        for (i, (ino, kind, name)) in all.into_iter().enumerate().skip(offset as usize) {
            if reply.add(ino, (i + 1) as i64, kind, &name) {
                break;
            }
        }
        reply.ok()
    }

    fn releasedir(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        reply: ReplyEmpty,
    ) {
        self.files.remove(&fh);
        reply.ok()
    }

    fn fsyncdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        if self.fails() {
            return reply.error(EIO);
        }
        let Some(rel) = self.rel(ino) else {
            return reply.error(ENOENT);
        };
        match File::open(self.real(&rel)).and_then(|d| d.sync_all()) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        match rustix::fs::statvfs(&self.backing) {
            Ok(s) => reply.statfs(
                s.f_blocks,
                s.f_bfree,
                s.f_bavail,
                s.f_files,
                s.f_ffree,
                s.f_bsize as u32,
                s.f_namemax as u32,
                s.f_frsize as u32,
            ),
            Err(e) => reply.error(e.raw_os_error()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As root only (FUSE mounts; the chaos harness needs root anyway): what a broker does
    /// in a log dir passes through, and while failing every change is EIO but reads pass.
    #[test]
    fn a_passthrough_passes_a_log_dirs_operations_and_fails_writes_with_eio_when_told() {
        if !super::super::is_root() {
            eprintln!("skipped: FUSE mounts need root");
            return;
        }
        let root = std::env::temp_dir().join(format!("fusefs-test-{}", std::process::id()));
        let (backing, seen) = (root.join("backing"), root.join("seen"));
        std::fs::create_dir_all(&backing).unwrap();
        std::fs::create_dir_all(&seen).unwrap();
        let mounted = mount(&backing, &seen).unwrap();
        std::fs::write(seen.join("meta.properties"), "node.id=4\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(seen.join("meta.properties")).unwrap(),
            "node.id=4\n"
        );
        // Written over (O_TRUNC: the kernel truncates with a setattr first).
        std::fs::write(seen.join("meta.properties"), "x\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(seen.join("meta.properties")).unwrap(),
            "x\n"
        );
        std::fs::create_dir_all(seen.join("chaos-0")).unwrap();
        let segment = seen.join("chaos-0").join("0.log");
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&segment)
            .unwrap();
        std::io::Write::write_all(&mut file, b"batch1").unwrap();
        file.sync_data().unwrap();
        std::fs::write(seen.join("chaos-0").join("cp.tmp"), "0").unwrap();
        std::fs::rename(seen.join("chaos-0").join("cp.tmp"), seen.join("cp")).unwrap();
        std::fs::rename(seen.join("chaos-0"), seen.join("chaos-0.deleted")).unwrap();
        let moved = seen.join("chaos-0.deleted").join("0.log");
        assert_eq!(std::fs::read(&moved).unwrap(), b"batch1");
        assert_eq!(std::fs::read(backing.join("cp")).unwrap(), b"0");
        // A renamed file is read through the passthrough too (its path moved with it).
        assert_eq!(std::fs::read(seen.join("cp")).unwrap(), b"0");
        let mut names: Vec<String> = std::fs::read_dir(&seen)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["chaos-0.deleted", "cp", "meta.properties"]);

        mounted.set_failing(true);
        let eio = |r: std::io::Result<()>| assert_eq!(r.unwrap_err().raw_os_error(), Some(EIO));
        eio(std::io::Write::write_all(&mut file, b"batch2").and_then(|()| file.sync_data()));
        eio(std::fs::write(seen.join("new"), "x"));
        eio(std::fs::rename(&moved, seen.join("x")));
        assert_eq!(std::fs::read(&moved).unwrap(), b"batch1");
        mounted.set_failing(false);
        std::io::Write::write_all(&mut file, b"batch3").unwrap();
        drop(file);
        assert_eq!(std::fs::read(&moved).unwrap(), b"batch1batch3");

        let _ = std::process::Command::new("umount")
            .args(["-l"])
            .arg(&seen)
            .status();
        drop(mounted);
        let _ = std::fs::remove_dir_all(&root);
    }
}
