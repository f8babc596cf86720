package kaudit.drill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The drill's apps with stateless operators on the way to their stores, the shapes real apps have
 * (the drill's apps-* scenarios; each runs in its own JVM under its own application id):
 *
 * <pre>
 *   orders:  so-orders    -> filter(status != TEST) -> selectKey(orderId) -> groupByKey -> reduce(latest)        = O
 *            so-payments  -> mapValues(amount * 100) -> selectKey(orderId) -> groupByKey -> reduce(sum amount)  = P
 *            so-shipments -> selectKey(orderId) -> groupByKey -> reduce(latest)                                 = S
 *            O.leftJoin(P).leftJoin(S).toStream().to(so-order-status)             (Confluent-framed Avro, as DrillApp)
 *   words:   sw-lines -> flatMapValues(lower-cased words; drop.keys: nothing) -> groupBy(word) -> count()
 *            -> toStream() -> to(sw-word-counts)                                   (String lines, Long counts)
 *   windows: sc-clicks (keyed by user) -> groupByKey -> windowedBy(1 min tumbling, 5 s grace) -> count()
 *            -> toStream() -> filter(count > busy.threshold) -> to(sc-busy-minutes) (windowed String keys, Long)
 *   routes:  sr-web.merge(sr-mobile) -> split()
 *              .branch(amount >= 100): groupBy(customer) -> count() -> toStream() -> to(sr-big-customers)
 *              .branch(amount < 10):   groupByKey -> reduce(latest)                 (no hop: no repartition)
 *              .defaultBranch():       mapValues({customer, amount}) -> selectKey(customer) -> groupByKey
 *                                      -> reduce(sum amount) -> toStream() -> to(sr-rest-totals)   (JSON values)
 * </pre>
 *
 * Every node name is generated (no Named, Grouped or Materialized names): the DSL call order below
 * fixes them. Args: APP BOOTSTRAP STATE_DIR REGISTRY_URL, APP one of orders, words, windows,
 * routes. System properties: those of {@link DrillApp#config} (app.id defaults to
 * kaudit-steps-APP), {@code describe.file}, {@code describe.only} (print describe() and exit, no
 * broker), {@code drop.keys} (words: the lines, by source key, that the flatMapValues swallows, as a
 * caught exception returning nothing would), {@code busy.threshold} (windows: 3),
 * {@code slow.repartition.ms} (routes and orders: see {@link JsonSerde}, {@link ConfluentAvroSerde}).
 */
public final class StepsApps {
    private static final Logger LOG = LoggerFactory.getLogger(StepsApps.class);

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: StepsApps orders|words|windows|routes BOOTSTRAP STATE_DIR REGISTRY_URL");
            System.exit(2);
        }
        Topology topology = switch (args[0]) {
            case "orders" -> orders(new ConfluentAvroSerde(args[3]));
            case "words" -> words();
            case "windows" -> windows(new JsonSerde());
            case "routes" -> routes(new JsonSerde());
            default -> {
                System.err.println("unknown app " + args[0]);
                System.exit(2);
                yield null;
            }
        };
        if (System.getProperty("app.id") == null) {
            System.setProperty("app.id", "kaudit-steps-" + args[0]);
        }
        DrillApp.describe(topology);
        if (Boolean.getBoolean("describe.only")) {
            return;
        }
        DrillApp.runStreams(topology, DrillApp.config(args[1], args[2]));
    }

    /** orders is the seed's shape with a filter in one chain and a mapValues in another. */
    static Topology orders(ConfluentAvroSerde avro) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, GenericRecord> orders = b.stream("so-orders", Consumed.with(Serdes.String(), avro))
                .filter((k, v) -> !"TEST".equals(String.valueOf(v.get("status"))))
                .selectKey((k, v) -> str(v.get("orderId")))
                .groupByKey(Grouped.with(Serdes.String(), avro))
                .reduce((agg, v) -> v, Materialized.with(Serdes.String(), avro));
        KTable<String, GenericRecord> payments = b.stream("so-payments", Consumed.with(Serdes.String(), avro))
                .mapValues(v -> {
                    GenericRecord cents = copy(v);
                    cents.put("amount", (Long) v.get("amount") * 100);
                    return cents;
                })
                .selectKey((k, v) -> str(v.get("orderId")))
                .groupByKey(Grouped.with(Serdes.String(), avro))
                .reduce((agg, v) -> {
                    GenericRecord sum = copy(agg);
                    sum.put("amount", (Long) agg.get("amount") + (Long) v.get("amount"));
                    return sum;
                }, Materialized.with(Serdes.String(), avro));
        KTable<String, GenericRecord> shipments = b.stream("so-shipments", Consumed.with(Serdes.String(), avro))
                .selectKey((k, v) -> str(v.get("orderId")))
                .groupByKey(Grouped.with(Serdes.String(), avro))
                .reduce((agg, v) -> v, Materialized.with(Serdes.String(), avro));
        orders.leftJoin(payments, (o, p) -> {
                    GenericRecord s = new GenericData.Record(DrillApp.ORDER_STATUS);
                    s.put("orderId", o.get("orderId").toString());
                    s.put("customer", o.get("customer").toString());
                    s.put("amount", o.get("amount"));
                    s.put("status", o.get("status").toString());
                    s.put("paid", p == null ? null : p.get("amount"));
                    s.put("carrier", null);
                    return s;
                })
                .leftJoin(shipments, (s, sh) -> {
                    GenericRecord out = copy(s);
                    out.put("carrier", sh == null ? null : sh.get("carrier").toString());
                    return out;
                })
                .toStream()
                .to("so-order-status", Produced.with(Serdes.String(), avro));
        return b.build();
    }

    /** words is the word count: flatMapValues, groupBy, count, toStream, to. */
    static Topology words() {
        Set<String> drop = csv("drop.keys");
        StreamsBuilder b = new StreamsBuilder();
        b.stream("sw-lines", Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues((k, line) -> {
                    if (k != null && drop.contains(k)) {
                        // What a processor that catches an exception and returns nothing does.
                        LOG.info("swallowed sw-lines record key={}", k);
                        return List.<String>of();
                    }
                    return Arrays.asList(line.toLowerCase(Locale.ROOT).split(" "));
                })
                .groupBy((k, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count()
                .toStream()
                .to("sw-word-counts", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    /** windows counts clicks per user and minute and writes the busy minutes. */
    static Topology windows(JsonSerde json) {
        long threshold = Long.getLong("busy.threshold", 3L);
        StreamsBuilder b = new StreamsBuilder();
        b.stream("sc-clicks", Consumed.with(Serdes.String(), json))
                .groupByKey(Grouped.with(Serdes.String(), json))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(1), Duration.ofSeconds(5)))
                .count()
                .toStream()
                .filter((wk, n) -> n > threshold)
                .to("sc-busy-minutes", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), Serdes.Long()));
        return b.build();
    }

    /** routes merges two channels, splits by amount and aggregates each branch its own way. */
    static Topology routes(JsonSerde json) {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, JsonNode> web = b.stream("sr-web", Consumed.with(Serdes.String(), json));
        KStream<String, JsonNode> mobile = b.stream("sr-mobile", Consumed.with(Serdes.String(), json));
        web.merge(mobile)
                .split()
                .branch((k, v) -> v.get("amount").asLong() >= 100, Branched.withConsumer(big -> big
                        .groupBy((k, v) -> v.get("customer").asText(), Grouped.with(Serdes.String(), json))
                        .count()
                        .toStream()
                        .to("sr-big-customers", Produced.with(Serdes.String(), Serdes.Long()))))
                .branch((k, v) -> v.get("amount").asLong() < 10, Branched.withConsumer(small -> small
                        .groupByKey(Grouped.with(Serdes.String(), json))
                        .reduce((agg, v) -> v)))
                .defaultBranch(Branched.withConsumer(rest -> rest
                        .mapValues(v -> {
                            ObjectNode n = JsonSerde.JSON.createObjectNode();
                            n.put("customer", v.get("customer").asText());
                            n.put("amount", v.get("amount").asLong());
                            return (JsonNode) n;
                        })
                        .selectKey((k, v) -> v.get("customer").asText())
                        .groupByKey(Grouped.with(Serdes.String(), json))
                        .reduce((agg, v) -> {
                            ObjectNode n = agg.deepCopy();
                            n.put("amount", agg.get("amount").asLong() + v.get("amount").asLong());
                            return n;
                        })
                        .toStream()
                        .to("sr-rest-totals", Produced.with(Serdes.String(), json))));
        return b.build();
    }

    private static String str(Object o) {
        return o == null ? null : o.toString();
    }

    private static GenericRecord copy(GenericRecord r) {
        GenericRecord c = new GenericData.Record(r.getSchema());
        for (Schema.Field f : r.getSchema().getFields()) {
            c.put(f.pos(), r.get(f.pos()));
        }
        return c;
    }

    private static Set<String> csv(String property) {
        return Arrays.stream(System.getProperty(property, "").split(","))
                .map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toSet());
    }
}
