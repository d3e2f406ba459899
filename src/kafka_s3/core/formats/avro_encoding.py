"""Avro binary encoding of whole Arrow arrays at once, with no per-record Python (the backup hot path).

Encoding an array gives a ``large_binary`` array whose element *i* is the Avro datum of row *i*. Integers become
zig-zag varints with numpy; record fields, union branch indexes and array blocks are joined element-wise with Arrow
kernels. Schemas are Avro schemas with named types expanded (``fastavro.parse_schema(schema, expand=True)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.errors import ConversionError
from kafka_s3.core.formats.framing import binary_offsets

BINARY = pa.large_binary()
NOTHING = pa.scalar(b"", BINARY)
END_OF_ARRAY = pa.scalar(b"\x00", BINARY)  # a zero-count block ends every Avro array and map
PER_SECOND = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}
# The unit of the number an Avro logical type stores (time and timestamp types without one store milliseconds).
LOGICAL_UNITS = {
    "time-millis": "ms",
    "time-micros": "us",
    "timestamp-millis": "ms",
    "timestamp-micros": "us",
    "timestamp-nanos": "ns",
    "local-timestamp-millis": "ms",
    "local-timestamp-micros": "us",
    "local-timestamp-nanos": "ns",
}


def encode(array: pa.Array, schema: Any, path: str = "value") -> pa.Array:
    """The Avro datum of every row; ``path`` names the value in error messages.

    Arrow values are laid out as :mod:`kafka_s3.core.converters.avro_data` maps Avro types (enums as strings, general
    unions as structs of members, ...).
    """
    if isinstance(schema, list):
        return _union(array, schema, path)
    if isinstance(schema, dict):
        typ = schema["type"]
        logical = schema.get("logicalType")
        if typ == "record":
            return _record(array, schema, path)
        if typ == "array":
            return _array(array, schema["items"], path)
        if typ == "map":
            return _map(array, schema["values"], path)
        if typ == "enum":
            return _enum(array, schema, path)
        if logical == "decimal" and typ in ("bytes", "fixed"):
            _reject_nulls(array, "decimal", path)
            unscaled = _unscaled_bytes(array)
            return _length_prefixed(unscaled) if typ == "bytes" else _fixed_decimal(array, int(schema["size"]), path)
        if typ == "fixed":
            return _fixed(array, int(schema["size"]), path)
        if typ in ("int", "long") and logical in LOGICAL_UNITS:
            _reject_nulls(array, logical, path)
            return varints(_integers(array, LOGICAL_UNITS[logical]))
        schema = typ  # date, uuid and unknown logical types: the Arrow type already says how to get the value
    if schema == "null":
        return _constant(b"", len(array))
    _reject_nulls(array, schema, path)
    if schema in ("int", "long"):
        return varints(_integers(array))
    if schema == "boolean":
        return _fixed_width(array.to_numpy(zero_copy_only=False).astype(np.uint8), 1)
    if schema in ("float", "double"):
        dtype = "<f4" if schema == "float" else "<f8"
        return _fixed_width(array.to_numpy(zero_copy_only=False).astype(dtype).view(np.uint8), np.dtype(dtype).itemsize)
    if schema in ("bytes", "string"):
        return _length_prefixed(array)
    raise ConversionError(f"{path}: Avro type {schema!r} cannot be written by kafka-s3")


def varints(values: np.ndarray, zigzag: bool = True, empty_for_zero: bool = False) -> pa.Array:
    """Avro's variable-length (zig-zag) integers, one element per value; ``empty_for_zero`` leaves zeros out."""
    values = np.asarray(values, dtype=np.int64)
    raw = ((values << 1) ^ (values >> 63)).view(np.uint64) if zigzag else values.view(np.uint64)
    lengths = np.ones(len(raw), dtype=np.int64)
    for k in range(1, 10):
        lengths += raw >= np.uint64(1 << (7 * k))
    if empty_for_zero:
        lengths[values == 0] = 0
    offsets = _offsets(lengths)
    data = np.empty(int(offsets[-1]), dtype=np.uint8)
    for k in range(int(lengths.max(initial=0))):
        rows = np.nonzero(lengths > k)[0]
        group = ((raw[rows] >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        more = (lengths[rows] > k + 1).astype(np.uint8) << 7
        data[offsets[rows] + k] = group | more
    return _from_offsets(offsets, data)


def varint(value: int) -> bytes:
    """One zig-zag varint (headers and block counts)."""
    return bytes(memoryview(varints(np.array([value])).buffers()[2]))


def _concat(*pieces: pa.Array | pa.Scalar) -> pa.Array:
    return pc.binary_join_element_wise(*pieces, NOTHING)


def _offsets(lengths: np.ndarray) -> np.ndarray:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return offsets


def _from_offsets(offsets: np.ndarray, data: np.ndarray | pa.Buffer) -> pa.Array:
    data_buffer = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
    return pa.Array.from_buffers(BINARY, len(offsets) - 1, [None, pa.py_buffer(offsets), data_buffer])


def _constant(value: bytes, length: int) -> pa.Array:
    data = np.frombuffer(value * length, dtype=np.uint8) if value else np.empty(0, dtype=np.uint8)
    return _from_offsets(np.arange(length + 1, dtype=np.int64) * len(value), data)


def _fixed_width(data: np.ndarray, width: int) -> pa.Array:
    return _from_offsets(np.arange(len(data) // width + 1, dtype=np.int64) * width, np.ascontiguousarray(data))


def _reject_nulls(array: pa.Array, avro_type: Any, path: str) -> None:
    if array.null_count:
        raise ConversionError(f"{path} is null, but its Avro type {avro_type} does not allow null values")


def _integers(array: pa.Array, unit: str = "ms") -> np.ndarray:
    """Integers of an integer column, or of a temporal one counted in ``unit`` (days for dates)."""
    t = array.type
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        raw: np.ndarray = array.cast(pa.int64() if t.bit_width == 64 else pa.int32()).to_numpy().astype(np.int64)
        have, want = PER_SECOND[t.unit], PER_SECOND[unit]
        return raw * (want // have) if want >= have else raw // (have // want)  # floor, like Java's Math.floorDiv
    if pa.types.is_date(t):
        days: np.ndarray = array.cast(pa.int32()).to_numpy().astype(np.int64)
        return days
    integers: np.ndarray = array.to_numpy(zero_copy_only=False).astype(np.int64)
    return integers


def _length_prefixed(array: pa.Array) -> pa.Array:
    lengths = pc.binary_length(array).to_numpy(zero_copy_only=False)
    return _concat(varints(lengths), array.cast(BINARY))


def _unscaled_bytes(array: pa.Array) -> pa.Array:
    """Decimal values as Java's ``BigInteger.toByteArray()``: minimal big-endian two's complement (AvroData's form)."""
    width = array.type.byte_width
    little_endian = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    raw = little_endian[array.offset * width : (array.offset + len(array)) * width].reshape(-1, width)[:, ::-1]
    sign = raw[:, 0] >> 7
    fill = np.where(sign == 1, 0xFF, 0x00).astype(np.uint8)
    # A leading byte is redundant when it only repeats the sign and the next byte still carries that sign.
    redundant = (raw[:, :-1] == fill[:, None]) & ((raw[:, 1:] >> 7) == sign[:, None])
    leading = np.where(redundant.all(axis=1), width - 1, np.argmin(redundant, axis=1))
    keep = np.arange(width)[None, :] >= leading[:, None]
    return _from_offsets(_offsets(width - leading), np.ascontiguousarray(raw[keep]))


def _union(array: pa.Array, branches: list[Any], path: str) -> pa.Array:
    others = [b for b in branches if b != "null"]
    if len(others) > 1:
        return _general_union(array, branches, others, path)
    if not others:
        return _constant(varint(0), len(array))
    index = pa.scalar(varint(branches.index(others[0])), BINARY)
    if "null" not in branches or array.null_count == 0:
        return _concat(index, encode(array, others[0], path))
    valid = array.is_valid()
    present = _concat(index, encode(array.filter(valid), others[0], path))
    return pc.replace_with_mask(_constant(varint(branches.index("null")), len(array)), valid, present)


def _general_union(array: pa.Array, branches: list[Any], others: list[Any], path: str) -> pa.Array:
    """A union of several types from its struct of members: the first member set is the branch; none set is null."""
    from kafka_s3.core.converters.avro_data import member_name

    if not pa.types.is_struct(array.type):
        raise ConversionError(f"{path}: a union of {len(others)} types needs a struct of members, got {array.type}")
    n = len(array)
    valid = np.asarray(array.is_valid()) if array.null_count else np.ones(n, dtype=bool)
    chosen = np.zeros(n, dtype=bool)
    out = _constant(varint(branches.index("null")) if "null" in branches else b"", n)
    for branch in others:
        name = member_name(branch)
        if array.type.get_field_index(name) < 0:
            raise ConversionError(f"{path}: the values have no union member {name!r}")
        member = array.field(name)
        rows = valid & ~chosen & (np.asarray(member.is_valid()) if member.null_count else True)
        if rows.any():
            mask = pa.array(rows)
            index = pa.scalar(varint(branches.index(branch)), BINARY)
            out = pc.replace_with_mask(out, mask, _concat(index, encode(member.filter(mask), branch, path)))
            chosen |= rows
    if "null" not in branches and not chosen.all():
        raise ConversionError(f"{path} is null, but its Avro union {[member_name(b) for b in others]} has no null")
    return out


def _enum(array: pa.Array, schema: dict[str, Any], path: str) -> pa.Array:
    """An enum's symbol (a string) as its index in the symbols."""
    _reject_nulls(array, schema["name"], path)
    indices = pc.index_in(array.cast(pa.string()), value_set=pa.array(schema["symbols"], pa.string()))
    if indices.null_count:
        unknown = array.filter(indices.is_null())[0].as_py()
        raise ConversionError(f"{path}: {unknown!r} is not a symbol of the Avro enum {schema['name']}")
    return varints(indices.to_numpy(zero_copy_only=False))


def _fixed(array: pa.Array, size: int, path: str) -> pa.Array:
    """Fixed bytes, written as they are (no length)."""
    _reject_nulls(array, "fixed", path)
    raw = array.cast(pa.binary()).cast(BINARY)
    lengths = pc.binary_length(raw).to_numpy(zero_copy_only=False)
    if len(lengths) and (lengths != size).any():
        bad = int(lengths[np.argmax(lengths != size)])
        raise ConversionError(f"{path}: a fixed of {size} bytes cannot hold {bad} bytes")
    return raw


def _fixed_decimal(array: pa.Array, size: int, path: str) -> pa.Array:
    """Decimals as ``size`` big-endian two's complement bytes (a decimal on a fixed)."""
    width = array.type.byte_width
    little_endian = np.frombuffer(array.buffers()[1], dtype=np.uint8)
    raw = little_endian[array.offset * width : (array.offset + len(array)) * width].reshape(-1, width)[:, ::-1]
    fill = np.where(raw[:, 0] >> 7 == 1, 0xFF, 0x00).astype(np.uint8) if len(raw) else np.zeros(0, np.uint8)
    if size >= width:
        out = np.concatenate([np.repeat(fill[:, None], size - width, axis=1), raw], axis=1)
    else:
        dropped, out = raw[:, : width - size], raw[:, width - size :]
        fits = (dropped == fill[:, None]).all(axis=1) & ((out[:, 0] >> 7) == (fill >> 7))
        if not fits.all():
            raise ConversionError(f"{path}: a decimal does not fit the Avro fixed of {size} bytes")
    return _fixed_width(np.ascontiguousarray(out).reshape(-1), size)


def _record(array: pa.Array, schema: dict[str, Any], path: str) -> pa.Array:
    _reject_nulls(array, schema["name"], path)
    if not pa.types.is_struct(array.type):
        raise ConversionError(f"{path}: Avro record {schema['name']} needs a struct, got {array.type}")
    pieces = []
    for field in schema["fields"]:
        name = field["name"]
        if array.type.get_field_index(name) < 0:
            raise ConversionError(f"{path}: the values have no field {name!r} that Avro record {schema['name']} needs")
        pieces.append(encode(array.field(name), field["type"], f"{path}.{name}"))
    if not pieces:
        return _constant(b"", len(array))
    return pieces[0] if len(pieces) == 1 else _concat(*pieces)


def _list_parts(array: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Offsets from 0 and the (sliced) child values of a list or map array; map entries as key/value structs."""
    offsets = array.offsets.to_numpy().astype(np.int64)
    start, stop = int(offsets[0]), int(offsets[-1])
    if pa.types.is_map(array.type):
        children = [array.keys.slice(start, stop - start), array.items.slice(start, stop - start)]
        items = pa.StructArray.from_arrays(children, names=["key", "value"])
    else:
        items = array.values.slice(start, stop - start)
    return offsets - start, items


def _array(array: pa.Array, items_schema: Any, path: str) -> pa.Array:
    """Avro arrays; an Arrow map whose keys are not strings is an array of key/value records, as in AvroData."""
    _reject_nulls(array, "array", path)
    offsets, items = _list_parts(array)
    return _blocks(offsets, encode(items, items_schema, f"{path}[]"))


def _map(array: pa.Array, values_schema: Any, path: str) -> pa.Array:
    _reject_nulls(array, "map", path)
    if not pa.types.is_map(array.type):
        raise ConversionError(f"{path}: an Avro map needs Arrow map values, got {array.type}")
    offsets, entries = _list_parts(array)
    keys = encode(entries.field("key"), "string", f"{path}.key")
    return _blocks(offsets, _concat(keys, encode(entries.field("value"), values_schema, f"{path}[]")))


def _blocks(offsets: np.ndarray, items: pa.Array) -> pa.Array:
    """Per row: one block (item count, then the items) and the end marker; an empty row is the end marker alone."""
    row_items = _from_offsets(binary_offsets(items)[offsets], items.buffers()[2] or pa.py_buffer(b""))
    return _concat(varints(np.diff(offsets), empty_for_zero=True), row_items, END_OF_ARRAY)
