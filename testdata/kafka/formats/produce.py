"""The formats scenario's producer: Confluent's own Python client (confluent-kafka) with its
ProtobufSerializer, JSONSerializer and AvroSerializer against the drill's Schema Registry, an
implementation of Confluent's wire format that this project did not write.

    produce.py produce   --format F --topic T --bootstrap B --registry URL [--descriptors FDS] IN OUT
    produce.py serialize --format F --topic T --registry URL [--descriptors FDS] IN OUT

IN holds one record a line, {"key": "...", "value": {...}} (the value in protobuf's JSON mapping
for protobuf); produce writes each with a String key and the format's serializer and writes
{"key", "partition", "offset"} a line to OUT, in order; serialize writes {"key", "hex"}: the
serializer's bytes of each value, for the drill to compare with the Java app's serde. FDS is a
FileDescriptorSet holding drill/orders.proto and its import (the drill compiles them), whose
messages the serializer registers as Confluent's clients do (base64 descriptors, the import a
reference under its own subject). F is protobuf, json or avro.
"""

import argparse
import json
import os
import sys

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.serialization import MessageField, SerializationContext, StringSerializer

HERE = os.path.dirname(os.path.abspath(__file__))


def protobuf_serializer(registry, descriptors):
    # the well-known types must be in the default pool before the drill's files that import them
    from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
    from google.protobuf import timestamp_pb2, wrappers_pb2  # noqa: F401
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer

    fds = descriptor_pb2.FileDescriptorSet()
    with open(descriptors, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.Default()
    for fd in fds.file:
        if not fd.name.startswith("google/protobuf/"):
            pool.Add(fd)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("drill.Order"))
    ser = ProtobufSerializer(cls, registry, {"use.deprecated.format": False})
    return lambda value, ctx: ser(json_format.ParseDict(value, cls()), ctx)


def json_serializer(registry):
    from confluent_kafka.schema_registry.json_schema import JSONSerializer

    with open(os.path.join(HERE, "order.schema.json")) as f:
        schema = f.read()
    ser = JSONSerializer(schema, registry)
    return lambda value, ctx: ser(value, ctx)


def avro_serializer(registry):
    from confluent_kafka.schema_registry.avro import AvroSerializer

    with open(os.path.join(HERE, "order.avsc")) as f:
        schema = f.read()
    ser = AvroSerializer(registry, schema)
    return lambda value, ctx: ser(value, ctx)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["produce", "serialize"])
    p.add_argument("--format", required=True, choices=["protobuf", "json", "avro"])
    p.add_argument("--topic", required=True)
    p.add_argument("--registry", required=True)
    p.add_argument("--bootstrap")
    p.add_argument("--descriptors")
    p.add_argument("infile")
    p.add_argument("outfile")
    a = p.parse_args()
    registry = SchemaRegistryClient({"url": a.registry})
    if a.format == "protobuf":
        serialize = protobuf_serializer(registry, a.descriptors)
    elif a.format == "json":
        serialize = json_serializer(registry)
    else:
        serialize = avro_serializer(registry)
    keys = StringSerializer("utf_8")
    ctx = SerializationContext(a.topic, MessageField.VALUE)
    with open(a.infile) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    out = open(a.outfile, "w")
    if a.mode == "serialize":
        for r in recs:
            out.write(json.dumps({"key": r["key"], "hex": serialize(r["value"], ctx).hex()}) + "\n")
        out.close()
        return 0
    # Java's partitioner (murmur2), acks=all, idempotent: as the drill's Go producer writes
    producer = Producer({"bootstrap.servers": a.bootstrap, "partitioner": "murmur2_random",
                         "enable.idempotence": True, "acks": "all", "linger.ms": 5})
    delivered = [None] * len(recs)
    errors = []

    def report(i):
        def cb(err, msg):
            if err is not None:
                errors.append(str(err))
            else:
                delivered[i] = {"key": recs[i]["key"], "partition": msg.partition(), "offset": msg.offset()}
        return cb

    for i, r in enumerate(recs):
        value = None if r.get("value") is None else serialize(r["value"], ctx)
        producer.produce(a.topic, key=keys(r["key"]), value=value, on_delivery=report(i))
        producer.poll(0)
    left = producer.flush(60)
    if left or errors or any(d is None for d in delivered):
        print("produce.py: %d not delivered, errors %s" % (left, errors[:5]), file=sys.stderr)
        return 1
    for d in delivered:
        out.write(json.dumps(d) + "\n")
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
