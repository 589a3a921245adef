// Share consumers (KIP-932) with Kafka's own `KafkaShareConsumer`, for `stock_share_groups.rs`.
//
//   java ShareConsumers <bootstrap> <topic> <group> <records> <members> [options]
//
// Sets the group's dynamic configs through the Admin client (`--group-config k=v`, repeatable:
// IncrementalAlterConfigs on the GROUP resource, as `kafka-configs --entity-type groups`
// does), produces <records> records with values (and keys) 0..records-1 (unless
// `--no-produce`), then runs
// <members> share consumers in the group, each on its own thread with explicit
// acknowledgement, until every record is settled (accepted, rejected, or archived after
// `--always-release` used up its deliveries) or `--timeout-s` passes. Each consumer decides by
// the record's value and delivery count:
//   --release-mod k   the first delivery of a value divisible by k is RELEASEd (redelivered);
//   --reject-mod k    the first delivery of a value divisible by k is REJECTed (archived);
//   --always-release k  every delivery of a value divisible by k is RELEASEd (the delivery
//                      count limit must archive it);
//   --stall           member 0 takes its first non-empty poll and never acknowledges it nor
//                     polls again (its records must come back after the lock duration); the
//                     other members join only once it holds them;
//   otherwise ACCEPT.
// `--linger-s n` keeps the members polling n seconds after every record is settled (what
// arrives then must not: a value delivered past the delivery count limit shows), and
// `--max-poll-records n` bounds each poll, so that several members share a partition.
// `--pace-ms n` sleeps after each poll (a slow consumer, so that faults land mid-run).
// Dead-letter queues (KIP-1191): `--create-topic name:partitions[:k=v,...]` creates a topic
// with configs first (a DLQ topic with `errors.deadletterqueue.group.enable`); a group config
// the broker refuses prints `CONFIG-ERROR <exception> <message>` and ends the run (exit 3);
// `--read-dlq <topic> <n>` reads <topic> from the beginning once every record is settled
// (waiting for it to exist: the broker may create it on its first DLQ write),
// until it holds <n> records (or `--timeout-s`), then `--dlq-linger-s` more seconds (records
// beyond the expected show), printing each as `DLQ <partition> <key> <value> <headers>`,
// the headers as `name=value` joined by `|` (`null` for a null key or value).
// Every decision is one stdout line once commitSync answered: `<type> <member> <partition>
// <offset> <value> <deliveryCount>`, the type suffixed `-failed` where the broker did not
// confirm it; `STALL` lines for what member 0 holds; `POLL-ERROR`/`COMMIT-ERROR` lines for
// exceptions (the member goes on); `DONE <settled>` or `TIMEOUT <settled>` last. The driver counts a value settled at its ACCEPT or REJECT, or when it has
// been released `--settle-after` times (the delivery count limit).
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ShareConsumers {
    static String bootstrap, topic, group;
    static int records, members;
    static int releaseMod = 0, rejectMod = 0, alwaysRelease = 0, settleAfter = 0;
    static boolean stall = false, produce = true;
    static int timeoutS = 120, lingerS = 0, maxPollRecords = 0, paceMs = 0;
    static final Map<String, String> groupConfigs = new LinkedHashMap<>();
    static final List<String> createTopics = new ArrayList<>();
    static String dlqTopic = null;
    static int dlqRecords = 0, dlqLingerS = 3;
    static final Set<Integer> settled = ConcurrentHashMap.newKeySet();
    static final Map<Integer, AtomicInteger> releases = new ConcurrentHashMap<>();
    static final AtomicBoolean stop = new AtomicBoolean();
    /// With --stall, the other members join only once member 0 holds its records.
    static final CountDownLatch holding = new CountDownLatch(1);

    static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        topic = args[1];
        group = args[2];
        records = Integer.parseInt(args[3]);
        members = Integer.parseInt(args[4]);
        for (int i = 5; i < args.length; i++) {
            switch (args[i]) {
                case "--release-mod" -> releaseMod = Integer.parseInt(args[++i]);
                case "--reject-mod" -> rejectMod = Integer.parseInt(args[++i]);
                case "--always-release" -> alwaysRelease = Integer.parseInt(args[++i]);
                case "--settle-after" -> settleAfter = Integer.parseInt(args[++i]);
                case "--stall" -> stall = true;
                case "--no-produce" -> produce = false;
                case "--timeout-s" -> timeoutS = Integer.parseInt(args[++i]);
                case "--linger-s" -> lingerS = Integer.parseInt(args[++i]);
                case "--pace-ms" -> paceMs = Integer.parseInt(args[++i]);
                case "--max-poll-records" -> maxPollRecords = Integer.parseInt(args[++i]);
                case "--create-topic" -> createTopics.add(args[++i]);
                case "--read-dlq" -> {
                    dlqTopic = args[++i];
                    dlqRecords = Integer.parseInt(args[++i]);
                }
                case "--dlq-linger-s" -> dlqLingerS = Integer.parseInt(args[++i]);
                case "--group-config" -> {
                    String[] kv = args[++i].split("=", 2);
                    groupConfigs.put(kv[0], kv[1]);
                }
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (!createTopics.isEmpty()) {
            createTopics();
        }
        if (!groupConfigs.isEmpty()) {
            try {
                alterGroupConfigs();
            } catch (ExecutionException e) {
                out("CONFIG-ERROR " + e.getCause().getClass().getSimpleName() + " "
                    + e.getCause().getMessage());
                System.exit(3);
            }
        }
        if (produce) {
            produce();
        }
        ExecutorService pool = Executors.newFixedThreadPool(members);
        List<Future<?>> running = new ArrayList<>();
        for (int m = 0; m < members; m++) {
            final int member = m;
            running.add(pool.submit(() -> {
                try {
                    consume(member);
                } catch (Throwable t) {
                    out("ERROR " + member + " " + t);
                    t.printStackTrace();
                }
            }));
        }
        long deadline = System.currentTimeMillis() + timeoutS * 1000L;
        while (settled.size() < records && System.currentTimeMillis() < deadline) {
            Thread.sleep(50);
        }
        boolean done = settled.size() >= records;
        if (done && lingerS > 0) {
            out("LINGER " + lingerS);
            Thread.sleep(lingerS * 1000L);
        }
        stop.set(true);
        for (Future<?> f : running) {
            try {
                f.get(30, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                // The stalled member sleeps; it is abandoned with the JVM.
            }
        }
        out((done ? "DONE " : "TIMEOUT ") + settled.size());
        if (done && dlqTopic != null) {
            readDlq(deadline);
        }
        System.exit(done ? 0 : 1);
    }

    static void createTopics() throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            List<NewTopic> topics = new ArrayList<>();
            for (String spec : createTopics) {
                String[] parts = spec.split(":", 3);
                NewTopic t = new NewTopic(parts[0], Integer.parseInt(parts[1]), (short) 1);
                if (parts.length > 2) {
                    Map<String, String> configs = new HashMap<>();
                    for (String kv : parts[2].split(",")) {
                        String[] e = kv.split("=", 2);
                        configs.put(e[0], e[1]);
                    }
                    t.configs(configs);
                }
                topics.add(t);
            }
            admin.createTopics(topics).all().get();
        }
        out("CREATED " + createTopics);
    }

    static void readDlq(long deadline) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        // A DLQ topic the broker creates on the first DLQ write must not be created here
        // first (without errors.deadletterqueue.group.enable): wait for it instead.
        p.put("allow.auto.create.topics", "false");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<org.apache.kafka.common.PartitionInfo> infos = consumer.partitionsFor(dlqTopic);
            while ((infos == null || infos.isEmpty()) && System.currentTimeMillis() < deadline + 60_000L) {
                Thread.sleep(200);
                infos = consumer.partitionsFor(dlqTopic);
            }
            List<org.apache.kafka.common.TopicPartition> partitions = new ArrayList<>();
            (infos == null ? List.<org.apache.kafka.common.PartitionInfo>of() : infos).forEach(info ->
                partitions.add(new org.apache.kafka.common.TopicPartition(dlqTopic, info.partition())));
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            int read = 0;
            long lingerUntil = Long.MAX_VALUE;
            while (System.currentTimeMillis() < Math.min(lingerUntil, deadline + 60_000L)) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    StringBuilder headers = new StringBuilder();
                    for (org.apache.kafka.common.header.Header h : r.headers()) {
                        if (headers.length() > 0) {
                            headers.append('|');
                        }
                        headers.append(h.key()).append('=').append(text(h.value()));
                    }
                    out("DLQ " + r.partition() + " " + text(r.key()) + " " + text(r.value()) + " "
                        + headers);
                    read++;
                }
                if (read >= dlqRecords && lingerUntil == Long.MAX_VALUE) {
                    lingerUntil = System.currentTimeMillis() + dlqLingerS * 1000L;
                }
            }
            out("DLQ-READ " + read);
        }
    }

    static String text(byte[] bytes) {
        return bytes == null ? "null" : new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    }

    static void alterGroupConfigs() throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            List<AlterConfigOp> ops = new ArrayList<>();
            groupConfigs.forEach((k, v) ->
                ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
            admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
        }
        out("CONFIGURED " + groupConfigs);
    }

    static void produce() throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int v = 0; v < records; v++) {
                String s = Integer.toString(v);
                sent.add(producer.send(new ProducerRecord<>(topic, s, s)));
            }
            for (Future<RecordMetadata> f : sent) {
                f.get();
            }
        }
        out("PRODUCED " + records);
    }

    static void consume(int member) throws Exception {
        if (stall && member != 0) {
            holding.await();
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("client.id", "share-" + member);
        p.put("share.acknowledgement.mode", "explicit");
        if (maxPollRecords > 0) {
            p.put("max.poll.records", Integer.toString(maxPollRecords));
        }
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p);
        consumer.subscribe(List.of(topic));
        try {
            while (!stop.get()) {
                ConsumerRecords<String, String> polled;
                try {
                    polled = consumer.poll(Duration.ofMillis(200));
                } catch (KafkaException e) {
                    out("POLL-ERROR " + member + " " + e);
                    continue;
                }
                if (polled.isEmpty()) {
                    continue;
                }
                if (stall && member == 0) {
                    for (ConsumerRecord<String, String> r : polled) {
                        out("STALL " + member + " " + r.partition() + " " + r.offset() + " "
                            + r.value() + " " + r.deliveryCount().orElse((short) -1));
                    }
                    holding.countDown();
                    // Holds the records without acknowledging until the run ends; the
                    // heartbeat thread keeps the member in the group.
                    while (!stop.get()) {
                        Thread.sleep(100);
                    }
                    return;
                }
                for (ConsumerRecord<String, String> r : polled) {
                    int value = Integer.parseInt(r.value());
                    consumer.acknowledge(r, decide(value, r.deliveryCount().orElse((short) -1)));
                }
                Map<TopicIdPartition, Optional<KafkaException>> results;
                try {
                    results = consumer.commitSync();
                } catch (KafkaException e) {
                    out("COMMIT-ERROR " + member + " " + e);
                    continue;
                }
                // A decision counts once the broker confirmed it: `<type>` lines, or
                // `<type>-failed` for a partition whose acknowledgement was not confirmed.
                for (ConsumerRecord<String, String> r : polled) {
                    int value = Integer.parseInt(r.value());
                    short count = r.deliveryCount().orElse((short) -1);
                    AcknowledgeType type = decide(value, count);
                    Optional<KafkaException> error = results.entrySet().stream()
                        .filter(e -> e.getKey().topic().equals(r.topic())
                            && e.getKey().partition() == r.partition())
                        .map(Map.Entry::getValue)
                        .findFirst()
                        .orElse(Optional.empty());
                    out(type + (error.isPresent() ? "-failed" : "") + " " + member + " "
                        + r.partition() + " " + r.offset() + " " + value + " " + count);
                    if (error.isPresent()) {
                        continue;
                    }
                    if (type != AcknowledgeType.RELEASE) {
                        settled.add(value);
                    } else if (settleAfter > 0
                        && releases.computeIfAbsent(value, k -> new AtomicInteger()).incrementAndGet() >= settleAfter) {
                        settled.add(value);
                    }
                }
                if (paceMs > 0) {
                    Thread.sleep(paceMs);
                }
            }
        } finally {
            if (!(stall && member == 0)) {
                consumer.close(Duration.ofSeconds(10));
            }
        }
    }

    static AcknowledgeType decide(int value, short deliveryCount) {
        if (alwaysRelease > 0 && value % alwaysRelease == 0) {
            return AcknowledgeType.RELEASE;
        }
        if (deliveryCount <= 1) {
            if (releaseMod > 0 && value % releaseMod == 0) {
                return AcknowledgeType.RELEASE;
            }
            if (rejectMod > 0 && value % rejectMod == 0) {
                return AcknowledgeType.REJECT;
            }
        }
        return AcknowledgeType.ACCEPT;
    }
}
