package kaudit.describe;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.processor.RecordContext;
import org.apache.kafka.streams.processor.TopicNameExtractor;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.Stores;

/**
 * Builds a set of Kafka Streams topologies and writes each one's
 * Topology#describe() text to OUTDIR/NAME.txt. Only APIs present in both
 * Kafka Streams 3.6 and 4.x are used, so one source serves both builds.
 */
public final class Describe {
    private Describe() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: Describe OUTDIR");
            System.exit(2);
        }
        Path out = Path.of(args[0]);
        Files.createDirectories(out);
        Map<String, Supplier<Topology>> all = new LinkedHashMap<>();
        all.put("seed", Seed::topology);
        all.put("aggregate-count", Describe::aggregateCount);
        all.put("named", Describe::named);
        all.put("fk-join", Describe::fkJoin);
        all.put("fk-join-named", Describe::fkJoinNamed);
        all.put("stream-stream-join", Describe::streamStreamJoin);
        all.put("stream-table-join", Describe::streamTableJoin);
        all.put("windowed", Describe::windowed);
        all.put("merge-branch", Describe::mergeBranch);
        all.put("pattern-source", Describe::patternSource);
        all.put("global-table", Describe::globalTable);
        all.put("processor-api", Describe::processorApi);
        all.put("named-groupby-split", Describe::namedGroupBySplit);
        for (Map.Entry<String, Supplier<Topology>> e : all.entrySet()) {
            String text = e.getValue().get().describe().toString();
            Files.writeString(out.resolve(e.getKey() + ".txt"), text, StandardCharsets.UTF_8);
        }
    }

    private static Consumed<String, String> strings() {
        return Consumed.with(Serdes.String(), Serdes.String());
    }

    /** groupByKey().count(), groupBy().aggregate() and a table re-grouping. */
    static Topology aggregateCount() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> clicks = b.stream("clicks", strings());
        clicks.groupByKey().count().toStream()
                .to("click-counts", Produced.with(Serdes.String(), Serdes.Long()));
        clicks.groupBy((k, v) -> v, Grouped.with(Serdes.String(), Serdes.String()))
                .aggregate(() -> 0L, (k, v, agg) -> agg + v.length(),
                        Materialized.with(Serdes.String(), Serdes.Long()))
                .toStream()
                .to("page-lengths", Produced.with(Serdes.String(), Serdes.Long()));
        b.table("users", strings())
                .groupBy((k, v) -> org.apache.kafka.streams.KeyValue.pair(v, k),
                        Grouped.with(Serdes.String(), Serdes.String()))
                .count()
                .toStream()
                .to("users-per-region", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    /** Operations named by the user: Grouped, Materialized, Named, Repartitioned. */
    static Topology named() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders = b.stream("orders", strings().withName("orders-source"))
                .selectKey((k, v) -> v, Named.as("order-id"))
                .groupByKey(Grouped.<String, String>as("orders-by-id")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .reduce((agg, v) -> v, Named.as("latest-order"),
                        Materialized.<String, String, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("orders-store")
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        KTable<String, String> payments = b.stream("payments", strings())
                .repartition(Repartitioned.<String, String>as("payments-rekeyed")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                .toTable(Named.as("payments-table"),
                        Materialized.<String, String, org.apache.kafka.streams.state.KeyValueStore<org.apache.kafka.common.utils.Bytes, byte[]>>as("payments-store")
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        orders.leftJoin(payments, (o, p) -> o + p, Named.as("order-payment"))
                .toStream(Named.as("status-stream"))
                .to("order-status", Produced.<String, String>as("status-sink")
                        .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
        return b.build();
    }

    /** A foreign-key table-table join with generated names. */
    static Topology fkJoin() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders = b.table("orders", strings());
        KTable<String, String> customers = b.table("customers", strings());
        orders.join(customers, v -> v.split(",")[1], (o, c) -> o + "|" + c)
                .toStream()
                .to("enriched-orders", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    /** A foreign-key left join named with TableJoined and Materialized. */
    static Topology fkJoinNamed() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders = b.table("orders", strings(),
                Materialized.as("orders-table"));
        KTable<String, String> customers = b.table("customers", strings(),
                Materialized.as("customers-table"));
        orders.leftJoin(customers, v -> v.split(",")[1], (o, c) -> o + "|" + c,
                        TableJoined.as("order-customer"),
                        Materialized.as("enriched-store"))
                .toStream()
                .to("enriched-orders", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    /** A windowed stream-stream join and an outer join with StreamJoined names. */
    static Topology streamStreamJoin() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> impressions = b.stream("impressions", strings());
        KStream<String, String> clicks = b.stream("clicks", strings());
        impressions.join(clicks, (i, c) -> i + c,
                        JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(5)),
                        StreamJoined.with(Serdes.String(), Serdes.String(), Serdes.String()))
                .to("impression-clicks", Produced.with(Serdes.String(), Serdes.String()));
        impressions.outerJoin(clicks, (i, c) -> i + c,
                        JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMinutes(5), Duration.ofMinutes(1)),
                        StreamJoined.<String, String, String>with(Serdes.String(), Serdes.String(), Serdes.String())
                                .withStoreName("ad-join"))
                .to("impression-clicks-outer", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    /** A stream-table left join after a key change (repartition before the join). */
    static Topology streamTableJoin() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> products = b.table("products", strings());
        b.stream("sales", strings())
                .selectKey((k, v) -> v.split(",")[0])
                .leftJoin(products, (s, p) -> s + "|" + p,
                        Joined.with(Serdes.String(), Serdes.String(), Serdes.String()))
                .to("sales-enriched", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    /** Tumbling-window counts with suppression, and a hopping-window aggregate. */
    static Topology windowed() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> readings = b.stream("readings", strings());
        readings.groupByKey()
                .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                .count()
                .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
                .toStream((wk, v) -> wk.key())
                .to("readings-per-minute", Produced.with(Serdes.String(), Serdes.Long()));
        readings.groupByKey()
                .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMinutes(10), Duration.ofMinutes(1))
                        .advanceBy(Duration.ofMinutes(5)))
                .reduce((a, v) -> a + v, Materialized.as("hopping-store"))
                .toStream((wk, v) -> wk.key())
                .to("readings-hopping", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    /** merge, split into branches, and a sink whose topic is chosen per record. */
    static Topology mergeBranch() {
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> eu = b.stream("orders-eu", strings());
        KStream<String, String> us = b.stream("orders-us", strings());
        eu.merge(us)
                .split(Named.as("route-"))
                .branch((k, v) -> v.startsWith("big"),
                        Branched.withConsumer(s -> s.to("big-orders", Produced.with(Serdes.String(), Serdes.String())), "big"))
                .branch((k, v) -> v.startsWith("small"),
                        Branched.withConsumer(s -> s.to(new Route(), Produced.with(Serdes.String(), Serdes.String())), "small"))
                .defaultBranch(Branched.withConsumer(s -> s.to("other-orders", Produced.with(Serdes.String(), Serdes.String()))));
        return b.build();
    }

    /**
     * KStream groupBy named with Grouped.as beside a named split(): the key
     * selection is the node X, its repartition filter X-repartition-filter;
     * a split's branches are the splitter's name and an index or a
     * Branched name. A named cogroup of a groupByKey and a groupBy, and a
     * split whose default branch is grouped by a named groupBy.
     */
    static Topology namedGroupBySplit() {
        StreamsBuilder b = new StreamsBuilder();
        KGroupedStream<String, String> clicks = b.stream("clicks", strings())
                .groupByKey(Grouped.as("clicks-by-key"));
        KGroupedStream<String, String> views = b.stream("views", strings())
                .filter((k, v) -> v.length() > 14, Named.as("long-views"))
                .groupBy((k, v) -> v, Grouped.as("views-by-page"));
        clicks.cogroup((String k, String v, String agg) -> agg + v)
                .cogroup(views, (k, v, agg) -> agg + v)
                .aggregate(() -> "", Named.as("page-activity"), Materialized.as("activity-store"))
                .toStream(Named.as("activity-stream"))
                .to("page-activity", Produced.with(Serdes.String(), Serdes.String()));
        b.stream("orders", strings())
                .split(Named.as("route-"))
                .branch((k, v) -> v.startsWith("big"),
                        Branched.withConsumer(s -> s.groupByKey(Grouped.as("big-by-key"))
                                .count(Materialized.as("big-counts")), "big"))
                .defaultBranch(Branched.withConsumer(s -> s.groupBy((k, v) -> v, Grouped.as("other-by-value"))
                        .count(Materialized.as("other-counts"))));
        return b.build();
    }

    /** A source subscribed by pattern. */
    static Topology patternSource() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(Pattern.compile("events-.*"), strings())
                .filter((k, v) -> v != null)
                .groupByKey()
                .count(Materialized.as("event-counts"))
                .toStream()
                .to("event-totals", Produced.with(Serdes.String(), Serdes.Long()));
        return b.build();
    }

    /** A global table joined from a stream. */
    static Topology globalTable() {
        StreamsBuilder b = new StreamsBuilder();
        GlobalKTable<String, String> countries = b.globalTable("countries", strings(),
                Materialized.as("countries-store"));
        b.stream("visits", strings())
                .join(countries, (k, v) -> v, (v, c) -> v + "|" + c)
                .to("visits-by-country", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    /** The Processor API: a multi-topic source, two processors sharing a store, two sinks. */
    static Topology processorApi() {
        Topology t = new Topology();
        t.addSource("Ingest", "raw-a", "raw-b");
        t.addProcessor("Dedup", Dedup::new, "Ingest");
        t.addProcessor("Audit", Dedup::new, "Dedup");
        t.addStateStore(Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore("seen"), Serdes.String(), Serdes.String()), "Dedup", "Audit");
        t.addStateStore(Stores.keyValueStoreBuilder(
                Stores.persistentKeyValueStore("audit-log"), Serdes.String(), Serdes.String()), "Audit");
        t.addSink("Clean", "clean", Serdes.String().serializer(), Serdes.String().serializer(), "Dedup");
        t.addSink("Routed", new Route(), Serdes.String().serializer(), Serdes.String().serializer(), "Audit");
        return t;
    }

    /** Routes a record to a topic named after its key; toString is stable for describe(). */
    static final class Route implements TopicNameExtractor<String, String> {
        @Override
        public String extract(String key, String value, RecordContext ctx) {
            return "routed-" + key;
        }

        @Override
        public String toString() {
            return "kaudit.describe.Describe.Route";
        }
    }

    /** Forwards every record; the store use is only declared, never exercised. */
    static final class Dedup implements Processor<String, String, String, String> {
        private ProcessorContext<String, String> ctx;

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.ctx = context;
        }

        @Override
        public void process(Record<String, String> r) {
            ctx.forward(r);
        }
    }
}
