"""Object formats: one module per format, each with a writer (records -> bytes) and a reader (bytes -> records).

Confluent's formats (kafka-s3's own) are registered here; a peer's own formats live in its package and are registered
from there (``kafka_s3.core.peers``), when the registry is first used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_s3.core.registry import Registry

if TYPE_CHECKING:
    from kafka_s3.core.formats.base import Format

REGISTRY: Registry[type[Format]] = Registry("format", "format.class", more="kafka_s3.core.peers:register_formats")
REGISTRY.register(
    "json",
    "kafka_s3.core.formats.json:JsonFormat",
    aliases=("io.confluent.connect.s3.format.json.JsonFormat", "JsonFormat"),
)
REGISTRY.register(
    "bytearray",
    "kafka_s3.core.formats.bytearray:ByteArrayFormat",
    aliases=("io.confluent.connect.s3.format.bytearray.ByteArrayFormat", "ByteArrayFormat", "bytes"),
)
REGISTRY.register(
    "avro",
    "kafka_s3.core.formats.avro:AvroFormat",
    aliases=("io.confluent.connect.s3.format.avro.AvroFormat", "AvroFormat"),
)
REGISTRY.register(
    "parquet",
    "kafka_s3.core.formats.parquet:ParquetFormat",
    aliases=("io.confluent.connect.s3.format.parquet.ParquetFormat", "ParquetFormat"),
)
