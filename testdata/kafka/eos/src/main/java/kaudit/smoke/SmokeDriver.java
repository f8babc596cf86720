package kaudit.smoke;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.streams.tests.SmokeTestClient;
import org.apache.kafka.streams.tests.SmokeTestDriver;

/**
 * Runs Kafka's own SmokeTestDriver (kafka-streams test jar) with a bounded input, and prints
 * SmokeTestClient's topology. StreamsSmokeTest's "run" command generates 20 keys × 1000 records
 * over 90 s and verifies in the same JVM; the drill needs fewer records, and a fault injected
 * between the generation and the verification, so this calls the driver's own public
 * SmokeTestDriver.generate and SmokeTestDriver.verify in two runs, keeping what generate
 * returned (each key's values) in a file between them. Nothing of the driver is reimplemented:
 * the records, the flush records, the verification and every line it prints are Kafka's.
 *
 * Usage:
 *   java -cp … kaudit.smoke.SmokeDriver PROPS generate KEYS RECORDS_PER_KEY SECONDS FILE
 *   java -cp … kaudit.smoke.SmokeDriver PROPS verify RECORDS_PER_KEY FILE
 *   java -cp … kaudit.smoke.SmokeDriver PROPS describe      (Topology#describe(), no broker)
 *
 * PROPS is the properties file SmokeTestClient runs with (bootstrap.servers is read from it).
 */
public final class SmokeDriver {
    public static void main(final String[] args) throws IOException {
        final Properties props = Utils.loadProps(args[0]);
        final String kafka = props.getProperty("bootstrap.servers");
        switch (args[1]) {
            case "generate": {
                final int keys = Integer.parseInt(args[2]);
                final int perKey = Integer.parseInt(args[3]);
                final Duration spend = Duration.ofSeconds(Long.parseLong(args[4]));
                final Map<String, Set<Integer>> data = SmokeTestDriver.generate(kafka, keys, perKey, spend);
                write(Paths.get(args[5]), data);
                int n = 0;
                for (final Set<Integer> vs : data.values()) {
                    n += vs.size();
                }
                System.out.println("SMOKE-DRIVER-GENERATED keys=" + data.size() + " records=" + n);
                break;
            }
            case "verify": {
                final int perKey = Integer.parseInt(args[2]);
                final Map<String, Set<Integer>> data = read(Paths.get(args[3]));
                final boolean eos = props.getProperty("processing.guarantee", "").startsWith("exactly_once");
                System.out.println("SMOKE-DRIVER-VERIFIED passed=" + verify(kafka, data, perKey, eos));
                break;
            }
            case "describe": {
                System.out.print(new SmokeTestClient("describe").getTopology().describe());
                System.out.flush();
                break;
            }
            default:
                System.err.println("unknown command " + args[1]);
                System.exit(2);
        }
        System.exit(0);
    }

    // SmokeTestDriver.verify is (String, Map, int) in Kafka 3.x and (String, Map, int, boolean
    // eosEnabled) in 4.x: called by reflection so that this compiles against both (the drill's
    // Kafka 4.1.1 step builds it too)
    private static boolean verify(final String kafka, final Map<String, Set<Integer>> data, final int perKey, final boolean eos) {
        try {
            for (final Method m : SmokeTestDriver.class.getMethods()) {
                final Class<?>[] p = m.getParameterTypes();
                if (!m.getName().equals("verify") || p.length < 3 || p[0] != String.class || p[2] != int.class) {
                    continue;
                }
                final Object r;
                if (p.length == 3) {
                    r = m.invoke(null, kafka, data, perKey);
                } else if (p.length == 4 && p[3] == boolean.class) {
                    r = m.invoke(null, kafka, data, perKey, eos);
                } else {
                    continue;
                }
                final Method passed = r.getClass().getMethod("passed");
                passed.setAccessible(true);
                return (Boolean) passed.invoke(r);
            }
        } catch (final ReflectiveOperationException e) {
            throw new IllegalStateException("call SmokeTestDriver.verify", e);
        }
        throw new IllegalStateException("no SmokeTestDriver.verify(String, Map, int[, boolean]) in this kafka-streams test jar");
    }

    // one line per key: the key, a tab, its values separated by commas
    private static void write(final Path path, final Map<String, Set<Integer>> data) throws IOException {
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(path, StandardCharsets.UTF_8))) {
            for (final Map.Entry<String, Set<Integer>> e : new TreeMap<>(data).entrySet()) {
                final StringBuilder sb = new StringBuilder(e.getKey()).append('\t');
                boolean first = true;
                for (final Integer v : new TreeSet<>(e.getValue())) {
                    if (!first) {
                        sb.append(',');
                    }
                    sb.append(v);
                    first = false;
                }
                w.println(sb);
            }
        }
    }

    private static Map<String, Set<Integer>> read(final Path path) throws IOException {
        final Map<String, Set<Integer>> data = new TreeMap<>();
        try (BufferedReader r = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.isEmpty()) {
                    continue;
                }
                final String[] kv = line.split("\t", 2);
                final Set<Integer> vs = new TreeSet<>();
                if (kv.length == 2 && !kv[1].isEmpty()) {
                    for (final String v : kv[1].split(",")) {
                        vs.add(Integer.parseInt(v));
                    }
                }
                data.put(kv[0], vs);
            }
        }
        return data;
    }
}
