// What `kafka-metadata-shell --snapshot <file> ls|cat <path>` shows, with Kafka 4.4.0's own
// code for all of it but the command line: the shell's loading (SnapshotFileReader feeding a
// MetadataLoader, as MetadataShell.initializeWithSnapshotFileReader does, from kafka-metadata)
// and the tree it navigates under /image (MetadataImageNode, kafka-metadata). The shell's jar
// (kafka-shell) itself is not served by this machine's package registry, so its command
// parser and jline front end are left out; nothing else is.
//
// usage: MetadataShellImage <snapshot file> <path>...
//   each path is relative to the shell's /image (`topics/byName`, `cluster/brokers`, ...);
//   a directory prints `ls <path>: <child>` per child (sorted), a file `cat <path>: <value>`,
//   a missing one `missing <path>`; `<dir>/*` shows every child of <dir> so. Exits 1 when
//   the snapshot does not load.
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.loader.LoaderManifest;
import org.apache.kafka.image.loader.MetadataLoader;
import org.apache.kafka.image.node.MetadataImageNode;
import org.apache.kafka.image.node.MetadataNode;
import org.apache.kafka.image.node.printer.MetadataNodeRedactionCriteria;
import org.apache.kafka.image.node.printer.NodeStringifier;
import org.apache.kafka.image.publisher.MetadataPublisher;
import org.apache.kafka.metadata.util.SnapshotFileReader;
import org.apache.kafka.server.config.DefaultSupportedConfigChecker;
import org.apache.kafka.server.fault.FaultHandler;
import org.apache.kafka.server.fault.FaultHandlerException;

public class MetadataShellImage {
    public static void main(String[] args) throws Exception {
        AtomicReference<String> fault = new AtomicReference<>();
        // Any fault replaying the snapshot fails the run (the shell's LoggingFaultHandler only
        // logs it, which a test would not see).
        FaultHandler faults = (failureMessage, cause) -> {
            fault.compareAndSet(null, failureMessage + (cause == null ? "" : ": " + cause));
            return new FaultHandlerException(failureMessage, cause);
        };
        SnapshotFileReader[] reader = new SnapshotFileReader[1];
        MetadataLoader loader = new MetadataLoader.Builder()
            .setFaultHandler(faults)
            .setNodeId(-1)
            .setHighWaterMarkAccessor(() -> reader[0].highWaterMark())
            .setSupportedConfigChecker(new DefaultSupportedConfigChecker())
            .build();
        AtomicReference<MetadataImage> image = new AtomicReference<>();
        MetadataPublisher publisher = new MetadataPublisher() {
            @Override
            public String name() {
                return "MetadataShellImage";
            }

            @Override
            public void onMetadataUpdate(MetadataDelta delta, MetadataImage newImage, LoaderManifest manifest) {
                image.set(newImage);
            }
        };
        reader[0] = new SnapshotFileReader(args[0], loader);
        reader[0].startup();
        loader.installPublishers(List.of(publisher)).get(60, TimeUnit.SECONDS);
        // MetadataShell.waitUntilCaughtUp, with a deadline.
        long deadline = System.currentTimeMillis() + 60_000;
        while (loader.lastAppliedOffset() <= 0 || image.get() == null) {
            if (fault.get() != null || System.currentTimeMillis() > deadline) {
                System.out.println("FAILED: " + (fault.get() != null ? fault.get() : "not loaded in 60 s"));
                System.exit(1);
            }
            Thread.sleep(10);
        }
        if (fault.get() != null) {
            System.out.println("FAILED: " + fault.get());
            System.exit(1);
        }
        MetadataNode root = new MetadataImageNode(image.get());
        for (int i = 1; i < args.length; i++) {
            String path = args[i];
            if (path.endsWith("/*")) {
                // Every child of the directory, as `cat <dir>/*` (the shell's glob) shows it.
                String dir = path.substring(0, path.length() - 2);
                MetadataNode node = walk(root, dir);
                if (node == null) {
                    System.out.println("missing " + dir);
                    continue;
                }
                for (String name : sorted(node)) show(node.child(name), dir + "/" + name);
            } else {
                show(walk(root, path), path);
            }
        }
        System.out.flush();
        loader.close();
        reader[0].close();
        System.exit(0);
    }

    static MetadataNode walk(MetadataNode root, String path) {
        MetadataNode node = root;
        for (String part : path.split("/")) {
            if (node != null && !part.isEmpty()) node = node.child(part);
        }
        return node;
    }

    static List<String> sorted(MetadataNode node) {
        List<String> names = new ArrayList<>(node.childNames());
        names.sort(String::compareTo);
        return names;
    }

    static void show(MetadataNode node, String path) {
        if (node == null) {
            System.out.println("missing " + path);
        } else if (node.isDirectory()) {
            for (String name : sorted(node)) System.out.println("ls " + path + ": " + name);
        } else {
            // The shell's `cat` prints unredacted (its ShellNodePrinter's criteria: Disabled).
            NodeStringifier printer = new NodeStringifier(MetadataNodeRedactionCriteria.Disabled.INSTANCE);
            node.print(printer);
            System.out.println("cat " + path + ": " + printer);
        }
    }
}
