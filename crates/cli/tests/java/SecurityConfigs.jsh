// Kafka 4.4's broker security configs, for kafka_security_configs.rs to compare kraftd's
// definitions with: one line per config, "CONFIG<TAB>name<TAB>type<TAB>default<TAB>importance
// <TAB>validator<TAB>update mode<TAB>documentation", where the update mode is Kafka's
// DynamicBrokerConfig's (per-listener for DYNAMIC_SECURITY_CONFIGS, per-broker or
// cluster-wide from dynamicConfigUpdateModes, read-only otherwise); and "AUTHORIZER<TAB>name"
// for StandardAuthorizer's own settings, which are not KafkaConfig keys. The security configs
// are every key of BrokerSecurityConfigs, DelegationTokenManagerConfigs and QuotaConfig, and
// the security keys other groups define (listener protocols, connection limits, the
// authorizer class, the inter-broker and controller SASL mechanism).
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.internals.BrokerSecurityConfigs;
import org.apache.kafka.network.SocketServerConfigs;
import org.apache.kafka.server.config.*;

var names = new TreeSet<String>();
names.addAll(BrokerSecurityConfigs.CONFIG_DEF.names());
names.addAll(DelegationTokenManagerConfigs.CONFIG_DEF.names());
names.addAll(QuotaConfig.CONFIG_DEF.names());
names.addAll(List.of(
    SocketServerConfigs.LISTENER_SECURITY_PROTOCOL_MAP_CONFIG,
    SocketServerConfigs.MAX_CONNECTIONS_PER_IP_CONFIG,
    SocketServerConfigs.MAX_CONNECTIONS_PER_IP_OVERRIDES_CONFIG,
    SocketServerConfigs.MAX_CONNECTION_CREATION_RATE_CONFIG,
    SocketServerConfigs.FAILED_AUTHENTICATION_DELAY_MS_CONFIG,
    ServerConfigs.AUTHORIZER_CLASS_NAME_CONFIG,
    ReplicationConfigs.INTER_BROKER_SECURITY_PROTOCOL_CONFIG,
    org.apache.kafka.raft.KRaftConfigs.SASL_MECHANISM_CONTROLLER_PROTOCOL_CONFIG));
var keys = AbstractKafkaConfig.CONFIG_DEF.configKeys();
var modes = DynamicBrokerConfig.dynamicConfigUpdateModes();
for (var name : names) {
    var k = keys.get(name);
    String dflt = !k.hasDefault() ? "<none>"
        : k.defaultValue == null ? "<null>" : ConfigDef.convertToString(k.defaultValue, k.type);
    String mode = DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS.contains(name) ? "per-listener"
        : modes.getOrDefault(name, "read-only");
    String doc = k.documentation == null ? "" : k.documentation.replaceAll("\\s+", " ");
    System.out.println(String.join("\t", "CONFIG", name, k.type.name(), dflt, k.importance.name(),
        k.validator == null ? "" : k.validator.toString(), mode, doc));
}
System.out.println("AUTHORIZER\t" + org.apache.kafka.metadata.authorizer.StandardAuthorizer.SUPER_USERS_CONFIG);
System.out.println("AUTHORIZER\t" + org.apache.kafka.metadata.authorizer.StandardAuthorizer.ALLOW_EVERYONE_IF_NO_ACL_IS_FOUND_CONFIG);
System.out.println("DONE");
/exit
