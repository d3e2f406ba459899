"""Lenses stream-reactor's Avro and Parquet objects, read as Lenses' S3 *source* reads them (facts sheet B3, B5).

With ``store.envelope=true`` each record is the struct LS ``sink/transformers/EnvelopeWithSchemaTransformer`` builds:

- ``key``, ``value``: optional, left out when the record had no schema for them;
- ``headers``: a struct with one optional field per header name, **sorted by name** (``headersSchema``), so the
  original header order is not kept (headers come back in name order);
- ``metadata``: ``{timestamp: int64, topic: string, partition: int32, offset: int64}`` (``MetadataSchema``).

A key, value or header becomes bytes as Connect's StringConverter/ByteArrayConverter and SimpleHeaderConverter give
them from the source's values: a string its UTF-8 text, bytes as they are, a struct, map or array its compact JSON, a
number or boolean its JSON text, null no bytes. The partition, offset and timestamp come from the metadata.

Without the envelope each record is the value alone (Parquet: a one-column table's column, or the row as a struct),
with no key, headers or timestamp; offsets are counted back from the last offset the object's name holds.

The writer of a Lenses sink configuration (``STOREAS AVRO``/``PARQUET``) is :mod:`kafka_s3.core.peers.lenses
.struct_writer`.
"""

from __future__ import annotations

import io
import json
from abc import abstractmethod
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.formats.base import FileContext, Format, FormatWriter, Role
from kafka_s3.core.peers.lenses.json import derived_offsets
from kafka_s3.core.records import CREATE_TIME, NO_TIMESTAMP_TYPE, RECORD_SCHEMA, TIMESTAMP_TYPE, batch_from_columns

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter
    from kafka_s3.core.peers.lenses.struct_rows import LensesStructWriter

BATCH = 4096


def datum_bytes(value: Any) -> bytes | None:
    """A decoded Avro/Parquet datum as the bytes Connect's converters give the source's value (module docstring)."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode()


class _LensesStructFormat(Format):
    """Objects of Lenses' sink with ``STOREAS AVRO``/``PARQUET``: envelope structs or values alone."""

    suffix = ""

    def __init__(
        self, config: Config, role: Role = "value", converter: Converter | None = None, envelope: bool = False
    ):
        super().__init__(config, role, converter, envelope)
        self._rows: LensesStructWriter | None = None
        from kafka_s3.core.peers.lenses.policy import SINK_CLASS

        if config and config.get("connector.class") == SINK_CLASS:  # a backup: refuse converters Lenses cannot write
            from kafka_s3.core.peers.lenses.struct_rows import LensesStructWriter, converters_of

            values, keys = converters_of(config, converter)
            LensesStructWriter(FileContext("", 0, 0), envelope, values, keys, self.suffix == ".parquet")

    @property
    def extension(self) -> str:
        return self.suffix  # LS FileExtensionNamer: Avro and Parquet keep theirs whatever the codec

    def writer(self, sink: BinaryIO, ctx: FileContext) -> FormatWriter:
        """Lenses' own objects (:mod:`kafka_s3.core.peers.lenses.struct_writer`), for a Lenses sink configuration."""
        from kafka_s3.core.peers.lenses.policy import SINK_CLASS

        if self.config.get("connector.class") != SINK_CLASS:
            raise ConfigError(
                f"format.class={self.name} is written by backups of a Lenses sink configuration (connector.class="
                f"{SINK_CLASS}, STOREAS {self.suffix[1:].upper()}) and read by restores of Lenses' buckets (topic "
                f"{ctx.topic}, partition {ctx.partition})",
                key="format.class",
            )
        from kafka_s3.core.peers.lenses.struct_writer import lenses_struct_writer

        rows = self._rows
        shared = (
            rows if rows is not None and (rows.ctx.topic, rows.ctx.partition) == (ctx.topic, ctx.partition) else None
        )
        return lenses_struct_writer(
            self.config, sink, ctx, self.converter, self.envelope, self.suffix == ".parquet", shared
        )

    def row_schemas(self, records: pa.RecordBatch) -> tuple[np.ndarray, list[str]] | None:
        """Per record, the identity of the schema Lenses' sink writes it with (envelope objects: it changes with the
        headers' names and types), for objects to roll where Lenses' do (LS ``FormatWriter
        .rolloverFileOnSchemaChange``); ``None`` without the envelope (the values' own schemas decide)."""
        if not self.envelope or len(records) == 0:
            return None
        from kafka_s3.core.peers.lenses.struct_rows import LensesStructWriter, converters_of

        topic, partition = records.column("topic")[0].as_py(), records.column("partition")[0].as_py()
        if self._rows is None or self._rows.ctx.topic != topic or self._rows.ctx.partition != partition:
            values, keys = converters_of(self.config, self.converter)
            ctx = FileContext(topic, partition, 0)
            self._rows = LensesStructWriter(ctx, True, values, keys, self.suffix == ".parquet")
        return self._rows.row_schemas(records)

    @abstractmethod
    def _datums(self, source: BinaryIO, ctx: FileContext) -> Iterator[Any]:
        """The object's records, decoded."""

    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        datums = list(self._datums(source, ctx))
        if not datums:
            return
        derived = derived_offsets(len(datums), ctx)
        for start in range(0, len(datums), BATCH):
            chunk = datums[start : start + BATCH]
            offsets = derived[start : start + BATCH]
            if self.envelope:
                yield self._envelope_batch(chunk, offsets, ctx, start)
            else:
                yield self._values_batch(chunk, offsets, ctx)

    def _values_batch(self, datums: list[Any], offsets: list[int], ctx: FileContext) -> pa.RecordBatch:
        n = len(datums)
        columns = {
            "key": pa.nulls(n, pa.binary()),
            "value": pa.array([datum_bytes(d) for d in datums], pa.binary()),
            "topic": pa.array([ctx.topic] * n, pa.string()),
            "partition": pa.array([ctx.partition] * n, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.nulls(n, TIMESTAMP_TYPE),
            "timestampType": pa.array([NO_TIMESTAMP_TYPE] * n, pa.int32()),
            "headers": pa.array([[]] * n, RECORD_SCHEMA.field("headers").type),
        }
        return pa.RecordBatch.from_arrays([columns[c] for c in RECORD_SCHEMA.names], schema=RECORD_SCHEMA)

    def _envelope_batch(self, datums: list[Any], offsets: list[int], ctx: FileContext, first: int) -> pa.RecordBatch:
        columns: dict[str, list[Any]] = {name: [] for name in RECORD_SCHEMA.names}
        for row, (datum, derived) in enumerate(zip(datums, offsets, strict=True), start=first):
            if not isinstance(datum, dict):
                raise FormatError("a Lenses envelope record must be a struct", ctx.object_key, f"record {row}")
            metadata = datum.get("metadata") or {}
            headers = datum.get("headers") or {}
            if not isinstance(metadata, dict) or not isinstance(headers, dict):
                raise FormatError("envelope metadata and headers must be structs", ctx.object_key, f"record {row}")
            timestamp = metadata.get("timestamp")
            columns["key"].append(datum_bytes(datum.get("key")))
            columns["value"].append(datum_bytes(datum.get("value")))
            columns["topic"].append(metadata.get("topic") or ctx.topic)
            columns["partition"].append(metadata.get("partition", ctx.partition))
            columns["offset"].append(metadata.get("offset", derived))
            columns["timestamp"].append(None if timestamp is None else timestamp * 1000)
            columns["timestampType"].append(NO_TIMESTAMP_TYPE if timestamp is None else CREATE_TIME)
            columns["headers"].append([{"key": k, "value": datum_bytes(v)} for k, v in headers.items()])
        return batch_from_columns(columns)


class LensesAvroFormat(_LensesStructFormat):
    """``STOREAS AVRO`` objects of Lenses' sink (Avro container files, any codec fastavro reads)."""

    name = "lenses_avro"
    suffix = ".avro"

    def _datums(self, source: BinaryIO, ctx: FileContext) -> Iterator[Any]:
        try:
            yield from fastavro.reader(source)
        except (ValueError, EOFError, StopIteration, fastavro.read.SchemaResolutionError) as exc:
            raise FormatError(f"not a readable Avro object: {exc}", ctx.object_key) from None


class LensesParquetFormat(_LensesStructFormat):
    """``STOREAS PARQUET`` objects of Lenses' sink."""

    name = "lenses_parquet"
    suffix = ".parquet"

    def _datums(self, source: BinaryIO, ctx: FileContext) -> Iterator[Any]:
        try:
            table = pq.read_table(io.BytesIO(source.read()))
        except (pa.ArrowInvalid, OSError) as exc:
            raise FormatError(f"not a readable Parquet object: {exc}", ctx.object_key) from None
        if not self.envelope and table.num_columns == 1:
            yield from table.column(0).to_pylist()  # a primitive value (Lenses' writer names the column)
        else:
            yield from table.to_pylist()
