// Kafka 4.4's own ClientMetricsManager answering one GetTelemetrySubscriptions, for
// stock_client_telemetry.rs to compare kraftd's answer with (a Kafka broker answers only
// with a ClientTelemetry reporter plugin configured; the manager itself needs none to
// answer). Subscriptions from $KRAFTD_SUBSCRIPTIONS, one per line:
// "name<TAB>metrics<TAB>interval.ms<TAB>match"; the request from client id
// $KRAFTD_CLIENT_ID (software unknown, as a client that sent no ApiVersions v3) with
// instance id $KRAFTD_INSTANCE_ID. Prints one line: "ANSWER<TAB>error<TAB>instance id
// <TAB>subscription id<TAB>requested metrics (comma-separated, in order)<TAB>push interval
// <TAB>accepted compression types<TAB>telemetry max bytes<TAB>delta temporality".
import java.net.InetAddress;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.GetTelemetrySubscriptionsRequestData;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.*;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.ClientMetricsManager;
import org.apache.kafka.server.metrics.ClientTelemetryExporterPlugin;

var manager = new ClientMetricsManager(new ClientTelemetryExporterPlugin(), 1048576, Time.SYSTEM, new Metrics());
for (String line : System.getenv("KRAFTD_SUBSCRIPTIONS").split("\n")) {
    String[] f = line.split("\t", -1);
    Properties p = new Properties();
    p.put("metrics", f[1]);
    p.put("interval.ms", f[2]);
    if (!f[3].isEmpty()) p.put("match", f[3]);
    manager.updateSubscription(f[0], p);
}
var header = new RequestHeader(ApiKeys.GET_TELEMETRY_SUBSCRIPTIONS, (short) 0, System.getenv("KRAFTD_CLIENT_ID"), 1);
var context = new RequestContext(header, "connection", InetAddress.getLoopbackAddress(), KafkaPrincipal.ANONYMOUS,
    ListenerName.normalised("PLAINTEXT"), SecurityProtocol.PLAINTEXT, ClientInformation.EMPTY, false);
var request = new GetTelemetrySubscriptionsRequest.Builder(new GetTelemetrySubscriptionsRequestData()
    .setClientInstanceId(Uuid.fromString(System.getenv("KRAFTD_INSTANCE_ID")))).build((short) 0);
var d = manager.processGetTelemetrySubscriptionRequest(request, context).data();
System.out.println("ANSWER\t" + d.errorCode() + "\t" + d.clientInstanceId() + "\t" + d.subscriptionId() + "\t"
    + String.join(",", d.requestedMetrics()) + "\t" + d.pushIntervalMs() + "\t" + d.acceptedCompressionTypes() + "\t"
    + d.telemetryMaxBytes() + "\t" + d.deltaTemporality());
manager.close();
/exit
