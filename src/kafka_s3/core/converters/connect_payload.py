"""Connect payloads: JSON payloads decoded to values Arrow takes, Arrow values rendered as Connect's JSON, and the
checks of values against their schema (required fields, nulls).

The schemas themselves (Connect schemas, their Avro and Arrow forms, defaults) are in
:mod:`kafka_s3.core.converters.connect_schema`.
"""

from __future__ import annotations

import binascii
import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from kafka_s3.core.converters.connect_schema import (
    DECIMAL,
    EPOCH,
    EPOCH_DAY,
    ConnectSchema,
    b64decode,
    decimal_bytes,
    decimal_from_payload,
)

# ------------------------------------------------------------------------------------- payloads: JSON -> Arrow
Decoder = Callable[[Any], Any]


def payload_decoder(schema: ConnectSchema) -> Decoder | None:
    """A function turning a Connect JSON payload into a value ``pa.array(..., schema.to_arrow())`` accepts.

    ``None`` when the payload is already acceptable as is (numbers, strings, nested objects of those), which keeps
    the common case free of per-record Python work. Defaults replace missing or null values, as JsonConverter does.
    """
    inner = _value_decoder(schema)
    if schema.default is None:
        return None if inner is None else (lambda v: None if v is None else inner(v))
    default = schema.default if inner is None else inner(schema.default)
    if inner is None:
        return lambda v: default if v is None else v
    return lambda v: default if v is None else inner(v)


def _value_decoder(s: ConnectSchema) -> Decoder | None:
    if s.logical == DECIMAL:
        scale = s.decimal_precision_scale[1]
        return lambda v: decimal_from_payload(v, scale)
    if s.type == "bytes":
        return b64decode
    if s.type == "array":
        item = payload_decoder(s.array_items)
        return None if item is None else (lambda v: [item(x) for x in v])
    if s.type == "map":
        key, value = payload_decoder(s.map_keys), payload_decoder(s.map_values)
        if s.map_keys.type == "string":  # a JSON object, which pyarrow takes as a map as is
            return None if value is None else (lambda v: {k: value(x) for k, x in v.items()})
        decode_key, decode_value = key or _identity, value or _identity
        return lambda v: [(decode_key(k), decode_value(x)) for k, x in v]  # [[key, value], ...] pairs
    if s.type == "struct":
        decoders = [(name, d) for name, d in ((name, payload_decoder(fs)) for name, fs in s.fields) if d is not None]
        if not decoders:
            return None
        return lambda v: _decode_fields(v, decoders)
    return None


def _decode_fields(struct: dict[str, Any], decoders: list[tuple[str, Decoder]]) -> dict[str, Any]:
    """Decode the fields that need it, in place: the payload dict was just parsed for this record alone."""
    get = struct.get
    for name, decode in decoders:
        struct[name] = decode(get(name))
    return struct


def _identity(value: Any) -> Any:
    return value


def first_unconvertible(values: list[Any], convert: Callable[[list[Any]], Any]) -> int:
    """Index of the first value ``convert([value])`` rejects: pyarrow's errors do not say which row failed."""
    for row, value in enumerate(values):
        try:
            convert([value])
        except (ValueError, TypeError, OverflowError):  # pyarrow's ArrowInvalid/ArrowTypeError derive from these
            return row
    return 0


# ------------------------------------------------------------------------------------- payloads: Arrow -> JSON
def payload_values(array: pa.Array) -> list[Any]:
    """Arrow values as Python objects that ``orjson.dumps(..., default=json_default)`` renders as Connect does.

    Maps with string keys become JSON objects, other maps ``[[key, value], ...]`` pairs (JsonConverter's forms).
    Times and timestamps Connect has no logical type for (microseconds, nanoseconds, without a time zone: Avro's
    time-micros, timestamp-micros, local-timestamp-*) are their plain numbers, as AvroData gives them to Connect.
    """
    numbers = _plain_numbers_type(array.type)
    if numbers is not None:
        array = array.cast(numbers)
    if not _has_map(array.type, string_keys=False):
        objects: list[Any] = array.to_pylist(maps_as_pydicts="strict")
        return objects
    values: list[Any] = array.to_pylist()
    fix = _string_map_fixer(array.type)
    return values if fix is None else [fix(v) for v in values]


def _plain_numbers_type(t: pa.DataType) -> pa.DataType | None:
    """``t`` with temporal types Connect cannot name replaced by int64, or ``None`` when there are none."""
    if pa.types.is_timestamp(t):
        return pa.int64() if t.unit != "ms" or t.tz is None else None
    if pa.types.is_time64(t):
        return pa.int64()
    if pa.types.is_struct(t):
        fields = [(f, _plain_numbers_type(f.type)) for f in t]
        if all(new is None for _, new in fields):
            return None
        return pa.struct([f if new is None else f.with_type(new) for f, new in fields])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = _plain_numbers_type(t.value_type)
        return None if item is None else pa.list_(t.value_field.with_type(item))
    if pa.types.is_map(t):
        key, item = _plain_numbers_type(t.key_type), _plain_numbers_type(t.item_type)
        if key is None and item is None:
            return None
        return pa.map_(t.key_field.with_type(key or t.key_type), t.item_field.with_type(item or t.item_type))
    return None


def _children(t: pa.DataType) -> list[pa.DataType]:
    if pa.types.is_map(t):
        return [t.key_type, t.item_type]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [t.value_type]
    if pa.types.is_struct(t):
        return [f.type for f in t]
    return []


def _has_map(t: pa.DataType, string_keys: bool) -> bool:
    if pa.types.is_map(t) and pa.types.is_string(t.key_type) == string_keys:
        return True
    return any(_has_map(c, string_keys) for c in _children(t))


def _string_map_fixer(t: pa.DataType) -> Decoder | None:
    if not _has_map(t, string_keys=True):
        return None
    if pa.types.is_map(t):
        key, value = _string_map_fixer(t.key_type) or _identity, _string_map_fixer(t.item_type) or _identity
        as_object = pa.types.is_string(t.key_type)
        if as_object:
            return lambda v: None if v is None else {k: value(x) for k, x in v}
        return lambda v: None if v is None else [(key(k), value(x)) for k, x in v]
    if pa.types.is_struct(t):
        fixers = [(f.name, fx) for f in t if (fx := _string_map_fixer(f.type)) is not None]
        return lambda v: None if v is None else {**v, **{name: fx(v[name]) for name, fx in fixers}}
    item = _string_map_fixer(t.value_type)
    assert item is not None  # a list holding a map with string keys: its items hold one
    return lambda v: None if v is None else [item(x) for x in v]


def json_default(value: Any) -> Any:
    """orjson fallback for what JSON lacks, rendered as Connect's JsonConverter does.

    bytes -> base64; Decimal -> base64 of the unscaled two's-complement bytes (``decimal.format=BASE64``);
    Timestamp -> epoch milliseconds; Date -> days since the epoch; Time -> milliseconds since midnight.
    Use with ``option=orjson.OPT_PASSTHROUGH_DATETIME`` so dates and times reach this function.
    """
    if isinstance(value, bytes):
        return binascii.b2a_base64(value, newline=False).decode("ascii")
    if isinstance(value, Decimal):
        return binascii.b2a_base64(decimal_bytes(value), newline=False).decode("ascii")
    if isinstance(value, dt.datetime):
        return (value - EPOCH) // dt.timedelta(milliseconds=1)
    if isinstance(value, dt.date):
        return (value - EPOCH_DAY).days
    if isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    raise TypeError(f"cannot render {type(value).__name__} as JSON")


JSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME


# ------------------------------------------------------------------------------------------- required values
def first_null_violation(array: pa.Array, optional: bool) -> tuple[int, str] | None:
    """``(row, path)`` of the first null where the schema does not allow one, or ``None``.

    Arrow keeps non-nullable field flags but never enforces them; Connect (and Avro, Parquet) refuse such nulls.
    """
    found = [(int(np.argmax(mask)), path) for mask, path in _violations(array, optional, "") if mask.any()]
    return min(found) if found else None


def _violations(array: pa.Array, nullable: bool, path: str) -> list[tuple[np.ndarray, str]]:
    out: list[tuple[np.ndarray, str]] = []
    valid = np.asarray(array.is_valid())
    if not nullable and array.null_count:
        out.append((~valid, path or "value"))
    t = array.type
    if pa.types.is_struct(t):
        for i, field in enumerate(t):
            child_path = f"{path}.{field.name}" if path else field.name
            out += [(mask & valid, p) for mask, p in _violations(array.field(i), field.nullable, child_path)]
    elif pa.types.is_map(t) or pa.types.is_list(t):
        offsets = np.asarray(array.offsets)
        start, stop = int(offsets[0]), int(offsets[-1])
        parents = np.repeat(np.arange(len(array)), np.diff(offsets))
        if pa.types.is_map(t):
            children = [(array.items, t.item_field.nullable, f"{path}[value]")]
        else:
            children = [(array.values, t.value_field.nullable, f"{path}[]")]
        for child, child_nullable, child_path in children:
            for mask, p in _violations(child.slice(start, stop - start), child_nullable, child_path):
                rows = np.zeros(len(array), dtype=bool)
                rows[parents[mask]] = True
                out.append((rows & valid, p))
    return out
