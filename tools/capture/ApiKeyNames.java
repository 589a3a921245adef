// Prints "<id>\t<name>\t<oldest>\t<latest>" for every API key the kafka-clients jar knows.
// Run as a single-file source program:  java -cp 'target/kafka-jars/*' tools/capture/ApiKeyNames.java
import org.apache.kafka.common.protocol.ApiKeys;

public class ApiKeyNames {
    public static void main(String[] args) {
        for (ApiKeys k : ApiKeys.values()) {
            System.out.println(k.id + "\t" + k.name + "\t" + k.oldestVersion() + "\t" + k.latestVersion(true));
        }
    }
}
