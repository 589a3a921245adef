//! KIP-227 fetch sessions through the public `FetchManager` API, against Kafka's semantics.

mod fetch_session {
    use bytes::Bytes;
    use kraftd_broker::replica::fetch_session::{
        FetchContext, FetchManager, TopicRef, INVALID_SESSION_ID,
    };
    use kraftd_broker::replica::TopicIdPartition;
    use kraftd_protocol::messages::fetch_request::{
        FetchPartition, FetchRequest, FetchTopic, ForgottenTopic,
    };
    use kraftd_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kraftd_protocol::{ErrorCode, Uuid};

    const FOO: Uuid = Uuid([1; 16]);
    const BAR: Uuid = Uuid([2; 16]);
    const GONE: Uuid = Uuid([9; 16]);

    fn resolve(r: TopicRef) -> Option<(Uuid, String)> {
        match r {
            TopicRef::Id(id) if id == FOO => Some((FOO, "foo".into())),
            TopicRef::Id(id) if id == BAR => Some((BAR, "bar".into())),
            TopicRef::Name("foo") => Some((FOO, "foo".into())),
            TopicRef::Name("bar") => Some((BAR, "bar".into())),
            _ => None,
        }
    }

    fn id_of(name: &str) -> Uuid {
        match name {
            "foo" => FOO,
            "bar" => BAR,
            _ => GONE,
        }
    }

    /// `parts` is `(topic, partition, fetch_offset)`; v13+ requests carry ids, older names.
    fn request(
        version: i16,
        session_id: i32,
        epoch: i32,
        parts: &[(&str, i32, i64)],
        forget: &[(&str, i32)],
    ) -> FetchRequest {
        let mut topics: Vec<FetchTopic> = Vec::new();
        for &(topic, partition, offset) in parts {
            let p = FetchPartition {
                partition,
                fetch_offset: offset,
                partition_max_bytes: 1024,
                ..FetchPartition::default()
            };
            let (name, id) = if version >= 13 {
                (String::new(), id_of(topic))
            } else {
                (topic.to_owned(), Uuid::ZERO)
            };
            match topics.last_mut() {
                Some(t) if t.topic == name && t.topic_id == id => t.partitions.push(p),
                _ => topics.push(FetchTopic {
                    topic: name,
                    topic_id: id,
                    partitions: vec![p],
                    ..FetchTopic::default()
                }),
            }
        }
        let forgotten_topics_data = forget
            .iter()
            .map(|&(topic, partition)| ForgottenTopic {
                topic: if version >= 13 {
                    String::new()
                } else {
                    topic.to_owned()
                },
                topic_id: if version >= 13 {
                    id_of(topic)
                } else {
                    Uuid::ZERO
                },
                partitions: vec![partition],
                ..ForgottenTopic::default()
            })
            .collect();
        FetchRequest {
            session_id,
            session_epoch: epoch,
            topics,
            forgotten_topics_data,
            ..FetchRequest::default()
        }
    }

    fn data(hw: i64, lso: i64, records: Option<&'static [u8]>) -> PartitionData {
        PartitionData {
            high_watermark: hw,
            log_start_offset: lso,
            records: records.map(Bytes::from_static),
            ..PartitionData::default()
        }
    }

    /// Answers every partition the context reads with `f(partition)`.
    fn read_all(
        ctx: &FetchContext,
        f: impl Fn(&TopicIdPartition) -> PartitionData,
    ) -> Vec<(TopicIdPartition, PartitionData)> {
        ctx.partitions()
            .into_iter()
            .map(|(tip, _)| {
                let d = f(&tip);
                (tip, d)
            })
            .collect()
    }

    /// `(topic, partition)` pairs in response order.
    fn names(topics: &[FetchableTopicResponse]) -> Vec<(String, i32)> {
        topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(move |p| (t.topic.clone(), p.partition_index))
            })
            .collect()
    }

    fn read_names(ctx: &FetchContext) -> Vec<(String, i32, i64)> {
        ctx.partitions()
            .into_iter()
            .map(|(t, p)| (t.topic, t.partition, p.fetch_offset))
            .collect()
    }

    fn s(x: &str, p: i32) -> (String, i32) {
        (x.to_owned(), p)
    }

    /// Creates a v13 session on foo-0, foo-1 (hw 10, log start 0) at time `now`.
    fn open(mgr: &FetchManager, follower: bool, now: i64) -> i32 {
        let ctx = mgr.new_context(
            13,
            &request(13, 0, 0, &[("foo", 0, 5), ("foo", 1, 7)], &[]),
            follower,
            &resolve,
            now,
        );
        let (id, _) =
            ctx.update_and_generate_response(13, read_all(&ctx, |_| data(10, 0, None)), now);
        id
    }

    #[test]
    fn full_request_creates_session() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let ctx = mgr.new_context(
            13,
            &request(13, 0, 0, &[("foo", 0, 5), ("bar", 0, 3)], &[]),
            false,
            &resolve,
            0,
        );
        assert_eq!(ctx.error(), None);
        assert!(!ctx.is_incremental());
        assert_eq!(
            read_names(&ctx),
            vec![("foo".into(), 0, 5), ("bar".into(), 0, 3)]
        );
        assert_eq!(ctx.partitions()[0].0.topic_id, FOO);
        let (id, topics) =
            ctx.update_and_generate_response(13, read_all(&ctx, |_| data(10, 0, None)), 0);
        assert_ne!(id, INVALID_SESSION_ID);
        assert!(id > 0);
        assert!(mgr.contains(id));
        assert_eq!(names(&topics), vec![s("foo", 0), s("bar", 0)]);
        assert_eq!(topics[0].topic_id, FOO);
        assert_eq!(topics[1].topic_id, BAR);
        let stats = mgr.stats();
        assert_eq!((stats.sessions, stats.partitions), (1, 2));
    }

    #[test]
    fn full_request_with_epoch_zero_replaces_named_session() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let first = open(&mgr, false, 0);
        let ctx = mgr.new_context(
            13,
            &request(13, first, 0, &[("bar", 0, 1)], &[]),
            false,
            &resolve,
            1,
        );
        assert!(!mgr.contains(first));
        let (second, topics) =
            ctx.update_and_generate_response(13, read_all(&ctx, |_| data(1, 0, None)), 1);
        assert_ne!(second, first);
        assert!(mgr.contains(second));
        assert_eq!(names(&topics), vec![s("bar", 0)]);
        assert_eq!(mgr.stats().sessions, 1);
    }

    #[test]
    fn incremental_request_adds_updates_and_forgets_partitions() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let id = open(&mgr, false, 0);
        let ctx = mgr.new_context(
            13,
            &request(13, id, 1, &[("foo", 1, 70), ("bar", 0, 3)], &[("foo", 0)]),
            false,
            &resolve,
            1,
        );
        assert_eq!(ctx.error(), None);
        assert!(ctx.is_incremental());
        assert_eq!(
            read_names(&ctx),
            vec![("foo".into(), 1, 70), ("bar".into(), 0, 3)]
        );
        // Parameters the request omitted come from the session.
        let ctx2 = mgr.new_context(13, &request(13, id, 2, &[], &[]), false, &resolve, 2);
        assert_eq!(
            read_names(&ctx2),
            vec![("foo".into(), 1, 70), ("bar".into(), 0, 3)]
        );
        assert_eq!(ctx2.partitions()[0].1.max_bytes, 1024);
        assert_eq!(mgr.stats().partitions, 2);
    }

    #[test]
    fn incremental_response_carries_only_changed_partitions() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let id = open(&mgr, false, 0);

        // Nothing changed for foo-0; foo-1's high watermark moved.
        let ctx = mgr.new_context(13, &request(13, id, 1, &[], &[]), false, &resolve, 1);
        let results = read_all(&ctx, |t| {
            data(if t.partition == 1 { 11 } else { 10 }, 0, None)
        });
        assert!(!ctx.would_include(&results[0].0, &results[0].1));
        assert!(ctx.would_include(&results[1].0, &results[1].1));
        let (rid, topics) = ctx.update_and_generate_response(13, results, 1);
        assert_eq!(rid, id);
        assert_eq!(names(&topics), vec![s("foo", 1)]);
        assert_eq!(topics[0].partitions[0].high_watermark, 11);

        // Same values again: nothing to say.
        let ctx = mgr.new_context(13, &request(13, id, 2, &[], &[]), false, &resolve, 2);
        let results = read_all(&ctx, |t| {
            data(if t.partition == 1 { 11 } else { 10 }, 0, None)
        });
        let (_, topics) = ctx.update_and_generate_response(13, results, 2);
        assert!(topics.is_empty());

        // Records, a log start offset change, and an error each force a partition in; the
        // partition that returned records moves to the back of the session's order.
        let ctx = mgr.new_context(13, &request(13, id, 3, &[], &[]), false, &resolve, 3);
        let results = read_all(&ctx, |t| {
            if t.partition == 0 {
                data(10, 0, Some(b"batch"))
            } else {
                data(11, 4, None)
            }
        });
        let (_, topics) = ctx.update_and_generate_response(13, results, 3);
        assert_eq!(names(&topics), vec![s("foo", 0), s("foo", 1)]);
        let ctx = mgr.new_context(13, &request(13, id, 4, &[], &[]), false, &resolve, 4);
        assert_eq!(
            read_names(&ctx)
                .into_iter()
                .map(|(_, p, _)| p)
                .collect::<Vec<_>>(),
            vec![1, 0]
        );
        let results = read_all(&ctx, |t| {
            let mut d = data(if t.partition == 1 { 11 } else { 10 }, 0, None);
            if t.partition == 1 {
                d.log_start_offset = 4;
                d.error_code = ErrorCode::NotLeaderOrFollower.code();
            }
            d
        });
        let (_, topics) = ctx.update_and_generate_response(13, results, 4);
        assert_eq!(names(&topics), vec![s("foo", 1)]);
        assert_eq!(
            topics[0].partitions[0].error_code,
            ErrorCode::NotLeaderOrFollower.code()
        );

        // The error cleared with the same high watermark: still sent, since the error
        // wiped what the fetcher was last told.
        let ctx = mgr.new_context(13, &request(13, id, 5, &[], &[]), false, &resolve, 5);
        let results = read_all(&ctx, |t| {
            data(
                if t.partition == 1 { 11 } else { 10 },
                if t.partition == 1 { 4 } else { 0 },
                None,
            )
        });
        let (_, topics) = ctx.update_and_generate_response(13, results, 5);
        assert_eq!(names(&topics), vec![s("foo", 1)]);
        assert_eq!(topics[0].partitions[0].error_code, 0);
    }

    #[test]
    fn full_response_carries_every_partition() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let id = open(&mgr, false, 0);
        // A new full request with unchanged data still gets everything back.
        let ctx = mgr.new_context(
            13,
            &request(13, id, 0, &[("foo", 0, 5), ("foo", 1, 7)], &[]),
            false,
            &resolve,
            1,
        );
        let (_, topics) =
            ctx.update_and_generate_response(13, read_all(&ctx, |_| data(10, 0, None)), 1);
        assert_eq!(topics.len(), 1);
        assert_eq!(names(&topics), vec![s("foo", 0), s("foo", 1)]);
    }

    #[test]
    fn wrong_epoch_is_invalid_fetch_session_epoch() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let id = open(&mgr, false, 0);
        for epoch in [2, 7, i32::MAX] {
            let ctx = mgr.new_context(13, &request(13, id, epoch, &[], &[]), false, &resolve, 1);
            assert_eq!(ctx.error(), Some(ErrorCode::InvalidFetchSessionEpoch));
            assert!(ctx.partitions().is_empty());
            let (rid, topics) = ctx.update_and_generate_response(13, Vec::new(), 1);
            assert_eq!(rid, INVALID_SESSION_ID);
            assert!(topics.is_empty());
        }
        // The session survives a bad epoch: the right one still works.
        let ctx = mgr.new_context(13, &request(13, id, 1, &[], &[]), false, &resolve, 2);
        assert_eq!(ctx.error(), None);
        // Replaying the same epoch (a duplicate request) is refused.
        let dup = mgr.new_context(13, &request(13, id, 1, &[], &[]), false, &resolve, 2);
        assert_eq!(dup.error(), Some(ErrorCode::InvalidFetchSessionEpoch));
    }

    #[test]
    fn concurrent_request_invalidates_older_context_at_response_time() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let id = open(&mgr, false, 0);
        let older = mgr.new_context(13, &request(13, id, 1, &[], &[]), false, &resolve, 1);
        let newer = mgr.new_context(13, &request(13, id, 2, &[], &[]), false, &resolve, 1);
        assert_eq!(older.error(), None);
        assert_eq!(newer.error(), None);
        let (rid, topics) =
            older.update_and_generate_response(13, read_all(&older, |_| data(99, 0, None)), 2);
        assert_eq!(rid, id);
        assert!(topics.is_empty());
        assert_eq!(older.error(), Some(ErrorCode::InvalidFetchSessionEpoch));
        let (rid, topics) =
            newer.update_and_generate_response(13, read_all(&newer, |_| data(99, 0, None)), 2);
        assert_eq!(rid, id);
        assert_eq!(names(&topics), vec![s("foo", 0), s("foo", 1)]);
        assert_eq!(newer.error(), None);
    }

    #[test]
    fn unknown_session_id_is_fetch_session_id_not_found() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let id = open(&mgr, false, 0);
        let other = if id == i32::MAX - 1 { 1 } else { id + 1 };
        for sid in [other, INVALID_SESSION_ID] {
            let ctx = mgr.new_context(13, &request(13, sid, 1, &[], &[]), false, &resolve, 1);
            assert_eq!(ctx.error(), Some(ErrorCode::FetchSessionIdNotFound));
            assert!(ctx.partitions().is_empty());
        }
        assert!(mgr.contains(id));
    }

    #[test]
    fn final_epoch_closes_session_and_fetches_sessionless() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let id = open(&mgr, false, 0);
        let ctx = mgr.new_context(
            13,
            &request(13, id, -1, &[("foo", 0, 5)], &[]),
            false,
            &resolve,
            1,
        );
        assert_eq!(ctx.error(), None);
        assert!(!mgr.contains(id));
        let (rid, topics) =
            ctx.update_and_generate_response(13, read_all(&ctx, |_| data(10, 0, None)), 1);
        assert_eq!(rid, INVALID_SESSION_ID);
        assert_eq!(names(&topics), vec![s("foo", 0)]);
        assert_eq!(mgr.stats().sessions, 0);
        let ctx = mgr.new_context(13, &request(13, id, 1, &[], &[]), false, &resolve, 2);
        assert_eq!(ctx.error(), Some(ErrorCode::FetchSessionIdNotFound));
    }

    #[test]
    fn sessionless_request_creates_no_session() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let ctx = mgr.new_context(
            12,
            &request(12, 0, -1, &[("foo", 0, 5)], &[]),
            false,
            &resolve,
            0,
        );
        let (rid, topics) =
            ctx.update_and_generate_response(12, read_all(&ctx, |_| data(10, 0, None)), 0);
        assert_eq!(rid, INVALID_SESSION_ID);
        assert_eq!(names(&topics), vec![s("foo", 0)]);
        assert_eq!(mgr.stats().sessions, 0);
    }

    #[test]
    fn forgetting_every_partition_closes_the_session() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let id = open(&mgr, false, 0);
        let ctx = mgr.new_context(
            13,
            &request(13, id, 1, &[], &[("foo", 0), ("foo", 1)]),
            false,
            &resolve,
            1,
        );
        assert_eq!(ctx.error(), None);
        assert!(ctx.partitions().is_empty());
        let (rid, topics) = ctx.update_and_generate_response(13, Vec::new(), 1);
        assert_eq!(rid, INVALID_SESSION_ID);
        assert!(topics.is_empty());
        assert!(!mgr.contains(id));
    }

    #[test]
    fn full_cache_evicts_consumer_for_follower_not_for_young_consumer() {
        let mgr = FetchManager::new(2).with_full_scan_ms(0);
        let c1 = open(&mgr, false, 0);
        let c2 = open(&mgr, false, 0);
        // A consumer cannot displace sessions younger than the eviction interval.
        assert_eq!(open(&mgr, false, 1), INVALID_SESSION_ID);
        assert!(mgr.contains(c1) && mgr.contains(c2));
        // A follower displaces a consumer session at any age.
        let f1 = open(&mgr, true, 1);
        assert_ne!(f1, INVALID_SESSION_ID);
        assert_eq!(mgr.stats().sessions, 2);
        assert_eq!(mgr.stats().evictions, 1);
        assert!(mgr.contains(c1) != mgr.contains(c2));
        let survivor = if mgr.contains(c1) { c1 } else { c2 };
        // A second follower displaces the other consumer, never the young follower.
        let f2 = open(&mgr, true, 2);
        assert_ne!(f2, INVALID_SESSION_ID);
        assert!(!mgr.contains(survivor));
        assert!(mgr.contains(f1) && mgr.contains(f2));
        // With only young followers left, neither kind gets a slot.
        assert_eq!(open(&mgr, true, 3), INVALID_SESSION_ID);
        assert_eq!(open(&mgr, false, 3), INVALID_SESSION_ID);
    }

    #[test]
    fn mature_small_session_yields_to_larger_one() {
        let mgr = FetchManager::new(1).with_full_scan_ms(0);
        let small = {
            let ctx = mgr.new_context(
                13,
                &request(13, 0, 0, &[("foo", 0, 0)], &[]),
                false,
                &resolve,
                0,
            );
            ctx.update_and_generate_response(13, read_all(&ctx, |_| data(1, 0, None)), 0)
                .0
        };
        // Kept in use, so never stale, but older than the eviction interval by t=130s.
        for (epoch, now) in [(1, 100_000), (2, 130_000)] {
            let ctx = mgr.new_context(
                13,
                &request(13, small, epoch, &[], &[]),
                false,
                &resolve,
                now,
            );
            assert_eq!(ctx.error(), None);
        }
        // A newcomer of the same size does not outrank it (ties break on id, and a newcomer
        // counts as id 0); one with more partitions does.
        let same = mgr.new_context(
            13,
            &request(13, 0, 0, &[("bar", 0, 0)], &[]),
            false,
            &resolve,
            130_001,
        );
        let (sid, _) =
            same.update_and_generate_response(13, read_all(&same, |_| data(1, 0, None)), 130_001);
        assert_eq!(sid, INVALID_SESSION_ID);
        assert!(mgr.contains(small));
        let big = open(&mgr, false, 130_002);
        assert_ne!(big, INVALID_SESSION_ID);
        assert!(!mgr.contains(small));
        assert!(mgr.contains(big));
    }

    #[test]
    fn idle_sessions_expire() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let old = open(&mgr, false, 0);
        let young = open(&mgr, false, 100_000);
        // Any request past the interval reclaims the idle session.
        let ctx = mgr.new_context(
            13,
            &request(13, 0, -1, &[("foo", 0, 0)], &[]),
            false,
            &resolve,
            120_001,
        );
        assert_eq!(ctx.error(), None);
        assert!(!mgr.contains(old));
        assert!(mgr.contains(young));
        let ctx = mgr.new_context(13, &request(13, old, 1, &[], &[]), false, &resolve, 120_002);
        assert_eq!(ctx.error(), Some(ErrorCode::FetchSessionIdNotFound));
    }

    #[test]
    fn v12_session_uses_names() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let ctx = mgr.new_context(
            12,
            &request(12, 0, 0, &[("foo", 0, 5), ("nope", 0, 1)], &[]),
            false,
            &resolve,
            0,
        );
        assert_eq!(
            ctx.partitions(),
            vec![(
                TopicIdPartition {
                    topic_id: Uuid::ZERO,
                    topic: "foo".into(),
                    partition: 0
                },
                ctx.partitions()[0].1.clone()
            )]
        );
        let nope = TopicIdPartition {
            topic_id: Uuid::ZERO,
            topic: "nope".into(),
            partition: 0,
        };
        assert_eq!(
            ctx.unresolved(),
            vec![(nope.clone(), ErrorCode::UnknownTopicOrPartition)]
        );
        let (id, topics) =
            ctx.update_and_generate_response(12, read_all(&ctx, |_| data(10, 0, None)), 0);
        assert_ne!(id, INVALID_SESSION_ID);
        assert_eq!(names(&topics), vec![s("foo", 0), s("nope", 0)]);
        assert_eq!(
            topics[1].partitions[0].error_code,
            ErrorCode::UnknownTopicOrPartition.code()
        );
        assert_eq!(topics[0].topic_id, Uuid::ZERO);

        // Incremental by name: update foo-0, add bar-0, forget nope-0.
        let ctx = mgr.new_context(
            12,
            &request(12, id, 1, &[("foo", 0, 6), ("bar", 0, 2)], &[("nope", 0)]),
            false,
            &resolve,
            1,
        );
        assert_eq!(ctx.error(), None);
        assert_eq!(
            read_names(&ctx),
            vec![("foo".into(), 0, 6), ("bar".into(), 0, 2)]
        );
        assert!(ctx.unresolved().is_empty());
        assert!(ctx
            .partitions()
            .iter()
            .all(|(t, _)| t.topic_id == Uuid::ZERO));

        // A v13 request cannot continue a session keyed by names.
        let ctx = mgr.new_context(13, &request(13, id, 2, &[], &[]), false, &resolve, 2);
        assert_eq!(ctx.error(), Some(ErrorCode::FetchSessionTopicIdError));
    }

    #[test]
    fn v13_session_uses_ids_and_answers_unknown_ids() {
        let mgr = FetchManager::new(10).with_full_scan_ms(0);
        let mut req = request(13, 0, 0, &[("foo", 0, 5)], &[]);
        req.topics.push(FetchTopic {
            topic_id: GONE,
            partitions: vec![FetchPartition {
                partition: 3,
                ..FetchPartition::default()
            }],
            ..FetchTopic::default()
        });
        let ctx = mgr.new_context(13, &req, false, &resolve, 0);
        let gone = TopicIdPartition {
            topic_id: GONE,
            topic: String::new(),
            partition: 3,
        };
        assert_eq!(ctx.unresolved(), vec![(gone, ErrorCode::UnknownTopicId)]);
        assert_eq!(read_names(&ctx), vec![("foo".into(), 0, 5)]);
        let (id, topics) =
            ctx.update_and_generate_response(13, read_all(&ctx, |_| data(10, 0, None)), 0);
        assert_eq!(topics.len(), 2);
        assert_eq!(topics[1].topic_id, GONE);
        assert_eq!(
            topics[1].partitions[0].error_code,
            ErrorCode::UnknownTopicId.code()
        );
        // The unknown id stays in the session and keeps being answered with its error.
        let ctx = mgr.new_context(13, &request(13, id, 1, &[], &[]), false, &resolve, 1);
        assert_eq!(ctx.unresolved().len(), 1);
        let (_, topics) =
            ctx.update_and_generate_response(13, read_all(&ctx, |_| data(10, 0, None)), 1);
        assert_eq!(topics.len(), 1);
        assert_eq!(topics[0].topic_id, GONE);

        // Once the id resolves (resolver now knows it), it is read like any other.
        let late = |r: TopicRef| match r {
            TopicRef::Id(id) if id == GONE => Some((GONE, "late".to_owned())),
            other => resolve(other),
        };
        let ctx = mgr.new_context(13, &request(13, id, 2, &[], &[]), false, &late, 2);
        assert!(ctx.unresolved().is_empty());
        assert_eq!(
            read_names(&ctx),
            vec![("foo".into(), 0, 5), ("late".into(), 3, 0)]
        );

        // Forgetting by id removes it; a v12 request cannot continue this session.
        let ctx = mgr.new_context(13, &request(13, id, 3, &[], &[]), false, &late, 3);
        assert_eq!(ctx.error(), None);
        let mut forget = request(13, id, 4, &[], &[]);
        forget.forgotten_topics_data.push(ForgottenTopic {
            topic_id: GONE,
            partitions: vec![3],
            ..ForgottenTopic::default()
        });
        let ctx = mgr.new_context(13, &forget, false, &late, 4);
        assert_eq!(read_names(&ctx), vec![("foo".into(), 0, 5)]);
        let ctx = mgr.new_context(12, &request(12, id, 5, &[], &[]), false, &resolve, 5);
        assert_eq!(ctx.error(), Some(ErrorCode::FetchSessionTopicIdError));
    }

    /// Unlike Kafka, an incremental request reads only the partitions it names, those
    /// marked changed in the session's watch (by the partitions' change signals), and all of
    /// them once per full-scan interval.
    #[test]
    fn incremental_request_reads_only_named_and_changed_partitions() {
        use kraftd_broker::replica::fetch_session::{ChangeNotify, FULL_SCAN_INTERVAL_MS};
        use std::sync::Arc;
        let mgr = FetchManager::new(10);
        let full = mgr.new_context(
            13,
            &request(
                13,
                0,
                0,
                &[("foo", 0, 5), ("foo", 1, 7), ("bar", 0, 1)],
                &[],
            ),
            true,
            &resolve,
            0,
        );
        let watch = full.watch().expect("a full request's session has a watch");
        // The partitions register as they are read; one of them changes afterwards.
        let foo1 = Arc::new(ChangeNotify::new(TopicIdPartition {
            topic_id: FOO,
            topic: "foo".into(),
            partition: 1,
        }));
        foo1.watch(&watch);
        foo1.watch(&watch);
        assert_eq!(foo1.watchers(), 1, "registering twice is once");
        let (id, _) =
            full.update_and_generate_response(13, read_all(&full, |_| data(10, 0, None)), 0);

        // Nothing changed, nothing named: nothing read.
        let ctx = mgr.new_context(13, &request(13, id, 1, &[], &[]), true, &resolve, 1);
        assert!(read_names(&ctx).is_empty());
        ctx.update_and_generate_response(13, Vec::new(), 1);

        // foo-1 changed, bar-0 named with a new offset: those two, in session order.
        foo1.notify_waiters();
        let ctx = mgr.new_context(
            13,
            &request(13, id, 2, &[("bar", 0, 2)], &[]),
            true,
            &resolve,
            2,
        );
        assert_eq!(
            read_names(&ctx),
            vec![("foo".into(), 1, 7), ("bar".into(), 0, 2)]
        );
        let (_, topics) =
            ctx.update_and_generate_response(13, read_all(&ctx, |_| data(11, 0, None)), 2);
        assert_eq!(names(&topics), vec![s("foo", 1), s("bar", 0)]);

        // A change while the request waits joins it.
        let ctx = mgr.new_context(13, &request(13, id, 3, &[], &[]), true, &resolve, 3);
        assert!(ctx.take_news(&resolve).is_empty());
        foo1.notify_waiters();
        let news = ctx.take_news(&resolve);
        assert_eq!(news.len(), 1);
        assert_eq!((news[0].0.partition, news[0].1.fetch_offset), (1, 7));
        ctx.update_and_generate_response(13, Vec::new(), 3);

        // The safety net: every partition once per interval.
        let later = FULL_SCAN_INTERVAL_MS + 10;
        {
            let ctx = mgr.new_context(13, &request(13, id, 4, &[], &[]), true, &resolve, later);
            assert_eq!(read_names(&ctx).len(), 3);
            let ctx = mgr.new_context(13, &request(13, id, 5, &[], &[]), true, &resolve, later + 1);
            assert!(read_names(&ctx).is_empty());
        }

        // A dropped session no longer hears its partitions.
        let gone = kraftd_broker::replica::fetch_session::SessionWatch::new();
        foo1.watch(&gone);
        assert_eq!(foo1.watchers(), 2);
        drop(gone);
        foo1.notify_waiters();
        assert_eq!(foo1.watchers(), 1);
    }
}
