"""Lenses stream-reactor's ``STOREAS AVRO``/``PARQUET`` objects, written as its S3 sink writes them (facts sheet B3).

LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``. The reader is :mod:`kafka_s3.core.formats
.lenses_struct`; the Connect schema → Avro schema mapping is Confluent's AvroData, shared with the Confluent writers
(:meth:`~kafka_s3.core.converters.connect_schema.ConnectSchema.to_avro`).

**Records.** Each record reaches Lenses' sink as Connect values (LS ``sink/CloudSinkTask.put``:
``ValueToSinkDataConverter`` on the key and value with the record's schemas, ``HeaderToSinkDataConverter`` on the
headers, a Scala ``Map`` keeping the last of repeated names):

- StringConverter → ``OPTIONAL_STRING_SCHEMA``, ByteArrayConverter → ``OPTIONAL_BYTES_SCHEMA`` (a null keeps the
  schema); JsonConverter with ``schemas.enable=true`` or the AvroConverter → the record's Connect schema (a null has
  none). Schemaless JSON has no schema: Lenses cannot write it as Avro/Parquet (LS ``sink/conversion/
  ToAvroDataConverter.convertSchema``: "Schema-less data is not supported"), and the configuration is refused.
- a header: Connect's SimpleHeaderConverter types its text (``Values.parseString``): ``true``/``false`` a boolean, a
  whole number the smallest of int8/int16/int32/int64 holding it, another number float32 (float64 beyond a float's
  range), anything else a string (:func:`header_schema_and_value`).

**With ``store.envelope=true``** each record is the struct LS ``sink/transformers/EnvelopeWithSchemaTransformer
.envelopeSchema`` builds: ``key`` and ``value`` made optional by its ``toOptional`` (a struct loses its name, an
INT64 its Timestamp logical type; a field is left out when the record has no schema for it), ``headers`` a struct
with one field per header name, sorted by name (left out without headers), ``metadata`` the optional
``MetadataSchema`` struct ``{timestamp: int64, topic: string, partition: int32, offset: int64}``. Its Avro schema is
AvroData's (``ToAvroDataConverter``: ``enhanced.avro.schema.support=true``): the unnamed structs become
``io.confluent.connect.avro.ConnectDefault``, ``ConnectDefault2``… in the order they are met. The envelope's schema
changes with the headers' names and types: Lenses then starts a new object (``FormatWriter
.rolloverFileOnSchemaChange``), and so does kafka-s3 (:meth:`LensesStructWriter.row_schemas`).

**Without the envelope** the value alone, with its own schema (the same Avro schema Confluent's AvroFormat derives).

**Avro** (LS ``formats/writer/AvroFormatWriter``): a ``DataFileWriter`` with the codec of
``connect.s3.compression.codec`` (UNCOMPRESSED: ``null``), flushed after every record, so every block holds one
record. **Parquet** (LS ``formats/writer/ParquetFormatWriter``): ``AvroParquetWriter`` with parquet-mr's default
row group (128 MiB) and page (1 MiB) sizes and the codec; the Avro schema under ``parquet.avro.schema``. Its root must
be a record (parquet-avro ``AvroSchemaConverter.convert``), so plain Parquet needs record values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, BinaryIO

import fastavro
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from kafka_s3.core.converters.connect_schema import DATE, DECIMAL, TIME, ConnectSchema, SchemaError, fingerprint
from kafka_s3.core.errors import ConfigError, ConversionError, DataError
from kafka_s3.core.formats.avro_container import MAGIC
from kafka_s3.core.formats.avro_encoding import encode, varint, varints
from kafka_s3.core.formats.base import FileContext, FormatWriter
from kafka_s3.core.formats.compression import avro_block_compressor
from kafka_s3.core.formats.framing import SizeGrouper
from kafka_s3.core.formats.java_json import java_hashmap_order
from kafka_s3.core.formats.parquet import SinkFile, row_sizes
from kafka_s3.core.records import NO_TIMESTAMP_TYPE

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter, Logical

OPTIONAL_STRING = ConnectSchema("string", optional=True)
OPTIONAL_BYTES = ConnectSchema("bytes", optional=True)
#: LS ``EnvelopeWithSchemaTransformer.MetadataSchema``: ``.optional()`` follows the first ``.field``, so the struct
#: itself is optional and its fields required
METADATA_SCHEMA = ConnectSchema(
    "struct",
    optional=True,
    fields=(
        ("timestamp", ConnectSchema("int64")),
        ("topic", ConnectSchema("string")),
        ("partition", ConnectSchema("int32")),
        ("offset", ConnectSchema("int64")),
    ),
)
#: parquet-mr ``ParquetWriter.DEFAULT_BLOCK_SIZE`` (row group) and ``DEFAULT_PAGE_SIZE``
PARQUET_ROW_GROUP_BYTES = 128 * 1024 * 1024
PARQUET_PAGE_BYTES = 1024 * 1024
KINDS = ("string", "bytearray", "struct")
INT_RANGES = (("int8", 7), ("int16", 15), ("int32", 31), ("int64", 63))
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_TEMPORAL = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}\.\d{3}Z)?$|^\d{2}:\d{2}:\d{2}\.\d{3}Z$")
_DELIMITERS = set(':,{}[]"')
FLOAT32_MAX = float(np.finfo(np.float32).max)


# ------------------------------------------------------------------------------------------------ Connect schemas
def to_optional(schema: ConnectSchema) -> ConnectSchema:
    """LS ``EnvelopeWithSchemaTransformer.toOptional``: an optional schema as it is; else Connect's optional schema of
    the type: the name, version, doc and parameters go, but a Decimal keeps its name and scale (version 1), Date and
    Time keep their logical type (doc and default too), a struct keeps its fields (unnamed); an INT64 is always
    ``OPTIONAL_INT64_SCHEMA`` (the Timestamp branch's result is dropped there)."""
    if schema.optional:
        return schema
    if schema.type == "bytes" and schema.name == DECIMAL:
        scale = (schema.parameters or {}).get("scale", "0")
        return ConnectSchema(
            "bytes",
            optional=True,
            name=DECIMAL,
            version=1,
            doc=schema.doc,
            parameters={"scale": scale},
            default=schema.default,
        )
    if schema.type == "int32" and schema.name in (DATE, TIME):
        return ConnectSchema(
            "int32", optional=True, name=schema.name, version=1, doc=schema.doc, default=schema.default
        )
    if schema.type == "array":
        return ConnectSchema("array", optional=True, items=schema.items)
    if schema.type == "map":
        return ConnectSchema("map", optional=True, keys=schema.keys, values=schema.values)
    if schema.type == "struct":
        return ConnectSchema("struct", optional=True, fields=schema.fields)
    return ConnectSchema(schema.type, optional=True)


def header_schema_and_value(name: str, raw: bytes, where: str) -> tuple[ConnectSchema, Any]:
    """A header's bytes as Connect's SimpleHeaderConverter gives them to the sink (``toConnectHeader``: UTF-8 text
    through ``Values.parseString``). Texts that parser would make an array, a map, a date, a time or a timestamp (and
    numbers beyond a long that are not decimals) are refused: kafka-s3 does not type them as Connect would."""
    text = raw.decode("utf-8", "replace")
    if not text:
        return ConnectSchema("string"), text
    token = text.strip()
    if token in ("true", "false"):  # a single-token literal (Values.canParseSingleTokenLiteral)
        return ConnectSchema("boolean"), token == "true"
    if token == "null":  # parsed as no value at all: Lenses' envelope cannot hold it (as a null header)
        raise DataError(
            f"{where}: header {name!r}={text!r}: Connect parses it as null, which Lenses' envelope cannot hold"
        )
    first = token[:1]
    if (
        (first, token[-1:]) in (("[", "]"), ("{", "}"))
        or _TEMPORAL.match(token)
        or ((first.isdigit() or first in "+-") and _DELIMITERS.intersection(token))
    ):
        raise DataError(
            f"{where}: header {name!r}={text!r}: Connect's SimpleHeaderConverter would type it as an array, map, "
            "date, time or timestamp, which kafka-s3 does not write in Lenses' Avro/Parquet envelope"
        )
    if (first.isdigit() or first in "+-.") and _NUMBER.match(token):
        try:
            number = Decimal(token)
        except InvalidOperation:
            return ConnectSchema("string"), text
        if number == number.to_integral_value():
            whole = int(number)
            for typ, bits in INT_RANGES:
                if -(1 << bits) <= whole < (1 << bits):
                    return ConnectSchema(typ), whole
        exponent = number.as_tuple().exponent
        if isinstance(exponent, int) and exponent != 0:  # BigDecimal.scale() != 0
            as_float = float(number)
            if abs(as_float) <= FLOAT32_MAX:
                return ConnectSchema("float"), float(np.float32(as_float))
            if as_float not in (float("inf"), float("-inf")):
                return ConnectSchema("double"), as_float
        raise DataError(
            f"{where}: header {name!r}={text!r}: Connect types it as a Decimal, which kafka-s3 does not write in "
            "Lenses' Avro/Parquet envelope"
        )
    return ConnectSchema("string"), text


def converter_kind(converter: Converter, setting: str) -> str:
    """``string``, ``bytearray`` or ``struct`` (values with Connect schemas: JsonConverter with schemas, Avro); a
    schemaless JsonConverter is refused naming ``setting``."""
    name = getattr(converter, "name", "")
    if name == "json" and not getattr(converter, "schemas_enabled", True):
        raise ConfigError(
            f"{setting}=JsonConverter with schemas.enable=false gives Lenses' sink schemaless values, which it cannot "
            "write as Avro or Parquet (LS ToAvroDataConverter.convertSchema: 'Schema-less data is not supported for "
            f"Avro/Parquet'): set {setting}.schemas.enable=true, use StringConverter or ByteArrayConverter, or "
            "STOREAS JSON",
            key=setting,
        )
    if name in ("string", "bytearray"):
        return name
    return "struct"


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
        envelope_schema = _optional_schema(logical)
        typed = logical.kind == "struct"  # raw bytes and text keep their (optional) schema when null
        identity = logical.schema.fingerprint if logical.schema else logical.kind
        nulls = logical.array.is_null().to_pylist()
        for row in range(stop - start):
            # a null from JsonConverter/AvroConverter has no schema (SchemaAndValue.NULL): the field is left out
            absent = (nulls[row] and typed) or envelope_schema is None
            schemas.append(None if absent else envelope_schema)
            ids.append("" if absent else identity)
    return _Role(schemas, ids, arrays, run_of, index)


def _optional_schema(logical: Logical) -> ConnectSchema | None:
    """The envelope's schema of converted values (``None``: they have none, the field is left out)."""
    if logical.kind == "string":
        return OPTIONAL_STRING
    if logical.kind == "bytes":
        return OPTIONAL_BYTES
    if logical.kind == "json":
        raise ConversionError("schemaless JSON cannot be written in Lenses' Avro/Parquet envelope (no schema)")
    if logical.schema is None or logical.schema.avro == "null":
        return None
    try:
        return to_optional(ConnectSchema.from_avro(logical.schema.avro, logical.schema.arrow))
    except SchemaError as exc:
        raise ConversionError(f"the value schema has no Connect equivalent: {exc}") from None


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
            arrow = _parquet_widths(arrow)
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


def _parquet_widths(arrow: pa.DataType) -> pa.DataType:
    """parquet-avro writes an Avro ``int`` (Connect int8/int16 too) as an unannotated INT32: int32 columns."""
    if arrow in (pa.int8(), pa.int16()):
        return pa.int32()
    if pa.types.is_struct(arrow):
        return pa.struct([pa.field(f.name, _parquet_widths(f.type), f.nullable) for f in arrow])
    return arrow


def _cast_widths(array: pa.Array) -> pa.Array:
    target = _parquet_widths(array.type)
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
def converters_of(config: Config, value_converter: Converter | None) -> tuple[Converter, Converter]:
    """The value and key converters of a configuration (``value_converter`` when the format was given one)."""
    from kafka_s3.core import converters

    if value_converter is None:
        value_converter = converters.REGISTRY.resolve(config["value.converter"])(
            config.with_prefix("value.converter."), False
        )
    key_converter = converters.REGISTRY.resolve(config["key.converter"])(config.with_prefix("key.converter."), True)
    return value_converter, key_converter


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
