"""Avro schemas and values as Arrow types and values (the Avro counterpart of :mod:`.connect`).

Every Avro type has an Arrow type, so Avro data keeps its types in Parquet and Avro objects:

=====================================  ==========================================================================
Avro                                   Arrow
=====================================  ==========================================================================
null, boolean, int, long               null, bool, int32, int64
float, double, bytes, string           float32, float64, binary, string
enum                                   string (the symbol)
fixed                                  fixed_size_binary(size)
record                                 struct (a field is nullable when its type is a union with null)
array / map                            list / map<string, ...>
``[null, T]`` / ``[T, null]``          T, nullable
``[A, B, ...]`` (several non-null)     struct with one nullable field per branch, named as Confluent's AvroData
                                       names union members (``int``, ``string``, a named type's simple name); the
                                       one set field is the branch, none set is null
decimal (bytes or fixed)               decimal128(p, s) (decimal256 above 38 digits)
date, time-millis, time-micros         date32, time32[ms], time64[us]
timestamp-millis/-micros/-nanos        timestamp[ms/us/ns, UTC]
local-timestamp-millis/-micros/-nanos  timestamp[ms/us/ns] (no time zone)
uuid                                   string
=====================================  ==========================================================================

Arrays of ``io.confluent.connect.avro.MapEntry`` records (AvroData's maps with non-string keys) are Arrow maps, as
:mod:`.connect` reads them. Schemas are handled *expanded* (``fastavro.parse_schema(..., expand=True)``): every
named type is written out where it is used, under its full name. Recursive schemas have no Arrow type and are refused.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from decimal import Decimal
from functools import lru_cache
from typing import Any

import fastavro
import orjson
import pyarrow as pa

from kafka_s3.core.converters.connect_schema import AVRO_NAMESPACE, MAP_ENTRY_NAME, SchemaError

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
NAMED = ("record", "enum", "fixed")
PRIMITIVE_ARROW = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
TIMESTAMP_UNITS = {
    "timestamp-millis": ("ms", "UTC"),
    "timestamp-micros": ("us", "UTC"),
    "timestamp-nanos": ("ns", "UTC"),
    "local-timestamp-millis": ("ms", None),
    "local-timestamp-micros": ("us", None),
    "local-timestamp-nanos": ("ns", None),
}
MAX_DECIMAL_PRECISION = 76
_FASTAVRO_KEYS = ("__fastavro_parsed", "__named_schemas")

Adapter = Callable[[Any], Any]


# ------------------------------------------------------------------------------------------------------ schemas
def expand(schema: Any) -> Any:
    """The schema with every named type written out where it is used (full names), without fastavro's markers.

    Raises :class:`SchemaError` for schemas that are not valid Avro.
    """
    return orjson.loads(_expanded_json(orjson.dumps(schema)))


@lru_cache(maxsize=256)
def _expanded_json(text: bytes) -> bytes:
    try:
        parsed = fastavro.parse_schema(orjson.loads(text), expand=True, _write_hint=False)
    except Exception as exc:  # fastavro raises SchemaParseException, UnknownType, ValueError...
        raise SchemaError(f"not a valid Avro schema: {exc}") from None
    if isinstance(parsed, dict):
        parsed = {k: v for k, v in parsed.items() if k not in _FASTAVRO_KEYS}
    return orjson.dumps(parsed)


def type_name(schema: Any) -> str:
    """``record``, ``enum``, ``int``... of an (expanded) schema; ``union`` for a list."""
    if isinstance(schema, list):
        return "union"
    if isinstance(schema, str):
        return schema
    typ = schema["type"]
    return typ if isinstance(typ, str) else type_name(typ)


def non_null(branches: list[Any]) -> list[Any]:
    return [b for b in branches if b != "null"]


def nullable(schema: Any) -> bool:
    return schema == "null" or (isinstance(schema, list) and "null" in schema)


def is_general_union(schema: Any) -> bool:
    """A union with more than one non-null branch (an Arrow struct of members)."""
    return isinstance(schema, list) and len(non_null(schema)) > 1


def member_name(branch: Any) -> str:
    """The Arrow field of a union branch: a named type's simple name, else the type's name (Confluent's AvroData)."""
    if isinstance(branch, dict) and branch.get("type") in NAMED:
        name: str = branch["name"]
        return name.rpartition(".")[2]
    return type_name(branch)


def logical_type(schema: Any) -> str | None:
    return schema.get("logicalType") if isinstance(schema, dict) else None


def full_name(schema: Any) -> str | None:
    """The full name of a named (expanded) schema, or of the record of ``[null, record]``."""
    if isinstance(schema, list):
        branches = non_null(schema)
        return full_name(branches[0]) if len(branches) == 1 else None
    if isinstance(schema, dict) and schema.get("type") in NAMED:
        name: str = schema["name"]
        return name
    return None


def is_map_entry(schema: Any) -> bool:
    return (
        isinstance(schema, dict)
        and schema.get("type") == "record"
        and schema["name"].startswith(f"{AVRO_NAMESPACE}.{MAP_ENTRY_NAME}")
        and [f["name"] for f in schema["fields"]] == ["key", "value"]
    )


def arrow_type(schema: Any) -> pa.DataType:
    """The Arrow type of values of an expanded Avro schema (see the module's table)."""
    return _arrow_type(schema)


def arrow_field(name: str, schema: Any) -> pa.Field:
    return pa.field(name, _arrow_type(schema), nullable=nullable(schema))


def _arrow_type(schema: Any) -> pa.DataType:
    if isinstance(schema, list):
        branches = non_null(schema)
        if not branches:
            return pa.null()
        if len(branches) == 1:
            return _arrow_type(branches[0])
        names = [member_name(b) for b in branches]
        if len(set(names)) != len(names):
            raise SchemaError(f"union branches {names} would share an Arrow field name")
        return pa.struct(
            [pa.field(name, _arrow_type(b), nullable=True) for name, b in zip(names, branches, strict=True)]
        )
    if isinstance(schema, str):
        if schema in PRIMITIVE_ARROW:
            return PRIMITIVE_ARROW[schema]
        raise SchemaError(f"recursive Avro type {schema!r} has no Arrow type (recursive schemas are not supported)")
    typ = schema["type"]
    logical = schema.get("logicalType")
    if logical is not None:
        mapped = _logical_arrow(schema, typ, logical)
        if mapped is not None:
            return mapped
    if typ == "record":
        return pa.struct([arrow_field(f["name"], f["type"]) for f in schema["fields"]])
    if typ == "enum":
        return pa.string()
    if typ == "fixed":
        return pa.binary(int(schema["size"]))
    if typ == "array":
        items = schema["items"]
        if is_map_entry(items):
            key, value = items["fields"]
            return pa.map_(_arrow_type(key["type"]), arrow_field("value", value["type"]))
        return pa.list_(arrow_field("item", items))
    if typ == "map":
        return pa.map_(pa.string(), arrow_field("value", schema["values"]))
    return _arrow_type(typ)


def _logical_arrow(schema: dict[str, Any], typ: Any, logical: str) -> pa.DataType | None:
    """The Arrow type of a logical type on its base type; ``None`` for unknown ones (the base type applies)."""
    if logical == "decimal" and typ in ("bytes", "fixed"):
        precision, scale = int(schema["precision"]), int(schema.get("scale", 0))
        if not 0 <= scale <= precision <= MAX_DECIMAL_PRECISION:
            raise SchemaError(f"decimal precision {precision} and scale {scale} are not supported")
        return pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    if logical == "date" and typ == "int":
        return pa.date32()
    if logical == "time-millis" and typ == "int":
        return pa.time32("ms")
    if logical == "time-micros" and typ == "long":
        return pa.time64("us")
    if logical in TIMESTAMP_UNITS and typ == "long":
        unit, tz = TIMESTAMP_UNITS[logical]
        return pa.timestamp(unit, tz=tz)
    if logical == "uuid" and typ == "string":
        return pa.string()
    return None


# ------------------------------------------------------------------------------------------------------- values
def has_named_branches(schema: Any) -> bool:
    """Whether a general union somewhere has a named branch (decode with fastavro's ``return_named_type`` then)."""
    if isinstance(schema, list):
        if is_general_union(schema) and any(isinstance(b, dict) and b.get("type") in NAMED for b in schema):
            return True
        return any(has_named_branches(b) for b in schema)
    if not isinstance(schema, dict):
        return False
    typ = schema["type"]
    if typ == "record":
        return any(has_named_branches(f["type"]) for f in schema["fields"])
    if typ == "array":
        return has_named_branches(schema["items"])
    if typ == "map":
        return has_named_branches(schema["values"])
    return False


def datum_adapter(schema: Any, named_tuples: bool = False) -> Adapter | None:
    """A function turning a fastavro datum of ``schema`` into a value ``pa.array(..., arrow_type(schema))`` takes.

    ``None`` when datums need no change (the common case: no per-record Python work). ``named_tuples``: the datums
    were decoded with ``return_named_type=True`` (named branches of unions come as ``(name, value)`` tuples).
    """
    return _adapter(schema, named_tuples)


def _adapter(schema: Any, tuples: bool) -> Adapter | None:
    if isinstance(schema, list):
        branches = non_null(schema)
        if not branches:
            return None
        if len(branches) == 1:
            inner = _adapter(branches[0], tuples)
            unwrap = tuples and isinstance(branches[0], dict) and branches[0].get("type") in NAMED
            if not unwrap:
                return None if inner is None else (lambda v: None if v is None else inner(v))
            adapt_inner = inner or _identity
            return lambda v: None if v is None else adapt_inner(v[1] if isinstance(v, tuple) else v)
        return _union_adapter(branches, tuples)
    if isinstance(schema, str):
        return None
    typ, logical = schema["type"], schema.get("logicalType")
    if logical == "uuid":
        return lambda v: str(v) if isinstance(v, uuid.UUID) else v
    if typ == "record":
        fields = [(f["name"], a) for f in schema["fields"] if (a := _adapter(f["type"], tuples)) is not None]
        return None if not fields else (lambda v: _adapt_fields(v, fields))
    if typ == "array":
        items = schema["items"]
        if is_map_entry(items):
            key, value = (_adapter(f["type"], tuples) or _identity for f in items["fields"])
            return lambda v: [(key(e["key"]), value(e["value"])) for e in v]
        item = _adapter(items, tuples)
        return None if item is None else (lambda v: [item(x) for x in v])
    if typ == "map":
        adapt_value = _adapter(schema["values"], tuples)
        return None if adapt_value is None else (lambda v: {k: adapt_value(x) for k, x in v.items()})
    return None


def _adapt_fields(record: dict[str, Any], fields: list[tuple[str, Adapter]]) -> dict[str, Any]:
    for name, adapt in fields:  # in place: the datum was decoded for this record alone
        record[name] = adapt(record.get(name))
    return record


def _identity(value: Any) -> Any:
    return value


def _union_adapter(branches: list[Any], tuples: bool) -> Adapter:
    """A general union's value as the struct of members: the branch's member set, the others null."""
    names = [member_name(b) for b in branches]
    adapters = [_adapter(b, tuples) or _identity for b in branches]
    by_full_name = {b["name"]: i for i, b in enumerate(branches) if isinstance(b, dict) and b.get("type") in NAMED}
    matchers = [_matcher(b) for b in branches]

    def adapt(value: Any) -> Any:
        if value is None:
            return None
        index = None
        if isinstance(value, tuple) and len(value) == 2 and value[0] in by_full_name:
            index, value = by_full_name[value[0]], value[1]
        else:
            for i, matches in enumerate(matchers):
                if matches(value):
                    index = i
                    break
        if index is None:
            raise ValueError(f"a value of type {type(value).__name__} matches no branch of the union {names}")
        out = dict.fromkeys(names)
        out[names[index]] = adapters[index](value)
        return out

    return adapt


def _matcher(branch: Any) -> Callable[[Any], bool]:
    """Whether a decoded (untagged) value belongs to a branch, from its Python type (first matching branch wins)."""
    typ, logical = type_name(branch), logical_type(branch)
    if logical == "decimal":
        return lambda v: isinstance(v, Decimal)
    if logical == "date":
        return lambda v: isinstance(v, dt.date) and not isinstance(v, dt.datetime)
    if logical in ("time-millis", "time-micros"):
        return lambda v: isinstance(v, dt.time)
    if logical in TIMESTAMP_UNITS:
        return lambda v: isinstance(v, dt.datetime)
    if logical == "uuid":
        return lambda v: isinstance(v, (uuid.UUID, str))
    if typ == "boolean":
        return lambda v: isinstance(v, bool)
    if typ in ("int", "long"):
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if typ in ("float", "double"):
        return lambda v: isinstance(v, float)
    if typ == "string":
        return lambda v: isinstance(v, str)
    if typ == "bytes":
        return lambda v: isinstance(v, bytes)
    if typ == "fixed":
        size = int(branch["size"])
        return lambda v: isinstance(v, bytes) and len(v) == size
    if typ == "enum":
        symbols = set(branch["symbols"])
        return lambda v: isinstance(v, str) and v in symbols
    if typ == "array":
        return lambda v: isinstance(v, list)
    if typ == "map":
        return lambda v: isinstance(v, dict)
    if typ == "record":
        names = {f["name"] for f in branch["fields"]}
        return lambda v: isinstance(v, dict) and set(v) == names
    return lambda v: False


def datums_array(datums: list[Any], schema: Any, arrow: pa.DataType, named_tuples: bool = False) -> pa.Array:
    """fastavro datums as an Arrow array of ``arrow`` (= ``arrow_type(schema)``)."""
    adapt = datum_adapter(schema, named_tuples)
    if adapt is not None:
        datums = [None if d is None else adapt(d) for d in datums]
    return pa.array(datums, arrow)


# ------------------------------------------------------------------------------------------------------ defaults
def default_value(schema: Any, default: Any) -> Any:
    """An Avro JSON default (as a field's ``default`` carries it) as a value ``pa.array`` takes for the schema.

    Raises :class:`SchemaError` when the default does not fit the schema.
    """
    try:
        return _default(schema, default)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise SchemaError(f"default {orjson.dumps(default).decode()} does not fit {type_name(schema)}: {exc}") from None


def _default(schema: Any, value: Any) -> Any:
    if isinstance(schema, list):  # a union's default belongs to its first branch
        first = schema[0]
        if first == "null":
            if value is not None:
                raise ValueError("a union whose first branch is null can only default to null")
            return None
        inner = _default(first, value)
        return (
            {member_name(first): inner, **{member_name(b): None for b in non_null(schema)[1:]}}
            if is_general_union(schema)
            else inner
        )
    typ = type_name(schema)
    logical = logical_type(schema)
    if logical == "decimal":
        raw = value.encode("latin-1")
        return Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-int(schema.get("scale", 0)))
    if typ == "null":
        if value is not None:
            raise ValueError("null defaults to null only")
        return None
    if typ in ("bytes", "fixed"):
        raw = value.encode("latin-1")
        if typ == "fixed" and len(raw) != int(schema["size"]):
            raise ValueError(f"fixed of size {schema['size']} cannot default to {len(raw)} bytes")
        return raw
    if typ == "enum":
        if value not in schema["symbols"]:
            raise ValueError(f"{value!r} is not a symbol of the enum")
        return value
    if typ == "record":
        out = {}
        for field in schema["fields"]:
            if field["name"] in value:
                out[field["name"]] = _default(field["type"], value[field["name"]])
            elif "default" in field:
                out[field["name"]] = _default(field["type"], field["default"])
            else:
                raise ValueError(f"field {field['name']!r} has no value and no default")
        return out
    if typ == "array":
        items = schema["items"]
        if is_map_entry(items):
            key, val = items["fields"]
            return [(_default(key["type"], e["key"]), _default(val["type"], e["value"])) for e in value]
        return [_default(items, v) for v in value]
    if typ == "map":
        return {k: _default(schema["values"], v) for k, v in value.items()}
    if typ in ("int", "long"):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"expected an integer, got {type(value).__name__}")
        return value
    if typ in ("float", "double"):
        return float(value)
    if typ == "boolean":
        if not isinstance(value, bool):
            raise TypeError(f"expected true or false, got {type(value).__name__}")
        return value
    if typ == "string":
        if not isinstance(value, str):
            raise TypeError(f"expected a string, got {type(value).__name__}")
        return value
    raise ValueError(f"unsupported type {typ}")
