package kaudit.drill;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.DescriptorValidationException;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.TimestampProto;
import com.google.protobuf.WrappersProto;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * A Confluent-framed Protobuf serde written by hand (Confluent's serdes are not on Maven Central):
 * magic byte 0, the 4-byte big-endian schema id, the message indexes (the zig-zag varint count
 * and indexes, one 0 byte for the first top-level message), then the message. It registers the
 * schema as Confluent's clients do: the file as the base64 of its FileDescriptorProto under
 * {@code <topic>-value}, each import other than google/protobuf/ first under a subject named
 * after its path, as a reference. The drill compiles orders.proto into a FileDescriptorSet (the
 * imports first, then the file), which both this serde and the Python client's
 * ProtobufSerializer load, so the two write the same bytes for the same message.
 */
final class ConfluentProtobufSerde implements Serde<DynamicMessage> {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final String registry;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final Map<String, Integer> ids = new ConcurrentHashMap<>(); // subject -> id
    private final FileDescriptorProto mainProto;
    private final List<FileDescriptorProto> imports = new ArrayList<>();
    final FileDescriptor file;

    /** Loads the FileDescriptorSet at path: its last file is the schema, the others its imports. */
    ConfluentProtobufSerde(String registryUrl, Path descriptors) throws IOException {
        this.registry = registryUrl.replaceAll("/+$", "");
        FileDescriptorSet set = FileDescriptorSet.parseFrom(Files.readAllBytes(descriptors));
        Map<String, FileDescriptor> built = new HashMap<>();
        built.put("google/protobuf/timestamp.proto", TimestampProto.getDescriptor());
        built.put("google/protobuf/wrappers.proto", WrappersProto.getDescriptor());
        FileDescriptor last = null;
        try {
            for (FileDescriptorProto p : set.getFileList()) {
                List<FileDescriptor> deps = new ArrayList<>();
                for (String d : p.getDependencyList()) {
                    FileDescriptor fd = built.get(d);
                    if (fd == null) {
                        throw new IOException("import " + d + " of " + p.getName() + " is not in " + descriptors);
                    }
                    deps.add(fd);
                }
                last = FileDescriptor.buildFrom(p, deps.toArray(new FileDescriptor[0]));
                built.put(p.getName(), last);
            }
        } catch (DescriptorValidationException e) {
            throw new IOException("build the descriptors of " + descriptors, e);
        }
        if (last == null) {
            throw new IOException(descriptors + " holds no file");
        }
        this.file = last;
        this.mainProto = set.getFile(set.getFileCount() - 1);
        for (int i = 0; i < set.getFileCount() - 1; i++) {
            imports.add(set.getFile(i));
        }
    }

    Descriptor message(String name) {
        return file.findMessageTypeByName(name);
    }

    @Override
    public Serializer<DynamicMessage> serializer() {
        return (topic, m) -> m == null ? null : serialize(topic, m);
    }

    @Override
    public Deserializer<DynamicMessage> deserializer() {
        return (topic, data) -> data == null ? null : deserialize(topic, data);
    }

    byte[] serialize(String topic, DynamicMessage m) {
        int id = register(topic + "-value");
        ByteArrayOutputStream out = new ByteArrayOutputStream(64);
        out.write(0);
        out.writeBytes(ByteBuffer.allocate(4).putInt(id).array());
        List<Integer> index = indexOf(m.getDescriptorForType());
        if (index.size() == 1 && index.get(0) == 0) {
            out.write(0);
        } else {
            zigzag(out, index.size());
            for (int i : index) {
                zigzag(out, i);
            }
        }
        out.writeBytes(m.toByteArray());
        return out.toByteArray();
    }

    private DynamicMessage deserialize(String topic, byte[] data) {
        if (data.length < 6 || data[0] != 0) {
            throw new SerializationException("record on " + topic + " is not Confluent-framed Protobuf");
        }
        int[] pos = {5};
        long n = readZigzag(data, pos);
        Descriptor d = null;
        if (n == 0) {
            d = file.getMessageTypes().get(0);
        } else {
            List<Descriptor> level = file.getMessageTypes();
            for (long i = 0; i < n; i++) {
                int idx = (int) readZigzag(data, pos);
                if (idx < 0 || idx >= level.size()) {
                    throw new SerializationException("message index " + idx + " on " + topic);
                }
                d = level.get(idx);
                level = d.getNestedTypes();
            }
        }
        try {
            return DynamicMessage.parseFrom(d, java.util.Arrays.copyOfRange(data, pos[0], data.length));
        } catch (InvalidProtocolBufferException e) {
            throw new SerializationException("decode protobuf on " + topic, e);
        }
    }

    /** The message's indexes: its position among the file's messages, then among its parent's. */
    private static List<Integer> indexOf(Descriptor d) {
        List<Integer> out = new ArrayList<>();
        while (d.getContainingType() != null) {
            out.add(0, d.getIndex());
            d = d.getContainingType();
        }
        out.add(0, d.getIndex());
        return out;
    }

    private static void zigzag(ByteArrayOutputStream out, long v) {
        long u = (v << 1) ^ (v >> 63);
        while ((u & ~0x7FL) != 0) {
            out.write((int) ((u & 0x7F) | 0x80));
            u >>>= 7;
        }
        out.write((int) u);
    }

    private static long readZigzag(byte[] b, int[] pos) {
        long u = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos[0] >= b.length) {
                throw new SerializationException("message indexes cut short");
            }
            int x = b[pos[0]++] & 0xFF;
            u |= (long) (x & 0x7F) << shift;
            if ((x & 0x80) == 0) {
                return (u >>> 1) ^ -(u & 1);
            }
        }
        throw new SerializationException("message index varint too long");
    }

    private int register(String subject) {
        return ids.computeIfAbsent(subject, s -> {
            try {
                List<Map<String, Object>> refs = new ArrayList<>();
                for (FileDescriptorProto p : imports) {
                    int version = registerAt(p.getName(), schemaOf(p), List.of()).get("version");
                    refs.add(Map.of("name", p.getName(), "subject", p.getName(), "version", version));
                }
                return registerAt(s, schemaOf(mainProto), refs).get("id");
            } catch (IOException e) {
                throw new SerializationException("register schema under " + s, e);
            }
        });
    }

    private static String schemaOf(FileDescriptorProto p) {
        return Base64.getEncoder().encodeToString(p.toByteArray());
    }

    /** POST /subjects/{s}/versions, then the version it got: POST /subjects/{s} (a lookup). */
    private Map<String, Integer> registerAt(String subject, String schema, List<Map<String, Object>> refs) throws IOException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("schema", schema);
        body.put("schemaType", "PROTOBUF");
        body.put("references", refs);
        String json = JSON.writeValueAsString(body);
        String path = registry + "/subjects/" + URLEncoder.encode(subject, StandardCharsets.UTF_8).replace("+", "%20");
        int id = call(HttpRequest.newBuilder(URI.create(path + "/versions"))
                .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                .POST(HttpRequest.BodyPublishers.ofString(json))).get("id").asInt();
        int version = call(HttpRequest.newBuilder(URI.create(path))
                .header("Content-Type", "application/vnd.schemaregistry.v1+json")
                .POST(HttpRequest.BodyPublishers.ofString(json))).get("version").asInt();
        return Map.of("id", id, "version", version);
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
