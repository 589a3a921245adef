// A Kafka Streams word count with exactly_once_v2, one instance per process, for
// crates/cli/tests/stock_streams_eos.rs (compiled there with javac against Kafka's jars).
//
// usage: java StreamsWordCount <bootstrap> <application.id> <state.dir> [key=value ...]
//   (key=value: further StreamsConfig settings, such as num.stream.threads)
//
// Reads lines from `wc-in`, counts words, writes each word's count (a long) to `wc-out`.
// Prints, one per line, on stdout:
//   STATE <old> -> <new>         each KafkaStreams state change
//   THREAD-DIED <thread> <error> a stream thread's uncaught exception (the thread is replaced)
//   CLOSED                       after a clean close (SIGTERM runs it through a shutdown hook)
//   METADATA <host:port>[<topic>-<partition>,...] ...
//                                with `application.server` set: the Interactive Queries
//                                metadata of every client (`metadataForAllStreamsClients`,
//                                active partitions), sorted, each time it changes while RUNNING

import java.time.Duration;
import java.util.Arrays;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.apache.kafka.streams.kstream.Produced;

public class StreamsWordCount {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // A killed instance leaves the group after 6 s (the classic protocol's least).
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        for (int i = 3; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            props.put(kv[0], kv[1]);
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream("wc-in")
            .flatMapValues(line -> Arrays.asList(line.split(" ")))
            .groupBy((key, word) -> word)
            .count()
            .toStream()
            .to("wc-out", Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setStateListener((now, before) -> say("STATE " + before + " -> " + now));
        streams.setUncaughtExceptionHandler(e -> {
            say("THREAD-DIED " + Thread.currentThread().getName() + " " + e);
            e.printStackTrace();
            return StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            say("CLOSED");
            closed.countDown();
        }));
        streams.start();
        if (props.containsKey(StreamsConfig.APPLICATION_SERVER_CONFIG)) {
            Thread metadata = new Thread(() -> printMetadata(streams));
            metadata.setDaemon(true);
            metadata.start();
        }
        closed.await();
    }

    /** Prints the IQ metadata of every client whenever it changes, while RUNNING. */
    private static void printMetadata(KafkaStreams streams) {
        String last = "";
        while (true) {
            try {
                Thread.sleep(200);
                if (streams.state() != KafkaStreams.State.RUNNING) {
                    continue;
                }
                TreeSet<String> clients = new TreeSet<>();
                for (var m : streams.metadataForAllStreamsClients()) {
                    TreeSet<String> partitions = new TreeSet<>();
                    m.topicPartitions().forEach(tp -> partitions.add(tp.toString()));
                    clients.add(m.host() + ":" + m.port() + "[" + String.join(",", partitions) + "]");
                }
                String line = "METADATA " + String.join(" ", clients);
                if (!line.equals(last)) {
                    say(line);
                    last = line;
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                // Not available while rebalancing: asked again on the next round.
            }
        }
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
