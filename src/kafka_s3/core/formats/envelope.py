"""How formats shape records: the envelope, single-role batches, and the Avro schema of converted values.

The Avro and Parquet formats share these, so an object's value schema means the same thing in both, and every reader
rebuilds ``RECORD_SCHEMA`` batches the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.converters.base import Kind, Logical, ValueSchema
from kafka_s3.core.converters.bytearray import ByteArrayConverter
from kafka_s3.core.converters.connect_schema import AVRO_NAMESPACE, DEFAULT_RECORD_NAME, avro_full_name, fingerprint
from kafka_s3.core.converters.json import NULL_VALUES
from kafka_s3.core.errors import ConfigError, ConversionError
from kafka_s3.core.records import HEADERS_TYPE, RECORD_SCHEMA

if TYPE_CHECKING:
    from kafka_s3.core.formats.base import Format

NAMESPACE = "io.kafka_s3"
OPTIONAL_BYTES = ["null", "bytes"]  # Connect's OPTIONAL_BYTES_SCHEMA (ByteArrayConverter) as AvroData writes it
OPTIONAL_STRING = ["null", "string"]
HEADER_AVRO = {
    "type": "record",
    "name": "Header",
    "namespace": NAMESPACE,
    "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": OPTIONAL_BYTES, "default": None}],
}
HEADERS_AVRO = {"type": "array", "items": HEADER_AVRO}  # kafka-s3's own headers sidecar: any bytes, null values
# Confluent's headers sidecar (CS format/RecordViews.HeadersRecordView): an ARRAY of an unnamed STRUCT
# {key: STRING, value: STRING}, both required, the value Values.convertToString's text. AvroData names an unnamed struct
# io.confluent.connect.avro.ConnectDefault (SR AvroData.fromConnectSchema), with no connect.name and no union.
CONFLUENT_HEADER_AVRO = {
    "type": "record",
    "name": DEFAULT_RECORD_NAME,
    "namespace": AVRO_NAMESPACE,
    "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": "string"}],
}
CONFLUENT_HEADERS_AVRO = {"type": "array", "items": CONFLUENT_HEADER_AVRO}
CONFLUENT_HEADER_TYPE = pa.struct([pa.field("key", pa.string(), False), pa.field("value", pa.string(), False)])
CONFLUENT_HEADERS_TYPE = pa.list_(pa.field("element", CONFLUENT_HEADER_TYPE, False))
KAFKA_RECORD_AVRO = {
    "type": "record",
    "name": "KafkaRecord",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "topic", "type": "string"},
        {"name": "partition", "type": "int"},
        {"name": "offset", "type": "long"},
        {"name": "timestamp", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": None},
        {"name": "timestampType", "type": "int"},
        {"name": "key", "type": OPTIONAL_BYTES, "default": None},
        {"name": "value", "type": OPTIONAL_BYTES, "default": None},
        {"name": "headers", "type": HEADERS_AVRO},
    ],
}
KAFKA_RECORD_NAME = f"{NAMESPACE}.KafkaRecord"
# An envelope row as readers decode it: timestamps in milliseconds (or datetimes), as Kafka keeps them.
ENVELOPE_ROW = pa.struct(
    [pa.field(f.name, pa.timestamp("ms", tz="UTC") if f.name == "timestamp" else f.type) for f in RECORD_SCHEMA]
)
REQUIRED_ENVELOPE_FIELDS = ("topic", "partition", "offset", "timestampType")
NO_HEADERS = pa.scalar([], HEADERS_TYPE)


def headers_or_empty(records: pa.RecordBatch) -> pa.Array:
    """The headers column with null lists as empty ones: a record without headers has an empty list."""
    return records.column("headers").fill_null(NO_HEADERS)


def sidecar_headers(parts: list[pa.Array]) -> pa.Array:
    """An object's headers (``headers_or_empty`` columns) as its headers sidecar stores them.

    Confluent's form (``CONFLUENT_HEADERS_TYPE``: text values) whenever Confluent's sink could have written the
    object; if a header value is null or not UTF-8 text, which Confluent's sink refuses (DataException: a required
    STRING), the object keeps kafka-s3's own lossless form (``HEADERS_TYPE``, bytes and nulls) rather than failing or
    altering records. The choice depends only on the object's records, so re-runs write the same bytes.
    """
    headers = pa.concat_arrays(parts) if parts else pa.array([], HEADERS_TYPE)
    keys, values = pc.list_flatten(headers).flatten()
    if values.null_count:
        return headers
    try:
        text = values.cast(pa.string())
    except pa.ArrowInvalid:  # bytes that are not UTF-8
        return headers
    lengths = pc.list_value_length(headers).fill_null(0).to_numpy(zero_copy_only=False)
    offsets = pa.array(np.concatenate(([0], np.cumsum(lengths))), pa.int32())
    items = pa.StructArray.from_arrays([keys, text], fields=list(CONFLUENT_HEADER_TYPE))
    return pa.ListArray.from_arrays(offsets, items, type=CONFLUENT_HEADERS_TYPE)


def is_text_headers(headers: pa.Array) -> bool:
    """Whether a headers array holds Confluent's text values (else kafka-s3's bytes)."""
    value_type = headers.type.value_type.field("value").type
    return bool(pa.types.is_string(value_type) or pa.types.is_large_string(value_type))


def headers_from_text(headers: pa.Array) -> pa.Array:
    """Headers read from a Confluent sidecar (text values) as Kafka header bytes (their UTF-8)."""
    return headers.cast(HEADERS_TYPE)


def envelope_struct(records: pa.RecordBatch) -> pa.StructArray:
    """Whole records as one struct column, the shape the envelope's Avro schema describes."""
    columns = [headers_or_empty(records) if name == "headers" else records.column(name) for name in RECORD_SCHEMA.names]
    return pa.StructArray.from_arrays(columns, fields=list(RECORD_SCHEMA))


def envelope_batch(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    """Records from decoded envelope rows (dicts with the envelope's fields; timestamps in ms or datetimes).

    Raises :class:`EnvelopeFieldMissing` naming the first row without a required field, and pyarrow's errors for
    fields of the wrong type.
    """
    columns = pa.array(rows, ENVELOPE_ROW).flatten()
    for name in REQUIRED_ENVELOPE_FIELDS:
        column = columns[ENVELOPE_ROW.get_field_index(name)]
        if column.null_count:
            raise EnvelopeFieldMissing(name, column.is_null().index(True).as_py())
    batch = pa.RecordBatch.from_arrays(columns, schema=pa.schema(list(ENVELOPE_ROW))).cast(RECORD_SCHEMA)
    return batch.set_column(RECORD_SCHEMA.get_field_index("headers"), "headers", headers_or_empty(batch))


class EnvelopeFieldMissing(ValueError):
    """An envelope row without one of the fields every Kafka record has."""

    def __init__(self, field: str, row: int):
        super().__init__(f"envelope record without {field}")
        self.field = field
        self.row = row


def role_batch(length: int, **columns: pa.Array) -> pa.RecordBatch:
    """A ``RECORD_SCHEMA`` batch holding only one role's column (``value``, ``key`` or ``headers``); the rest null."""
    arrays = [columns[f.name] if f.name in columns else pa.nulls(length, f.type) for f in RECORD_SCHEMA]
    return pa.RecordBatch.from_arrays(arrays, schema=RECORD_SCHEMA)


def restored_batch(fmt: Format, topic: str, values: Logical) -> pa.RecordBatch:
    """Values read back from an object, encoded to Kafka bytes by the role's converter, in the role's column.

    Without a converter the values are raw bytes, as ByteArrayConverter (the default) gives them.
    """
    converter = fmt.converter or ByteArrayConverter({}, is_key=fmt.role == "keys")
    column = "key" if fmt.role == "keys" else "value"
    return role_batch(len(values), **{column: converter.from_logical(topic, values)})


# ----------------------------------------------------------------------------------- values <-> Avro schemas
class ObjectValues:
    """The converted values of one typed object, whose schema its first typed run fixes.

    A run of only nulls (tombstones, or null keys) has no schema of its own (JsonConverter gives it ``"null"``); it
    takes the object's schema, and waits for it when it comes first, so null keys never split a keys sidecar.
    """

    def __init__(self) -> None:
        self.first: Logical | None = None
        self._waiting = 0  # nulls met before the first typed run

    def runs(self, values: Logical) -> list[Logical]:
        """What to write now for ``values``, in order."""
        if values.schema is not None and values.schema.avro == "null":
            if self.first is None:
                self._waiting += len(values)
                return []
            return [_nulls_like(self.first, len(values))]
        out = []
        if self.first is None:
            self.first = values
            if self._waiting:
                out.append(_nulls_like(values, self._waiting))
                self._waiting = 0
        out.append(values)
        return out

    def leftover(self) -> Logical | None:
        """The nulls still waiting when the object closes: an object of only nulls."""
        return Logical("struct", pa.nulls(self._waiting), NULL_VALUES) if self._waiting else None


def _nulls_like(values: Logical, length: int) -> Logical:
    # pa.array, unlike pa.nulls, gives null structs valid children, which Parquet needs under required fields.
    return Logical(values.kind, pa.array([None] * length, values.array.type), values.schema)


def value_avro_schema(values: Logical, fmt: Format) -> Any:
    """The Avro schema of converted values: Connect's optional bytes/string schemas, or the value schema."""
    if values.kind == "bytes":
        return OPTIONAL_BYTES
    if values.kind == "string":
        return OPTIONAL_STRING
    if values.kind == "struct":
        assert values.schema is not None  # struct values always carry their schema
        return values.schema.avro
    raise ConversionError(schema_needed_message(fmt))


def plain_kind(avro: Any) -> Kind | None:
    """``bytes`` or ``string`` when an Avro schema holds raw values (optionally null), not typed ones.

    A ``"null"`` schema (tombstones only, or an empty object) holds no value at all: null bytes.
    """
    if avro == "null":
        return "bytes"
    branches = [b for b in avro if b != "null"] if isinstance(avro, list) else [avro]
    if len(branches) == 1 and branches[0] in ("bytes", "string"):
        kind: Kind = branches[0]
        return kind
    return None


def avro_value_schema(avro: Any, arrow: pa.DataType | None = None) -> ValueSchema:
    """The ValueSchema of typed values read back from an object. Raises SchemaError for unsupported schemas."""
    if arrow is None:
        from kafka_s3.core.converters.avro_data import arrow_type, expand

        arrow = arrow_type(expand(avro))
    record = next((b for b in avro if b != "null"), None) if isinstance(avro, list) else avro
    name = None
    if isinstance(record, dict) and record.get("type") == "record":
        name = avro_full_name(record)
        if name.startswith(f"{AVRO_NAMESPACE}.{DEFAULT_RECORD_NAME}"):
            name = None  # AvroData's name for structs Connect left unnamed
    return ValueSchema(avro=avro, arrow=arrow, fingerprint=fingerprint(avro), name=name)


def schema_needed_message(fmt: Format) -> str:
    format_key, converter_key = (
        ("keys.format.class", "key.converter")
        if fmt.role == "keys"
        else (
            "format.class",
            "value.converter",
        )
    )
    return (
        f"{format_key}={fmt.name} stores typed values, but {converter_key}=JsonConverter with "
        f"{converter_key}.schemas.enable=false gives schemaless JSON, which has no types to store. Set "
        f'{converter_key}.schemas.enable=true (records as {{"schema", "payload"}} envelopes), use StringConverter or '
        "ByteArrayConverter, or set store.envelope=true"
    )


def require_schema_converter(fmt: Format) -> None:
    """Fail at configuration time when a typed format meets schemaless JSON, rather than at the first record."""
    from kafka_s3.core.converters.json import JsonConverter

    if fmt.envelope or fmt.role == "headers":
        return
    if isinstance(fmt.converter, JsonConverter) and not fmt.converter.schemas_enabled:
        raise ConfigError(schema_needed_message(fmt), key="keys.format.class" if fmt.role == "keys" else "format.class")
