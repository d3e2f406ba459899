"""Lenses stream-reactor's ``STOREAS AVRO``/``PARQUET`` objects, written as its S3 sink writes them (facts sheet B3).

LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``. The reader is :mod:`kafka_s3.core.peers.lenses
.struct`; the records become rows (envelope or plain) in :mod:`kafka_s3.core.peers.lenses.struct_rows`, whose Connect
schemas are :mod:`kafka_s3.core.peers.lenses.struct_schemas`'. Here the rows become files:

**Avro** (LS ``formats/writer/AvroFormatWriter``): a ``DataFileWriter`` with the codec of
``connect.s3.compression.codec`` (UNCOMPRESSED: ``null``), flushed after every record, so every block holds one
record. **Parquet** (LS ``formats/writer/ParquetFormatWriter``): ``AvroParquetWriter`` with parquet-mr's default
row group (128 MiB) and page (1 MiB) sizes and the codec; the Avro schema under ``parquet.avro.schema``. Its root must
be a record (parquet-avro ``AvroSchemaConverter.convert``), so plain Parquet needs record values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, BinaryIO

import fastavro
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_s3.core.errors import ConversionError
from kafka_s3.core.formats.avro_container import MAGIC
from kafka_s3.core.formats.avro_encoding import encode, varint, varints
from kafka_s3.core.formats.base import FileContext, FormatWriter
from kafka_s3.core.formats.compression import avro_block_compressor
from kafka_s3.core.formats.framing import SizeGrouper
from kafka_s3.core.formats.parquet import SinkFile, row_sizes
from kafka_s3.core.peers.lenses.java_json import java_hashmap_order
from kafka_s3.core.peers.lenses.struct_rows import LensesStructWriter, converters_of, parquet_widths

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter, Logical

#: parquet-mr ``ParquetWriter.DEFAULT_BLOCK_SIZE`` (row group) and ``DEFAULT_PAGE_SIZE``
PARQUET_ROW_GROUP_BYTES = 128 * 1024 * 1024
PARQUET_PAGE_BYTES = 1024 * 1024


def _cast_widths(array: pa.Array) -> pa.Array:
    target = parquet_widths(array.type)
    return array if target == array.type else array.cast(target)


def java_schema_json(schema: Any) -> bytes:
    """An Avro schema's JSON as Java's ``Schema.toString()`` writes it (the ``avro.schema`` of a container and the
    ``parquet.avro.schema`` of parquet-avro): compact, attributes in the order they are put, and a named type's
    ``namespace`` left out when it is the enclosing one (``Schema.Name.writeName``); a reference to a type defined
    before is its name relative to the enclosing namespace (``writeNameRef``)."""
    return orjson.dumps(_java_names(schema, None))


def _java_names(schema: Any, space: str | None) -> Any:
    if isinstance(schema, list):
        return [_java_names(branch, space) for branch in schema]
    if isinstance(schema, str):
        namespace, _, name = schema.rpartition(".")
        return name if namespace and namespace == space else schema
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    inner = space
    if schema.get("type") in ("record", "enum", "fixed"):
        inner = schema.get("namespace", space)
    for key, value in schema.items():
        if key == "namespace" and value == space:
            continue
        if key == "fields":
            out[key] = [{k: _java_names(v, inner) if k == "type" else v for k, v in f.items()} for f in value]
        elif key in ("items", "values") or (key == "type" and not isinstance(value, str)):
            out[key] = _java_names(value, inner)
        else:
            out[key] = value
    return out


# ------------------------------------------------------------------------------------------------------- Avro
class LensesAvroWriter(FormatWriter):
    """An Avro container as Java's ``DataFileWriter`` writes it for Lenses: metadata ``avro.schema`` and
    ``avro.codec`` (in ``java.util.HashMap`` order), then one block per record (``fileWriter.flush()`` after each
    ``append``)."""

    def __init__(self, sink: BinaryIO, ctx: FileContext, records: LensesStructWriter, codec: str, level: int):
        self.sink = sink
        self.sync = ctx.sync_marker()
        self.records = records
        self.codec = codec
        self.compress = avro_block_compressor(codec, level)
        self._expanded: Any = None

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        rows = self.records.rows(records, values)
        if rows is None:
            return
        schema, array = rows
        if self.records.schema is None:
            self._start(schema)
        elif schema != self.records.schema:
            raise ConversionError(
                f"{self.records.ctx.topic}[{self.records.ctx.partition}]: the schema changed within one Avro object"
            )
        datums = encode(array, self._expanded).to_pylist()
        blocks = datums if self.codec == "null" else [self.compress(datum) for datum in datums]
        sizes = varints(np.fromiter((len(block) for block in blocks), dtype=np.int64, count=len(blocks))).to_pylist()
        one, sync = varint(1), self.sync  # one record per block: its count, size, bytes, sync marker
        self.sink.write(b"".join(one + size + block + sync for size, block in zip(sizes, blocks, strict=True)))

    def _start(self, schema: Any) -> None:
        try:
            self._expanded = fastavro.parse_schema(schema, expand=True)
        except Exception as exc:  # fastavro's SchemaParseException and friends
            raise ConversionError(f"the schema is not valid Avro: {exc}") from None
        self.records.schema = schema
        metadata = {"avro.schema": java_schema_json(schema), "avro.codec": self.codec.encode()}
        header = [MAGIC, varint(len(metadata))]
        for key in java_hashmap_order(metadata):
            header += [varint(len(key)), key.encode(), varint(len(metadata[key])), metadata[key]]
        header += [varint(0), self.sync]
        self.sink.write(b"".join(header))

    def close(self) -> None:
        if self.records.schema is None:  # no records (Lenses never writes such an object): an empty container
            self._start("null")


# ---------------------------------------------------------------------------------------------------- Parquet
class LensesParquetWriter(FormatWriter):
    """Parquet as Lenses' ``AvroParquetWriter`` settings have it: the codec, 128 MiB row groups, 1 MiB pages, the
    Avro schema under ``parquet.avro.schema`` and ``writer.model.name=avro``."""

    def __init__(self, sink: BinaryIO, records: LensesStructWriter, codec: str):
        self.sink = SinkFile(sink)
        self.records = records
        self.codec = codec
        self._writer: pq.ParquetWriter | None = None
        self._grouper = SizeGrouper(PARQUET_ROW_GROUP_BYTES)
        self._buffered: list[pa.RecordBatch] = []

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        rows = self.records.rows(records, values)
        if rows is None:
            return
        schema, array = rows
        if self.records.schema is None:
            self.records.schema = schema
        elif schema != self.records.schema:
            raise ConversionError(
                f"{self.records.ctx.topic}[{self.records.ctx.partition}]: the schema changed within one Parquet object"
            )
        batch = self._columns(schema, array)
        if self._writer is None:
            compression = "NONE" if self.codec == "none" else self.codec
            self._writer = pq.ParquetWriter(
                self.sink, batch.schema, compression=compression, data_page_size=PARQUET_PAGE_BYTES, store_schema=False
            )
            # parquet-avro's AvroWriteSupport.init: the Avro schema and the model, as the file's key-value metadata
            metadata = {"parquet.avro.schema": java_schema_json(schema).decode(), "writer.model.name": "avro"}
            self._writer.add_key_value_metadata({key: metadata[key] for key in java_hashmap_order(metadata)})
        start = 0
        for end in self._grouper.cuts(row_sizes(batch)):
            self._buffered.append(batch.slice(start, end - start))
            self._flush_group()
            start = end
        if start < batch.num_rows:
            self._buffered.append(batch.slice(start))

    def _columns(self, schema: Any, array: pa.Array) -> pa.RecordBatch:
        record = schema
        if not (isinstance(record, dict) and record.get("type") == "record" and isinstance(array, pa.StructArray)):
            raise ConversionError(
                f"{self.records.ctx.topic}[{self.records.ctx.partition}]: Lenses' Parquet objects hold records, and "
                f"this value's schema is {orjson.dumps(schema).decode()[:200]} (parquet-avro AvroSchemaConverter"
                ".convert: 'Avro schema must be a record')"
            )
        struct = array
        avro_fields = {f["name"]: f["type"] for f in record["fields"]}
        columns, fields = [], []
        for index, field in enumerate(struct.type):
            column = _cast_widths(struct.field(index))
            nullable = isinstance(avro_fields.get(field.name), list) and "null" in avro_fields[field.name]
            columns.append(column)
            fields.append(pa.field(field.name, column.type, nullable))
        return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))

    def _flush_group(self) -> None:
        if self._buffered and self._writer is not None:
            table = pa.Table.from_batches(self._buffered)
            self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
            self._buffered = []

    def close(self) -> None:
        if self._writer is None:  # no records (Lenses never writes such an object): an empty file
            self._writer = pq.ParquetWriter(self.sink, pa.schema([pa.field("value", pa.binary())]), store_schema=False)
        self._flush_group()
        self._writer.close()


# ------------------------------------------------------------------------------------------------- configuring
def lenses_struct_writer(
    config: Config,
    sink: BinaryIO,
    ctx: FileContext,
    value_converter: Converter | None,
    envelope: bool,
    parquet: bool,
    shared: LensesStructWriter | None = None,
) -> FormatWriter:
    """The writer of a Lenses sink configuration's ``STOREAS AVRO``/``PARQUET`` objects (checks the converters);
    ``shared``: the format's instance holding the batch's envelope rows (see ``LensesStructWriter.shared``)."""
    values, keys = converters_of(config, value_converter)
    records = LensesStructWriter(ctx, envelope, values, keys, parquet)
    if shared is not None:
        records.shared = shared
    if parquet:
        return LensesParquetWriter(sink, records, config["parquet.codec"])
    return LensesAvroWriter(sink, ctx, records, config["avro.codec"], config.get("avro.deflate.level", -1))
