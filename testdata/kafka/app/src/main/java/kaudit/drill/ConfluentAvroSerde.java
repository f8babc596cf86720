package kaudit.drill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * A Confluent-framed Avro serde (magic byte 0, 4-byte big-endian schema id, Avro binary) that
 * registers and looks up schemas over the Schema Registry REST API, with the subject
 * {@code <topic>-value} (TopicNameStrategy). Confluent's own serdes are not on Maven Central, so
 * the drill carries this one. Values only: keys are strings.
 *
 * <p>System property {@code slow.repartition.ms} makes deserializing a repartition-topic record
 * sleep that long, so that a backlog builds up on the repartition topics (the drill's
 * purged-before-commit scenario needs committed repartition records the app has not consumed).
 */
final class ConfluentAvroSerde implements Serde<GenericRecord> {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final String registry;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final Map<String, Integer> ids = new ConcurrentHashMap<>(); // subject + schema -> id
    private final Map<Integer, Schema> schemas = new ConcurrentHashMap<>();
    private final long slowRepartitionMs = Long.getLong("slow.repartition.ms", 0L);

    ConfluentAvroSerde(String registryUrl) {
        this.registry = registryUrl.replaceAll("/+$", "");
    }

    @Override
    public Serializer<GenericRecord> serializer() {
        return (topic, record) -> record == null ? null : serialize(topic, record);
    }

    @Override
    public Deserializer<GenericRecord> deserializer() {
        return (topic, data) -> data == null ? null : deserialize(topic, data);
    }

    private byte[] serialize(String topic, GenericRecord record) {
        Schema schema = record.getSchema();
        int id = register(topic + "-value", schema);
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream(64);
            out.write(0);
            out.write(ByteBuffer.allocate(4).putInt(id).array());
            BinaryEncoder enc = EncoderFactory.get().directBinaryEncoder(out, null);
            new GenericDatumWriter<GenericRecord>(schema).write(record, enc);
            enc.flush();
            return out.toByteArray();
        } catch (IOException e) {
            throw new SerializationException("encode avro for " + topic, e);
        }
    }

    private GenericRecord deserialize(String topic, byte[] data) {
        if (slowRepartitionMs > 0 && topic.endsWith("-repartition")) {
            try {
                Thread.sleep(slowRepartitionMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (data.length < 5 || data[0] != 0) {
            throw new SerializationException("record on " + topic + " is not Confluent-framed");
        }
        int id = ByteBuffer.wrap(data, 1, 4).getInt();
        Schema schema = schemas.computeIfAbsent(id, this::lookup);
        try {
            return new GenericDatumReader<GenericRecord>(schema)
                    .read(null, DecoderFactory.get().binaryDecoder(data, 5, data.length - 5, null));
        } catch (IOException e) {
            throw new SerializationException("decode avro schema id " + id + " on " + topic, e);
        }
    }

    private int register(String subject, Schema schema) {
        return ids.computeIfAbsent(subject + "\u0000" + schema, k -> {
            try {
                String body = JSON.writeValueAsString(Map.of("schema", schema.toString()));
                JsonNode res = call(HttpRequest.newBuilder(URI.create(registry + "/subjects/" + subject + "/versions"))
                        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                        .POST(HttpRequest.BodyPublishers.ofString(body)));
                int id = res.get("id").asInt();
                schemas.putIfAbsent(id, schema);
                return id;
            } catch (IOException e) {
                throw new SerializationException("register schema under " + subject, e);
            }
        });
    }

    private Schema lookup(int id) {
        try {
            JsonNode res = call(HttpRequest.newBuilder(URI.create(registry + "/schemas/ids/" + id)).GET());
            return new Schema.Parser().parse(res.get("schema").asText());
        } catch (IOException e) {
            throw new SerializationException("look up schema id " + id, e);
        }
    }

    private JsonNode call(HttpRequest.Builder req) throws IOException {
        IOException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            try {
                HttpResponse<String> res = http.send(req.timeout(Duration.ofSeconds(10)).build(),
                        HttpResponse.BodyHandlers.ofString());
                if (res.statusCode() / 100 != 2) {
                    throw new IOException("schema registry answered " + res.statusCode() + ": " + res.body());
                }
                return JSON.readTree(res.body());
            } catch (IOException e) {
                last = e;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
            try {
                Thread.sleep(200L << attempt);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
        }
        throw last;
    }
}
