"""Helpers shared by the format tests: configs as a user writes them, a write-only sink, write/read round trips."""

from __future__ import annotations

import io

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.records import make_batch

CTX = FileContext("orders", 3, 1200, "topics/orders/partition=3/orders+3+0000001200")


class WriteOnlySink:
    """A non-seekable sink, like a multipart upload stream: write, tell and flush only."""

    def __init__(self):
        self._parts: list[bytes] = []
        self._size = 0

    def write(self, data) -> int:
        data = bytes(data)
        self._parts.append(data)
        self._size += len(data)
        return len(data)

    def tell(self) -> int:
        return self._size

    def flush(self) -> None:
        pass

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


def sink_config(format_class: str, **settings):
    """A backup config as parsed from a user's properties (keys with dots passed as ``a__b``)."""
    raw = {"name": "t", "topics": "orders", "flush.size": "3", "s3.bucket.name": "b", "format.class": format_class}
    raw.update({key.replace("__", "."): value for key, value in settings.items()})
    return SINK.parse(raw)


def write_object(fmt, chunks, ctx: FileContext = CTX) -> bytes:
    """The object ``fmt`` writes for ``chunks``: a list of ``(records, values)`` passed to ``write`` in order."""
    sink = WriteOnlySink()
    writer = fmt.writer(sink, ctx)
    for records, values in chunks:
        writer.write(records, values)
    writer.close()
    return sink.getvalue()


def read_object(fmt, data: bytes, ctx: FileContext = CTX) -> list:
    return list(fmt.read(io.BytesIO(data), ctx))


def sample_records(count: int = 6):
    """Records with the awkward cases: null and empty keys/values, repeated header keys, null header values,
    a missing timestamp and both timestamp types."""
    return make_batch(
        [
            {
                "offset": 1200 + i,
                "partition": 3,
                "topic": "orders",
                "key": None if i % 3 == 0 else f"k{i}".encode(),
                "value": b"" if i == 1 else f"value-{i}\u00e9".encode() if i % 4 else None,
                "timestamp": None if i == 2 else 1_700_000_000_000 + i,
                "timestampType": -1 if i == 2 else i % 2,
                "headers": [("h", b"1"), ("h", None), ("x", b"\x00")] if i % 2 else [],
            }
            for i in range(count)
        ]
    )
