// The load of `cargo xtask bench share` (share.rs), run as a single-file program against
// either system with Kafka 4.4.0's own clients:
//
//   ShareBench throughput <bootstrap> <topic> <group> <consumers> <records> <size> [<process-us>]
//       <consumers> KafkaShareConsumers (implicit acknowledgement, one thread each) join and
//       are every one assigned, then <records> records of <size> bytes are produced as fast
//       as one producer goes while they read; prints `RESULT seconds=<from the first record
//       delivered to the last> records=<n> duplicates=<records delivered more than once>`
//       (the group's forming is left out). With <process-us> N (or SHARE_BENCH_PROCESS_US=N in
//       the environment) each consumer spends N µs on every record (a work queue's processing), so one
//       consumer cannot keep up and the rows show what more consumers on a partition buy.
//   ShareBench latency <bootstrap> <topic> <group> <consumers> <rate> <seconds>
//       <consumers> share consumers join (every one assigned), then a producer sends <rate>
//       records/s for <seconds>, each carrying its send time; prints `RESULT p50_ms=..
//       p99_ms=.. p999_ms=.. max_ms=.. max_sent_s=.. count=..` (same JVM, so one monotonic
//       clock).
//   ShareBench redelivery <bootstrap> <topic> <group> <classpath> <self>
//       produces 100 records; a second JVM (`victim` mode) acquires them and holds them; a
//       survivor consumer joins; the victim is killed with SIGKILL; prints `RESULT
//       seconds=<from the kill until the survivor has every held record again>`.
//
// Every mode first sets the group's `share.auto.offset.reset=earliest` through the Admin
// client.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class ShareBench {
    public static void main(String[] args) throws Exception {
        String mode = args[0], bootstrap = args[1], topic = args[2], group = args[3];
        if (!mode.equals("victim")) {
            earliest(bootstrap, group);
        }
        try {
            run(mode, bootstrap, topic, group, args);
        } catch (Throwable e) {
            // The consumer threads would keep the JVM alive.
            e.printStackTrace();
            System.exit(1);
        }
        System.exit(0);
    }

    static void run(String mode, String bootstrap, String topic, String group, String[] args)
            throws Exception {
        switch (mode) {
            case "throughput" -> {
                if (args.length > 7) processNanos = 1000L * Long.parseLong(args[7]);
                throughput(bootstrap, topic, group, Integer.parseInt(args[4]),
                    Integer.parseInt(args[5]), Integer.parseInt(args[6]));
            }
            case "latency" -> latency(bootstrap, topic, group, Integer.parseInt(args[4]),
                Integer.parseInt(args[5]), Integer.parseInt(args[6]));
            case "redelivery" -> redelivery(bootstrap, topic, group, args[4], args[5]);
            case "victim" -> victim(bootstrap, topic, group);
            default -> throw new IllegalArgumentException(mode);
        }
    }

    static void earliest(String bootstrap, String group) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp op = new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(op))).all().get();
        }
    }

    /// Waits until the group has `members` members, each with partitions assigned (a member
    /// learns of a partition once its share state is initialized, on a heartbeat up to
    /// `share.heartbeat.interval.ms` later), then half a second for their first fetches.
    static void awaitAssigned(String bootstrap, String group, int members) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
            while (true) {
                ShareGroupDescription d = null;
                try {
                    d = admin.describeShareGroups(List.of(group)).describedGroups().get(group).get();
                } catch (ExecutionException e) {
                    // No member has joined yet.
                    if (!(e.getCause() instanceof org.apache.kafka.common.errors.GroupIdNotFoundException)) {
                        throw e;
                    }
                }
                if (d != null && d.members().size() >= members && d.members().stream()
                        .allMatch(m -> !m.assignment().topicPartitions().isEmpty())) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the group never settled: " + d);
                }
                Thread.sleep(100);
            }
        }
        Thread.sleep(500);
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, int lingerMs) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("linger.ms", Integer.toString(lingerMs));
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    static KafkaShareConsumer<byte[], byte[]> consumer(String bootstrap, String group, String mode) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", mode);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        return new KafkaShareConsumer<>(p);
    }

    static void produce(String bootstrap, String topic, int records, int size) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = producer(bootstrap, 5)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < records; i++) {
                byte[] value = new byte[Math.max(size, 8)];
                java.nio.ByteBuffer.wrap(value).putLong(i);
                byte[] key = Integer.toString(i).getBytes();
                sent.add(producer.send(new ProducerRecord<>(topic, key, value)));
                if (sent.size() >= 10_000) {
                    for (Future<RecordMetadata> f : sent) f.get();
                    sent.clear();
                }
            }
            for (Future<RecordMetadata> f : sent) f.get();
        }
    }

    // Time each throughput consumer spends per record, from `SHARE_BENCH_PROCESS_US`
    // (0 by default: records are only counted).
    static long processNanos = 1000L * Long.parseLong(
        System.getenv().getOrDefault("SHARE_BENCH_PROCESS_US", "0"));

    static void throughput(String bootstrap, String topic, String group, int consumers,
                           int records, int size) throws Exception {
        Set<Long> seen = ConcurrentHashMap.newKeySet();
        AtomicLong deliveries = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong first = new AtomicLong();
        AtomicLong last = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < consumers; c++) {
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<byte[], byte[]> consumer = consumer(bootstrap, group, "implicit")) {
                    consumer.subscribe(List.of(topic));
                    while (!stop.get()) {
                        ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
                        for (ConsumerRecord<byte[], byte[]> r : polled) {
                            deliveries.incrementAndGet();
                            seen.add(java.nio.ByteBuffer.wrap(r.value()).getLong());
                            // A work queue's consumer spends time on each record: with it,
                            // one consumer cannot keep up and the rows show what sharing a
                            // partition among more consumers buys.
                            if (processNanos > 0) java.util.concurrent.locks.LockSupport.parkNanos(processNanos);
                        }
                        if (!polled.isEmpty()) {
                            long now = System.nanoTime();
                            first.compareAndSet(0, now);
                            last.set(now);
                        }
                    }
                    consumer.commitSync();
                }
            });
            t.start();
            threads.add(t);
        }
        // Every member holds its partitions before the records arrive: the row measures the
        // group consuming together, not members joining one after the other.
        awaitAssigned(bootstrap, group, consumers);
        produce(bootstrap, topic, records, size);
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
        while (seen.size() < records && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        long end = last.get();
        stop.set(true);
        for (Thread t : threads) t.join(30_000);
        System.out.printf("RESULT seconds=%.3f records=%d duplicates=%d%n",
            (end - first.get()) / 1e9, seen.size(), deliveries.get() - seen.size());
    }

    static void latency(String bootstrap, String topic, String group, int consumers, int rate,
                        int seconds) throws Exception {
        // (latency, send time) per record, ns.
        ConcurrentLinkedQueue<long[]> latencies = new ConcurrentLinkedQueue<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger polling = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int c = 0; c < consumers; c++) {
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<byte[], byte[]> consumer = consumer(bootstrap, group, "implicit")) {
                    consumer.subscribe(List.of(topic));
                    boolean counted = false;
                    while (!stop.get()) {
                        ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
                        if (!counted) {
                            polling.incrementAndGet();
                            counted = true;
                        }
                        long now = System.nanoTime();
                        for (ConsumerRecord<byte[], byte[]> r : polled) {
                            long sent = java.nio.ByteBuffer.wrap(r.value()).getLong();
                            latencies.add(new long[] {now - sent, sent});
                        }
                    }
                }
            });
            t.start();
            threads.add(t);
        }
        while (polling.get() < consumers) Thread.sleep(10);
        awaitAssigned(bootstrap, group, consumers);
        long start;
        try (KafkaProducer<byte[], byte[]> producer = producer(bootstrap, 0)) {
            long interval = 1_000_000_000L / rate;
            long next = System.nanoTime();
            start = next;
            long end = next + seconds * 1_000_000_000L;
            while (next < end) {
                long now = System.nanoTime();
                if (now < next) {
                    Thread.sleep(0, (int) Math.min(999_999, next - now));
                    continue;
                }
                byte[] value = new byte[100];
                java.nio.ByteBuffer.wrap(value).putLong(System.nanoTime());
                producer.send(new ProducerRecord<>(topic, value));
                next += interval;
            }
        }
        Thread.sleep(3000);
        stop.set(true);
        for (Thread t : threads) t.join(30_000);
        long[][] sorted = latencies.stream().sorted(Comparator.comparingLong(l -> l[0]))
            .toArray(long[][]::new);
        if (sorted.length == 0) {
            System.out.println("RESULT count=0");
            return;
        }
        long[] max = sorted[sorted.length - 1];
        // Where the tail sits in the run: records slower than 200 ms by second of sending.
        TreeMap<Long, Integer> slow = new TreeMap<>();
        for (long[] l : sorted) {
            if (l[0] > 200_000_000L) slow.merge((l[1] - start) / 1_000_000_000L, 1, Integer::sum);
        }
        System.out.println("SLOW (second of sending=records over 200 ms): " + slow);
        System.out.printf("RESULT p50_ms=%.2f p99_ms=%.2f p999_ms=%.2f max_ms=%.2f max_sent_s=%.2f count=%d%n",
            sorted[sorted.length / 2][0] / 1e6, sorted[(int) (sorted.length * 0.99)][0] / 1e6,
            sorted[(int) (sorted.length * 0.999)][0] / 1e6, max[0] / 1e6, (max[1] - start) / 1e9,
            sorted.length);
    }

    static void victim(String bootstrap, String topic, String group) throws Exception {
        try (KafkaShareConsumer<byte[], byte[]> consumer = consumer(bootstrap, group, "explicit")) {
            consumer.subscribe(List.of(topic));
            while (true) {
                ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(100));
                if (!polled.isEmpty()) {
                    System.out.println("HELD " + polled.count());
                    System.out.flush();
                    Thread.sleep(Long.MAX_VALUE); // killed with SIGKILL
                }
            }
        }
    }

    static void redelivery(String bootstrap, String topic, String group, String classpath,
                           String self) throws Exception {
        produce(bootstrap, topic, 100, 100);
        Process victim = new ProcessBuilder("java", "-cp", classpath, self, "victim", bootstrap, topic, group)
            .redirectError(ProcessBuilder.Redirect.DISCARD)
            .start();
        java.io.BufferedReader out = new java.io.BufferedReader(
            new java.io.InputStreamReader(victim.getInputStream()));
        String line = out.readLine();
        if (line == null || !line.startsWith("HELD ")) {
            throw new IllegalStateException("the victim held nothing: " + line);
        }
        int held = Integer.parseInt(line.substring(5).trim());
        AtomicInteger redelivered = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicBoolean joined = new AtomicBoolean();
        Thread survivor = new Thread(() -> {
            try (KafkaShareConsumer<byte[], byte[]> consumer = consumer(bootstrap, group, "implicit")) {
                consumer.subscribe(List.of(topic));
                while (!stop.get()) {
                    ConsumerRecords<byte[], byte[]> polled = consumer.poll(Duration.ofMillis(20));
                    joined.set(true);
                    for (ConsumerRecord<byte[], byte[]> r : polled) {
                        if (r.deliveryCount().orElse((short) 1) >= 2) {
                            redelivered.incrementAndGet();
                        }
                    }
                }
            }
        });
        survivor.start();
        while (!joined.get()) Thread.sleep(10);
        Thread.sleep(5000); // the survivor is a member with the partition assigned
        long killed = System.nanoTime();
        victim.destroyForcibly();
        long deadline = killed + TimeUnit.SECONDS.toNanos(120);
        while (redelivered.get() < held && System.nanoTime() < deadline) Thread.sleep(5);
        long back = System.nanoTime();
        stop.set(true);
        survivor.join(30_000);
        System.out.printf("RESULT seconds=%.3f held=%d redelivered=%d%n",
            (back - killed) / 1e9, held, redelivered.get());
    }
}
