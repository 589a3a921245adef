// Kafka's Java producer (transactions V2) for stock_txn_delayed_proxy.rs: commits
// transaction N while the test's proxy holds its first EndTxn, opens N+1, lets the proxy
// deliver the held EndTxn, then aborts N+1. Arguments come as system properties:
// bootstrap (the proxy), dir (where the hold/release files go), topic.
import java.nio.file.*;
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.StringSerializer;

String bootstrap = System.getProperty("bootstrap");
Path dir = Path.of(System.getProperty("dir"));
String topic = System.getProperty("topic");
Properties props = new Properties();
props.put("bootstrap.servers", bootstrap);
props.put("transactional.id", "jepsen-17754");
props.put("key.serializer", StringSerializer.class.getName());
props.put("value.serializer", StringSerializer.class.getName());
props.put("request.timeout.ms", "2000");
props.put("delivery.timeout.ms", "10000");
props.put("max.block.ms", "20000");
KafkaProducer<String, String> producer = new KafkaProducer<>(props);
producer.initTransactions();
producer.beginTransaction();
producer.send(new ProducerRecord<>(topic, 0, null, "N")).get();
Files.createFile(dir.resolve("hold"));
boolean committed = false;
for (int i = 0; i < 5 && !committed; i++) {
    try {
        producer.commitTransaction();
        committed = true;
    } catch (org.apache.kafka.common.errors.TimeoutException e) {
        System.out.println("commit timed out; retrying");
    }
}
System.out.println("N committed: " + committed);
producer.beginTransaction();
producer.send(new ProducerRecord<>(topic, 0, null, "N+1")).get();
System.out.println("N+1 open");
Files.createFile(dir.resolve("release"));
while (!Files.exists(dir.resolve("released"))) { Thread.sleep(50); }
producer.abortTransaction();
System.out.println("N+1 aborted");
producer.close();
System.out.println("done");
/exit
