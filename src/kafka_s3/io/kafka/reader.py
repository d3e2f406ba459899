"""Read exactly the offsets ``[start, end)`` of one partition as Arrow record batches.

Works with any broker behaviour the reader may meet: gaps from compaction and transaction markers (the last record
may sit below ``end - 1``), fetches larger than requested (some brokers ignore fetch limits), and a log start that
moved past ``start`` (reported, never silently skipped). This runs inside Spark tasks: imports stay lean.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa
from confluent_kafka import Message

from kafka_s3.core.errors import KafkaError, OffsetOutOfRange
from kafka_s3.core.records import HEADER_TYPE, HEADERS_TYPE, RECORD_SCHEMA, TIMESTAMP_TYPE
from kafka_s3.io.kafka.denied import TOPIC_AUTHORIZATION_FAILED, denial

if TYPE_CHECKING:
    from confluent_kafka import Consumer, TopicPartition

# librdkafka timestamp types → Java TimestampType ids (as Spark exposes them)
_TIMESTAMP_TYPES = {0: -1, 1: 0, 2: 1}

READER_DEFAULTS = {
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "enable.partition.eof": "true",
    # Out-of-range starts must surface (data deleted by retention), not silently jump.
    "auto.offset.reset": "error",
    # Some Kafka-protocol brokers (noida-db) answer a fetch with a whole partition regardless of fetch.max.bytes. A
    # ceiling only: Apache Kafka honours fetch.max.bytes, so its responses never come near it.
    "receive.message.max.bytes": "2147483647",
    # What one reader holds on a broker that honours fetch limits: fetch.max.bytes per response, and a prefetch queue
    # of queued.max.messages.kbytes (librdkafka's own bound, whatever the broker sends). A worker keeps one reader, so
    # these two bound its Kafka memory (librdkafka's defaults, 50 MiB and 64 MiB, were half a worker's RSS).
    "fetch.max.bytes": str(16 * 1024 * 1024),
    "queued.max.messages.kbytes": str(16 * 1024),
    # A queue over that bound postpones the partition's next fetch by this long (librdkafka: 1,000 ms). A reader
    # empties 16 MiB in a fraction of a second, so at the default it idled most of every second (measured: 21,900 vs
    # 158,000 rec/s per partition of 1 KiB records with 10 ms).
    "fetch.queue.backoff.ms": "10",
}


def consumer_settings(settings: Mapping[str, str], isolation_level: str = "read_committed") -> dict[str, str]:
    merged = dict(READER_DEFAULTS)
    merged["isolation.level"] = isolation_level
    merged.update(settings)
    # librdkafka requires one; nothing is committed with it, and a principal needs no ACL on it (its refused
    # coordinator lookup is an error event the reader passes over)
    merged.setdefault("group.id", "kafka-s3-reader")
    return merged


def _headers(messages: list[Message], n: int) -> pa.Array:
    # consumed messages carry their headers as a list of (key, value) pairs, never as a dict
    headers = cast("list[list[tuple[str, bytes | None]] | None]", list(map(Message.headers, messages)))
    counts = [len(h) if h else 0 for h in headers]
    if not any(counts):
        return _no_headers(n)
    flat = [kv for h in headers if h for kv in h]
    header_structs = pa.StructArray.from_arrays(
        [pa.array([k for k, _ in flat], pa.string()), pa.array([v for _, v in flat], pa.binary())],
        fields=list(HEADER_TYPE),
    )
    list_offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=list_offsets[1:])
    return pa.ListArray.from_arrays(pa.array(list_offsets), header_structs, type=HEADERS_TYPE)


def _no_headers(n: int) -> pa.Array:
    empty = pa.StructArray.from_arrays([pa.array([], pa.string()), pa.array([], pa.binary())], fields=list(HEADER_TYPE))
    return pa.ListArray.from_arrays(pa.array(np.zeros(n + 1, dtype=np.int32)), empty, type=HEADERS_TYPE)


def _batch(topic: str, partition: int, messages: list[Message], headers: bool, timestamps: bool) -> pa.RecordBatch:
    """One Arrow batch. Every call per message counts (this is the hot path of a backup): accessors are mapped as
    unbound methods, consecutive offsets are computed rather than read, and headers and timestamps, which cost more
    per message than the rest together (librdkafka builds Python objects for them), are read only when needed."""
    n = len(messages)
    if timestamps:
        stamps = list(map(Message.timestamp, messages))
        ts_types = pa.array([_TIMESTAMP_TYPES.get(t, -1) for t, _ in stamps], pa.int32())
        ts_values = pa.array([v * 1000 if t else None for t, v in stamps], pa.int64()).cast(TIMESTAMP_TYPE)
    else:
        ts_types = pa.array(np.full(n, -1, dtype=np.int32))
        ts_values = pa.nulls(n, TIMESTAMP_TYPE)
    first, last = cast(int, messages[0].offset()), cast(int, messages[-1].offset())  # consumed: never None
    if last - first + 1 == n:  # no gap (compaction, transaction markers) inside the batch
        offsets = pa.array(np.arange(first, last + 1, dtype=np.int64))
    else:
        offsets = pa.array(list(map(Message.offset, messages)), pa.int64())
    return pa.RecordBatch.from_arrays(
        [
            pa.array(list(map(Message.key, messages)), pa.binary()),
            pa.array(list(map(Message.value, messages)), pa.binary()),
            pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([topic])).cast(pa.string()),
            pa.array(np.full(n, partition, dtype=np.int32)),
            offsets,
            ts_values,
            ts_types,
            _headers(messages, n) if headers else _no_headers(n),
        ],
        schema=RECORD_SCHEMA,
    )


def _out_of_range(consumer: Consumer, tp: TopicPartition, position: int, reason: str) -> str:
    """Why ``position`` cannot be read: deleted (below the log start) or not written yet (past the log end)."""
    where = f"{tp.topic}[{tp.partition}]"
    try:
        low, high = consumer.get_watermark_offsets(tp, timeout=10, cached=False)
    except Exception:  # the broker is unreachable now: say what the fetch said
        return f"{where}: offset {position} is out of range: {reason}"
    if position < low:
        return (
            f"{where}: offset {position} is no longer in the log, which starts at {low} (deleted by retention or "
            "DeleteRecords before it was backed up)"
        )
    return f"{where}: offset {position} is past the end of the log ({high}): {reason}"


def read_range(
    settings: Mapping[str, str],
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    isolation_level: str = "read_committed",
    headers: bool = True,
    timestamps: bool = True,
    max_batch: int = 5000,
    stall_timeout: float = 120.0,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``topic[partition]`` with ``start <= offset < end``, in order, in RECORD_SCHEMA batches.

    ``headers=False`` / ``timestamps=False`` leave those columns empty (no headers) / null, for callers that store
    neither: it saves most of the per-record cost.
    """
    if end <= start:
        return
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka import KafkaError as RdKafkaError

    where = f"{topic}[{partition}]"
    consumer = Consumer(consumer_settings(settings, isolation_level))
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        position = start
        last_progress = time.monotonic()
        while position < end:
            before = position
            # consume() returns at num_messages or at its timeout: asking for a full batch near the end idled every
            # task for the rest of the second. Ask for what remains, and no more: the partition-EOF event comes only
            # from a fetch the broker holds for fetch.wait.max.ms (500 ms) at the log end, and the last record
            # already ends the range. (Gaps — compaction, transaction markers — still wait for EOF or the timeout.)
            messages = consumer.consume(num_messages=min(max_batch, end - position), timeout=1.0)
            good = [m for m in messages if m.error() is None]
            for m in messages if len(good) < len(messages) else ():
                err = m.error()
                if err is None:
                    continue
                if err.code() == RdKafkaError._PARTITION_EOF:
                    # Reached the end of the log: everything below the log end was delivered.
                    position = max(position, cast(int, m.offset()))  # an EOF event's offset is the log end
                elif err.code() == RdKafkaError._AUTO_OFFSET_RESET or err.code() == RdKafkaError.OFFSET_OUT_OF_RANGE:
                    raise OffsetOutOfRange(
                        _out_of_range(consumer, TopicPartition(topic, partition), position, err.str())
                    )
                elif err.code() == TOPIC_AUTHORIZATION_FAILED:  # retrying cannot help: name the ACL to grant
                    raise KafkaError(f"{where}: {denial(err.code(), settings, topic=topic)} ({err.str()})")
                elif not err.retriable() and err.fatal():
                    raise KafkaError(f"{where}: consume failed at offset {position}: {err.str()}")
            if good:  # records read from a partition always have an offset
                if cast(int, good[-1].offset()) >= end:
                    good = [m for m in good if cast(int, m.offset()) < end]
                    position = end
                if good:
                    position = max(position, cast(int, good[-1].offset()) + 1)
                    yield _batch(topic, partition, good, headers, timestamps)
            if position > before:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > stall_timeout:
                raise KafkaError(
                    f"{where}: no progress reading offsets [{position}, {end}) for {stall_timeout:.0f}s "
                    "(broker unreachable, or an open transaction holding the last stable offset)"
                )
    finally:
        consumer.close()
