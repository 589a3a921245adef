//! Future logs on disk: names, the swap's two renames, a swap a crash interrupted, strays,
//! preferred dirs and disk space.

use super::*;
use crate::LogConfig;
use bytes::Bytes;
use kraftd_protocol::records::RecordBatchBuilder;

const ID: Uuid = Uuid([3; 16]);

fn two_dirs() -> (tempfile::TempDir, tempfile::TempDir, LogManager) {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let lm = LogManager::open(vec![a.path().to_path_buf(), b.path().to_path_buf()]).unwrap();
    (a, b, lm)
}

fn batch(offset: i64) -> Bytes {
    let mut builder = RecordBatchBuilder::new(offset);
    builder
        .append(0, None, Some(Bytes::from_static(b"v")), Vec::new())
        .unwrap();
    builder.build().unwrap()
}

#[test]
fn future_dir_names_parse_as_kafkas() {
    assert_eq!(
        parse_future_dir_name("my-topic-3.0123456789abcdef0123456789abcdef-future"),
        Some(("my-topic".to_string(), 3))
    );
    assert_eq!(parse_future_dir_name("my-topic-3"), None);
    assert_eq!(parse_future_dir_name("my-topic-3.abc-delete"), None);
    assert_eq!(parse_future_dir_name("my-topic-x.abc-future"), None);
    assert_eq!(parse_future_dir_name("t-1.xyz-future"), None);
}

#[test]
fn a_future_log_is_swapped_in_and_the_old_one_renamed_for_deletion() {
    let (a, b, lm) = two_dirs();
    let mut current = lm
        .get_or_create("t", ID, 0, LogConfig::default(), 0)
        .unwrap();
    current.append_as_follower(batch(0), 0).unwrap();
    let current_dir = current.dir().to_path_buf();
    let other = if current_dir.parent() == Some(a.path()) {
        b.path()
    } else {
        a.path()
    };
    let mut future = lm
        .create_future("t", ID, 0, other, LogConfig::default(), 0)
        .unwrap();
    assert_eq!(lm.find_future("t", ID, 0).as_deref(), Some(future.dir()));
    assert_eq!(lm.find_future("t", Uuid([4; 16]), 0), None);
    future.append_as_follower(batch(0), 0).unwrap();
    let future_dir = future.dir().to_path_buf();
    future.close().unwrap();
    let (target, doomed) = lm.swap_in_future(&current_dir, &future_dir).unwrap();
    assert_eq!(target, other.join("t-0"));
    assert!(!current_dir.exists() && doomed.exists() && !future_dir.exists());
    let reopened = Log::open(&target, LogConfig::default(), 0).unwrap();
    assert_eq!(reopened.log_end_offset(), 1);
    lm.remove_doomed(&doomed).unwrap();
    assert!(!doomed.exists());
    assert!(lm.future_dirs().is_empty());
}

#[test]
fn a_future_log_without_its_current_one_becomes_current() {
    let (_a, b, lm) = two_dirs();
    let mut future = lm
        .create_future("t", ID, 0, b.path(), LogConfig::default(), 0)
        .unwrap();
    future.append_as_follower(batch(0), 0).unwrap();
    future.close().unwrap();
    // The crash came after the current directory was renamed away.
    let log = lm
        .get_or_create("t", ID, 0, LogConfig::default(), 0)
        .unwrap();
    assert_eq!(log.dir(), b.path().join("t-0"));
    assert_eq!(log.log_end_offset(), 1);
    assert!(lm.future_dirs().is_empty());
}

#[test]
fn a_preferred_dir_places_a_new_replica_once() {
    let (a, b, lm) = two_dirs();
    // Without a preference the least loaded dir (the first, both empty) is used.
    lm.set_preferred_dir("t", 1, b.path().to_path_buf());
    let log = lm
        .get_or_create("t", ID, 1, LogConfig::default(), 0)
        .unwrap();
    assert_eq!(log.dir(), b.path().join("t-1"));
    assert_eq!(lm.take_preferred_dir("t", 1), None);
    let dir = absolute_path(a.path());
    assert_eq!(lm.log_dir_by_path(&dir), Some(a.path()));
    assert_eq!(lm.log_dir_by_path("/nowhere"), None);
    assert!(lm.is_log_dir_online(a.path()));
    let (total, usable) = disk_space(a.path()).unwrap();
    assert!(total > 0 && usable >= 0 && usable <= total);
}
