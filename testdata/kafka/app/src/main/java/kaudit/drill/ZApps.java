package kaudit.drill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The drill's apps with the stateful DSL shapes beyond a stream folded into a table (the drill's
 * apps-* scenarios, beside {@link StepsApps}; each runs in its own JVM under its own application
 * id; JSON values, String keys):
 *
 * <pre>
 *   enrich:  ze-customers -> table                                                           = C
 *            ze-orders -> selectKey(customer) -> [repartition]
 *                 -> leftJoin(C, order + customer's name and tier, null when none) -> to(ze-enriched)
 *                 -> join(C, the same joiner)                                      -> to(ze-matched)
 *   regroup: zr-products -> table -> groupBy((id, p) -> (p.category, p))
 *                 -> count()                                              -> toStream() -> to(zr-category-counts)   (Long)
 *                 -> aggregate(0, agg + p.price, agg - p.price)           -> toStream() -> to(zr-category-value)    (Long)
 *   cogroup: zg-clicks (keyed by user) -> groupByKey                     : clicks + 1
 *            zg-views -> filter(ms > 0; drop.keys: false) -> groupBy(user): views + 1, ms + view.ms
 *                 -> cogroup(...).aggregate({clicks 0, views 0, ms 0}) -> toStream() -> to(zg-activity)
 *   fkjoin:  zf-orders -> table; zf-products -> table
 *            orders.join(products, order -> order.product, line)           -> toStream() -> to(zf-order-lines)
 * </pre>
 *
 * Every node name is generated (no Named, Grouped, Joined or Materialized names): the DSL call
 * order below fixes them. Args: APP BOOTSTRAP STATE_DIR REGISTRY_URL, APP one of enrich, regroup,
 * cogroup, fkjoin (REGISTRY_URL unused: no Avro). System properties: those of {@link DrillApp#config}
 * (app.id defaults to kaudit-z-APP), {@code describe.file}, {@code describe.only} (print describe()
 * and exit, no broker), {@code drop.keys} (cogroup: the views, by source key, that the filter
 * swallows, as a predicate that catches an exception and returns false would),
 * {@code slow.repartition.ms} (see {@link JsonSerde}).
 */
public final class ZApps {
    private static final Logger LOG = LoggerFactory.getLogger(ZApps.class);

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: ZApps enrich|regroup|cogroup|fkjoin BOOTSTRAP STATE_DIR REGISTRY_URL");
            System.exit(2);
        }
        JsonSerde json = new JsonSerde();
        Topology topology = switch (args[0]) {
            case "enrich" -> enrich(json);
            case "regroup" -> regroup(json);
            case "cogroup" -> cogroup(json);
            case "fkjoin" -> fkjoin(json);
            default -> {
                System.err.println("unknown app " + args[0]);
                System.exit(2);
                yield null;
            }
        };
        if (System.getProperty("app.id") == null) {
            System.setProperty("app.id", "kaudit-z-" + args[0]);
        }
        DrillApp.describe(topology);
        if (Boolean.getBoolean("describe.only")) {
            return;
        }
        DrillApp.runStreams(topology, DrillApp.config(args[1], args[2]));
    }

    /**
     * enrich: KStream-KTable joins. The orders stream re-keyed by customer (Streams inserts the
     * co-partitioning repartition topic) looks up the customers table, read with builder.table;
     * one stream, two joins: left to ze-enriched, inner to ze-matched.
     */
    static Topology enrich(JsonSerde json) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, JsonNode> customers = b.table("ze-customers", Consumed.with(Serdes.String(), json));
        KStream<String, JsonNode> byCustomer = b.stream("ze-orders", Consumed.with(Serdes.String(), json))
                .selectKey((k, v) -> v.hasNonNull("customer") ? v.get("customer").asText() : null);
        byCustomer.leftJoin(customers, ZApps::enriched, Joined.with(Serdes.String(), json, json))
                .to("ze-enriched", Produced.with(Serdes.String(), json));
        byCustomer.join(customers, ZApps::enriched, Joined.with(Serdes.String(), json, json))
                .to("ze-matched", Produced.with(Serdes.String(), json));
        return b.build();
    }

    private static JsonNode enriched(JsonNode order, JsonNode customer) {
        ObjectNode n = JsonSerde.JSON.createObjectNode();
        n.put("order", order.get("id").asText());
        n.put("customer", order.get("customer").asText());
        n.put("amount", order.get("amount").asLong());
        if (customer == null) {
            n.putNull("name");
            n.putNull("tier");
        } else {
            n.put("name", customer.get("name").asText());
            n.put("tier", customer.get("tier").asText());
        }
        return n;
    }

    /**
     * regroup: a KTable re-grouped by a value field, with a subtractor. The products table's
     * changes go through the repartition topic as Change records (old and new value) to the
     * category's task, where count() and aggregate() subtract the old and add the new.
     */
    static Topology regroup(JsonSerde json) {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedTable<String, JsonNode> byCategory = b.table("zr-products", Consumed.with(Serdes.String(), json))
                .groupBy((id, p) -> KeyValue.pair(p.get("category").asText(), p), Grouped.with(Serdes.String(), json));
        byCategory.count()
                .toStream()
                .to("zr-category-counts", Produced.with(Serdes.String(), Serdes.Long()));
        byCategory.aggregate(() -> 0L,
                        (cat, p, agg) -> agg + p.get("price").asLong(),
                        (cat, p, agg) -> agg - p.get("price").asLong(),
                        Materialized.with(Serdes.String(), Serdes.Long()))
                .toStream()
                .to("zr-category-value", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    /**
     * cogroup: clicks (keyed by user) and views (re-keyed by user) folded into one aggregate per
     * user, each stream with its own aggregator.
     */
    static Topology cogroup(JsonSerde json) {
        Set<String> drop = csv("drop.keys");
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, JsonNode> clicks = b.stream("zg-clicks", Consumed.with(Serdes.String(), json))
                .groupByKey(Grouped.with(Serdes.String(), json));
        KGroupedStream<String, JsonNode> views = b.stream("zg-views", Consumed.with(Serdes.String(), json))
                .filter((k, v) -> {
                    if (k != null && drop.contains(k)) {
                        // What a predicate that catches an exception and returns false does.
                        LOG.info("swallowed zg-views record key={}", k);
                        return false;
                    }
                    return v.get("ms").asLong() > 0;
                })
                .groupBy((k, v) -> v.get("user").asText(), Grouped.with(Serdes.String(), json));
        clicks.<JsonNode>cogroup((user, click, agg) -> activity(agg.get("clicks").asLong() + 1, agg.get("views").asLong(), agg.get("ms").asLong()))
                .cogroup(views, (user, view, agg) -> activity(agg.get("clicks").asLong(), agg.get("views").asLong() + 1,
                        agg.get("ms").asLong() + view.get("ms").asLong()))
                .aggregate(() -> activity(0, 0, 0), Materialized.with(Serdes.String(), json))
                .toStream()
                .to("zg-activity", Produced.with(Serdes.String(), json));
        return b.build();
    }

    private static JsonNode activity(long clicks, long views, long ms) {
        ObjectNode n = JsonSerde.JSON.createObjectNode();
        n.put("clicks", clicks);
        n.put("views", views);
        n.put("ms", ms);
        return n;
    }

    /** fkjoin: a foreign-key KTable-KTable join, orders to the product each names. */
    static Topology fkjoin(JsonSerde json) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, JsonNode> orders = b.table("zf-orders", Consumed.with(Serdes.String(), json));
        KTable<String, JsonNode> products = b.table("zf-products", Consumed.with(Serdes.String(), json));
        orders.join(products, o -> o.get("product").asText(), (o, p) -> {
                    ObjectNode n = JsonSerde.JSON.createObjectNode();
                    n.put("order", o.get("id").asText());
                    n.put("product", p.get("id").asText());
                    n.put("name", p.get("name").asText());
                    n.put("qty", o.get("qty").asLong());
                    n.put("total", o.get("qty").asLong() * p.get("price").asLong());
                    return (JsonNode) n;
                })
                .toStream()
                .to("zf-order-lines", Produced.with(Serdes.String(), json));
        return b.build();
    }

    private static Set<String> csv(String property) {
        return Arrays.stream(System.getProperty(property, "").split(","))
                .map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toSet());
    }
}
