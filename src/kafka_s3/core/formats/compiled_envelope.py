"""Envelope objects decoded by compiled readers: Avro blocks by Polars' Avro reader, JSON lines by pyarrow's.

Exactly-once restores of the Avro and JSON envelopes spent half their tasks' time decoding records in Python (one
varint or one ``orjson.loads`` at a time). ``bench/envelope_decoders.py`` measured the compiled readers at hand on
the same objects, and these won (bench/README.md, "Exact-mode decoding"):

- **Avro**: the blocks are inflated here (ISA-L for deflate, as the writer; Polars' own deflate was the larger part
  of its time) and handed to Polars' ``read_avro`` as one container of uncompressed blocks;
- **JSON**: pyarrow's JSON reader with an explicit schema parses the lines; Polars decodes the base64 columns
  (``str.decode``: it accepts exactly the texts ``binascii.a2b_base64(strict_mode=True)`` accepts, with the same
  bytes, except those with non-zero padding bits, which it refuses).

Both are fast paths only: they decline (:class:`CompiledDecodeError`) whatever the Python readers would read
otherwise or refuse, and the caller then reads those blocks or lines the Python way, which reports (or skips) bad
data as before. What makes a decline, and why:

- Avro: the schema Polars is given reads ``int`` fields as ``long`` (the same encoding) and the timestamp without
  its logical type, so an int out of int32 and a timestamp outside years 1-9999 (which fastavro refuses) are seen
  here rather than wrapped; any error of Polars (a bad union index, varint, length or UTF-8 text);
- JSON: a line not starting with ``{`` (pyarrow skips blank lines and crashes on a ``null`` line); a count of rows
  other than of lines; a field the envelope does not have, at any level (the Python reader ignores them, but pyarrow
  would read nesting deeper than orjson's 1,024 levels there); bytes that are not UTF-8 (pyarrow does not check
  them); a null or missing required field,
  header, header key or header value (pyarrow cannot tell a missing header value, which the Python reader refuses,
  from a null one); any error of pyarrow (duplicate keys, numbers that are not integers, ...) or of Polars' base64.

Polars is imported on first use only (0.5 s and ~30 MiB per process): commands that read no Avro or JSON envelope
never load it.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Sequence
from typing import Any, cast

import cramjam
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from isal import isal_zlib

from kafka_s3.core.formats.avro_container import MAGIC
from kafka_s3.core.formats.envelope import KAFKA_RECORD_AVRO, REQUIRED_ENVELOPE_FIELDS
from kafka_s3.core.records import HEADER_TYPE, HEADERS_TYPE, RECORD_SCHEMA

# fastavro gives timestamp-millis as datetimes: values outside datetime's years 1-9999 fail there.
MIN_TIMESTAMP_MS = -62_135_596_800_000
MAX_TIMESTAMP_MS = 253_402_300_799_999
_SYNC = b"\x00" * 16  # the sync marker of the container handed to Polars (ours: the object's were checked)
_TIMESTAMP = RECORD_SCHEMA.field("timestamp").type


class CompiledDecodeError(ValueError):
    """Data the compiled readers decline: the Python readers decide what it holds."""


def _polars() -> Any:
    import polars as pl

    return pl


def _panic_types() -> tuple[type[BaseException], ...]:
    """Polars' errors, and its Rust panics (``PanicException`` is a ``BaseException``)."""
    from polars.exceptions import PanicException

    return (Exception, PanicException)


# ------------------------------------------------------------------------------------------------------------ Avro
def _schema_read_as_longs() -> bytes:
    """The envelope's schema with its ints read as longs and its timestamp as a plain long (the same encodings), so
    values fastavro refuses are checked here instead of being wrapped or converted by Polars."""
    fields: list[dict[str, Any]] = []
    envelope_fields = cast(list[dict[str, Any]], KAFKA_RECORD_AVRO["fields"])
    for field in envelope_fields:
        if field["type"] == "int":
            fields.append({**field, "type": "long"})
        elif field["name"] == "timestamp":
            fields.append({**field, "type": ["null", "long"]})
        else:
            fields.append(field)
    return orjson.dumps({**KAFKA_RECORD_AVRO, "fields": fields})


def varint(value: int) -> bytes:
    """One zigzag varint (Avro's int and long), for the container's counts and sizes."""
    number = (value << 1) ^ (value >> 63)
    out = bytearray()
    while number > 0x7F:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def _container_header() -> bytes:
    metadata = {b"avro.schema": _schema_read_as_longs(), b"avro.codec": b"null"}
    parts = [MAGIC, varint(len(metadata))]
    for key, value in metadata.items():
        parts += [varint(len(key)), key, varint(len(value)), value]
    return b"".join([*parts, varint(0), _SYNC])


_HEADER = _container_header()


def _snappy(data: bytes) -> bytes:
    """Avro's snappy codec: a raw snappy block and the CRC-32 of what it holds (checked, as fastavro does)."""
    out = bytes(cramjam.snappy.decompress_raw(data[:-4]))
    if zlib.crc32(out).to_bytes(4, "big") != data[-4:]:
        raise CompiledDecodeError("snappy checksum mismatch")
    return out


BLOCK_DECOMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "null": bytes,
    "deflate": lambda data: isal_zlib.decompress(data, -15),  # raw deflate, as Avro writes it
    "snappy": _snappy,
}


def framed_block(frame: bytes) -> tuple[int, bytes]:
    """A block as :class:`~kafka_s3.core.formats.avro_container.Framer` frames it (record count, byte size, data,
    sync marker) as its record count and (compressed) data."""
    count, pos = _varint(frame, 0)
    size, pos = _varint(frame, pos)
    return count, frame[pos : pos + size]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7


def avro_blocks_batch(blocks: Sequence[tuple[int, bytes]], codec: str) -> pa.RecordBatch:
    """Envelope blocks (record count, compressed data) of one container as one ``RECORD_SCHEMA`` batch.

    Raises :class:`CompiledDecodeError` when any block is not one this reader takes (see the module docstring)."""
    decompress = BLOCK_DECOMPRESSORS.get(codec)
    if decompress is None:
        raise CompiledDecodeError(f"codec {codec!r} is left to fastavro")
    counts = np.array([count for count, _ in blocks], dtype=np.int64)
    if not len(blocks) or (counts <= 0).any():
        raise CompiledDecodeError("a block without records")
    pl = _polars()
    try:
        parts = [_HEADER]
        starts, sizes = [], []  # where each block's data starts in the container, and its size
        position = len(_HEADER)
        for count, data in blocks:
            plain = decompress(data)
            parts += [varint(count), varint(len(plain)), plain, _SYNC]
            position += len(parts[-4]) + len(parts[-3])
            starts.append(position)
            sizes.append(len(plain))
            position += len(plain) + len(_SYNC)
        container = b"".join(parts)
        table = pl.read_avro(io.BytesIO(container)).to_arrow()
    except _panic_types() as exc:
        raise CompiledDecodeError(str(exc)) from None
    if table.num_rows != int(counts.sum()):
        raise CompiledDecodeError("Polars read another number of records than the blocks hold")
    _check_canonical(table, counts, np.array(starts), np.array(sizes), np.frombuffer(container, dtype=np.uint8))
    timestamps = table.column("timestamp")
    bounds = pc.min_max(timestamps).as_py()
    if bounds["min"] is not None and (bounds["min"] < MIN_TIMESTAMP_MS or bounds["max"] > MAX_TIMESTAMP_MS):
        raise CompiledDecodeError("a timestamp outside the years 1 to 9999")
    try:
        table = table.set_column(
            table.schema.get_field_index("timestamp"), "timestamp", pc.multiply_checked(timestamps, 1000)
        )
        return _record_batch(table)
    except (pa.ArrowInvalid, OverflowError) as exc:  # an int out of int32, a column past 2 GiB
        raise CompiledDecodeError(str(exc)) from None


_VARINT_LIMITS = np.array([1 << (7 * groups) for groups in range(1, 10)], dtype=np.uint64)


def _varint_sizes(values: np.ndarray) -> np.ndarray:
    """The bytes of each value's shortest zigzag varint (Avro's int and long)."""
    signed = values.astype(np.int64)
    zigzag = ((signed << 1) ^ (signed >> 63)).view(np.uint64)
    return np.searchsorted(_VARINT_LIMITS, zigzag, side="right").astype(np.int64) + 1


def _lengths(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """Byte lengths and validity of a ``large_binary`` or ``large_string`` column, from its offsets (a null of
    another length than 0 makes the sizes disagree: declined)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset : array.offset + len(array) + 1]
    valid = np.ones(len(array), dtype=bool) if not array.null_count else array.is_valid().to_numpy(zero_copy_only=False)
    return np.diff(offsets), valid


def _ints(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return np.asarray(pc.fill_null(column, 0).to_numpy(zero_copy_only=False), dtype=np.int64)


def _check_canonical(
    table: pa.Table, counts: np.ndarray, starts: np.ndarray, sizes: np.ndarray, data: np.ndarray
) -> None:
    """Raise :class:`CompiledDecodeError` unless the blocks are exactly the shortest encoding of the records Polars
    read, union indexes included.

    Polars takes any non-zero index of a ``["null", ...]`` union for its second branch, where fastavro refuses an
    index out of range. So each record's size is computed from its values as the writer encodes them (shortest
    varints, one block per headers array) and each block's records must fill it exactly: a field encoded any other
    way is longer, so the fields are where they are computed to be, and the union index bytes found there must be
    ``0`` (null) or ``2`` (the value). Objects of another writer with longer encodings go to the Python readers."""
    topic_lengths, _ = _lengths(table.column("topic"))
    timestamp_valid = table.column("timestamp").is_valid().to_numpy(zero_copy_only=False)
    key_lengths, key_valid = _lengths(table.column("key"))
    value_lengths, value_valid = _lengths(table.column("value"))
    headers = table.column("headers").combine_chunks()
    header_counts = pc.list_value_length(headers).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    items = headers.flatten()
    item_key_lengths, _ = _lengths(items.field("key"))
    item_value_lengths, item_value_valid = _lengths(items.field("value"))

    partition_size = _varint_sizes(_ints(table.column("partition")))
    before_timestamp = _varint_sizes(topic_lengths) + topic_lengths + partition_size
    before_timestamp += _varint_sizes(_ints(table.column("offset")))
    timestamp_size = 1 + np.where(timestamp_valid, _varint_sizes(_ints(table.column("timestamp"))), 0)
    timestamp_size += _varint_sizes(_ints(table.column("timestampType")))
    key_size = 1 + np.where(key_valid, _varint_sizes(key_lengths) + key_lengths, 0)
    value_size = 1 + np.where(value_valid, _varint_sizes(value_lengths) + value_lengths, 0)
    item_union = _varint_sizes(item_key_lengths) + item_key_lengths  # where an item's value union index is
    item_size = item_union + 1 + np.where(item_value_valid, _varint_sizes(item_value_lengths) + item_value_lengths, 0)
    item_starts = np.concatenate(([0], np.cumsum(item_size)))
    last_items = np.cumsum(header_counts)
    first_items = last_items - header_counts
    header_size = np.where(
        header_counts > 0, _varint_sizes(header_counts) + item_starts[last_items] - item_starts[first_items] + 1, 1
    )
    record_size = before_timestamp + timestamp_size + key_size + value_size + header_size
    first_records = np.concatenate(([0], np.cumsum(counts)[:-1]))
    if not np.array_equal(np.add.reduceat(record_size, first_records), sizes):
        raise CompiledDecodeError("the blocks are not the shortest encoding of their records")
    record_starts = np.cumsum(record_size) - record_size
    block = np.repeat(np.arange(len(counts)), counts)
    positions = starts[block] + record_starts - record_starts[first_records][block]
    timestamp_union = positions + before_timestamp
    key_union = timestamp_union + timestamp_size
    value_union = key_union + key_size
    headers_end = value_union + value_size + header_size
    item_record = np.repeat(np.arange(len(header_counts)), header_counts)
    first_item_at = value_union + value_size + _varint_sizes(header_counts)
    item_at = first_item_at[item_record] + item_starts[:-1] - item_starts[first_items][item_record]
    if not (
        np.array_equal(data[timestamp_union], np.where(timestamp_valid, 2, 0))
        and np.array_equal(data[key_union], np.where(key_valid, 2, 0))
        and np.array_equal(data[value_union], np.where(value_valid, 2, 0))
        and np.array_equal(data[item_at + item_union], np.where(item_value_valid, 2, 0))
        and not data[headers_end - 1].any()
    ):
        raise CompiledDecodeError("a union index other than 0 or 1")


def _record_batch(table: pa.Table) -> pa.RecordBatch:
    """Columns of another reader (large types; ``timestamp`` in microseconds as int64) as one ``RECORD_SCHEMA`` batch
    (safe casts: an int out of int32 raises)."""
    arrays = [table.column(name).combine_chunks() for name in RECORD_SCHEMA.names]
    arrays = [array.cast(field.type) for array, field in zip(arrays, RECORD_SCHEMA, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=RECORD_SCHEMA)


# ------------------------------------------------------------------------------------------------------------ JSON
TEXT_ENVELOPE = pa.schema(  # an envelope line as pyarrow parses it: bytes still in base64
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("timestampType", pa.int32()),
        ("key", pa.string()),
        ("value", pa.string()),
        ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))),
    ]
)
_NEWLINE, _OPEN_BRACE = ord("\n"), ord("{")


def json_lines_batch(text: bytes) -> pa.RecordBatch:
    """Envelope lines (each followed by a newline, but perhaps the last) as one ``RECORD_SCHEMA`` batch.

    Raises :class:`CompiledDecodeError` when any line is not one this reader takes (see the module docstring)."""
    lines = _line_count(text)
    table = _parse_lines(text)
    if table.num_rows != lines:
        raise CompiledDecodeError("another number of rows than of lines")
    headers = table.column("headers").combine_chunks()
    items = headers.flatten()
    if items.null_count or items.field("key").null_count or items.field("value").null_count:
        raise CompiledDecodeError("a null or missing header, header key or header value")
    if any(table.column(name).null_count for name in REQUIRED_ENVELOPE_FIELDS):
        raise CompiledDecodeError("a record without a required field")
    pl = _polars()
    try:
        key, value = _base64(pl, table.column("key"), table.column("value"))
        (header_values,) = _base64(pl, items.field("value"))
    except _panic_types() as exc:
        raise CompiledDecodeError(str(exc)) from None
    new_items = pa.StructArray.from_arrays([items.field("key"), header_values], fields=list(HEADER_TYPE))
    offsets = pc.subtract(headers.offsets, headers.offsets[0])
    lists = pa.ListArray.from_arrays(offsets, new_items, type=HEADERS_TYPE)  # null lists become empty ones
    try:
        timestamps = pc.multiply_checked(table.column("timestamp"), 1000).cast(pa.int64())
        columns = {"key": key, "value": value, "timestamp": timestamps, "headers": lists}
        arrays = [columns[name] if name in columns else table.column(name) for name in RECORD_SCHEMA.names]
        return _record_batch(pa.table(arrays, names=RECORD_SCHEMA.names))
    except (pa.ArrowInvalid, OverflowError) as exc:
        raise CompiledDecodeError(str(exc)) from None


def _base64(pl: Any, *columns: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    """Base64 texts (or nulls) as the bytes they encode, decoded by Polars; raises on a text it refuses."""
    frame = pl.from_arrow(pa.table({str(i): column for i, column in enumerate(columns)}))
    decoded = frame.select(pl.all().str.decode("base64")).to_arrow()
    return [column.combine_chunks().cast(pa.binary()) for column in decoded.columns]


def _line_count(text: bytes) -> int:
    """How many lines ``text`` holds, each starting with ``{`` (else :class:`CompiledDecodeError`)."""
    stream = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(stream == _NEWLINE)
    starts = np.concatenate(([0], ends[:-1] + 1)) if len(ends) and ends[-1] == len(text) - 1 else None
    if starts is None:  # a last line without a newline (or no newline at all)
        starts = np.concatenate(([0], ends + 1))
    if not len(text) or (stream[starts] != _OPEN_BRACE).any():
        raise CompiledDecodeError("a line that does not start with '{'")
    if not text.isascii():
        try:
            text.decode()
        except UnicodeDecodeError as exc:
            raise CompiledDecodeError(str(exc)) from None
    return len(starts)


def _parse_lines(text: bytes) -> pa.Table:
    options = pa_json.ParseOptions(explicit_schema=TEXT_ENVELOPE, unexpected_field_behavior="error")
    read = pa_json.ReadOptions(use_threads=False, block_size=max(len(text) + 1, 1 << 20))
    try:
        return pa_json.read_json(pa.BufferReader(text), read_options=read, parse_options=options)
    except pa.ArrowException as exc:
        raise CompiledDecodeError(str(exc)) from None
