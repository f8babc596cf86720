package kaudit.drill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FieldDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The formats scenario's apps: one shape, in Confluent-framed Protobuf or JSON Schema, its input
 * written by Confluent's own Python client (testdata/kafka/formats/produce.py):
 *
 * <pre>
 *   fp-orders (Protobuf drill.Order) -> selectKey(orderId) -> groupByKey -> reduce(sum amount)
 *       -> toStream() -> to(fp-totals)                                          app protobuf
 *   fj-orders (JSON Schema)          -> the same                             -> fj-totals, app json
 * </pre>
 *
 * The sum keeps the first order's other fields, as the spec's sum(amount) does. Args: APP
 * BOOTSTRAP STATE_DIR REGISTRY_URL with APP protobuf or json; system properties those of
 * {@link DrillApp#config} (app.id defaults to kaudit-formats-APP), {@code describe.file},
 * {@code describe.only}, {@code descriptors.file} (protobuf: the FileDescriptorSet of
 * drill/orders.proto and its import), {@code json.schema.file} (json: order.schema.json).
 *
 * <p>{@code FormatsApp serialize DESCRIPTORS REGISTRY_URL TOPIC IN OUT} writes, for each line
 * {"key", "payload"} of IN (the hex of a drill.Order message), {"key", "hex"} to OUT: what this
 * app's serde writes for it, which the drill compares with the Python client's bytes.
 */
public final class FormatsApp {
    public static void main(String[] args) throws Exception {
        if (args.length == 6 && args[0].equals("serialize")) {
            serialize(args);
            return;
        }
        if (args.length != 4) {
            System.err.println("usage: FormatsApp protobuf|json BOOTSTRAP STATE_DIR REGISTRY_URL");
            System.exit(2);
        }
        Topology topology = switch (args[0]) {
            case "protobuf" -> protobuf(new ConfluentProtobufSerde(args[3], Path.of(System.getProperty("descriptors.file"))));
            case "json" -> json(new ConfluentJsonSchemaSerde(args[3],
                    Files.readString(Path.of(System.getProperty("json.schema.file")), StandardCharsets.UTF_8)));
            default -> {
                System.err.println("unknown app " + args[0]);
                System.exit(2);
                yield null;
            }
        };
        if (System.getProperty("app.id") == null) {
            System.setProperty("app.id", "kaudit-formats-" + args[0]);
        }
        DrillApp.describe(topology);
        if (Boolean.getBoolean("describe.only")) {
            return;
        }
        DrillApp.runStreams(topology, DrillApp.config(args[1], args[2]));
    }

    static Topology protobuf(ConfluentProtobufSerde pb) {
        Descriptor order = pb.message("Order");
        FieldDescriptor orderId = order.findFieldByName("orderId");
        FieldDescriptor amount = order.findFieldByName("amount");
        StreamsBuilder b = new StreamsBuilder();
        b.stream("fp-orders", Consumed.with(Serdes.String(), pb))
                .selectKey((k, v) -> v.hasField(orderId)
                        ? (String) ((Message) v.getField(orderId)).getField(
                                ((Message) v.getField(orderId)).getDescriptorForType().findFieldByName("value"))
                        : null)
                .groupByKey(Grouped.with(Serdes.String(), pb))
                .reduce((agg, v) -> agg.toBuilder()
                        .setField(amount, (Long) agg.getField(amount) + (Long) v.getField(amount)).build())
                .toStream()
                .to("fp-totals", Produced.with(Serdes.String(), pb));
        return b.build();
    }

    static Topology json(ConfluentJsonSchemaSerde js) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("fj-orders", Consumed.with(Serdes.String(), js))
                .selectKey((k, v) -> v.hasNonNull("orderId") ? v.get("orderId").asText() : null)
                .groupByKey(Grouped.with(Serdes.String(), js))
                .reduce((agg, v) -> {
                    ObjectNode n = agg.deepCopy();
                    n.put("amount", agg.get("amount").asLong() + v.get("amount").asLong());
                    return (JsonNode) n;
                })
                .toStream()
                .to("fj-totals", Produced.with(Serdes.String(), js));
        return b.build();
    }

    private static void serialize(String[] args) throws Exception {
        ConfluentProtobufSerde pb = new ConfluentProtobufSerde(args[2], Path.of(args[1]));
        Descriptor order = pb.message("Order");
        HexFormat hex = HexFormat.of();
        try (BufferedWriter out = Files.newBufferedWriter(Path.of(args[5]))) {
            for (String line : Files.readAllLines(Path.of(args[4]))) {
                if (line.isBlank()) {
                    continue;
                }
                JsonNode r = JsonSerde.JSON.readTree(line);
                DynamicMessage m = DynamicMessage.parseFrom(order, hex.parseHex(r.get("payload").asText()));
                ObjectNode o = JsonSerde.JSON.createObjectNode();
                o.put("key", r.get("key").asText());
                o.put("hex", hex.formatHex(pb.serialize(args[3], m)));
                out.write(JsonSerde.JSON.writeValueAsString(o));
                out.newLine();
            }
        }
    }
}
