// Checks the captured corpus against Apache Kafka's own generated message classes:
// every .request / .response file is parsed (header + body) and re-serialized, and
// the result must be byte-identical to the file and consume it completely.
//
//   java -cp 'target/kafka-jars/*' tools/capture/VerifyCorpus.java DIR > roundtrip.tsv
//
// Prints "<file>\t<status>\t<detail>" per file (status: ok | diff | trailing | error)
// and a summary line on stderr. Exit code 0 even when some files fail: the result
// is information for the corpus (MANIFEST.tsv), not a gate.
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

public class VerifyCorpus {
    static int ok = 0, bad = 0;

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        List<Path> files;
        try (var s = Files.list(dir)) {
            files = s.filter(p -> p.toString().endsWith(".request")).sorted().collect(Collectors.toList());
        }
        for (Path req : files) {
            String stem = req.getFileName().toString().replaceAll("\\.request$", "");
            byte[] rb = Files.readAllBytes(req);
            short key = ByteBuffer.wrap(rb).getShort(0);
            short ver = ByteBuffer.wrap(rb).getShort(2);
            ApiKeys api = ApiKeys.forId(key);
            check(stem + ".request", rb, api.requestHeaderVersion(ver), true, api, ver);
            Path resp = dir.resolve(stem + ".response");
            if (Files.exists(resp)) {
                check(stem + ".response", Files.readAllBytes(resp), api.responseHeaderVersion(ver), false, api, ver);
            }
        }
        System.err.println("verify: " + ok + " files round-trip byte-identically through Kafka's message classes, "
                + bad + " do not");
    }

    static void check(String name, byte[] bytes, short headerVersion, boolean request, ApiKeys api, short ver) {
        try {
            ByteBuffer buf = ByteBuffer.wrap(bytes);
            ByteBufferAccessor in = new ByteBufferAccessor(buf);
            Message header = request ? new RequestHeaderData(in, headerVersion) : new ResponseHeaderData(in, headerVersion);
            ApiMessage body = request ? api.messageType.newRequest() : api.messageType.newResponse();
            body.read(in, ver);
            if (buf.hasRemaining()) {
                report(name, "trailing", buf.remaining() + " unread bytes");
                return;
            }
            ObjectSerializationCache cache = new ObjectSerializationCache();
            int size = header.size(cache, headerVersion) + body.size(cache, ver);
            ByteBuffer out = ByteBuffer.allocate(size);
            ByteBufferAccessor w = new ByteBufferAccessor(out);
            header.write(w, cache, headerVersion);
            body.write(w, cache, ver);
            byte[] again = out.array();
            if (Arrays.equals(again, bytes)) {
                report(name, "ok", "header v" + headerVersion);
            } else {
                int i = 0;
                while (i < Math.min(again.length, bytes.length) && again[i] == bytes[i]) i++;
                report(name, "diff", "re-encoded " + again.length + " bytes vs " + bytes.length + ", first difference at " + i);
            }
        } catch (Exception e) {
            report(name, "error", e.toString().replace('\t', ' ').replace('\n', ' '));
        }
    }

    static void report(String name, String status, String detail) {
        if (status.equals("ok")) ok++; else bad++;
        System.out.println(name + "\t" + status + "\t" + detail);
    }
}
