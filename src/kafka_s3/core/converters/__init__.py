"""Converters: Kafka key/value bytes <-> logical values, named as Kafka Connect names them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_s3.core.registry import Registry

if TYPE_CHECKING:
    from kafka_s3.core.converters.base import Converter

REGISTRY: Registry[type[Converter]] = Registry("converter", "value.converter")
REGISTRY.register(
    "bytearray",
    "kafka_s3.core.converters.bytearray:ByteArrayConverter",
    aliases=("org.apache.kafka.connect.converters.ByteArrayConverter", "ByteArrayConverter"),
)
REGISTRY.register(
    "string",
    "kafka_s3.core.converters.string:StringConverter",
    aliases=("org.apache.kafka.connect.storage.StringConverter", "StringConverter"),
)
REGISTRY.register(
    "json",
    "kafka_s3.core.converters.json:JsonConverter",
    aliases=("org.apache.kafka.connect.json.JsonConverter", "JsonConverter"),
)
REGISTRY.register(
    "avro",
    "kafka_s3.io.schema_registry.converter:AvroConverter",
    aliases=("io.confluent.connect.avro.AvroConverter", "AvroConverter"),
)
