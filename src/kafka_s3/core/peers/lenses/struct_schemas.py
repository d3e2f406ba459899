"""The Connect schemas of Lenses stream-reactor's ``STOREAS AVRO``/``PARQUET`` records, as its S3 sink gives them
(facts sheet B3; LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``).

Each record reaches Lenses' sink as Connect values (LS ``sink/CloudSinkTask.put``: ``ValueToSinkDataConverter`` on
the key and value with the record's schemas, ``HeaderToSinkDataConverter`` on the headers, a Scala ``Map`` keeping
the last of repeated names):

- StringConverter → ``OPTIONAL_STRING_SCHEMA``, ByteArrayConverter → ``OPTIONAL_BYTES_SCHEMA`` (a null keeps the
  schema); JsonConverter with ``schemas.enable=true`` or the AvroConverter → the record's Connect schema (a null has
  none). Schemaless JSON has no schema: Lenses cannot write it as Avro/Parquet (LS ``sink/conversion/
  ToAvroDataConverter.convertSchema``: "Schema-less data is not supported"), and the configuration is refused
  (:func:`converter_kind`).
- a header: Connect's SimpleHeaderConverter types its text (``Values.parseString``): ``true``/``false`` a boolean, a
  whole number the smallest of int8/int16/int32/int64 holding it, another number float32 (float64 beyond a float's
  range), anything else a string (:func:`header_schema_and_value`).

In the envelope, key, value and headers are made optional by ``EnvelopeWithSchemaTransformer.toOptional``
(:func:`to_optional`) beside the ``MetadataSchema`` struct (:data:`METADATA_SCHEMA`). The records become rows in
:mod:`kafka_s3.core.peers.lenses.struct_rows`, the rows files in :mod:`kafka_s3.core.peers.lenses.struct_writer`.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

import numpy as np

from kafka_s3.core.converters.connect_schema import DATE, DECIMAL, TIME, ConnectSchema, SchemaError
from kafka_s3.core.errors import ConfigError, ConversionError, DataError

if TYPE_CHECKING:
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
KINDS = ("string", "bytearray", "struct")
INT_RANGES = (("int8", 7), ("int16", 15), ("int32", 31), ("int64", 63))
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
_TEMPORAL = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}:\d{2}\.\d{3}Z)?$|^\d{2}:\d{2}:\d{2}\.\d{3}Z$")
_DELIMITERS = set(':,{}[]"')
FLOAT32_MAX = float(np.finfo(np.float32).max)


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


def optional_schema(logical: Logical) -> ConnectSchema | None:
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
