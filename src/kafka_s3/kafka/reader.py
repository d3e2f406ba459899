"""Read exactly the offsets ``[start, end)`` of one partition as Arrow record batches.

Works with any broker behaviour the reader may meet: gaps from compaction and transaction markers (the last record
may sit below ``end - 1``), fetches larger than requested (some brokers ignore fetch limits), and a log start that
moved past ``start`` (reported, never silently skipped). This runs inside Spark tasks: imports stay lean.
"""

from __future__ import annotations

import time
from typing import Iterator, Mapping

import numpy as np
import pyarrow as pa

from ..errors import KafkaError
from ..records import HEADER_TYPE, HEADERS_TYPE, RECORD_SCHEMA, TIMESTAMP_TYPE

# librdkafka timestamp types → Java TimestampType ids (as Spark exposes them)
_TIMESTAMP_TYPES = {0: -1, 1: 0, 2: 1}

READER_DEFAULTS = {
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "enable.partition.eof": "true",
    # Out-of-range starts must surface (data deleted by retention), not silently jump.
    "auto.offset.reset": "error",
    # Some Kafka-protocol brokers answer a fetch with a whole partition regardless of fetch.max.bytes.
    "receive.message.max.bytes": "2147483647",
    "queued.max.messages.kbytes": "262144",
}


def consumer_settings(settings: Mapping[str, str], isolation_level: str = "read_committed") -> dict[str, str]:
    merged = dict(READER_DEFAULTS)
    merged["isolation.level"] = isolation_level
    merged.update(settings)
    merged.setdefault("group.id", "kafka-s3-reader")  # librdkafka requires one; nothing is committed with it
    return merged


def _batch(topic: str, partition: int, messages: list) -> pa.RecordBatch:
    n = len(messages)
    offsets = [m.offset() for m in messages]
    stamps = [m.timestamp() for m in messages]
    ts_types = [_TIMESTAMP_TYPES.get(t, -1) for t, _ in stamps]
    ts_values = [v * 1000 if t else None for t, v in stamps]
    headers = [m.headers() for m in messages]
    counts = [len(h) if h else 0 for h in headers]
    if any(counts):
        flat = [kv for h in headers if h for kv in h]
        header_structs = pa.StructArray.from_arrays(
            [pa.array([k for k, _ in flat], pa.string()), pa.array([v for _, v in flat], pa.binary())],
            fields=list(HEADER_TYPE),
        )
        list_offsets = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(counts, out=list_offsets[1:])
        header_array = pa.ListArray.from_arrays(pa.array(list_offsets), header_structs, type=HEADERS_TYPE)
    else:
        header_array = pa.array([[]] * n, HEADERS_TYPE)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([m.key() for m in messages], pa.binary()),
            pa.array([m.value() for m in messages], pa.binary()),
            pa.array([topic] * n, pa.string()),
            pa.array(np.full(n, partition, dtype=np.int32)),
            pa.array(offsets, pa.int64()),
            pa.array(ts_values, pa.int64()).cast(TIMESTAMP_TYPE),
            pa.array(ts_types, pa.int32()),
            header_array,
        ],
        schema=RECORD_SCHEMA,
    )


def read_range(
    settings: Mapping[str, str],
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    isolation_level: str = "read_committed",
    max_batch: int = 20000,
    stall_timeout: float = 120.0,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``topic[partition]`` with ``start <= offset < end``, in order, in RECORD_SCHEMA batches."""
    if end <= start:
        return
    from confluent_kafka import Consumer, KafkaError as RdKafkaError, TopicPartition

    where = f"{topic}[{partition}]"
    consumer = Consumer(consumer_settings(settings, isolation_level))
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        position = start
        last_progress = time.monotonic()
        while position < end:
            before = position
            messages = consumer.consume(num_messages=max_batch, timeout=1.0)
            good = []
            for m in messages:
                err = m.error()
                if err is None:
                    good.append(m)
                elif err.code() == RdKafkaError._PARTITION_EOF:
                    # Reached the end of the log: everything below the log end was delivered.
                    position = max(position, m.offset())
                elif err.code() == RdKafkaError._AUTO_OFFSET_RESET or err.code() == RdKafkaError.OFFSET_OUT_OF_RANGE:
                    raise KafkaError(
                        f"{where}: offset {position} is no longer in the log (deleted by retention?): {err.str()}"
                    )
                elif not err.retriable() and err.fatal():
                    raise KafkaError(f"{where}: consume failed at offset {position}: {err.str()}")
            if good:
                if good[-1].offset() >= end:
                    good = [m for m in good if m.offset() < end]
                    position = end
                if good:
                    position = max(position, good[-1].offset() + 1)
                    yield _batch(topic, partition, good)
            if position > before:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > stall_timeout:
                raise KafkaError(
                    f"{where}: no progress reading offsets [{position}, {end}) for {stall_timeout:.0f}s "
                    "(broker unreachable, or an open transaction holding the last stable offset)"
                )
    finally:
        consumer.close()
