package kaudit.describe;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The seed app's topology: 3 sources, selectKey, groupByKey, reduce, a
 * left-join chain, one output. It uses only APIs Kafka Streams 2.x also
 * has, so the kafka2 build compiles this file alone; its main writes
 * OUTDIR/seed.txt.
 */
public final class Seed {
    private Seed() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: Seed OUTDIR");
            System.exit(2);
        }
        Path out = Path.of(args[0]);
        Files.createDirectories(out);
        Files.writeString(out.resolve("seed.txt"), topology().describe().toString(), StandardCharsets.UTF_8);
    }

    static KTable<String, String> table(StreamsBuilder b, String topic) {
        return b.stream(topic, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((k, v) -> v.split(",")[0])
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .reduce((agg, v) -> v);
    }

    static Topology topology() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> orders = table(b, "orders-v1");
        KTable<String, String> payments = table(b, "payments-v1");
        KTable<String, String> shipments = table(b, "shipments-v1");
        orders.leftJoin(payments, (o, p) -> o + "|" + p)
                .leftJoin(shipments, (op, s) -> op + "|" + s)
                .toStream()
                .to("order-status", Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }
}
