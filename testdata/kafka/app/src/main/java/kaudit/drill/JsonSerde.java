package kaudit.drill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * A plain JSON value serde (UTF-8 JSON text, no framing) over Jackson, which Kafka Streams already
 * brings. System property {@code slow.repartition.ms} makes deserializing a repartition-topic record
 * sleep that long, as {@link ConfluentAvroSerde} does (a backlog on the repartition topics).
 */
final class JsonSerde implements Serde<JsonNode> {
    static final ObjectMapper JSON = new ObjectMapper();
    private final long slowRepartitionMs = Long.getLong("slow.repartition.ms", 0L);

    @Override
    public Serializer<JsonNode> serializer() {
        return (topic, v) -> {
            if (v == null) {
                return null;
            }
            try {
                return JSON.writeValueAsBytes(v);
            } catch (IOException e) {
                throw new SerializationException("encode json for " + topic, e);
            }
        };
    }

    @Override
    public Deserializer<JsonNode> deserializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            if (slowRepartitionMs > 0 && topic.endsWith("-repartition")) {
                try {
                    Thread.sleep(slowRepartitionMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            try {
                return JSON.readTree(data);
            } catch (IOException e) {
                throw new SerializationException("decode json on " + topic, e);
            }
        };
    }
}
