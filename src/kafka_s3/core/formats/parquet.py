"""Confluent's ParquetFormat: typed values as columns, codec in the extension (``.snappy.parquet``).

Typed (struct) values become top-level columns; raw bytes and text one ``value`` column; keys a ``key`` column;
headers a ``headers`` column; envelope objects the ``RECORD_SCHEMA`` columns. The Avro schema of the columns is kept
under ``parquet.avro.schema``, where parquet-avro (Confluent's writer) keeps it, so a restore rebuilds the values'
schema. Row groups close at ``parquet.row.group.bytes`` of buffered data, counted per row so that grouping does not
depend on batching.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_s3.core.converters.base import Logical
from kafka_s3.core.converters.connect_schema import SchemaError
from kafka_s3.core.errors import ConversionError, FormatError
from kafka_s3.core.formats.base import FileContext, Format, FormatWriter, Role
from kafka_s3.core.formats.envelope import (
    NAMESPACE,
    ObjectValues,
    avro_value_schema,
    headers_from_text,
    headers_or_empty,
    is_text_headers,
    plain_kind,
    require_schema_converter,
    restored_batch,
    role_batch,
    sidecar_headers,
    value_avro_schema,
)
from kafka_s3.core.formats.framing import SizeGrouper
from kafka_s3.core.records import RECORD_SCHEMA

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter

EXTENSIONS = {
    "none": ".parquet",
    "snappy": ".snappy.parquet",
    "gzip": ".gz.parquet",
    "zstd": ".zstd.parquet",
    "lz4": ".lz4.parquet",
}
AVRO_SCHEMA_KEY = b"parquet.avro.schema"
# A value that is not a record is stored as a one-column record with one of these names.
WRAPPER_NAMES = {"value": "KafkaValue", "key": "KafkaKey"}


class ParquetFormat(Format):
    """Values, keys, headers or whole records as Parquet files (readable by pyarrow, DuckDB, Spark...)."""

    name = "parquet"

    def __init__(
        self, config: Config, role: Role = "value", converter: Converter | None = None, envelope: bool = False
    ):
        super().__init__(config, role, converter, envelope)
        require_schema_converter(self)
        self.codec = config["parquet.codec"]
        self.column = {"keys": "key", "headers": "headers"}.get(role, "value")

    @property
    def extension(self) -> str:
        return EXTENSIONS[self.codec]

    def writer(self, sink: BinaryIO, ctx: FileContext) -> FormatWriter:
        return _ParquetWriter(self, sink)

    def value_columns(self, values: Logical) -> pa.RecordBatch:
        """Converted values (or keys) as the file's columns; the schema metadata carries ``parquet.avro.schema``."""
        avro = value_avro_schema(values, self)
        array = values.array
        record = _record_branch(avro)
        if self.role == "value" and record is not None and pa.types.is_struct(array.type):
            return _flattened(array, record)
        wrapper = {
            "type": "record",
            "name": WRAPPER_NAMES[self.column],
            "namespace": NAMESPACE,
            "fields": [{"name": self.column, "type": avro}],
        }
        schema = pa.schema([pa.field(self.column, array.type)], metadata={AVRO_SCHEMA_KEY: orjson.dumps(wrapper)})
        return pa.RecordBatch.from_arrays([array], schema=schema)

    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        try:
            parquet = pq.ParquetFile(source)
        except (pa.ArrowException, OSError) as exc:
            raise FormatError(f"not a readable Parquet file ({exc})", ctx.object_key, "footer") from None
        metadata = parquet.schema_arrow.metadata or {}
        avro = orjson.loads(metadata[AVRO_SCHEMA_KEY]) if AVRO_SCHEMA_KEY in metadata else None
        for group in range(parquet.num_row_groups):
            try:
                table = parquet.read_row_group(group)
            except (pa.ArrowException, OSError) as exc:
                # A row group decodes whole or not at all: its records cannot be told apart.
                records = parquet.metadata.row_group(group).num_rows
                message = f"corrupt Parquet data ({exc}); the row group's {records} records cannot be told apart"
                ctx.skip(FormatError(message, ctx.object_key, f"row group {group + 1}"), records)
                continue
            for batch in table.to_batches():
                yield self._records(batch, avro, ctx)

    def _records(self, batch: pa.RecordBatch, avro: Any, ctx: FileContext) -> pa.RecordBatch:
        if self.envelope:
            try:
                return batch.select(RECORD_SCHEMA.names).cast(RECORD_SCHEMA)
            except (KeyError, pa.ArrowException) as exc:
                raise FormatError(f"not an envelope object ({exc})", ctx.object_key, "footer") from None
        if self.role == "headers":  # Confluent's sidecar holds text values, kafka-s3's own bytes
            headers = batch.column("headers")
            return role_batch(
                batch.num_rows, headers=headers_from_text(headers) if is_text_headers(headers) else headers
            )
        logical = self._logical(batch, avro, ctx)
        return restored_batch(self, ctx.topic, logical)

    def _logical(self, batch: pa.RecordBatch, avro: Any, ctx: FileContext) -> Logical:
        """The stored values with their schema: one wrapped column, or all columns as one record."""
        wrapped = isinstance(avro, dict) and avro.get("name") == WRAPPER_NAMES[self.column]
        if wrapped or avro is None:
            if batch.schema.names != [self.column]:
                raise FormatError(
                    f"expected one column {self.column!r}, found {batch.schema.names}", ctx.object_key, "footer"
                )
            array = batch.column(0)
            avro = (
                avro["fields"][0]["type"]
                if wrapped
                else ["null", "string" if pa.types.is_string(array.type) else "bytes"]
            )
        else:
            array = pa.StructArray.from_arrays(batch.columns, fields=list(batch.schema))
        kind = plain_kind(avro)
        if kind is not None:
            return Logical(kind, array.cast(pa.string() if kind == "string" else pa.binary()))
        try:
            return Logical("struct", array, avro_value_schema(avro, array.type))
        except SchemaError as exc:
            raise FormatError(f"unsupported value schema ({exc})", ctx.object_key, "footer") from None


def _record_branch(avro: Any) -> dict[str, Any] | None:
    """The record of a record schema or of an optional one (``["null", record]``); ``None`` for other schemas."""
    candidates = [b for b in avro if b != "null"] if isinstance(avro, list) else [avro]
    if len(candidates) == 1 and isinstance(candidates[0], dict) and candidates[0].get("type") == "record":
        return candidates[0]
    return None


def _flattened(array: pa.StructArray, record: dict[str, Any]) -> pa.RecordBatch:
    """A record's fields as top-level columns. A null record becomes a row of nulls, which needs optional fields."""
    fields = list(array.type)
    if array.null_count and any(not f.nullable for f in fields):
        row = array.is_null().index(True).as_py()
        raise ConversionError(
            "a null value cannot be written to Parquet columns of a record with required fields (use "
            "behavior.on.null.values=ignore, or store.envelope=true to keep tombstones)",
            row=row,
        )
    schema = pa.schema(fields, metadata={AVRO_SCHEMA_KEY: orjson.dumps(record)})
    return pa.RecordBatch.from_arrays(array.flatten(), schema=schema)


def row_sizes(array: pa.Array | pa.RecordBatch) -> np.ndarray:
    """An estimate of each row's uncompressed bytes (data only), from Arrow buffers, for row-group sizing."""
    if isinstance(array, pa.RecordBatch):
        total: np.ndarray = sum(
            (row_sizes(column) for column in array.columns), np.zeros(array.num_rows, dtype=np.int64)
        )
        return total
    t = array.type
    if pa.types.is_binary(t) or pa.types.is_string(t) or pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        lengths: np.ndarray = pc.binary_length(array).fill_null(0).to_numpy().astype(np.int64)
        return lengths
    if pa.types.is_struct(t):
        fields: np.ndarray = sum(
            (row_sizes(array.field(i)) for i in range(t.num_fields)), np.zeros(len(array), dtype=np.int64)
        )
        return fields
    if pa.types.is_list(t) or pa.types.is_map(t) or pa.types.is_large_list(t):
        offsets = array.offsets.to_numpy().astype(np.int64)
        child = (
            array.values
            if not pa.types.is_map(t)
            else pa.StructArray.from_arrays([array.keys, array.items], ["k", "v"])
        )
        cumulative = np.concatenate([[0], np.cumsum(row_sizes(child.slice(offsets[0], offsets[-1] - offsets[0])))])
        nested: np.ndarray = cumulative[offsets[1:] - offsets[0]] - cumulative[offsets[:-1] - offsets[0]]
        return nested
    return np.full(len(array), _fixed_width(t), dtype=np.int64)


def _fixed_width(t: pa.DataType) -> int:
    try:
        bits: int = t.bit_width
        return (bits + 7) // 8  # booleans: one byte, an upper bound of their bit
    except ValueError:  # a type without a fixed width that row_sizes does not itemise (e.g. null)
        return 0


class SinkFile:
    """What pyarrow needs around a sink that only has write/flush: a position it counts itself, and ``closed``."""

    closed = False

    def __init__(self, sink: BinaryIO):
        self._sink: BinaryIO | None = sink
        self._position = 0

    def write(self, data: bytes) -> int:
        if self._sink is not None:  # None: discarded, bytes go nowhere
            self._sink.write(data)
        self._position += len(data)
        return len(data)

    def discard(self) -> None:
        """Drop every later write: the object was abandoned and its sink may be closed."""
        self._sink = None

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        if self._sink is not None:
            self._sink.flush()


class _ParquetWriter(FormatWriter):
    """Buffers rows until a row group is full; the file schema is fixed by the first batch."""

    def __init__(self, fmt: ParquetFormat, sink: BinaryIO):
        self._format = fmt
        self._sink = SinkFile(sink)
        self._writer: pq.ParquetWriter | None = None
        self._grouper = SizeGrouper(fmt.config["parquet.row.group.bytes"])  # a backup setting: read when writing
        self._buffered: list[pa.RecordBatch] = []
        self._values = ObjectValues()
        self._headers: list[pa.Array] = []  # the headers role writes at close (see sidecar_headers)

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        if len(records) == 0:
            return
        if self._format.envelope:
            self._write(records)
        elif self._format.role == "headers":
            self._headers.append(headers_or_empty(records))
        else:
            assert values is not None  # the value and keys roles are given their converted values
            for run in self._values.runs(values):
                self._write(self._format.value_columns(run))

    def close(self) -> None:
        if self._format.role == "headers":  # one column "headers" (Confluent's RecordHeaders{headers} envelope)
            headers = sidecar_headers(self._headers)
            self._write(
                pa.RecordBatch.from_arrays([headers], schema=pa.schema([pa.field("headers", headers.type, False)]))
            )
        leftover = None if self._format.envelope or self._format.role == "headers" else self._values.leftover()
        if leftover is not None:
            self._write(self._format.value_columns(leftover))
        if self._writer is None:  # no records: an empty file with the role's plain column
            self._open(pa.schema([pa.field(self._format.column, pa.binary())]))
        self._write_group()
        assert self._writer is not None  # opened just above when no batch opened it
        self._writer.close()

    def discard(self) -> None:
        """pyarrow's writer closes itself when collected, writing a footer: closed now, into nothing."""
        self._sink.discard()
        self._buffered = []
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _write(self, batch: pa.RecordBatch) -> None:
        if self._writer is None:
            self._open(batch.schema)
        elif not batch.schema.equals(self._writer.schema, check_metadata=True):
            raise ConversionError(
                "the value schema changed within one Parquet object; objects roll on schema changes "
                "(schema.compatibility=NONE)"
            )
        start = 0
        for end in self._grouper.cuts(row_sizes(batch)):
            self._buffered.append(batch.slice(start, end - start))
            self._write_group()
            start = end
        if start < batch.num_rows:
            self._buffered.append(batch.slice(start))

    def _open(self, schema: pa.Schema) -> None:
        compression = "NONE" if self._format.codec == "none" else self._format.codec
        self._writer = pq.ParquetWriter(self._sink, schema, compression=compression)

    def _write_group(self) -> None:
        if self._buffered:
            assert self._writer is not None  # rows are buffered only after _write opened the writer
            table = pa.Table.from_batches(self._buffered)
            self._writer.write_table(table, row_group_size=max(table.num_rows, 1))
            self._buffered = []
