// Kafka 4.4's topic, broker and group ConfigDefs, for kafka_configs.rs to compare kraftd's
// config tables with. One line per config: "CONFIG<TAB>scope<TAB>name<TAB>type<TAB>default
// <TAB>validator<TAB>internal<TAB>update mode", scope TOPIC (LogConfig's CONFIG_DEF, its
// internal keys included), BROKER (AbstractKafkaConfig.CONFIG_DEF, the update mode
// DynamicBrokerConfig's: per-listener, per-broker, cluster-wide or read-only; and the
// dynamic-only broker quotas of QuotaConfig.brokerQuotaConfigs, set on a broker or as the
// cluster default, so cluster-wide) or GROUP (GroupConfig.CONFIG_DEF). Then, for each line "scope<TAB>name<TAB>value" of the file
// $KRAFTD_CONFIG_PROBES, "PROBE<TAB>scope<TAB>name<TAB>value<TAB>OK" when Kafka's ConfigDef
// parses the value and its validator accepts it, or "...<TAB>ERR<TAB>message" with the
// ConfigException's message (what CreateTopics and AlterConfigs answer INVALID_CONFIG with).
import java.nio.file.*;
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.server.config.*;

Map<String, Map<String, ConfigDef.ConfigKey>> scopes = new LinkedHashMap<>();
scopes.put("TOPIC", org.apache.kafka.storage.internals.log.LogConfig.configKeys());
var broker = new HashMap<>(AbstractKafkaConfig.CONFIG_DEF.configKeys());
var quotas = QuotaConfig.brokerQuotaConfigs().configKeys();
broker.putAll(quotas);
scopes.put("BROKER", broker);
scopes.put("GROUP", org.apache.kafka.coordinator.group.GroupConfig.CONFIG_DEF.configKeys());
var modes = DynamicBrokerConfig.dynamicConfigUpdateModes();
String oneLine(Object o) { return String.valueOf(o).replaceAll("\\s+", " "); }
for (var scope : scopes.entrySet()) {
    for (var k : new TreeMap<>(scope.getValue()).values()) {
        String dflt = !k.hasDefault() ? "<none>"
            : k.defaultValue == null ? "<null>" : ConfigDef.convertToString(k.defaultValue, k.type);
        String mode = !scope.getKey().equals("BROKER") ? "-"
            : DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS.contains(k.name) ? "per-listener"
            : quotas.containsKey(k.name) ? "cluster-wide"
            : modes.getOrDefault(k.name, "read-only");
        System.out.println(String.join("\t", "CONFIG", scope.getKey(), k.name, k.type.name(),
            oneLine(dflt), k.validator == null ? "" : oneLine(k.validator), String.valueOf(k.internalConfig), mode));
    }
}
var probes = System.getenv("KRAFTD_CONFIG_PROBES");
if (probes != null) {
    for (var line : Files.readAllLines(Path.of(probes))) {
        var f = line.split("\t", -1);
        if (f.length != 3) continue;
        var k = scopes.get(f[0]).get(f[1]);
        String outcome;
        try {
            Object parsed = ConfigDef.parseType(k.name, f[2], k.type);
            if (k.validator != null) k.validator.ensureValid(k.name, parsed);
            outcome = "OK";
        } catch (ConfigException e) {
            outcome = "ERR\t" + oneLine(e.getMessage());
        } catch (RuntimeException e) {
            outcome = "ERR\t" + e.getClass().getSimpleName() + ": " + oneLine(e.getMessage());
        }
        System.out.println(String.join("\t", "PROBE", f[0], f[1], f[2], outcome));
    }
}
System.out.println("DONE");
/exit
