"""A column-wise decoder of envelope blocks: Avro ``KafkaRecord`` data straight into ``RECORD_SCHEMA`` columns.

fastavro decodes a block into one dict per record (and a list of dicts per record's headers), which Arrow then
converts back into columns: both per-record steps were most of an Avro envelope restore's time. The envelope's
schema is fixed (:data:`~kafka_s3.core.formats.envelope.KAFKA_RECORD_AVRO`), so its binary encoding is walked
here once, appending each field to its column's list (keys, values and header values as ``bytes`` slices, numbers
as ints), and the columns become Arrow arrays in one call each. Headers become one flat list of keys and one of
values with list offsets, never a dict.

The decoder is exact for any valid encoding of the schema (array blocks with byte sizes included). It raises
:class:`EnvelopeDecodeError` on anything it does not accept — a union index out of range or written in more than one
byte, a negative length, data ending inside a record or left over after the block's last record, text that is not
UTF-8, an int outside int32, a timestamp fastavro cannot give as a datetime — and the reader then decodes that block
with fastavro as before, so errors are reported (and skipped) exactly as they were.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from kafka_s3.core.records import HEADER_TYPE, HEADERS_TYPE, RECORD_SCHEMA

_TIMESTAMP_MS = pa.timestamp("ms", tz="UTC")


class EnvelopeDecodeError(ValueError):
    """Block data the column-wise decoder does not accept (fastavro decides what is wrong with it)."""


def _long(data: bytes, pos: int) -> tuple[int, int]:
    """The zigzag varint at ``pos`` and the position after it."""
    b = data[pos]
    pos += 1
    value = b & 0x7F
    shift = 7
    while b & 0x80:
        if shift > 63:
            raise EnvelopeDecodeError("a number is longer than a long")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
    return (value >> 1) ^ -(value & 1), pos


# fastavro gives timestamp-millis as datetimes: values outside datetime's years 1-9999 fail there (and are left to it).
MIN_TIMESTAMP_MS = -62_135_596_800_000
MAX_TIMESTAMP_MS = 253_402_300_799_999
INT_MIN, INT_MAX = -(2**31), 2**31 - 1  # Arrow's int32 columns (fastavro reads any long there: Arrow refuses it)


class EnvelopeColumns:
    """Envelope records decoded block after block into column lists, turned into one batch when asked."""

    def __init__(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.topics: list[bytes] = []
        self.partitions: list[int] = []
        self.offsets: list[int] = []
        self.timestamps: list[int | None] = []
        self.timestamp_types: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.header_ends = [0]  # list offsets of the headers column
        self.header_keys: list[bytes] = []
        self.header_values: list[bytes | None] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, data: bytes, count: int) -> None:
        """Decode one block's (decompressed) data holding ``count`` records. Raises :class:`EnvelopeDecodeError`
        on data fastavro would decode otherwise or refuse; nothing of that block is kept then."""
        lists = self._lists()
        lengths = [len(column) for column in lists]
        try:
            _decode(data, count, self)
            for text in {*self.topics[lengths[0] :], *self.header_keys[lengths[8] :]}:
                text.decode()  # fastavro's strict UTF-8 (Arrow's cast later agrees)
        except (EnvelopeDecodeError, IndexError, UnicodeDecodeError) as exc:
            for column, length in zip(lists, lengths, strict=True):
                del column[length:]
            if isinstance(exc, EnvelopeDecodeError):
                raise
            raise EnvelopeDecodeError(f"not a valid envelope block ({exc})") from None

    def batch(self) -> pa.RecordBatch:
        """The records decoded so far as a ``RECORD_SCHEMA`` batch; the columns start empty again."""
        try:
            return _batch(self)
        finally:
            self._clear()

    def _lists(self) -> list[list[Any]]:
        return [
            self.topics,
            self.partitions,
            self.offsets,
            self.timestamps,
            self.timestamp_types,
            self.keys,
            self.values,
            self.header_ends,
            self.header_keys,
            self.header_values,
        ]


def _decode(data: bytes, count: int, out: EnvelopeColumns) -> None:
    """Append ``count`` records decoded from ``data`` to ``out``'s lists. Single-byte varints (most fields) are
    decoded inline; longer ones by :func:`_long`."""
    topics, partitions, offsets = out.topics, out.partitions, out.offsets
    timestamps, timestamp_types, keys, values = out.timestamps, out.timestamp_types, out.keys, out.values
    header_ends, header_keys, header_values = out.header_ends, out.header_keys, out.header_values
    headers_seen = header_ends[-1]
    size = len(data)
    pos = 0
    for _ in range(count):
        # topic: string
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            length, pos = _long(data, pos)
        end = pos + length
        if length < 0 or end > size:
            raise EnvelopeDecodeError("a string length out of range")
        topics.append(data[pos:end])
        pos = end
        # partition: int, offset: long
        b = data[pos]
        if b < 0x80:
            partitions.append((b >> 1) ^ -(b & 1))
            pos += 1
        else:
            value, pos = _long(data, pos)
            if not INT_MIN <= value <= INT_MAX:
                raise EnvelopeDecodeError("an int out of range")
            partitions.append(value)
        b = data[pos]  # an offset: several bytes, decoded inline
        pos += 1
        value, shift = b & 0x7F, 7
        while b & 0x80:
            if shift > 63:
                raise EnvelopeDecodeError("a number is longer than a long")
            b = data[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            shift += 7
        offsets.append((value >> 1) ^ -(value & 1))
        # timestamp: ["null", timestamp-millis long]
        b = data[pos]
        pos += 1
        if b == 2:
            b = data[pos]
            pos += 1
            value, shift = b & 0x7F, 7
            while b & 0x80:
                if shift > 63:
                    raise EnvelopeDecodeError("a number is longer than a long")
                b = data[pos]
                pos += 1
                value |= (b & 0x7F) << shift
                shift += 7
            value = (value >> 1) ^ -(value & 1)
            if not MIN_TIMESTAMP_MS <= value <= MAX_TIMESTAMP_MS:
                raise EnvelopeDecodeError("a timestamp outside the years 1 to 9999")
            timestamps.append(value)
        elif b == 0:
            timestamps.append(None)
        else:
            raise EnvelopeDecodeError("a union index out of range")
        # timestampType: int
        b = data[pos]
        if b < 0x80:
            timestamp_types.append((b >> 1) ^ -(b & 1))
            pos += 1
        else:
            value, pos = _long(data, pos)
            if not INT_MIN <= value <= INT_MAX:
                raise EnvelopeDecodeError("an int out of range")
            timestamp_types.append(value)
        # key, value: ["null", "bytes"]
        for column in (keys, values):
            b = data[pos]
            pos += 1
            if b == 2:
                b = data[pos]
                if b < 0x80:
                    length = b >> 1 if not b & 1 else -1
                    pos += 1
                else:
                    length, pos = _long(data, pos)
                end = pos + length
                if length < 0 or end > size:
                    raise EnvelopeDecodeError("a bytes length out of range")
                column.append(data[pos:end])
                pos = end
            elif b == 0:
                column.append(None)
            else:
                raise EnvelopeDecodeError("a union index out of range")
        # headers: array of Header {key: string, value: ["null", "bytes"]}, in blocks
        while True:
            b = data[pos]
            if b < 0x80:
                items = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                items, pos = _long(data, pos)
            if items == 0:
                break
            if items < 0:  # a block with its byte size
                items = -items
                _, pos = _long(data, pos)
            for _ in range(items):
                b = data[pos]
                if b < 0x80:
                    length = b >> 1 if not b & 1 else -1
                    pos += 1
                else:
                    length, pos = _long(data, pos)
                end = pos + length
                if length < 0 or end > size:
                    raise EnvelopeDecodeError("a string length out of range")
                header_keys.append(data[pos:end])
                pos = end
                b = data[pos]
                pos += 1
                if b == 2:
                    b = data[pos]
                    if b < 0x80:
                        length = b >> 1 if not b & 1 else -1
                        pos += 1
                    else:
                        length, pos = _long(data, pos)
                    end = pos + length
                    if length < 0 or end > size:
                        raise EnvelopeDecodeError("a bytes length out of range")
                    header_values.append(data[pos:end])
                    pos = end
                elif b == 0:
                    header_values.append(None)
                else:
                    raise EnvelopeDecodeError("a union index out of range")
            headers_seen += items
        header_ends.append(headers_seen)
    if pos != size:
        raise EnvelopeDecodeError(f"{size - pos} bytes left after the block's {count} records")


def _batch(columns: EnvelopeColumns) -> pa.RecordBatch:
    """The decoded columns as Arrow, typed as the fastavro path types them."""
    try:
        items = pa.StructArray.from_arrays(
            [
                pa.array(columns.header_keys, pa.binary()).cast(pa.string()),
                pa.array(columns.header_values, pa.binary()),
            ],
            fields=list(HEADER_TYPE),
        )
        headers = pa.ListArray.from_arrays(
            pa.array(np.asarray(columns.header_ends, dtype=np.int32)), items, type=HEADERS_TYPE
        )
        arrays = {
            "key": pa.array(columns.keys, pa.binary()),
            "value": pa.array(columns.values, pa.binary()),
            "topic": pa.array(columns.topics, pa.binary()).cast(pa.string()),
            "partition": pa.array(columns.partitions, pa.int32()),
            "offset": pa.array(columns.offsets, pa.int64()),
            "timestamp": pa.array(columns.timestamps, pa.int64())
            .cast(_TIMESTAMP_MS)
            .cast(RECORD_SCHEMA.field("timestamp").type),
            "timestampType": pa.array(columns.timestamp_types, pa.int32()),
            "headers": headers,
        }
    except (pa.ArrowInvalid, OverflowError) as exc:  # not expected after add()'s checks: name it as corrupt data
        raise EnvelopeDecodeError(str(exc)) from None
    return pa.RecordBatch.from_arrays([arrays[name] for name in RECORD_SCHEMA.names], schema=RECORD_SCHEMA)
