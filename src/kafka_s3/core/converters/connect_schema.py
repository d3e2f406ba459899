"""Kafka Connect's schemas, as JsonConverter writes them, mapped to Avro and Arrow.

One module (hence over 450 lines) owns every translation of Connect schemas so they cannot drift apart:

- Connect JSON schema -> :class:`ConnectSchema` -> Avro schema (the way Confluent's ``AvroData`` maps it with
  ``connect.meta.data=true``, as the S3 sink configures it: ``connect.doc``, ``connect.version``,
  ``connect.parameters``, ``connect.default``, ``connect.name``, ``connect.type``) and Arrow type;
- Avro schema (from a backup file) -> :class:`ConnectSchema`, so a restore can rebuild Connect envelopes;
- field defaults in both directions, and the byte encodings they use (base64 bytes, decimals).

Payloads (values) are in :mod:`kafka_s3.core.converters.connect_payload`.
"""

from __future__ import annotations

import binascii
import datetime as dt
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

import orjson
import pyarrow as pa

DECIMAL = "org.apache.kafka.connect.data.Decimal"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"
LOGICAL_BASE_TYPES = {DECIMAL: "bytes", DATE: "int32", TIME: "int32", TIMESTAMP: "int64"}

DECIMAL_SCALE = "scale"
DECIMAL_PRECISION = "connect.decimal.precision"
DEFAULT_DECIMAL_PRECISION = 64  # AvroData's CONNECT_AVRO_DECIMAL_PRECISION_DEFAULT
MAX_ARROW_DECIMAL_PRECISION = 76

AVRO_NAMESPACE = "io.confluent.connect.avro"
DEFAULT_RECORD_NAME = "ConnectDefault"
MAP_ENTRY_NAME = "MapEntry"

PRIMITIVE_ARROW = {
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
PRIMITIVE_AVRO = {
    "int8": "int",
    "int16": "int",
    "int32": "int",
    "int64": "long",
    "float": "float",
    "double": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
}
AVRO_PRIMITIVE_CONNECT = {
    "int": "int32",
    "long": "int64",
    "float": "float",
    "double": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
    "enum": "string",
    "fixed": "bytes",
}
CONTAINER_TYPES = ("array", "map", "struct")
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
EPOCH_DAY = dt.date(1970, 1, 1)


class SchemaError(ValueError):
    """A Connect or Avro schema that cannot be mapped (the caller adds the row or the object key)."""


def fingerprint(schema: Any) -> str:
    """A stable identity of a schema: SHA-256 of its JSON with sorted keys."""
    return hashlib.sha256(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True)
class ConnectSchema:
    """One Connect schema node (``org.apache.kafka.connect.data.Schema``).

    ``default`` is kept in payload form (as the Connect JSON schema carries it); ``fields`` are ``(name, schema)``
    pairs in order.
    """

    type: str
    optional: bool = False
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: Mapping[str, str] | None = None
    default: Any = None
    fields: tuple[tuple[str, ConnectSchema], ...] = ()
    items: ConnectSchema | None = None
    keys: ConnectSchema | None = None
    values: ConnectSchema | None = None

    @property
    def logical(self) -> str | None:
        """The logical type name (Decimal, Date, Time, Timestamp) when this schema is one."""
        return self.name if LOGICAL_BASE_TYPES.get(self.name or "") == self.type else None

    @property
    def array_items(self) -> ConnectSchema:
        """``items`` of an array schema (always set for arrays)."""
        assert self.items is not None, "an array schema has items"
        return self.items

    @property
    def map_keys(self) -> ConnectSchema:
        """``keys`` of a map schema (always set for maps)."""
        assert self.keys is not None, "a map schema has keys"
        return self.keys

    @property
    def map_values(self) -> ConnectSchema:
        """``values`` of a map schema (always set for maps)."""
        assert self.values is not None, "a map schema has values"
        return self.values

    @property
    def decimal_precision_scale(self) -> tuple[int, int]:
        params = self.parameters or {}
        return int(params.get(DECIMAL_PRECISION, DEFAULT_DECIMAL_PRECISION)), int(params.get(DECIMAL_SCALE, 0))

    # ------------------------------------------------------------------------------------------------ Connect JSON
    @classmethod
    def from_json(cls, obj: Any) -> ConnectSchema:
        """Parse the ``schema`` of a JsonConverter envelope."""
        if not isinstance(obj, dict):
            raise SchemaError(f"a Connect schema must be a JSON object, got {_describe(obj)}")
        typ = obj.get("type")
        if typ not in PRIMITIVE_ARROW and typ not in CONTAINER_TYPES:
            raise SchemaError(f"unknown Connect schema type {typ!r}")
        version = obj.get("version")
        if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
            raise SchemaError(f"schema version must be an integer, got {_describe(version)}")
        parameters = obj.get("parameters")
        if parameters is not None and not (
            isinstance(parameters, dict) and all(isinstance(v, str) for v in parameters.values())
        ):
            raise SchemaError("schema parameters must be an object of strings")
        optional = obj.get("optional", False)
        if not isinstance(optional, bool):
            raise SchemaError(f"'optional' must be true or false, got {_describe(optional)}")
        for key in ("name", "doc"):
            if obj.get(key) is not None and not isinstance(obj[key], str):
                raise SchemaError(f"schema {key} must be a string, got {_describe(obj[key])}")
        fields: tuple[tuple[str, ConnectSchema], ...] = ()
        items = keys = values = None
        if typ == "struct":
            raw_fields = obj.get("fields")
            if not isinstance(raw_fields, list):
                raise SchemaError("a struct schema needs a 'fields' array")
            fields = tuple((_field_name(f), cls.from_json(f)) for f in raw_fields)
            names = [name for name, _ in fields]
            if len(set(names)) != len(names):
                raise SchemaError(f"struct schema has duplicate field names: {names}")
        elif typ == "array":
            items = cls.from_json(obj.get("items"))
        elif typ == "map":
            keys, values = cls.from_json(obj.get("keys")), cls.from_json(obj.get("values"))
        schema = cls(
            typ,
            optional,
            obj.get("name"),
            version,
            obj.get("doc"),
            dict(parameters) if parameters is not None else None,
            obj.get("default"),
            fields,
            items,
            keys,
            values,
        )
        if schema.logical == DECIMAL:
            precision, scale = _checked_decimal(schema)
            if not 0 <= scale <= precision <= MAX_ARROW_DECIMAL_PRECISION:
                raise SchemaError(f"Decimal precision {precision} and scale {scale} are not supported")
        return schema

    def to_json(self) -> dict[str, Any]:
        """The schema as Connect's JsonConverter writes it (same key order)."""
        out: dict[str, Any] = {"type": self.type}
        if self.type == "struct":
            out["fields"] = [{**s.to_json(), "field": name} for name, s in self.fields]
        elif self.type == "array":
            out["items"] = self.array_items.to_json()
        elif self.type == "map":
            out["keys"] = self.map_keys.to_json()
            out["values"] = self.map_values.to_json()
        out["optional"] = self.optional
        for key in ("name", "version", "doc", "parameters", "default"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    # ------------------------------------------------------------------------------------------------------- Arrow
    def to_arrow(self) -> pa.DataType:
        """The Arrow type of values (nullability of nested fields follows ``optional``)."""
        logical = self.logical
        if logical == DECIMAL:
            precision, scale = self.decimal_precision_scale
            return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
        if logical == DATE:
            return pa.date32()
        if logical == TIME:
            return pa.time32("ms")
        if logical == TIMESTAMP:
            return pa.timestamp("ms", tz="UTC")
        if self.type == "array":
            items = self.array_items
            return pa.list_(pa.field("item", items.to_arrow(), nullable=items.optional))
        if self.type == "map":
            values = self.map_values
            value_field = pa.field("value", values.to_arrow(), nullable=values.optional)
            return pa.map_(self.map_keys.to_arrow(), value_field)
        if self.type == "struct":
            return pa.struct([pa.field(name, s.to_arrow(), nullable=s.optional) for name, s in self.fields])
        return PRIMITIVE_ARROW[self.type]

    # -------------------------------------------------------------------------------------------------------- Avro
    def to_avro(self) -> Any:
        """The Avro schema Confluent's AvroData derives with ``connect.meta.data=true`` (SC
        ``StorageSinkConnectorConfig.avroDataConfig``; SR ``AvroData.fromConnectSchema``)."""
        return _AvroSchemaBuilder().build(self)

    @classmethod
    def from_avro(cls, avro: Any, arrow: pa.DataType | None = None) -> ConnectSchema:
        """The Connect schema of Avro data, as AvroData reads it back.

        Avro has no int8/int16: ``arrow`` (the values' Arrow type, when known) restores those widths.
        """
        return _from_avro(avro, arrow, {}, None)


def _describe(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _field_name(field: Any) -> str:
    name = field.get("field") if isinstance(field, dict) else None
    if not isinstance(name, str):
        raise SchemaError("every struct field needs a 'field' name")
    return name


def _checked_decimal(schema: ConnectSchema) -> tuple[int, int]:
    try:
        return schema.decimal_precision_scale
    except ValueError:
        raise SchemaError(f"Decimal parameters must be integers, got {schema.parameters}") from None


# ----------------------------------------------------------------------------------------------------- to Avro
class _AvroSchemaBuilder:
    """Builds one Avro schema; a struct met twice becomes a reference to its first definition, as in AvroData."""

    def __init__(self) -> None:
        self._records: list[tuple[ConnectSchema, str]] = []  # (struct without optionality, Avro full name)
        self._unnamed: dict[str, int] = {}  # default name -> structs given it so far

    def build(self, schema: ConnectSchema) -> Any:
        defined = len(self._records)
        base = self._base(schema)
        if not (isinstance(base, str) and schema.type == "struct" and len(self._records) == defined):
            base = _with_connect_meta(base, schema)  # not a reference to a record defined before
        if not schema.optional:
            return base
        # Avro unions take their default from the first branch: a non-null default puts the type first.
        return [base, "null"] if schema.default is not None else ["null", base]

    def _base(self, s: ConnectSchema) -> Any:
        logical = s.logical
        if logical == DECIMAL:
            precision, scale = s.decimal_precision_scale
            return {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": scale}
        if logical == DATE:
            return {"type": "int", "logicalType": "date"}
        if logical == TIME:
            return {"type": "int", "logicalType": "time-millis"}
        if logical == TIMESTAMP:
            return {"type": "long", "logicalType": "timestamp-millis"}
        if s.type == "array":
            return {"type": "array", "items": self.build(s.array_items)}
        if s.type == "map":
            keys, values = s.map_keys, s.map_values
            if keys.type == "string" and not keys.optional:
                return {"type": "map", "values": self.build(values)}
            entry = ConnectSchema("struct", fields=(("key", keys), ("value", values)), name=s.name)
            return {"type": "array", "items": self._record(entry, MAP_ENTRY_NAME)}
        if s.type == "struct":
            return self._record(s, DEFAULT_RECORD_NAME)
        return PRIMITIVE_AVRO[s.type]

    def _record(self, s: ConnectSchema, default_name: str) -> Any:
        identity = replace(s, optional=False, default=None)
        for seen, full_name in self._records:
            if seen == identity:
                return full_name
        if s.name:
            namespace, _, name = s.name.rpartition(".")
        else:
            # Unnamed structs share AvroData's default name; later distinct ones get a numbered name so the
            # schema stays valid Avro (Avro forbids two different definitions of one name).
            count = self._unnamed[default_name] = self._unnamed.get(default_name, 0) + 1
            namespace, name = AVRO_NAMESPACE, default_name + ("" if count == 1 else str(count))
        full_name = f"{namespace}.{name}" if namespace else name
        if any(existing == full_name for _, existing in self._records):
            raise SchemaError(f"two different structs are both named {full_name}; Avro needs distinct names")
        self._records.append((identity, full_name))
        record: dict[str, Any] = {"type": "record", "name": name}
        if namespace:
            record["namespace"] = namespace
        if s.doc:
            record["doc"] = s.doc
        record["fields"] = [self._field(name, fs) for name, fs in s.fields]
        return record

    def _field(self, name: str, s: ConnectSchema) -> dict[str, Any]:
        field: dict[str, Any] = {"name": name, "type": self.build(s)}
        if s.doc:
            field["doc"] = s.doc
        if s.default is not None:
            field["default"] = _avro_default(s, s.default)
        elif s.optional:
            field["default"] = None
        return field


CONNECT_META_PROPS = ("connect.doc", "connect.version", "connect.parameters", "connect.default", "connect.name")
CONNECT_TYPE_PROP = "connect.type"


def _with_connect_meta(base: Any, s: ConnectSchema) -> Any:
    """SR ``AvroData.fromConnectSchema`` (``connectMetaData``): the Connect schema's doc, version, parameters (when not
    empty), default and name, and ``connect.type`` for int8/int16, as properties of the non-union Avro schema."""
    props: dict[str, Any] = {}
    if s.doc is not None:
        props["connect.doc"] = s.doc
    if s.version is not None:
        props["connect.version"] = s.version
    if s.parameters:
        props["connect.parameters"] = dict(s.parameters)
    if s.default is not None:
        props["connect.default"] = _connect_default(s, s.default)
    if s.name is not None:
        props["connect.name"] = s.name
    if s.type in ("int8", "int16"):
        props[CONNECT_TYPE_PROP] = s.type
    if not props:
        return base
    return {**(base if isinstance(base, dict) else {"type": base}), **props}


def _connect_default(s: ConnectSchema, value: Any) -> Any:
    """SR ``AvroData.defaultValueFromConnect`` as JSON: the payload form (bytes and decimals as base64, as Jackson
    prints a binary node), maps with non-string keys as ``{"key", "value"}`` entries."""
    if value is None:
        return None
    if s.type == "array":
        return [_connect_default(s.array_items, v) for v in value]
    if s.type == "map":
        keys, values = s.map_keys, s.map_values
        if keys.type == "string" and not keys.optional:
            return {k: _connect_default(values, v) for k, v in value.items()}
        return [{"key": _connect_default(keys, k), "value": _connect_default(values, v)} for k, v in value]
    if s.type == "struct":
        return {name: _connect_default(fs, value.get(name, fs.default)) for name, fs in s.fields}
    return value


def _avro_default(s: ConnectSchema, value: Any) -> Any:
    """A payload-form default as Avro's JSON default (bytes as ISO-8859-1 text, non-string maps as entries)."""
    if value is None:
        return None
    if s.logical == DECIMAL or s.type == "bytes":
        raw = _decimal_payload_bytes(value, s) if s.logical == DECIMAL else b64decode(value)
        return raw.decode("latin-1")
    if s.type == "array":
        items = s.array_items
        return [_avro_default(items, v) for v in value]
    if s.type == "map":
        keys, values = s.map_keys, s.map_values
        if keys.type == "string" and not keys.optional:
            return {k: _avro_default(values, v) for k, v in value.items()}
        return [{"key": _avro_default(keys, k), "value": _avro_default(values, v)} for k, v in value]
    if s.type == "struct":
        return {name: _avro_default(fs, value.get(name, fs.default)) for name, fs in s.fields}
    return value


# --------------------------------------------------------------------------------------------------- from Avro
def _from_avro(
    avro: Any, arrow: pa.DataType | None, named: dict[str, ConnectSchema], namespace: str | None
) -> ConnectSchema:
    """``named`` holds the records defined so far (Avro refers to a record by name after its first definition)."""
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(branches) != 1 or len(avro) != 2:
            raise SchemaError(f"Avro union {orjson.dumps(avro).decode()} has no Connect equivalent")
        return replace(_from_avro(branches[0], arrow, named, namespace), optional=True)
    if isinstance(avro, str):
        if avro in AVRO_PRIMITIVE_CONNECT:
            return _with_arrow_width(ConnectSchema(AVRO_PRIMITIVE_CONNECT[avro]), arrow)
        full_name = avro if "." in avro or namespace is None else f"{namespace}.{avro}"
        for candidate in (full_name, avro):
            if candidate in named:
                return named[candidate]
        raise SchemaError(f"unknown Avro type {avro!r}")
    if not isinstance(avro, dict):
        raise SchemaError(f"not an Avro schema: {avro!r}")
    return _read_connect_meta(avro, _from_avro_dict(avro, arrow, named, namespace))


def _read_connect_meta(avro: dict[str, Any], schema: ConnectSchema) -> ConnectSchema:
    """AvroData's ``connect.*`` properties back into the Connect schema (Confluent's sink and ours write them)."""
    changes: dict[str, Any] = {}
    for prop, attr in (("connect.doc", "doc"), ("connect.version", "version"), ("connect.name", "name")):
        if avro.get(prop) is not None:
            changes[attr] = avro[prop]
    if isinstance(avro.get("connect.parameters"), dict):
        changes["parameters"] = {str(k): str(v) for k, v in avro["connect.parameters"].items()}
    if avro.get("connect.default") is not None:
        changes["default"] = avro["connect.default"]
    if avro.get(CONNECT_TYPE_PROP) in ("int8", "int16") and schema.type == "int32":
        changes["type"] = avro[CONNECT_TYPE_PROP]
    return replace(schema, **changes) if changes else schema


def _from_avro_dict(
    avro: dict[str, Any], arrow: pa.DataType | None, named: dict[str, ConnectSchema], namespace: str | None
) -> ConnectSchema:
    typ = avro.get("type")
    logical = avro.get("logicalType")
    if logical is not None:
        return _logical_from_avro(avro, logical)
    if typ == "record":
        return _record_from_avro(avro, arrow, named, namespace)
    if typ == "array":
        if arrow is not None and pa.types.is_map(arrow):  # Connect maps with non-string keys
            item_arrow = pa.struct([("key", arrow.key_type), ("value", arrow.item_type)])
        else:
            item_arrow = arrow.value_type if arrow is not None and pa.types.is_list(arrow) else None
        items = _from_avro(avro["items"], item_arrow, named, namespace)
        if _is_map_entry(items):
            (_, key), (_, value) = items.fields
            return ConnectSchema("map", keys=key, values=value)
        return ConnectSchema("array", items=items)
    if typ == "map":
        value_arrow = arrow.item_type if arrow is not None and pa.types.is_map(arrow) else None
        return ConnectSchema(
            "map", keys=ConnectSchema("string"), values=_from_avro(avro["values"], value_arrow, named, namespace)
        )
    if typ in AVRO_PRIMITIVE_CONNECT:
        return _with_arrow_width(ConnectSchema(AVRO_PRIMITIVE_CONNECT[typ]), arrow)
    return _from_avro(typ, arrow, named, namespace)


def _with_arrow_width(schema: ConnectSchema, arrow: pa.DataType | None) -> ConnectSchema:
    if schema.type == "int32" and arrow is not None and arrow in (pa.int8(), pa.int16()):
        return replace(schema, type=str(arrow))
    return schema


def _logical_from_avro(avro: dict[str, Any], logical: str) -> ConnectSchema:
    base = avro.get("type")
    if logical == "decimal" and base in ("bytes", "fixed"):
        params = {DECIMAL_SCALE: str(avro.get("scale", 0)), DECIMAL_PRECISION: str(avro["precision"])}
        return ConnectSchema("bytes", name=DECIMAL, version=1, parameters=params)
    if logical == "date" and base == "int":
        return ConnectSchema("int32", name=DATE, version=1)
    if logical == "time-millis" and base == "int":
        return ConnectSchema("int32", name=TIME, version=1)
    if logical == "timestamp-millis" and base == "long":
        return ConnectSchema("int64", name=TIMESTAMP, version=1)
    raise SchemaError(f"Avro logical type {logical!r} on {base!r} is not supported")


def avro_full_name(named_type: dict[str, Any], enclosing_namespace: str | None = None) -> str:
    """The full name of an Avro record (or other named type), resolved as the Avro specification says."""
    name: str = named_type["name"]
    if "." in name:
        return name
    namespace = named_type.get("namespace", enclosing_namespace)
    return f"{namespace}.{name}" if namespace else name


def _record_from_avro(
    avro: dict[str, Any], arrow: pa.DataType | None, named: dict[str, ConnectSchema], namespace: str | None
) -> ConnectSchema:
    full_name = avro_full_name(avro, namespace)
    record_namespace = full_name.rpartition(".")[0] or None
    fields: list[tuple[str, ConnectSchema]] = []
    for field in avro["fields"]:
        field_arrow = None
        if arrow is not None and pa.types.is_struct(arrow) and arrow.get_field_index(field["name"]) >= 0:
            field_arrow = arrow.field(field["name"]).type
        fs = _from_avro(field["type"], field_arrow, named, record_namespace)
        if field.get("doc"):
            fs = replace(fs, doc=field["doc"])
        if field.get("default") is not None:
            fs = replace(fs, default=_payload_default(fs, field["default"]))
        fields.append((field["name"], fs))
    connect_name = None if full_name.startswith(f"{AVRO_NAMESPACE}.{DEFAULT_RECORD_NAME}") else full_name
    schema = ConnectSchema("struct", name=connect_name, doc=avro.get("doc"), fields=tuple(fields))
    named[full_name] = schema
    return schema


def _is_map_entry(schema: ConnectSchema) -> bool:
    """AvroData writes a map with non-string keys as an array of ``io.confluent.connect.avro.MapEntry`` records."""
    return (
        schema.type == "struct"
        and (schema.name or "").startswith(f"{AVRO_NAMESPACE}.{MAP_ENTRY_NAME}")
        and [name for name, _ in schema.fields] == ["key", "value"]
    )


def _payload_default(s: ConnectSchema, value: Any) -> Any:
    """The inverse of :func:`_avro_default`: an Avro JSON default in Connect's payload form."""
    if value is None:
        return None
    if s.logical == DECIMAL or s.type == "bytes":
        return binascii.b2a_base64(value.encode("latin-1"), newline=False).decode("ascii")
    if s.type == "array":
        items = s.array_items
        return [_payload_default(items, v) for v in value]
    if s.type == "map":
        keys, values = s.map_keys, s.map_values
        if keys.type == "string" and not keys.optional:
            return {k: _payload_default(values, v) for k, v in value.items()}
        return [[_payload_default(keys, e["key"]), _payload_default(values, e["value"])] for e in value]
    if s.type == "struct":
        return {name: _payload_default(fs, value.get(name)) for name, fs in s.fields}
    return value


def b64decode(value: Any) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"expected a base64 string, got {_describe(value)}")
    return binascii.a2b_base64(value, strict_mode=True)


def decimal_from_payload(value: Any, scale: int) -> Decimal:
    if isinstance(value, str):
        unscaled = int.from_bytes(b64decode(value), "big", signed=True)
        return Decimal(unscaled).scaleb(-scale)
    if isinstance(value, (int, float)) and not isinstance(value, bool):  # JsonConverter decimal.format=NUMERIC
        return Decimal(repr(value))
    raise TypeError(f"expected a Decimal (base64 string or number), got {_describe(value)}")


def _decimal_payload_bytes(value: Any, s: ConnectSchema) -> bytes:
    return decimal_bytes(decimal_from_payload(value, s.decimal_precision_scale[1]))


def decimal_bytes(value: Decimal) -> bytes:
    """The unscaled value as Java's ``BigInteger.toByteArray()``: minimal big-endian two's complement."""
    sign, digits, exponent = value.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    if isinstance(exponent, int) and exponent > 0:
        unscaled *= 10**exponent
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(length, "big", signed=True)
