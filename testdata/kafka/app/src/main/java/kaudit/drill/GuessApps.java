package kaudit.drill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;

/**
 * The drill's guess-apps scenario (guess.go): three small apps whose shapes an audit with
 * {@code --app-id} alone must guess without their describe() text, written as their teams would
 * (issue AA):
 *
 * <pre>
 *   seed:   gs-orders    -> filter(type != "TEST") -> selectKey(orderId) -> groupByKey -> reduce(latest)      = O
 *           gs-payments  -> mapValues(amount = Math.round(amount * 100)) -> selectKey(orderId) -> groupByKey
 *                           -> reduce(sum amount)                                                           = P
 *           gs-shipments -> selectKey(orderId) -> groupByKey -> reduce(latest)                                = S
 *           O.leftJoin(P).leftJoin(S).toStream().to(gs-status)                             (JSON values)
 *   parity: gp-ints (null keys, Integer values) -> filter(v % 2 != 0) -> selectKey(1) -> groupByKey
 *           -> reduce(Integer::sum) -> toStream() -> to(gp-sums)                           (Integer keys and values)
 *   named:  gn-orders -> filter(status != "TEST") -> selectKey(orderId) -> groupByKey
 *           -> reduce(latest, Materialized.as("gn-orders-store"))                          (a named store: no node numbers)
 *   temperature: Kafka's TemperatureDemo (kafka-streams-examples) as its code builds it, on gt-temperature
 *           (null keys, String values) -> selectKey("temp") -> groupByKey -> windowedBy(5 s, grace 24 h)
 *           -> reduce(the higher of Integer.parseInt) -> toStream() -> filter(Integer.parseInt(v) > 20)
 *           -> to(gt-temperature-max), but under exactly_once_v2 (issue AC's run; the demo itself sets
 *           no guarantee and a fixed bootstrap)
 *   anomaly: kafka-streams-examples' AnomalyDetectionLambdaExample (issue AD) on ga-clicks (null keys,
 *           String user names) -> map(user, user) -> groupByKey -> windowedBy(1 min, no grace) -> count
 *           -> KTable filter(count >= 3) -> toStream() -> filter(count != null)
 *           -> map(w.toString(), count) -> to(ga-anomalies)                               (String keys, Long values)
 *   regions: kafka-streams-examples' UserRegionLambdaExample (issue AD): builder.table(gr-user-regions)
 *           -> groupBy(region, region) -> count -> KTable filter(count >= 2) -> toStream()
 *           -> filter(count != null) -> to(gr-large-regions)                               (String keys, Long values)
 * </pre>
 *
 * Args: APP BOOTSTRAP STATE_DIR REGISTRY_URL (the registry is not used). System properties: those
 * of {@link DrillApp#config} (app.id: kaudit-guess-APP), {@code describe.file}.
 */
public final class GuessApps {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: GuessApps seed|parity|named BOOTSTRAP STATE_DIR [REGISTRY_URL]");
            System.exit(2);
        }
        JsonSerde json = new JsonSerde();
        Topology topology = switch (args[0]) {
            case "seed" -> seed(json);
            case "parity" -> parity();
            case "named" -> named(json);
            case "temperature" -> temperature();
            case "anomaly" -> anomaly();
            case "regions" -> regions();
            default -> {
                System.err.println("unknown app " + args[0]);
                System.exit(2);
                yield null;
            }
        };
        if (System.getProperty("app.id") == null) {
            System.setProperty("app.id", "kaudit-guess-" + args[0]);
        }
        DrillApp.describe(topology);
        if (Boolean.getBoolean("describe.only")) {
            return;
        }
        DrillApp.runStreams(topology, DrillApp.config(args[1], args[2]));
    }

    static Topology seed(JsonSerde json) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, JsonNode> orders = b.stream("gs-orders", Consumed.with(Serdes.String(), json))
                .filter((k, v) -> !"TEST".equals(v.path("type").asText()))
                .selectKey((k, v) -> v.get("orderId").asText())
                .groupByKey(Grouped.with(Serdes.String(), json))
                .reduce((agg, v) -> v);
        KTable<String, JsonNode> payments = b.stream("gs-payments", Consumed.with(Serdes.String(), json))
                .mapValues(v -> {
                    ObjectNode cents = v.deepCopy();
                    cents.put("amount", Math.round(v.get("amount").asDouble() * 100));
                    return (JsonNode) cents;
                })
                .selectKey((k, v) -> v.get("orderId").asText())
                .groupByKey(Grouped.with(Serdes.String(), json))
                .reduce((agg, v) -> {
                    ObjectNode sum = agg.deepCopy();
                    sum.put("amount", agg.get("amount").asLong() + v.get("amount").asLong());
                    return sum;
                });
        KTable<String, JsonNode> shipments = b.stream("gs-shipments", Consumed.with(Serdes.String(), json))
                .selectKey((k, v) -> v.get("orderId").asText())
                .groupByKey(Grouped.with(Serdes.String(), json))
                .reduce((agg, v) -> v);
        orders.leftJoin(payments, (o, p) -> {
                    ObjectNode s = JsonSerde.JSON.createObjectNode();
                    s.put("orderId", o.get("orderId").asText());
                    s.put("customer", o.get("customer").asText());
                    s.put("type", o.get("type").asText());
                    if (p == null) {
                        s.putNull("paid");
                    } else {
                        s.put("paid", p.get("amount").asLong());
                    }
                    return (JsonNode) s;
                })
                .leftJoin(shipments, (s, sh) -> {
                    ObjectNode out = s.deepCopy();
                    if (sh == null) {
                        out.putNull("carrier");
                    } else {
                        out.put("carrier", sh.get("carrier").asText());
                    }
                    return (JsonNode) out;
                })
                .toStream()
                .to("gs-status", Produced.with(Serdes.String(), json));
        return b.build();
    }

    static Topology parity() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("gp-ints", Consumed.with(Serdes.Integer(), Serdes.Integer()))
                .filter((k, v) -> v % 2 != 0)
                .selectKey((k, v) -> 1)
                .groupByKey(Grouped.with(Serdes.Integer(), Serdes.Integer()))
                .reduce(Integer::sum)
                .toStream()
                .to("gp-sums", Produced.with(Serdes.Integer(), Serdes.Integer()));
        return b.build();
    }

    static Topology temperature() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("gt-temperature", Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((key, value) -> "temp")
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(5), Duration.ofHours(24)))
                .reduce((value1, value2) -> Integer.parseInt(value1) > Integer.parseInt(value2) ? value1 : value2)
                .toStream()
                .filter((key, value) -> Integer.parseInt(value) > 20)
                .to("gt-temperature-max", Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 5), Serdes.String()));
        return b.build();
    }

    static Topology anomaly() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("ga-clicks", Consumed.with(Serdes.String(), Serdes.String()))
                .map((ignoredKey, username) -> new KeyValue<>(username, username))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                .count()
                .filter((windowedUserId, count) -> count >= 3)
                .toStream()
                .filter((windowedUserId, count) -> count != null)
                .map((windowedUserId, count) -> new KeyValue<>(windowedUserId.toString(), count))
                .to("ga-anomalies", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    static Topology regions() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> userRegions = b.table("gr-user-regions", Consumed.with(Serdes.String(), Serdes.String()));
        userRegions.groupBy((userId, region) -> KeyValue.pair(region, region), Grouped.with(Serdes.String(), Serdes.String()))
                .count()
                .filter((regionName, count) -> count >= 2)
                .toStream()
                .filter((regionName, count) -> count != null)
                .to("gr-large-regions", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    static Topology named(JsonSerde json) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("gn-orders", Consumed.with(Serdes.String(), json))
                .filter((k, v) -> !"TEST".equals(v.path("status").asText()))
                .selectKey((k, v) -> v.get("orderId").asText())
                .groupByKey(Grouped.with(Serdes.String(), json))
                .reduce((agg, v) -> v, Materialized.as("gn-orders-store"));
        return b.build();
    }
}
