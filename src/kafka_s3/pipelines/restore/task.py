"""The restore's task: stream one source partition's objects and produce them to the target partition.

Exactly-once: the task's producer is transactional with an id fixed per (restore, source partition), so a re-run
fences any zombie of a killed run before it reads its progress; progress (the next source offset to restore) is
committed inside each transaction with ``send_offsets_to_transaction``, to a consumer group of the restore. A
re-run therefore resumes exactly after the last committed record, and a finished restore writes nothing.
At-least-once (``exactly.once.support=disabled``): an idempotent producer, progress committed after each flush.
A partition without stored offsets spread over several directories (field or time partitioners, Confluent's layout)
has no exact offsets across objects: its progress counts whole objects ("every object starting below it").
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_s3.io.kafka import retry
from kafka_s3.pipelines.engine import Task
from kafka_s3.pipelines.restore.result import RestoreResult
from kafka_s3.pipelines.worker_cache import cached

if TYPE_CHECKING:
    from confluent_kafka import KafkaError as RdKafkaError
    from confluent_kafka import KafkaException, Producer

    from kafka_s3.core.errors import KafkaS3Error
    from kafka_s3.io.stores.spec import StoreSpec
    from kafka_s3.pipelines.read.discovery import BackupObject
    from kafka_s3.pipelines.read.options import Bounds

log = logging.getLogger(__name__)
MSG_SIZE_TOO_LARGE = 10  # librdkafka's code of a record over a size limit (the broker's or the producer's)


@dataclass(frozen=True)
class RestorePlan:
    source_topic: str
    source_partition: int
    target_topic: str
    objects: tuple[BackupObject, ...]  # in start-offset order
    bounds: Bounds
    exactly_once: bool
    transactional_id: str
    progress_group: str
    identity: str = ""  # stamped in the progress's metadata (see pipelines/restore/progress.py)
    fresh: bool = False  # ignore committed progress: it is not this restore's (the driver decided why)

    @property
    def target_partition(self) -> int:
        return self.source_partition


@dataclass
class Outcome:
    records: int = 0
    objects: int = 0
    first_source: int | None = None
    last_source: int | None = None
    first_target: int | None = None
    last_target: int | None = None
    delivery_errors: list[str] = field(default_factory=list)

    def on_delivery(self, err: RdKafkaError | None, msg: Any) -> None:
        # msg: a confluent_kafka Message, left untyped here: its offset() is typed Optional though a delivered message
        # always has one, and a cast per record would cost in this per-record callback
        if err is not None:
            if len(self.delivery_errors) < 5:
                hint = ""
                if err.code() == MSG_SIZE_TOO_LARGE:
                    size = len(msg.key() or b"") + len(msg.value() or b"")
                    hint = f" (a record of {size} bytes: raise the topic's max.message.bytes above it)"
                self.delivery_errors.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}{hint}")
            return
        offset = msg.offset()
        if self.first_target is None or offset < self.first_target:
            self.first_target = offset
        if self.last_target is None or offset > self.last_target:
            self.last_target = offset


def _produce_batch(producer: Producer, plan: RestorePlan, batch: pa.RecordBatch, outcome: Outcome) -> None:
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
    headers_col = batch.column("headers")
    header_offsets = headers_col.offsets.to_pylist() if len(headers_col) else [0]
    flat = headers_col.values
    header_keys = flat.field("key").to_pylist() if len(flat) else []
    header_values = flat.field("value").to_pylist() if len(flat) else []
    from confluent_kafka import KafkaException

    topic, partition = plan.target_topic, plan.target_partition
    produce, poll = producer.produce, producer.poll
    on_delivery = outcome.on_delivery
    for i in range(batch.num_rows):
        lo, hi = header_offsets[i], header_offsets[i + 1]
        headers = [(header_keys[j], header_values[j]) for j in range(lo, hi)] if hi > lo else None
        ts = stamps[i]
        while True:
            try:
                if ts is None:
                    produce(topic, values[i], keys[i], partition=partition, headers=headers, on_delivery=on_delivery)
                else:
                    produce(
                        topic,
                        values[i],
                        keys[i],
                        partition=partition,
                        headers=headers,
                        timestamp=ts // 1000,
                        on_delivery=on_delivery,
                    )
                break
            except BufferError:
                poll(0.05)
            except KafkaException as exc:
                raise _produce_error(exc, plan, batch, i, keys[i], values[i], headers) from None
        if i % 1000 == 0:
            poll(0)


def _produce_error(
    exc: KafkaException,
    plan: RestorePlan,
    batch: pa.RecordBatch,
    row: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]] | None,
) -> KafkaS3Error:
    """A record the producer refuses before sending it, named by its source position (and, for its size, with the
    properties that bound it): the project's error, not librdkafka's bare code."""
    from confluent_kafka import KafkaError as RdKafkaError

    from kafka_s3.core.errors import DataError, KafkaError

    error = exc.args[0] if exc.args else None
    text = error.str() if isinstance(error, RdKafkaError) else str(exc)
    offset = batch.column("offset")[row].as_py()
    where = f"record {plan.source_topic}[{plan.source_partition}] offset {offset}"
    if isinstance(error, RdKafkaError) and error.code() == RdKafkaError.MSG_SIZE_TOO_LARGE:
        size = len(key or b"") + len(value or b"") + sum(len(k) + len(v or b"") for k, v in headers or ())
        return DataError(
            f"{where} is {size} bytes (key, value and headers), over the producer's limit ({text}): raise "
            f"producer.override.message.max.bytes above {size}, and the target topic {plan.target_topic}'s "
            "max.message.bytes (or the broker's message.max.bytes) with it"
        )
    return KafkaError(f"cannot produce {where} to {plan.target_topic}[{plan.target_partition}]: {text}")


def run_restore_partition(
    plan: RestorePlan,
    config_raw: dict[str, str],
    store_spec: StoreSpec,
    producer_settings: dict[str, str],
    consumer_settings: dict[str, str],
    live: tuple[str, int, int] | None = None,
) -> RestoreResult:
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    from kafka_s3.core.config.source import SOURCE
    from kafka_s3.core.errors import FormatError, KafkaError
    from kafka_s3.core.records import payload_bytes
    from kafka_s3.pipelines.live import LiveReporter
    from kafka_s3.pipelines.read.discovery import Problem, SourcePartition
    from kafka_s3.pipelines.read.plugins import ReadPlugins
    from kafka_s3.pipelines.read.reader import missing_offsets, read_partition

    fingerprint = json.dumps(config_raw, sort_keys=True)
    plugins = cached("read-plugins:" + fingerprint, lambda: ReadPlugins.from_config(SOURCE.parse(config_raw)))
    store = cached("store:" + repr(store_spec), store_spec.open)
    # Skipped objects are collected in ``problems``; under ``log`` the driver logs them (a worker's log is not seen).
    on_error = {"log": "ignore"}.get(plugins.config["behavior.on.error"], plugins.config["behavior.on.error"])
    txn_records = plugins.config["restore.transaction.records"]
    outcome = Outcome()
    reporter = LiveReporter(live, plan.source_topic, plan.source_partition)
    produced_bytes = 0
    problems: list[Problem] = []
    error: str | None = None

    consumer = Consumer({**consumer_settings, "group.id": plan.progress_group, "enable.auto.commit": "false"})
    settings = {
        "enable.idempotence": "true",
        "linger.ms": "20",
        "batch.size": "1000000",
        "queue.buffering.max.messages": "1000000",
        "queue.buffering.max.kbytes": "1048576",
        **producer_settings,
    }
    if plan.exactly_once:
        settings["transactional.id"] = plan.transactional_id
    producer = Producer(settings)
    target = TopicPartition(plan.target_topic, plan.target_partition)
    where = f"{plan.target_topic}[{plan.target_partition}]"

    def committed_offset(remaining: float) -> int | None:
        found = consumer.committed([target], timeout=min(30.0, remaining))[0]
        if found.error is not None:
            raise KafkaException(found.error)
        return found.offset

    def commit_offsets(offsets: list[TopicPartition]) -> None:
        def attempt(remaining: float) -> None:
            for tp in consumer.commit(offsets=offsets, asynchronous=False) or []:
                if tp.error is not None:
                    raise KafkaException(tp.error)

        retry.call(f"commit restore progress of {where} to group {plan.progress_group!r}", attempt, 60.0)

    try:
        if plan.exactly_once:
            # fences a zombie of a killed run before progress is read
            retry.call(
                f"init_transactions of transactional.id {plan.transactional_id!r}",
                lambda remaining: producer.init_transactions(min(60.0, remaining)),
                60.0,
            )
        committed = retry.call(
            f"read restore progress of {where} from group {plan.progress_group!r}", committed_offset, 30.0
        )
        resume = committed if committed is not None and committed >= 0 and not plan.fresh else None
        part = SourcePartition(plan.source_topic, plan.source_partition, list(plan.objects))
        in_txn = False
        pending = 0
        next_offset = resume
        progress = resume  # as committed

        def commit_progress(force: bool = False) -> None:
            nonlocal in_txn, pending, progress
            if next_offset is None or (pending == 0 and not in_txn and not force):
                return
            offsets = [TopicPartition(plan.target_topic, plan.target_partition, next_offset, metadata=plan.identity)]
            if plan.exactly_once:
                if not in_txn:
                    producer.begin_transaction()
                retry.call(
                    f"send restore progress of {where} to the transaction",
                    lambda remaining: producer.send_offsets_to_transaction(
                        offsets, consumer.consumer_group_metadata(), min(60.0, remaining)
                    ),
                    60.0,
                )
                retry.call(
                    f"commit the transaction of {where}",
                    lambda remaining: producer.commit_transaction(min(120.0, remaining)),
                    120.0,
                )
                in_txn = False
            else:
                remaining = producer.flush(120)
                if remaining:
                    raise KafkaError(f"{plan.target_topic}[{plan.target_partition}]: {remaining} records not delivered")
                # Progress never passes a record that was not delivered: a rerun restores it again.
                if outcome.delivery_errors:
                    raise KafkaError("produce failed: " + "; ".join(outcome.delivery_errors))
                commit_offsets(offsets)
            if outcome.delivery_errors:
                raise KafkaError("produce failed: " + "; ".join(outcome.delivery_errors))
            pending = 0
            progress = next_offset

        if plan.fresh and committed is not None and committed >= 0 and plan.objects:
            # Progress of another restore is replaced before anything is produced: a crash from here on resumes
            # this restore, not that one.
            next_offset = min(o.start for o in plan.objects)
            commit_progress(force=True)
            resume = None

        # Without stored offsets, the offsets of a partition spread over several directories are derived per object
        # (start + row) and overlap across objects: progress then counts whole objects, read in start order, and is
        # committed only between objects — "every object starting below next_offset is restored".
        by_object = not plugins.envelope and len(part.directories) > 1
        current: BackupObject | None = None  # the object being read (by_object)

        def begin_object(obj: BackupObject) -> None:
            nonlocal current, next_offset
            outcome.objects += 1
            if by_object:
                if current is not None:  # the previous object was read to its end (or skipped)
                    next_offset = current.start + 1
                    if pending >= txn_records:
                        commit_progress()
                current = obj

        # Offsets each object read holds, to report gaps (derived offsets of one partition spread over several
        # directories are not the source's: no gaps can be told there).
        spans: list[tuple[int, int | None, str]] = []
        track_gaps = plugins.envelope or len(part.directories) <= 1

        def note_span(obj: BackupObject, first: int | None, last: int | None) -> None:
            spans.append((obj.start if first is None else first, last, obj.key))

        try:
            for batch in read_partition(
                store,
                plugins,
                part,
                plan.bounds,
                resume,
                on_error,
                problems,
                begin_object,
                note_span if track_gaps else None,
            ):
                if plan.exactly_once and not in_txn:
                    producer.begin_transaction()
                    in_txn = True
                _produce_batch(producer, plan, batch, outcome)
                offsets = batch.column("offset")
                first, last = offsets[0].as_py(), offsets[-1].as_py()
                outcome.first_source = first if outcome.first_source is None else outcome.first_source
                outcome.last_source = last
                outcome.records += batch.num_rows
                produced_bytes += payload_bytes(batch)
                reporter.update(outcome.records, produced_bytes)
                pending += batch.num_rows
                if not by_object:
                    next_offset = last + 1
                    if pending >= txn_records:
                        commit_progress()
            if by_object and current is not None:
                next_offset = current.start + 1
        except FormatError as exc:
            # behavior.on.error=fail: everything before the bad record is good and is committed; nothing after.
            error = f"FormatError: {exc}"
            if by_object and plan.exactly_once and in_txn:
                # Progress can only be committed between objects: the records of the object cut short, and of
                # those since the last commit, are aborted; the next run restores them from that object on.
                producer.abort_transaction(60)
                outcome.records -= pending
                in_txn, pending = False, 0
        commit_progress()
    except BaseException:
        try:
            if plan.exactly_once:
                producer.abort_transaction(30)
        except Exception:  # the transaction may not be open; the next run's init_transactions cleans up anyway
            pass
        raise
    finally:
        consumer.close()
        reporter.update(outcome.records, produced_bytes, final=True)
        reporter.close()
    return RestoreResult(
        source_topic=plan.source_topic,
        source_partition=plan.source_partition,
        target_topic=plan.target_topic,
        target_partition=plan.target_partition,
        resumed_from=resume,
        progress=progress,
        objects=outcome.objects,
        records=outcome.records,
        first_source_offset=outcome.first_source,
        last_source_offset=outcome.last_source,
        first_target_offset=outcome.first_target,
        last_target_offset=outcome.last_target,
        problems=tuple(problems),
        gaps=tuple(missing_offsets(plan.source_topic, plan.source_partition, spans)),
        error=error,
    )


def restore_task(
    plans: list[RestorePlan],
    config_raw: dict[str, str],
    store_spec: StoreSpec,
    producer_settings: dict[str, str],
    consumer_settings: dict[str, str],
    slots: int,
    live: tuple[str, int, int] | None = None,
) -> Task:
    """Slot ``i`` restores plans ``i, i+slots, ...`` one after another (``tasks.max`` caps the slots).
    ``live``: where to send running counts (:mod:`kafka_s3.pipelines.live`), if anywhere."""

    def task(slot: int) -> Iterator[str]:
        for plan in plans[slot::slots]:
            started = time.monotonic()
            result = run_restore_partition(plan, config_raw, store_spec, producer_settings, consumer_settings, live)
            yield replace(result, seconds=time.monotonic() - started).to_json()

    return task
