// Kafka 4.4's CidrUtils (commons-net's SubnetUtils / SubnetUtils6, shaded in kafka-clients)
// over the probes in $KRAFTD_CIDR_PROBES, one "pattern<TAB>host" per line, for
// cidr_acls_kafka.rs. Prints per probe: "PROBE<TAB>pattern<TAB>host<TAB>OK|<validate's
// IllegalArgumentException message><TAB>isInRange(host, pattern)".
import java.nio.file.*;
import org.apache.kafka.server.authorizer.internals.CidrUtils;

for (String line : Files.readAllLines(Path.of(System.getenv("KRAFTD_CIDR_PROBES")))) {
    String[] f = line.split("\t", -1);
    String verdict;
    try {
        CidrUtils.validate(f[0]);
        verdict = "OK";
    } catch (IllegalArgumentException e) {
        verdict = e.getMessage();
    }
    System.out.println("PROBE\t" + f[0] + "\t" + f[1] + "\t" + verdict + "\t" + CidrUtils.isInRange(f[1], f[0]));
}
/exit
