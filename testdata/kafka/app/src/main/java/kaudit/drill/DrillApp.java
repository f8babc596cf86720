package kaudit.drill;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.TaskCorruptedException;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.ValueMapperWithKey;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.processor.TaskId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The drill's reference Kafka Streams app, with the seed's topology:
 *
 * <pre>
 *   orders    -> flatMapValues(drop?) -> selectKey(orderId) -> groupByKey -> reduce(latest)      = T1
 *   payments  -> flatMapValues(drop?) -> selectKey(orderId) -> groupByKey -> reduce(sum amount)  = T2
 *   shipments -> flatMapValues(drop?) -> selectKey(orderId) -> groupByKey -> reduce(latest)      = T3
 *   T1.leftJoin(T2).leftJoin(T3).toStream().to(order-status)
 * </pre>
 *
 * Values are Confluent-framed Avro; stores are persistent RocksDB with generated names, as in the
 * seed. Args: BOOTSTRAP STATE_DIR REGISTRY_URL. System properties:
 * <ul>
 *   <li>{@code app.id} (kaudit-drill), {@code rf} (1), {@code describe.file} (where describe() goes);
 *   <li>{@code commit.interval.ms}, {@code purge.interval.ms} (repartition.purge.interval.ms),
 *       {@code cache.bytes} (default 30 MB, as in the seed): unset means Streams' default;
 *   <li>{@code drop.orders}, {@code drop.payments}, {@code drop.shipments}: comma-separated orderIds
 *       whose records the app swallows before selectKey, as a processor that catches and ignores an
 *       exception would (the "dropped" fault); {@code drop.keys.orders} (and .payments, .shipments):
 *       the same for chosen source records, named by their source key;
 *   <li>{@code seed.timeouts} (true): the seed's producer settings (max.block.ms and
 *       delivery.timeout.ms 18,000,000, acks=all, zstd, 20 MB requests);
 *   <li>{@code slow.repartition.ms}: see {@link ConfluentAvroSerde}; {@code max.poll.records}: the
 *       main consumer's (unset: Streams' 1000). A StreamThread processes everything it has buffered
 *       before it looks at its state again, so a clean close drains the buffer first; few records
 *       per poll make the close prompt;
 *   <li>{@code session.timeout.ms} (6000): the main consumer's, so a killed instance leaves fast;
 *   <li>{@code restore.max.poll.records} (the restore consumer's max.poll.records) and
 *       {@code restore.sleep.ms}: a global restore listener prints {@code RESTORE-START tp start end},
 *       {@code RESTORE tp batchEnd n} per batch (then sleeps restore.sleep.ms) and
 *       {@code RESTORE-END tp total}, so that restoration is slow and observable (KAFKA-16017);
 *   <li>{@code corrupt.payment} and {@code corrupt.task}: the payments reducer throws
 *       {@code TaskCorruptedException(corrupt.task)} once, at the payment with that paymentId, as
 *       Kafka's EosIntegrationTest does (KAFKA-16017's trigger).
 * </ul>
 */
public final class DrillApp {
    private static final Logger LOG = LoggerFactory.getLogger(DrillApp.class);

    static final Schema ORDER_STATUS = schema("OrderStatus");

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: DrillApp BOOTSTRAP STATE_DIR REGISTRY_URL");
            System.exit(2);
        }
        ConfluentAvroSerde avro = new ConfluentAvroSerde(args[2]);
        Topology topology = build(avro);
        describe(topology);
        runStreams(topology, config(args[0], args[1]));
    }

    /** describe writes the topology's describe() text to describe.file (when set) and the log. */
    static void describe(Topology topology) throws IOException {
        String describe = topology.describe().toString();
        String describeFile = System.getProperty("describe.file");
        if (describeFile != null) {
            Files.writeString(Path.of(describeFile), describe, StandardCharsets.UTF_8);
        }
        LOG.info("topology:\n{}", describe);
    }

    /**
     * runStreams runs the topology until the JVM is stopped: it prints {@code STATE old -> new} on
     * every state change, the restore listener's lines, and {@code CLOSED} after a clean close.
     */
    static void runStreams(Topology topology, Properties config) throws InterruptedException {
        KafkaStreams streams = new KafkaStreams(topology, config);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, old) -> {
            System.out.println("STATE " + old + " -> " + now);
            System.out.flush();
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                done.countDown();
            }
        });
        long restoreSleep = Long.getLong("restore.sleep.ms", 0L);
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                say("RESTORE-START " + tp + " " + start + " " + end);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
                say("RESTORE " + tp + " " + batchEnd + " " + n);
                if (restoreSleep > 0) {
                    try {
                        Thread.sleep(restoreSleep);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                say("RESTORE-END " + tp + " " + total);
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            LOG.error("stream thread died", e);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(60));
            System.out.println("CLOSED");
            System.out.flush();
        }));
        streams.start();
        done.await();
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static Properties config(String bootstrap, String stateDir) {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, System.getProperty("app.id", "kaudit-drill"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, Integer.getInteger("rf", 1));
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, Long.getLong("cache.bytes", 30L * 1024 * 1024));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // A killed instance's member must leave the group fast, or the restart waits out the
        // 45 s default session timeout. Not in the seed; drill speed only.
        p.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG),
                Integer.getInteger("session.timeout.ms", 6000));
        p.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
        setIf(p, StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "commit.interval.ms");
        setIf(p, StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, "purge.interval.ms");
        String mainPoll = System.getProperty("max.poll.records");
        if (mainPoll != null && !mainPoll.isEmpty()) {
            p.put(StreamsConfig.mainConsumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), Integer.parseInt(mainPoll));
        }
        String restorePoll = System.getProperty("restore.max.poll.records");
        if (restorePoll != null && !restorePoll.isEmpty()) {
            p.put(StreamsConfig.restoreConsumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), Integer.parseInt(restorePoll));
        }
        if (Boolean.parseBoolean(System.getProperty("seed.timeouts", "true"))) {
            p.put(StreamsConfig.producerPrefix(ProducerConfig.MAX_REQUEST_SIZE_CONFIG), 20000000);
            p.put(StreamsConfig.producerPrefix(ProducerConfig.ACKS_CONFIG), "all");
            p.put(StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_BYTES_CONFIG), 20000000);
            p.put(StreamsConfig.producerPrefix(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG), 18000000);
            p.put(StreamsConfig.producerPrefix(ProducerConfig.MAX_BLOCK_MS_CONFIG), 18000000);
            p.put(StreamsConfig.producerPrefix(ProducerConfig.COMPRESSION_TYPE_CONFIG), "zstd");
        }
        return p;
    }

    private static void setIf(Properties p, String key, String property) {
        String v = System.getProperty(property);
        if (v != null && !v.isEmpty()) {
            p.put(key, Long.parseLong(v));
        }
    }

    /** build wires the seed's topology. The DSL call order fixes the generated names. */
    static Topology build(ConfluentAvroSerde avro) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, GenericRecord> orders = table(b, avro, "orders", (agg, v) -> v);
        String corruptPayment = System.getProperty("corrupt.payment", "");
        AtomicBoolean corrupted = new AtomicBoolean();
        KTable<String, GenericRecord> payments = table(b, avro, "payments", (agg, v) -> {
            if (!corruptPayment.isEmpty() && corruptPayment.equals(String.valueOf(v.get("paymentId")))
                    && corrupted.compareAndSet(false, true)) {
                TaskId task = TaskId.parse(System.getProperty("corrupt.task", "1_3"));
                LOG.warn("throwing TaskCorruptedException for task {} at payment {}", task, corruptPayment);
                throw new TaskCorruptedException(Set.of(task));
            }
            GenericRecord sum = new GenericData.Record(agg.getSchema());
            for (Schema.Field f : agg.getSchema().getFields()) {
                sum.put(f.pos(), agg.get(f.pos()));
            }
            sum.put("amount", (Long) agg.get("amount") + (Long) v.get("amount"));
            return sum;
        });
        KTable<String, GenericRecord> shipments = table(b, avro, "shipments", (agg, v) -> v);
        orders.leftJoin(payments, (o, p) -> {
                    GenericRecord s = new GenericData.Record(ORDER_STATUS);
                    s.put("orderId", o.get("orderId").toString());
                    s.put("customer", o.get("customer").toString());
                    s.put("amount", o.get("amount"));
                    s.put("status", o.get("status").toString());
                    s.put("paid", p == null ? null : p.get("amount"));
                    s.put("carrier", null);
                    return s;
                })
                .leftJoin(shipments, (s, sh) -> {
                    GenericRecord out = new GenericData.Record(ORDER_STATUS);
                    for (Schema.Field f : ORDER_STATUS.getFields()) {
                        out.put(f.pos(), s.get(f.pos()));
                    }
                    out.put("carrier", sh == null ? null : sh.get("carrier").toString());
                    return out;
                })
                .toStream()
                .to(System.getProperty("output.topic", "order-status"), Produced.with(Serdes.String(), avro));
        return b.build();
    }

    private static KTable<String, GenericRecord> table(StreamsBuilder b, ConfluentAvroSerde avro, String topic,
            org.apache.kafka.streams.kstream.Reducer<GenericRecord> reducer) {
        Set<String> drop = csv("drop." + topic);
        Set<String> dropKeys = csv("drop.keys." + topic);
        ValueMapperWithKey<String, GenericRecord, List<GenericRecord>> swallow = (k, v) -> {
            Object id = v == null ? null : v.get("orderId");
            if ((id != null && drop.contains(id.toString())) || (k != null && dropKeys.contains(k))) {
                // What a processor that catches an exception and returns nothing does.
                LOG.info("swallowed {} record key={} orderId={}", topic, k, id);
                return List.of();
            }
            return List.of(v);
        };
        KStream<String, GenericRecord> in = b.stream(topic, Consumed.with(Serdes.String(), avro));
        return in.flatMapValues(swallow)
                .selectKey((k, v) -> v.get("orderId") == null ? null : v.get("orderId").toString())
                .groupByKey(Grouped.with(Serdes.String(), avro))
                .reduce(reducer, Materialized.with(Serdes.String(), avro));
    }

    private static Set<String> csv(String property) {
        return Arrays.stream(System.getProperty(property, "").split(","))
                .map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toSet());
    }

    private static Schema schema(String name) {
        try (InputStream in = DrillApp.class.getResourceAsStream("/avro/" + name + ".avsc")) {
            return new Schema.Parser().parse(in);
        } catch (IOException e) {
            throw new IllegalStateException("read schema " + name, e);
        }
    }
}
