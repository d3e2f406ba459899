"""The in-memory shape of Kafka records: one Arrow schema used from the Kafka reader to the format writers and back.

The column names and types are those of Spark's own Kafka source (``key``, ``value``, ``topic``, ``partition``,
``offset``, ``timestamp``, ``timestampType``, ``headers``), so a DataFrame read from Kafka or from a backup looks
familiar to anyone who used ``spark.read.format("kafka")``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

HEADER_TYPE = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
HEADERS_TYPE = pa.list_(pa.field("element", HEADER_TYPE))
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

# Java's org.apache.kafka.common.record.TimestampType ids, as Spark's Kafka source exposes them.
NO_TIMESTAMP_TYPE = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1

RECORD_SCHEMA = pa.schema(
    [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", TIMESTAMP_TYPE),
        pa.field("timestampType", pa.int32()),
        pa.field("headers", HEADERS_TYPE),
    ]
)

# The same schema as a Spark DDL string, for data sources and mapInArrow.
RECORD_DDL = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int, headers array<struct<key:string,value:binary>>"
)

COLUMNS = tuple(RECORD_SCHEMA.names)


def empty_batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=RECORD_SCHEMA)


def timestamps_ms(batch: pa.RecordBatch | pa.Table) -> pa.Array:
    """Record timestamps as int64 milliseconds since the epoch (nulls kept)."""
    import pyarrow.compute as pc

    return pc.divide(batch.column("timestamp").cast(pa.int64()), 1000)


def record_checksum(batch: pa.RecordBatch, row: int) -> str:
    """A short digest of one record's key and value: what tells two logs apart at one offset (chunk manifests keep
    it for their first and last record). Headers and timestamps are left out: a backup reads them only when its
    format keeps them, and the digest must not depend on the configuration."""
    import hashlib

    digest = hashlib.blake2b(digest_size=8)
    for column in ("key", "value"):
        value = batch.column(column)[row].as_py()
        digest.update(b"\x00" if value is None else b"\x01" + len(value).to_bytes(8, "big") + value)
    return digest.hexdigest()


def payload_bytes(batch: pa.RecordBatch) -> int:
    """Bytes of the batch's keys and values (what progress bars count as data moved)."""
    import pyarrow.compute as pc

    return sum(pc.sum(pc.binary_length(batch.column(name))).as_py() or 0 for name in ("key", "value"))


def make_batch(records: Iterable[Mapping[str, Any]]) -> pa.RecordBatch:
    """Build a record batch from dicts (tests, small tools). Missing fields get neutral defaults.

    ``timestamp`` is given in milliseconds (as Kafka clients do); ``headers`` as a list of ``(key, value)`` pairs.
    """
    rows = []
    for r in records:
        ts = r.get("timestamp")
        rows.append(
            {
                "key": r.get("key"),
                "value": r.get("value"),
                "topic": r.get("topic", "t"),
                "partition": r.get("partition", 0),
                "offset": r["offset"],
                "timestamp": None if ts is None else ts * 1000,
                "timestampType": r.get("timestampType", CREATE_TIME if ts is not None else NO_TIMESTAMP_TYPE),
                "headers": [{"key": k, "value": v} for k, v in (r.get("headers") or [])],
            }
        )
    return batch_from_columns({name: [row[name] for row in rows] for name in COLUMNS})


def batch_from_columns(columns: Mapping[str, Sequence[Any]]) -> pa.RecordBatch:
    """A record batch from one list per column of :data:`RECORD_SCHEMA` (``timestamp`` in microseconds, as stored):
    what readers that decode a file row by row build their batches with."""
    arrays = [
        pa.array(columns[name], pa.int64()).cast(TIMESTAMP_TYPE)
        if name == "timestamp"
        else pa.array(columns[name], RECORD_SCHEMA.field(name).type)
        for name in RECORD_SCHEMA.names
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=RECORD_SCHEMA)


def to_dicts(batches: pa.RecordBatch | pa.Table | Sequence[pa.RecordBatch]) -> list[dict[str, Any]]:
    """Records as plain dicts with millisecond timestamps and ``(key, value)`` header tuples (tests, verification)."""
    if isinstance(batches, (pa.RecordBatch, pa.Table)):
        batches = [batches]
    out = []
    for b in batches:
        for row in b.to_pylist():
            ts = row["timestamp"]
            row["timestamp"] = None if ts is None else round(ts.timestamp() * 1000)
            row["headers"] = [(h["key"], h["value"]) for h in (row["headers"] or [])]
            out.append(row)
    return out
