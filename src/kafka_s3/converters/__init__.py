"""Converters: Kafka key/value bytes <-> logical values, named as Kafka Connect names them."""

from ..registry import Registry

REGISTRY: Registry = Registry("converter", "value.converter")
REGISTRY.register(
    "bytearray",
    "kafka_s3.converters.bytearray:ByteArrayConverter",
    aliases=("org.apache.kafka.connect.converters.ByteArrayConverter", "ByteArrayConverter"),
)
REGISTRY.register(
    "string",
    "kafka_s3.converters.string:StringConverter",
    aliases=("org.apache.kafka.connect.storage.StringConverter", "StringConverter"),
)
REGISTRY.register(
    "json",
    "kafka_s3.converters.json:JsonConverter",
    aliases=("org.apache.kafka.connect.json.JsonConverter", "JsonConverter"),
)
REGISTRY.register(
    "avro",
    "kafka_s3.converters.avro:AvroConverter",
    aliases=("io.confluent.connect.avro.AvroConverter", "AvroConverter"),
)
