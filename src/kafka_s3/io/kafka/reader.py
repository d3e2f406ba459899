"""Read exactly the offsets ``[start, end)`` of one partition as Arrow record batches.

Works with any broker behaviour the reader may meet: gaps from compaction and transaction markers (the last record
may sit below ``end - 1``), fetches larger than requested (some brokers ignore fetch limits), and a log start that
moved past ``start`` (reported, never silently skipped). This runs inside Spark tasks: imports stay lean.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa
from confluent_kafka import KafkaError as RdKafkaError
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
    shared: TaskConsumer | None = None,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``topic[partition]`` with ``start <= offset < end``, in order, in RECORD_SCHEMA batches.

    ``headers=False`` / ``timestamps=False`` leave those columns empty (no headers) / null, for callers that store
    neither: it saves most of the per-record cost. ``shared``: read through the task's consumer (its
    ``isolation_level`` then), not a consumer of this range's own.
    """
    if end <= start:
        return
    from confluent_kafka import Consumer, TopicPartition

    where = f"{topic}[{partition}]"
    consumer: Consumer
    if shared is None:
        consumer = Consumer(consumer_settings(settings, isolation_level))
        consume = consumer.consume
    else:
        consumer = shared.consumer
        lease = shared.open(topic, partition, start, end)
        consume = functools.partial(shared.take, lease)
    try:
        if shared is None:
            consumer.assign([TopicPartition(topic, partition, start)])
        position = start
        last_progress = time.monotonic()
        while position < end:
            before = position
            # consume() returns at num_messages or at its timeout: asking for a full batch near the end idled every
            # task for the rest of the second. Ask for what remains, and no more: the partition-EOF event comes only
            # from a fetch the broker holds for fetch.wait.max.ms (500 ms) at the log end, and the last record
            # already ends the range. (Gaps — compaction, transaction markers — still wait for EOF or the timeout.)
            messages = consume(num_messages=min(max_batch, end - position), timeout=1.0)
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
        if shared is None:
            consumer.close()
        else:
            shared.close(lease)


# ------------------------------------------------------------------------------------------------ one consumer a task
TASK_CONSUMER_DEFAULTS = {
    # The broker holds a fetch this long when no partition it asks for has records. A task's consumer serves many
    # ranges one after another: a partition assigned while such a fetch is held waits for it, so the wait is short
    # (librdkafka: 500 ms). Partitions whose range is read are paused or unassigned, so it rarely fetches at a log end.
    "fetch.wait.max.ms": "20",
}
READ_AHEAD = 32
"""Partitions a task's consumer has assigned ahead of the ranges its threads read: their first records arrive in the
fetches already going on, so a quiet partition's range is often read before its thread asks for it."""
AHEAD_QUEUE_BYTES = 256 * 1024
"""Record bytes held for a partition assigned ahead, before its fetches pause (memory: ``READ_AHEAD`` of them)."""
OPEN_QUEUE_BYTES = 8 * 1024 * 1024
"""Record bytes held for a partition a thread reads, before its fetches pause until the thread catches up."""
FETCH_BATCH = 5000  # messages one consume call takes for every partition of the task


@dataclass
class _Queue:
    """What the task's consumer fetched of one partition and its reader has not taken yet."""

    start: int
    end: int
    lease: int | None = None  # the range reading it (None: assigned ahead)
    chunks: deque[list[Message]] = field(default_factory=deque)
    held: int = 0  # bytes of the values queued
    next_offset: int = -1  # offset after the last record queued (records below it fetched again are dropped)
    reached: int = -1  # how far the log is known read: past the last record, or the end a partition-EOF event gave
    paused: bool = False


class TaskConsumer:
    """One consumer reading the ranges of many partitions for the threads of one task, instead of a consumer per
    range: a consumer's start, first fetch and close were ~40 % of a quiet partition's time in a task (issue 30's
    profile of 1,000 partitions × 10 records). A range's partition is assigned when it opens — or earlier, when it is
    among the next :data:`READ_AHEAD` of ``ahead`` (the ranges in the order the task reads them) — and unassigned when
    it closes; each fetch's messages go to their partition's queue, whichever thread asked. A queue over its bound, or
    holding its range's end, pauses its partition's fetches. Assignments change only while no thread is inside
    ``consume`` (librdkafka then drops what was fetched for an earlier assignment); the records of one partition are
    delivered in offset order, each once."""

    def __init__(
        self,
        settings: Mapping[str, str],
        isolation_level: str = "read_committed",
        ahead: Sequence[tuple[str, int, int, int]] = (),
    ):
        from confluent_kafka import Consumer

        self.consumer = Consumer({**TASK_CONSUMER_DEFAULTS, **consumer_settings(settings, isolation_level)})
        self._ahead = deque(ahead)  # (topic, partition, first offset, end) not assigned yet
        self._queues: dict[tuple[str, int], _Queue] = {}
        self._leased: dict[int, tuple[str, int]] = {}  # lease -> the partition it reads
        self._condition = threading.Condition()  # guards the queues; reentrant (an RLock)
        self._busy = False  # a thread is calling the consumer (consume, assign or unassign)
        self._waiting = 0  # threads waiting to change the assignment
        self._leases = 0

    # ------------------------------------------------------------------------------------------------ ranges
    def open(self, topic: str, partition: int, start: int, end: int) -> int:
        """Start reading ``[start, end)`` of ``topic[partition]``; returns the lease :meth:`take` and :meth:`close`
        name the range by. A partition assigned ahead from ``start`` keeps what was fetched of it."""
        tp = (topic, partition)
        self._acquire()
        try:
            with self._condition:
                self._leases += 1
                queue = self._queues.get(tp)
                if queue is None or queue.lease is not None or queue.start != start:
                    if queue is not None:
                        self._unassign(tp)
                    queue = self._assign(tp, start, end)
                queue.lease, queue.end = self._leases, end
                self._leased[self._leases] = tp
                if queue.paused and queue.reached < end and queue.held < OPEN_QUEUE_BYTES:
                    self._resume(tp, queue)
                self._ahead = deque(a for a in self._ahead if (a[0], a[1]) != tp)
                self._read_ahead()
                return self._leases
        finally:
            self._release()

    def close(self, lease: int) -> None:
        """The range of ``lease`` is read (or abandoned): its partition is unassigned, what is queued dropped."""
        self._acquire()
        try:
            with self._condition:
                tp = self._leased.pop(lease, None)
                if tp is not None:  # (None: closed already)
                    self._unassign(tp)
                self._read_ahead()
        finally:
            self._release()

    def take(self, lease: int, num_messages: int, timeout: float) -> list[Message]:
        """Up to ``num_messages`` of the lease's partition, as ``Consumer.consume`` gives them (records and events,
        in order), waiting at most ``timeout`` seconds: from its queue, else from the consumer, one thread at a time
        fetching for all."""
        deadline = time.monotonic() + timeout
        while True:
            with self._condition:
                while True:
                    queue = self._queues[self._leased[lease]]
                    if queue.chunks:
                        return self._pop(self._leased[lease], queue, num_messages)
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return []
                    if not self._busy and not self._waiting:  # (assignments first: they are quick)
                        self._busy = True
                        break
                    self._condition.wait(remaining)
            messages: list[Message] = []
            try:
                messages = self.consumer.consume(num_messages=FETCH_BATCH, timeout=min(remaining, 0.1))
            finally:
                with self._condition:
                    try:
                        self._dispatch(messages)
                    finally:
                        self._busy = False
                        self._condition.notify_all()

    def shutdown(self) -> None:
        self.consumer.close()

    # ------------------------------------------------------------------------------------------------ internals
    def _acquire(self) -> None:
        with self._condition:
            self._waiting += 1
            while self._busy:
                self._condition.wait()
            self._waiting -= 1
            self._busy = True

    def _release(self) -> None:
        with self._condition:
            self._busy = False
            self._condition.notify_all()

    def _assign(self, tp: tuple[str, int], start: int, end: int) -> _Queue:
        from confluent_kafka import TopicPartition

        self.consumer.incremental_assign([TopicPartition(tp[0], tp[1], start)])
        queue = self._queues[tp] = _Queue(start, end, next_offset=start)
        return queue

    def _unassign(self, tp: tuple[str, int]) -> None:
        from confluent_kafka import TopicPartition

        queue = self._queues[tp]
        if queue.paused:  # librdkafka keeps a partition's pause across assignments: a later one would never fetch
            self._resume(tp, queue)
        self.consumer.incremental_unassign([TopicPartition(tp[0], tp[1])])
        queue = self._queues.pop(tp)
        if queue.lease is not None:
            self._leased.pop(queue.lease, None)

    def _read_ahead(self) -> None:
        waiting = sum(1 for q in self._queues.values() if q.lease is None)
        while self._ahead and waiting < READ_AHEAD:
            topic, partition, start, end = self._ahead.popleft()
            if (topic, partition) not in self._queues and end > start:
                self._assign((topic, partition), start, end)
                waiting += 1

    def _pause(self, tp: tuple[str, int], queue: _Queue) -> None:
        from confluent_kafka import TopicPartition

        self.consumer.pause([TopicPartition(tp[0], tp[1])])
        queue.paused = True

    def _resume(self, tp: tuple[str, int], queue: _Queue) -> None:
        from confluent_kafka import TopicPartition

        self.consumer.resume([TopicPartition(tp[0], tp[1])])
        queue.paused = False

    def _dispatch(self, messages: list[Message]) -> None:
        """Each message to its partition's queue (an event of no partition, such as a fatal error, to every range
        being read); records of a partition no longer assigned, or fetched again, are dropped."""
        if not messages:
            return
        by_tp: dict[tuple[str | None, int | None], list[Message]] = {}
        for m in messages:
            by_tp.setdefault((m.topic(), m.partition()), []).append(m)
        for (topic, partition), chunk in by_tp.items():
            if topic is None or partition is None or partition < 0:  # no partition: every reader hears it
                for leased in self._leased.values():
                    self._queues[leased].chunks.append(chunk)
                continue
            tp = (topic, partition)
            queue = self._queues.get(tp)
            if queue is None:
                continue
            first = chunk[0].offset()
            if first is not None and first < queue.next_offset:
                chunk = [m for m in chunk if m.error() is not None or cast(int, m.offset()) >= queue.next_offset]
            records = [m for m in chunk if m.error() is None]
            if records:
                queue.next_offset = queue.reached = cast(int, records[-1].offset()) + 1
            for m in chunk if len(records) < len(chunk) else ():
                error = m.error()
                if error is not None and error.code() == RdKafkaError._PARTITION_EOF:
                    queue.reached = max(queue.reached, cast(int, m.offset()))  # an EOF event's offset: the log end
            if not chunk:
                continue
            queue.chunks.append(chunk)
            queue.held += sum(map(len, records))
            bound = AHEAD_QUEUE_BYTES if queue.lease is None else OPEN_QUEUE_BYTES
            if not queue.paused and (queue.reached >= queue.end or queue.held >= bound):
                self._pause(tp, queue)

    def _pop(self, tp: tuple[str, int], queue: _Queue, most: int) -> list[Message]:
        taken: list[Message] = []
        while queue.chunks and len(taken) < most:
            chunk = queue.chunks[0]
            room = most - len(taken)
            if len(chunk) <= room:
                taken.extend(queue.chunks.popleft())
            else:
                taken.extend(chunk[:room])
                queue.chunks[0] = chunk[room:]
        queue.held = max(0, queue.held - sum(map(len, taken)))
        if queue.paused and queue.reached < queue.end and queue.held < OPEN_QUEUE_BYTES // 2:
            self._resume(tp, queue)
        return taken
