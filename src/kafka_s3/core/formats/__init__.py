"""Object formats: one module per format, each with a writer (records -> bytes) and a reader (bytes -> records)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_s3.core.registry import Registry

if TYPE_CHECKING:
    from kafka_s3.core.formats.base import Format

REGISTRY: Registry[type[Format]] = Registry("format", "format.class")
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
REGISTRY.register(
    "block_gzip",
    "kafka_s3.core.formats.block_gzip:BlockGzipFormat",
    aliases=(
        "com.deviantart.kafka_connect_s3.BlockGZIPFormat",
        "com.deviantart.kafka_connect_s3.BlockGZIPFileWriter",
        "BlockGZIPFormat",
        "block-gzip",
        "blockgzip",
    ),
)
REGISTRY.register("lenses_json", "kafka_s3.core.formats.lenses_json:LensesJsonFormat")
REGISTRY.register("lenses_avro", "kafka_s3.core.formats.lenses_struct:LensesAvroFormat")
REGISTRY.register("lenses_parquet", "kafka_s3.core.formats.lenses_struct:LensesParquetFormat")
REGISTRY.register("lenses_text", "kafka_s3.core.formats.lenses_text:LensesTextFormat")
REGISTRY.register("lenses_bytes", "kafka_s3.core.formats.lenses_text:LensesBytesFormat")
REGISTRY.register("csv", "kafka_s3.core.formats.csv:CsvFormat", aliases=("CSV",))
REGISTRY.register("csv_withheaders", "kafka_s3.core.formats.csv:CsvWithHeadersFormat", aliases=("CSV_WITHHEADERS",))
