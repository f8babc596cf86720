package kaudit.drill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.BranchedKStream;
import org.apache.kafka.streams.kstream.CogroupedKStream;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The topology interpreter of the drill's generated apps (issue AB): it builds its StreamsBuilder
 * from a JSON description written by testdata/kafka/fuzzapps (Desc), so that one jar runs any
 * generated app. Nodes come in build order (the order fixes the generated names); each is one
 * DSL call on the objects its inputs made (KStream, KTable, KGroupedStream, TimeWindowedKStream,
 * KGroupedTable, GlobalKTable, a split's branches). Values are JSON records (Jackson), Avro
 * records (Confluent-framed, {@link ConfluentAvroSerde}) with the fields id, k, cat, n, amount,
 * text, Strings, Integers or Longs; the lambdas are the description's functions, whose meaning
 * fuzzapps/desc.go gives in Go and in the spec's expressions.
 *
 * <p>Args: DESC.json BOOTSTRAP STATE_DIR REGISTRY_URL. System properties: those of
 * {@link DrillApp#config} ({@code describe.file}, {@code describe.only}, {@code slow.repartition.ms},
 * {@code max.poll.records}, {@code session.timeout.ms}), and {@code drop.ids}: the record ids the
 * description's swallowing node skips, as a processor that catches an exception would.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
public final class GenApp {
    private static final Logger LOG = LoggerFactory.getLogger(GenApp.class);

    private final JsonNode desc;
    private final String registry;
    private final Map<String, Object> built = new HashMap<>();
    private final Map<String, KStream[]> branches = new HashMap<>();
    private final Map<String, JsonNode> nodes = new HashMap<>();
    private final Set<String> dropIds;
    private final long slowMs = Long.getLong("slow.repartition.ms", 0L);

    private GenApp(JsonNode desc, String registry) {
        this.desc = desc;
        this.registry = registry;
        this.dropIds = Arrays.stream(System.getProperty("drop.ids", "").split(","))
                .map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toSet());
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: GenApp DESC.json BOOTSTRAP STATE_DIR REGISTRY_URL");
            System.exit(2);
        }
        JsonNode desc = JsonSerde.JSON.readTree(new File(args[0]));
        System.setProperty("app.id", desc.get("app_id").asText());
        GenApp app = new GenApp(desc, args[3]);
        Topology topology = app.build();
        DrillApp.describe(topology);
        if (Boolean.getBoolean("describe.only")) {
            return;
        }
        Properties p = DrillApp.config(args[1], args[2]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, desc.get("guarantee").asText());
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, desc.get("cache_bytes").asLong());
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, desc.get("commit_ms").asLong());
        if (desc.path("purge_ms").asLong() > 0) {
            p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, desc.get("purge_ms").asLong());
        }
        DrillApp.runStreams(topology, p);
    }

    // ---- serdes ----

    private Serde serde(String name) {
        return switch (name) {
            case "string" -> slow(Serdes.String());
            case "int" -> slow(Serdes.Integer());
            case "long" -> slow(Serdes.Long());
            case "json" -> new JsonSerde();
            case "avro" -> new ConfluentAvroSerde(registry);
            default -> throw new IllegalArgumentException("serde " + name);
        };
    }

    /** slow makes a primitive serde's repartition reads sleep slow.repartition.ms, as JsonSerde does. */
    private Serde slow(Serde s) {
        if (slowMs <= 0) {
            return s;
        }
        Deserializer d = s.deserializer();
        return Serdes.serdeFrom(s.serializer(), (topic, data) -> {
            if (topic != null && topic.endsWith("-repartition")) {
                try {
                    Thread.sleep(slowMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return d.deserialize(topic, data);
        });
    }

    private static Class keyClass(String name) {
        return switch (name) {
            case "int" -> Integer.class;
            case "long" -> Long.class;
            default -> String.class;
        };
    }

    // ---- values ----

    static Object get(Object v, String f) {
        if (v == null) {
            return null;
        }
        if (f == null || f.isEmpty()) {
            return v;
        }
        if (v instanceof JsonNode j) {
            JsonNode x = j.get(f);
            if (x == null || x.isNull()) {
                return null;
            }
            return x.isNumber() ? (Object) x.asLong() : x.asText();
        }
        if (v instanceof GenericRecord r) {
            Object x = r.get(f);
            if (x == null) {
                return null;
            }
            if (x instanceof CharSequence cs) {
                return cs.toString();
            }
            if (x instanceof Number n) {
                return n.longValue();
            }
            return x;
        }
        throw new IllegalArgumentException("no field " + f + " in a " + v.getClass());
    }

    static Object with(Object v, String f, Object x) {
        if (v instanceof JsonNode j) {
            ObjectNode c = j.deepCopy();
            putAny(c, f, x);
            return c;
        }
        GenericRecord r = (GenericRecord) v;
        GenericRecord c = new GenericData.Record(r.getSchema());
        for (Schema.Field sf : r.getSchema().getFields()) {
            c.put(sf.pos(), r.get(sf.pos()));
        }
        c.put(f, x);
        return c;
    }

    static void putAny(ObjectNode o, String k, Object x) {
        if (x == null) {
            o.putNull(k);
        } else if (x instanceof String s) {
            o.put(k, s);
        } else if (x instanceof Number n) {
            o.put(k, n.longValue());
        } else if (x instanceof JsonNode j) {
            o.set(k, j);
        } else if (x instanceof CharSequence cs) {
            o.put(k, cs.toString());
        } else {
            throw new IllegalArgumentException("cannot put a " + x.getClass());
        }
    }

    static long lng(Object x) {
        return ((Number) x).longValue();
    }

    /** num is x as the serde's number: an Integer for int, else a Long. */
    static Object num(long x, String serde) {
        return "int".equals(serde) ? (Object) (int) x : (Object) x;
    }

    // ---- the description's functions ----

    static String s(JsonNode fn, String f) {
        JsonNode x = fn.get(f);
        return x == null || x.isNull() ? "" : x.asText();
    }

    static boolean pred(JsonNode fn, Object k, Object v) {
        if (v == null) {
            return false;
        }
        Object x = get(v, s(fn, "field"));
        switch (s(fn, "kind")) {
            case "eq":
                return x instanceof String str && str.equals(s(fn, "str"));
            case "gt":
                return x instanceof Number n && n.longValue() > fn.path("n").asLong();
            case "even":
                return x instanceof Number n && n.longValue() % 2 == 0;
            case "has":
                return x instanceof String str && str.contains(s(fn, "str"));
            default:
                throw new IllegalArgumentException("predicate " + fn);
        }
    }

    static Object mapValue(JsonNode fn, Object v, String serde) {
        if (v == null) {
            return null;
        }
        String f = s(fn, "field");
        switch (s(fn, "kind")) {
            case "scale":
                if (f.isEmpty()) {
                    return num(Math.round(lng(v) * fn.get("num").asDouble()), serde);
                }
                return with(v, f, Math.round(lng(get(v, f)) * fn.get("num").asDouble()));
            case "add":
                if (f.isEmpty()) {
                    return num(lng(v) + fn.path("n").asLong(), serde);
                }
                return with(v, f, lng(get(v, f)) + fn.path("n").asLong());
            case "copy":
                return with(v, f, get(v, s(fn, "str")));
            case "upper":
                if (f.isEmpty()) {
                    return ((String) v).toUpperCase(Locale.ROOT);
                }
                Object x = get(v, f);
                return x instanceof String str ? with(v, f, str.toUpperCase(Locale.ROOT)) : v;
            default:
                throw new IllegalArgumentException("mapper " + fn);
        }
    }

    static List<Object> flat(JsonNode fn, Object v, String serde) {
        List<Object> out = new ArrayList<>();
        if (v == null) {
            return out;
        }
        String f = s(fn, "field");
        switch (s(fn, "kind")) {
            case "split":
                if (f.isEmpty()) {
                    out.addAll(Arrays.asList(((String) v).split(" ")));
                } else {
                    for (String w : ((String) get(v, f)).split(" ")) {
                        out.add(with(v, f, w));
                    }
                }
                return out;
            case "pair":
                out.add(v);
                out.add(num(lng(v) + 1, serde));
                return out;
            default:
                throw new IllegalArgumentException("flatMap " + fn);
        }
    }

    static Object key(JsonNode fn, Object k, Object v, String keySerde) {
        switch (s(fn, "kind")) {
            case "field":
                return v == null ? null : get(v, s(fn, "field"));
            case "upperkey":
                return k == null ? null : ((String) k).toUpperCase(Locale.ROOT);
            case "mod":
                return k == null ? null : num(lng(k) % fn.get("n").asLong(), keySerde);
            case "firstword":
                return v == null ? null : ((String) v).split(" ")[0];
            default:
                throw new IllegalArgumentException("key " + fn);
        }
    }

    static long adder(JsonNode fn, Object v) {
        switch (s(fn, "kind")) {
            case "sumfield":
                return lng(get(v, s(fn, "field")));
            case "len":
                return ((String) v).length();
            case "sum":
                return lng(v);
            default:
                throw new IllegalArgumentException("adder " + fn);
        }
    }

    static Object proj(Object v, String p) {
        return v == null ? null : get(v, p);
    }

    // ---- building ----

    private String str(JsonNode n, String f) {
        return s(n, f);
    }

    private Object in(JsonNode n, int i) {
        return built.get(n.get("in").get(i).asText());
    }

    private JsonNode inNode(JsonNode n, int i) {
        return nodes.get(n.get("in").get(i).asText());
    }

    private Named named(JsonNode n) {
        String name = str(n, "name");
        return name.isEmpty() ? null : Named.as(name);
    }

    private Materialized mat(JsonNode n, String key, String value) {
        String name = str(n, "name");
        Materialized m = name.isEmpty() ? Materialized.with(serde(key), serde(value)) : Materialized.as(name);
        return m.withKeySerde(serde(key)).withValueSerde(serde(value));
    }

    private Grouped grouped(JsonNode n) {
        String name = str(n, "name");
        Grouped g = Grouped.with(serde(str(n, "key")), serde(str(n, "value")));
        return name.isEmpty() ? g : g.withName(name);
    }

    private boolean swallow(JsonNode n, Object v) {
        if (!n.path("swallow").asBoolean() || v == null) {
            return false;
        }
        Object id = get(v, "id");
        if (id != null && dropIds.contains(id.toString())) {
            // What a processor that catches an exception and returns nothing does.
            LOG.info("swallowed record id={}", id);
            return true;
        }
        return false;
    }

    Topology build() {
        StreamsBuilder b = new StreamsBuilder();
        for (JsonNode n : desc.get("nodes")) {
            nodes.put(n.get("id").asText(), n);
            built.put(n.get("id").asText(), node(b, n));
        }
        return b.build();
    }

    private Object node(StreamsBuilder b, JsonNode n) {
        String op = str(n, "op");
        String key = str(n, "key");
        String value = str(n, "value");
        JsonNode fn = n.get("fn");
        Named nm = named(n);
        switch (op) {
            case "stream":
            case "table":
            case "globalTable": {
                Consumed c = Consumed.with(serde(key), serde(value));
                switch (str(n, "reset")) {
                    case "earliest" -> c = c.withOffsetResetPolicy(Topology.AutoOffsetReset.EARLIEST);
                    case "latest" -> c = c.withOffsetResetPolicy(Topology.AutoOffsetReset.LATEST);
                    default -> { }
                }
                if (!str(n, "name").isEmpty() && !op.equals("table")) {
                    c = c.withName(str(n, "name"));
                }
                if (op.equals("stream")) {
                    return b.stream(str(n, "topic"), c);
                }
                if (op.equals("globalTable")) {
                    return b.globalTable(str(n, "topic"), c);
                }
                return b.table(str(n, "topic"), c, mat(n, key, value));
            }
            case "filter":
            case "filterNot": {
                KStream s = (KStream) in(n, 0);
                boolean not = op.equals("filterNot");
                org.apache.kafka.streams.kstream.Predicate p = (k, v) -> {
                    if (swallow(n, v)) {
                        return not;
                    }
                    return pred(fn, k, v);
                };
                if (not) {
                    return nm == null ? s.filterNot(p) : s.filterNot(p, nm);
                }
                return nm == null ? s.filter(p) : s.filter(p, nm);
            }
            case "mapValues": {
                KStream s = (KStream) in(n, 0);
                org.apache.kafka.streams.kstream.ValueMapper m = v -> mapValue(fn, v, value);
                return nm == null ? s.mapValues(m) : s.mapValues(m, nm);
            }
            case "flatMapValues": {
                KStream s = (KStream) in(n, 0);
                org.apache.kafka.streams.kstream.ValueMapper m = v -> swallow(n, v) ? List.of() : flat(fn, v, value);
                return nm == null ? s.flatMapValues(m) : s.flatMapValues(m, nm);
            }
            case "peek": {
                KStream s = (KStream) in(n, 0);
                org.apache.kafka.streams.kstream.ForeachAction a = (k, v) -> { };
                return nm == null ? s.peek(a) : s.peek(a, nm);
            }
            case "selectKey": {
                KStream s = (KStream) in(n, 0);
                String inKey = str(inNode(n, 0), "key");
                org.apache.kafka.streams.kstream.KeyValueMapper m = (k, v) -> key(fn, k, v, inKey);
                return nm == null ? s.selectKey(m) : s.selectKey(m, nm);
            }
            case "map": {
                KStream s = (KStream) in(n, 0);
                String inKey = str(inNode(n, 0), "key");
                org.apache.kafka.streams.kstream.KeyValueMapper m = (k, v) -> KeyValue.pair(key(fn, k, v, inKey), v);
                return nm == null ? s.map(m) : s.map(m, nm);
            }
            case "merge": {
                KStream s = (KStream) in(n, 0);
                return nm == null ? s.merge((KStream) in(n, 1)) : s.merge((KStream) in(n, 1), nm);
            }
            case "split": {
                KStream s = (KStream) in(n, 0);
                BranchedKStream sp = nm == null ? s.split() : s.split(nm);
                JsonNode preds = n.get("preds");
                KStream[] out = new KStream[preds.size() + 1];
                for (int i = 0; i < preds.size(); i++) {
                    JsonNode p = preds.get(i);
                    int idx = i;
                    sp = sp.branch((k, v) -> pred(p, k, v), Branched.withConsumer(ks -> out[idx] = ks));
                }
                if (n.path("default").asBoolean()) {
                    sp.defaultBranch(Branched.withConsumer(ks -> out[preds.size()] = ks));
                } else {
                    sp.noDefaultBranch();
                }
                branches.put(n.get("id").asText(), out);
                return sp;
            }
            case "branch":
                return branches.get(n.get("in").get(0).asText())[n.path("index").asInt()];
            case "groupByKey":
                return ((KStream) in(n, 0)).groupByKey(grouped(n));
            case "groupBy": {
                String inKey = str(inNode(n, 0), "key");
                return ((KStream) in(n, 0)).groupBy((k, v) -> key(fn, k, v, inKey), grouped(n));
            }
            case "windowedBy": {
                KGroupedStream g = (KGroupedStream) in(n, 0);
                JsonNode w = n.get("window");
                Duration size = Duration.ofMillis(w.get("size_ms").asLong());
                Duration grace = Duration.ofMillis(w.path("grace_ms").asLong());
                if (w.path("session").asBoolean()) {
                    return g.windowedBy(grace.isZero() ? SessionWindows.ofInactivityGapWithNoGrace(size) : SessionWindows.ofInactivityGapAndGrace(size, grace));
                }
                TimeWindows tw = grace.isZero() ? TimeWindows.ofSizeWithNoGrace(size) : TimeWindows.ofSizeAndGrace(size, grace);
                if (w.path("advance_ms").asLong() > 0) {
                    tw = tw.advanceBy(Duration.ofMillis(w.get("advance_ms").asLong()));
                }
                return g.windowedBy(tw);
            }
            case "count": {
                Object g = in(n, 0);
                Materialized m = mat(n, key, "long");
                if (g instanceof TimeWindowedKStream w) {
                    return w.count(m);
                }
                if (g instanceof SessionWindowedKStream w) {
                    return w.count(m);
                }
                return ((KGroupedStream) g).count(m);
            }
            case "reduce": {
                Object g = in(n, 0);
                String f = str(n, "field");
                String red = str(n, "reduce");
                // null-safe, as a team writes it: a windowed reduce passes null values on
                // (KStreamWindowAggregate), a plain one skips them before the reducer
                org.apache.kafka.streams.kstream.Reducer r = (agg, v) -> v == null ? agg : switch (red) {
                    case "latest" -> v;
                    case "sum" -> f.isEmpty() ? num(lng(agg) + lng(v), value) : with(agg, f, lng(get(agg, f)) + lng(get(v, f)));
                    case "max" -> f.isEmpty() ? (lng(v) > lng(agg) ? v : agg)
                            : with(agg, f, Math.max(lng(get(agg, f)), lng(get(v, f))));
                    default -> throw new IllegalArgumentException("reducer " + red);
                };
                Materialized m = mat(n, key, value);
                if (g instanceof TimeWindowedKStream w) {
                    return w.reduce(r, m);
                }
                return ((KGroupedStream) g).reduce(r, m);
            }
            case "aggregate": {
                Object g = in(n, 0);
                org.apache.kafka.streams.kstream.Initializer init = () -> 0L;
                org.apache.kafka.streams.kstream.Aggregator a = (k, v, agg) -> v == null ? agg : (Object) (lng(agg) + adder(fn, v));
                Materialized m = mat(n, key, "long");
                if (g instanceof TimeWindowedKStream w) {
                    return w.aggregate(init, a, m);
                }
                return ((KGroupedStream) g).aggregate(init, a, m);
            }
            case "suppress": {
                KTable t = (KTable) in(n, 0);
                Suppressed sp = n.hasNonNull("window")
                        ? Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded())
                        : Suppressed.untilTimeLimit(Duration.ofSeconds(2), Suppressed.BufferConfig.unbounded());
                if (!str(n, "name").isEmpty()) {
                    sp = sp.withName(str(n, "name"));
                }
                return t.suppress(sp);
            }
            case "toStream": {
                KTable t = (KTable) in(n, 0);
                return nm == null ? t.toStream() : t.toStream(nm);
            }
            case "toTable": {
                KStream s = (KStream) in(n, 0);
                return s.toTable(mat(n, key, value));
            }
            case "to": {
                KStream s = (KStream) in(n, 0);
                Serde ks = serde(key);
                JsonNode w = n.get("window");
                if (w != null && !w.isNull()) {
                    ks = w.path("session").asBoolean() ? WindowedSerdes.sessionWindowedSerdeFrom(keyClass(key))
                            : WindowedSerdes.timeWindowedSerdeFrom(keyClass(key), w.get("size_ms").asLong());
                }
                Produced p = Produced.with(ks, serde(value));
                if (!str(n, "name").isEmpty()) {
                    p = p.withName(str(n, "name"));
                }
                s.to(str(n, "topic"), p);
                return null;
            }
            case "tableJoin": {
                KTable l = (KTable) in(n, 0);
                KTable r = (KTable) in(n, 1);
                JsonNode proj = n.get("proj");
                int side = proj.size() - 1;
                boolean chained = "tableJoin".equals(str(inNode(n, 0), "op"));
                org.apache.kafka.streams.kstream.ValueJoiner j = (lv, rv) -> {
                    ObjectNode o;
                    if (chained && lv != null) {
                        o = ((JsonNode) lv).deepCopy();
                    } else {
                        o = JsonSerde.JSON.createObjectNode();
                        putAny(o, "l", chained ? null : proj(lv, proj.get(0).asText()));
                        for (int i = 1; i < side; i++) {
                            o.putNull("r" + i);
                        }
                    }
                    putAny(o, "r" + side, proj(rv, proj.get(side).asText()));
                    return o;
                };
                return switch (str(n, "join")) {
                    case "inner" -> nm == null ? l.join(r, j) : l.join(r, j, nm);
                    case "left" -> nm == null ? l.leftJoin(r, j) : l.leftJoin(r, j, nm);
                    default -> nm == null ? l.outerJoin(r, j) : l.outerJoin(r, j, nm);
                };
            }
            case "streamTableJoin": {
                KStream s = (KStream) in(n, 0);
                KTable t = (KTable) in(n, 1);
                JsonNode proj = n.get("proj");
                org.apache.kafka.streams.kstream.ValueJoiner j = (sv, tv) -> {
                    ObjectNode o = JsonSerde.JSON.createObjectNode();
                    putAny(o, "s", proj(sv, proj.get(0).asText()));
                    putAny(o, "t", proj(tv, proj.get(1).asText()));
                    return o;
                };
                Joined jd = Joined.with(serde(str(inNode(n, 0), "key")), serde(str(inNode(n, 0), "value")), serde(str(inNode(n, 1), "value")));
                if (!str(n, "name").isEmpty()) {
                    jd = jd.withName(str(n, "name"));
                }
                return "inner".equals(str(n, "join")) ? s.join(t, j, jd) : s.leftJoin(t, j, jd);
            }
            case "tableGroupBy": {
                KTable t = (KTable) in(n, 0);
                JsonNode fn2 = n.get("fn2");
                String inKey = str(inNode(n, 0), "key");
                org.apache.kafka.streams.kstream.KeyValueMapper m = (k, v) -> KeyValue.pair(key(fn, k, v, inKey),
                        fn2 == null || fn2.isNull() ? v : get(v, s(fn2, "field")));
                return t.groupBy(m, grouped(n));
            }
            case "tableCount":
                return ((KGroupedTable) in(n, 0)).count(mat(n, key, "long"));
            case "tableAggregate":
                return ((KGroupedTable) in(n, 0)).aggregate(() -> 0L,
                        (k, v, agg) -> lng(agg) + adder(fn, v),
                        (k, v, agg) -> lng(agg) - adder(fn, v), mat(n, key, "long"));
            case "tableReduce":
                return ((KGroupedTable) in(n, 0)).reduce((agg, v) -> lng(agg) + lng(v), (agg, v) -> lng(agg) - lng(v), mat(n, key, "long"));
            case "cogroup": {
                KGroupedStream a = (KGroupedStream) in(n, 0);
                KGroupedStream c = (KGroupedStream) in(n, 1);
                CogroupedKStream cg = a.cogroup((k, v, agg) -> activity(agg, 1, 0))
                        .cogroup(c, (k, v, agg) -> activity(agg, 0, lng(get(v, "amount"))));
                return cg.aggregate(() -> activity(null, 0, 0), mat(n, key, "json"));
            }
            case "tableFilter": {
                KTable t = (KTable) in(n, 0);
                org.apache.kafka.streams.kstream.Predicate p = (k, v) -> pred(fn, k, v);
                return nm == null ? t.filter(p) : t.filter(p, nm);
            }
            case "tableMapValues": {
                KTable t = (KTable) in(n, 0);
                org.apache.kafka.streams.kstream.ValueMapper m = v -> mapValue(fn, v, value);
                return nm == null ? t.mapValues(m) : t.mapValues(m, nm);
            }
            case "fkJoin": {
                KTable l = (KTable) in(n, 0);
                KTable r = (KTable) in(n, 1);
                JsonNode proj = n.get("proj");
                java.util.function.Function fk = v -> get(v, s(fn, "field"));
                org.apache.kafka.streams.kstream.ValueJoiner j = (lv, rv) -> {
                    ObjectNode o = JsonSerde.JSON.createObjectNode();
                    putAny(o, "l", proj(lv, proj.get(0).asText()));
                    putAny(o, "r", proj(rv, proj.get(1).asText()));
                    return o;
                };
                return "inner".equals(str(n, "join")) ? l.join(r, fk, j) : l.leftJoin(r, fk, j);
            }
            case "streamJoin": {
                KStream l = (KStream) in(n, 0);
                KStream r = (KStream) in(n, 1);
                JsonNode proj = n.get("proj");
                org.apache.kafka.streams.kstream.ValueJoiner j = (lv, rv) -> {
                    ObjectNode o = JsonSerde.JSON.createObjectNode();
                    putAny(o, "l", proj(lv, proj.get(0).asText()));
                    putAny(o, "r", proj(rv, proj.get(1).asText()));
                    return o;
                };
                JoinWindows w = JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(n.get("window").get("size_ms").asLong()));
                StreamJoined sj = StreamJoined.with(serde(key), serde(str(inNode(n, 0), "value")), serde(str(inNode(n, 1), "value")));
                return "inner".equals(str(n, "join")) ? l.join(r, j, w, sj) : l.leftJoin(r, j, w, sj);
            }
            case "globalJoin": {
                KStream s = (KStream) in(n, 0);
                GlobalKTable g = (GlobalKTable) in(n, 1);
                JsonNode proj = n.get("proj");
                org.apache.kafka.streams.kstream.KeyValueMapper fk = (k, v) -> get(v, s(fn, "field"));
                org.apache.kafka.streams.kstream.ValueJoiner j = (sv, gv) -> {
                    ObjectNode o = JsonSerde.JSON.createObjectNode();
                    putAny(o, "s", proj(sv, proj.get(0).asText()));
                    putAny(o, "g", proj(gv, proj.get(1).asText()));
                    return o;
                };
                return "inner".equals(str(n, "join")) ? s.join(g, fk, j) : s.leftJoin(g, fk, j);
            }
            default:
                throw new IllegalArgumentException("op " + op);
        }
    }

    /** activity is the cogroup's aggregate {m0, m1} with m0 + d0 and m1 + d1. */
    private static JsonNode activity(Object agg, long d0, long d1) {
        ObjectNode o = JsonSerde.JSON.createObjectNode();
        long m0 = agg == null ? 0 : ((JsonNode) agg).get("m0").asLong();
        long m1 = agg == null ? 0 : ((JsonNode) agg).get("m1").asLong();
        o.put("m0", m0 + d0);
        o.put("m1", m1 + d1);
        return o;
    }
}
