"""Records as the rows of Lenses stream-reactor's ``STOREAS AVRO``/``PARQUET`` objects, envelope or plain (facts sheet
B3; LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``): shared by the Avro and Parquet writers
(:mod:`kafka_s3.core.peers.lenses.struct_writer`) and by the format's rotation (:meth:`LensesStructWriter
.row_schemas`). The schemas the rows follow are :mod:`kafka_s3.core.peers.lenses.struct_schemas`'.

**With ``store.envelope=true``** each record is the struct LS ``sink/transformers/EnvelopeWithSchemaTransformer
.envelopeSchema`` builds: ``key`` and ``value`` made optional by its ``toOptional`` (a struct loses its name, an
INT64 its Timestamp logical type; a field is left out when the record has no schema for it), ``headers`` a struct
with one field per header name, sorted by name (left out without headers), ``metadata`` the optional
``MetadataSchema`` struct ``{timestamp: int64, topic: string, partition: int32, offset: int64}``. Its Avro schema is
AvroData's (``ToAvroDataConverter``: ``enhanced.avro.schema.support=true``; the Connect schema → Avro schema mapping
is Confluent's AvroData, shared with the Confluent writers:
:meth:`~kafka_s3.core.converters.connect_schema.ConnectSchema.to_avro`): the unnamed structs become
``io.confluent.connect.avro.ConnectDefault``, ``ConnectDefault2``… in the order they are met. The envelope's schema
changes with the headers' names and types: Lenses then starts a new object (``FormatWriter
.rolloverFileOnSchemaChange``), and so does kafka-s3 (:meth:`LensesStructWriter.row_schemas`).

**Without the envelope** the value alone, with its own schema (the same Avro schema Confluent's AvroFormat derives).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from kafka_s3.core.converters.connect_schema import ConnectSchema, fingerprint
from kafka_s3.core.errors import ConfigError, ConversionError, DataError
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.peers.lenses.struct_schemas import (
    METADATA_SCHEMA,
    OPTIONAL_BYTES,
    OPTIONAL_STRING,
    converter_kind,
    header_schema_and_value,
    optional_schema,
    to_optional,
)
from kafka_s3.core.records import NO_TIMESTAMP_TYPE

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter, Logical


@dataclass
class _Role:
    """A key or value column of one batch: per row its envelope schema (``None``: no schema, the field is left out)
    and where its value is."""

    schemas: list[ConnectSchema | None]
    ids: list[str]
    arrays: list[pa.Array]  # per run
    run_of: np.ndarray
    index: np.ndarray  # row within its run

    def rows(self, start: int, stop: int) -> _Role:
        return _Role(
            self.schemas[start:stop], self.ids[start:stop], self.arrays, self.run_of[start:stop], self.index[start:stop]
        )


def _role(records: pa.RecordBatch, column: str, kind: str, converter: Converter, topic: str) -> _Role:
    raw = records.column(column)
    n = len(raw)
    zeros = np.zeros(n, dtype=np.int64)
    if kind in ("string", "bytearray"):
        schema = OPTIONAL_STRING if kind == "string" else OPTIONAL_BYTES
        array = converter.to_logical(topic, raw).runs[0][1].array if kind == "string" else raw  # its encoding
        return _Role([schema] * n, [kind] * n, [array], zeros, np.arange(n))
    converted = converter.to_logical(topic, raw)
    schemas: list[ConnectSchema | None] = []
    ids: list[str] = []
    arrays, run_of, index = [], zeros.copy(), np.arange(n)
    starts = [start for start, _ in converted.runs] + [n]
    for number, (start, logical) in enumerate(converted.runs):
        stop = starts[number + 1]
        arrays.append(logical.array)
        run_of[start:stop] = number
        index[start:stop] -= start
        envelope_schema = optional_schema(logical)
        typed = logical.kind == "struct"  # raw bytes and text keep their (optional) schema when null
        identity = logical.schema.fingerprint if logical.schema else logical.kind
        nulls = logical.array.is_null().to_pylist()
        for row in range(stop - start):
            # a null from JsonConverter/AvroConverter has no schema (SchemaAndValue.NULL): the field is left out
            absent = (nulls[row] and typed) or envelope_schema is None
            schemas.append(None if absent else envelope_schema)
            ids.append("" if absent else identity)
    return _Role(schemas, ids, arrays, run_of, index)


@dataclass(frozen=True)
class EnvelopeSchema:
    """One envelope's Connect schema, its Avro schema (AvroData's) and identity."""

    connect: ConnectSchema
    avro: Any
    fingerprint: str


_EnvelopeRows = tuple[list[EnvelopeSchema], tuple[_Role, _Role], list[dict[str, Any]]]


class LensesStructWriter:
    """Shared by the Avro and Parquet writers: records → (Avro schema, Arrow rows) runs, envelope or plain."""

    def __init__(
        self,
        ctx: FileContext,
        envelope: bool,
        value_converter: Converter,
        key_converter: Converter,
        parquet: bool,
    ):
        self.ctx = ctx
        self.envelope = envelope
        self.parquet = parquet
        self.value_converter = value_converter
        self.key_converter = key_converter
        self.value_kind = converter_kind(value_converter, "value.converter")
        self.key_kind = converter_kind(key_converter, "key.converter") if envelope else "bytearray"
        if parquet and not envelope and self.value_kind != "struct":
            raise ConfigError(
                f"value.converter={getattr(value_converter, 'name', '')}: Lenses' plain Parquet (STOREAS PARQUET "
                "without 'store.envelope'=true) needs record values (parquet-avro AvroSchemaConverter.convert: 'Avro "
                "schema must be a record'): use JsonConverter with schemas.enable=true or the AvroConverter, or add "
                "PROPERTIES('store.envelope'=true)",
                key="value.converter",
            )
        self._envelopes: dict[tuple[Any, ...], EnvelopeSchema] = {}
        self.schema: Any = None  # the object's Avro schema, fixed by its first record
        # The rotation asks the format for a whole batch's envelope schemas (where objects roll), then each object's
        # writer for its slice of that batch: the batch's envelope rows are kept here (on the format's instance,
        # which writers share) so that each record's key, value and headers are converted once.
        self.shared: LensesStructWriter = self
        self._last: tuple[np.ndarray, _EnvelopeRows] | None = None

    # -------------------------------------------------------------------------------------------- envelope rows
    def row_schemas(self, records: pa.RecordBatch) -> tuple[np.ndarray, list[str]]:
        """Per row, the fingerprint of its envelope's Avro schema (codes into the names): where it changes Lenses
        starts a new object."""
        envelopes, _, _ = self._envelope_rows(records)
        names: list[str] = []
        codes = np.zeros(len(envelopes), dtype=np.int64)
        seen: dict[str, int] = {}
        for row, envelope in enumerate(envelopes):
            code = seen.setdefault(envelope.fingerprint, len(names))
            if code == len(names):
                names.append(envelope.fingerprint)
            codes[row] = code
        return codes, names

    def _envelope_rows(self, records: pa.RecordBatch) -> _EnvelopeRows:
        offsets_np = records.column("offset").to_numpy(zero_copy_only=False)
        last = self.shared._last
        if last is not None and len(offsets_np):  # a slice of the batch the format converted for the rotation
            batch_offsets, (envelopes, (key, value), header_rows) = last
            start = int(np.searchsorted(batch_offsets, offsets_np[0]))
            stop = start + len(offsets_np)
            if stop <= len(batch_offsets) and np.array_equal(batch_offsets[start:stop], offsets_np):
                return envelopes[start:stop], (key.rows(start, stop), value.rows(start, stop)), header_rows[start:stop]
        rows = self._convert_envelope_rows(records)
        self.shared._last = (offsets_np, rows)
        return rows

    def _convert_envelope_rows(self, records: pa.RecordBatch) -> _EnvelopeRows:
        topic, partition = self.ctx.topic, self.ctx.partition
        offsets = records.column("offset").to_pylist()
        try:
            key = _role(records, "key", self.key_kind, self.key_converter, topic)
            value = _role(records, "value", self.value_kind, self.value_converter, topic)
        except ConversionError as exc:
            offset = offsets[exc.row] if exc.row is not None else "?"
            raise ConversionError(f"{topic}[{partition}] offset {offset}: {exc}") from None
        header_rows: list[dict[str, Any]] = []
        envelopes: list[EnvelopeSchema] = []
        for row, headers in enumerate(records.column("headers").to_pylist()):
            where = f"{topic}[{partition}] offset {offsets[row]}"
            typed: dict[str, tuple[ConnectSchema, Any]] = {}
            for header in headers or ():
                if header["value"] is None:
                    raise DataError(
                        f"{where}: header {header['key']!r} is null: Lenses' envelope cannot hold it (LS "
                        "EnvelopeWithSchemaTransformer.headersData puts it in a struct without its field)"
                    )
                typed[header["key"]] = header_schema_and_value(header["key"], header["value"], where)  # last wins
            header_rows.append({name: typed[name][1] for name in typed})
            identity = (
                key.ids[row],
                value.ids[row],
                tuple(sorted((name, s.type) for name, (s, _) in typed.items())),
            )
            envelope = self._envelopes.get(identity)
            if envelope is None:
                envelope = self._envelope_schema(key.schemas[row], value.schemas[row], typed)
                self._envelopes[identity] = envelope
            envelopes.append(envelope)
        return envelopes, (key, value), header_rows

    def _envelope_schema(
        self,
        key: ConnectSchema | None,
        value: ConnectSchema | None,
        headers: dict[str, tuple[ConnectSchema, Any]],
    ) -> EnvelopeSchema:
        """LS ``EnvelopeWithSchemaTransformer.envelopeSchema``: key, value, headers (sorted by name), metadata."""
        fields: list[tuple[str, ConnectSchema]] = []
        if key is not None:
            fields.append(("key", key))
        if value is not None:
            fields.append(("value", value))
        if headers:
            header_fields = tuple((name, to_optional(headers[name][0])) for name in sorted(headers))
            fields.append(("headers", ConnectSchema("struct", fields=header_fields)))
        fields.append(("metadata", METADATA_SCHEMA))
        connect = ConnectSchema("struct", fields=tuple(fields))
        avro = connect.to_avro()
        return EnvelopeSchema(connect, avro, fingerprint(avro))

    def rows(self, records: pa.RecordBatch, values: Logical | None) -> tuple[Any, pa.StructArray] | None:
        """The batch's records as one Avro schema and the Arrow rows it encodes (``None``: nothing to write)."""
        if len(records) == 0:
            return None
        if not self.envelope:
            return self._plain_rows(records, values)
        envelopes, (key, value), header_rows = self._envelope_rows(records)
        schemas = {e.fingerprint for e in envelopes}
        if len(schemas) > 1:
            raise ConversionError(
                f"{self.ctx.topic}[{self.ctx.partition}]: the envelope's schema changes within one batch of an "
                "object; Lenses' objects roll on schema changes"
            )
        envelope = envelopes[0]
        timestamps = records.column("timestamp")
        types = records.column("timestampType").to_pylist()
        for row, present in enumerate(timestamps.is_valid().to_pylist()):
            if not present or types[row] == NO_TIMESTAMP_TYPE:
                offset = records.column("offset")[row].as_py()
                raise DataError(
                    f"{self.ctx.topic}[{self.ctx.partition}] offset {offset}: the record has no timestamp; Lenses' "
                    "envelope requires metadata.timestamp (LS EnvelopeWithSchemaTransformer.MetadataSchema: int64)"
                )
        metadata = pa.StructArray.from_arrays(
            [
                pa.array(timestamps.cast(pa.int64()).to_numpy() // 1000, pa.int64()),  # epoch ms (µs in records)
                records.column("topic"),
                records.column("partition").cast(pa.int32()),
                records.column("offset").cast(pa.int64()),
            ],
            fields=[pa.field(n, t, nullable=False) for n, t in _METADATA_ARROW],
        )
        arrays: list[pa.Array] = []
        fields: list[pa.Field] = []
        for name, schema in envelope.connect.fields:
            if name == "key":
                array = _role_array(key)
            elif name == "value":
                array = _role_array(value)
            elif name == "headers":
                array = pa.array(header_rows, self._arrow(schema))
            else:
                array = metadata
            arrays.append(array)
            fields.append(pa.field(name, self._arrow(schema) if name != "metadata" else array.type, schema.optional))
        return envelope.avro, pa.StructArray.from_arrays(arrays, fields=fields)

    def _arrow(self, schema: ConnectSchema) -> pa.DataType:
        arrow = schema.to_arrow()
        if self.parquet:
            arrow = parquet_widths(arrow)
        return arrow

    def _plain_rows(self, records: pa.RecordBatch, values: Logical | None) -> tuple[Any, pa.StructArray]:
        """The value alone (LS ``AvroFormatWriter``/``ParquetFormatWriter`` on the record's value and its schema)."""
        if values is None:
            converted = self.value_converter.to_logical(self.ctx.topic, records.column("value"))
            if len(converted.runs) != 1:
                raise ConversionError("the value schema changes within one object; objects roll on schema changes")
            values = converted.runs[0][1]
        if values.kind in ("string", "bytes"):
            avro: Any = ["null", "string" if values.kind == "string" else "bytes"]
        elif values.schema is not None and values.schema.avro != "null":
            avro = values.schema.avro
        else:
            raise ConversionError(
                f"{self.ctx.topic}[{self.ctx.partition}]: a value without a schema cannot be written as Lenses' "
                "Avro/Parquet (LS ToAvroDataConverter.convertSchema)"
            )
        if values.array.null_count and not (isinstance(avro, list) and "null" in avro):
            row = values.array.is_null().index(True).as_py()
            offset = records.column("offset")[row].as_py()
            raise ConversionError(
                f"{self.ctx.topic}[{self.ctx.partition}] offset {offset}: a null value (tombstone) cannot be written "
                "as Lenses' plain Avro/Parquet: its schema is not optional (set behavior.on.null.values=ignore, or "
                "PROPERTIES('store.envelope'=true))"
            )
        return avro, values.array


_METADATA_ARROW = (("timestamp", pa.int64()), ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()))


def _role_array(role: _Role) -> pa.Array:
    if len(role.arrays) == 1:
        return role.arrays[0].take(pa.array(role.index))
    pieces = [role.arrays[run].slice(int(i), 1) for run, i in zip(role.run_of, role.index, strict=True)]
    return pa.concat_arrays(pieces)


def parquet_widths(arrow: pa.DataType) -> pa.DataType:
    """parquet-avro writes an Avro ``int`` (Connect int8/int16 too) as an unannotated INT32: int32 columns."""
    if arrow in (pa.int8(), pa.int16()):
        return pa.int32()
    if pa.types.is_struct(arrow):
        return pa.struct([pa.field(f.name, parquet_widths(f.type), f.nullable) for f in arrow])
    return arrow


def converters_of(config: Config, value_converter: Converter | None) -> tuple[Converter, Converter]:
    """The value and key converters of a configuration (``value_converter`` when the format was given one)."""
    from kafka_s3.core import converters

    if value_converter is None:
        value_converter = converters.REGISTRY.resolve(config["value.converter"])(
            config.with_prefix("value.converter."), False
        )
    key_converter = converters.REGISTRY.resolve(config["key.converter"])(config.with_prefix("key.converter."), True)
    return value_converter, key_converter
