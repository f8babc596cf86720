package kaudit.drill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Confluent's JSON Schema framing written by hand: magic byte 0, the 4-byte big-endian schema id,
 * then the JSON text; the schema (the text of order.schema.json, exactly as the Python client's
 * JSONSerializer registers it, so both get one id) registered under {@code <topic>-value} with
 * schemaType JSON. Values are not validated against it.
 */
final class ConfluentJsonSchemaSerde implements Serde<JsonNode> {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final String registry;
    private final String schema;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final Map<String, Integer> ids = new ConcurrentHashMap<>();

    ConfluentJsonSchemaSerde(String registryUrl, String schema) {
        this.registry = registryUrl.replaceAll("/+$", "");
        this.schema = schema;
    }

    @Override
    public Serializer<JsonNode> serializer() {
        return (topic, v) -> {
            if (v == null) {
                return null;
            }
            ByteArrayOutputStream out = new ByteArrayOutputStream(64);
            out.write(0);
            out.writeBytes(ByteBuffer.allocate(4).putInt(register(topic + "-value")).array());
            try {
                out.writeBytes(JSON.writeValueAsBytes(v));
            } catch (IOException e) {
                throw new SerializationException("encode json for " + topic, e);
            }
            return out.toByteArray();
        };
    }

    @Override
    public Deserializer<JsonNode> deserializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            if (data.length < 5 || data[0] != 0) {
                throw new SerializationException("record on " + topic + " is not Confluent-framed JSON");
            }
            try {
                return JSON.readTree(java.util.Arrays.copyOfRange(data, 5, data.length));
            } catch (IOException e) {
                throw new SerializationException("decode json on " + topic, e);
            }
        };
    }

    private int register(String subject) {
        return ids.computeIfAbsent(subject, s -> {
            for (int attempt = 0; ; attempt++) {
                try {
                    String body = JSON.writeValueAsString(Map.of("schema", schema, "schemaType", "JSON"));
                    HttpResponse<String> res = http.send(HttpRequest.newBuilder(URI.create(registry + "/subjects/"
                                    + URLEncoder.encode(s, StandardCharsets.UTF_8) + "/versions"))
                            .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                            .timeout(Duration.ofSeconds(10))
                            .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
                    if (res.statusCode() != 200) {
                        throw new IOException("schema registry answered " + res.statusCode() + ": " + res.body());
                    }
                    return JSON.readTree(res.body()).get("id").asInt();
                } catch (IOException e) {
                    if (attempt == 4) {
                        throw new SerializationException("register schema under " + s, e);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SerializationException("interrupted", e);
                }
                try {
                    Thread.sleep(200L << attempt);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new SerializationException("interrupted", e);
                }
            }
        });
    }
}
