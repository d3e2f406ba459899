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
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_s3.core.groups import OffsetMap
from kafka_s3.io.kafka import retry
from kafka_s3.io.kafka.denied import TOPIC_AUTHORIZATION_FAILED, principal
from kafka_s3.pipelines.engine import Task
from kafka_s3.pipelines.restore.progress import Decision, ProgressIdentity, Start
from kafka_s3.pipelines.restore.result import RestoreResult
from kafka_s3.pipelines.worker_cache import cached

if TYPE_CHECKING:
    from confluent_kafka import KafkaError as RdKafkaError
    from confluent_kafka import KafkaException, Producer

    from kafka_s3.core.errors import KafkaS3Error, PlanError
    from kafka_s3.io.stores.spec import StoreSpec
    from kafka_s3.pipelines.read.discovery import BackupObject
    from kafka_s3.pipelines.read.options import Bounds

log = logging.getLogger(__name__)
MSG_SIZE_TOO_LARGE = 10  # librdkafka's code of a record over a size limit (the broker's or the producer's)
UNKNOWN_PARTITION_WAIT_S = 30.0


def _unknown_partition(exc: Exception) -> bool:
    from confluent_kafka import KafkaError as RdKafkaError

    error = exc.args[0] if exc.args else None
    return isinstance(error, RdKafkaError) and error.code() == RdKafkaError._UNKNOWN_PARTITION


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
    identity: str = ""  # stamped in the progress's metadata with the run, and in the offset map (restore/progress.py)
    run: str = ""  # this run of the restore: its own --restart progress is resumed, not restarted
    restart: bool = False  # --restart: start over where progress is another run's
    append: bool = False  # --append: a target holding records no restore accounts for is written to anyway
    offset_map_topic: str = ""  # where the source -> target offset map goes, in each transaction ("": nowhere)
    schema_ids: tuple[tuple[int, int], ...] = ()  # source -> target schema ids to rewrite in wire-format payloads

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
    who: str = ""  # the producer's principal (``User:name``), named when a write is refused
    # Source offsets of produced records not yet reported delivered: one partition's delivery reports come in
    # production order (idempotent producer), so each report is the oldest of them.
    in_flight: deque[int] = field(default_factory=deque)
    delivered: OffsetMap = field(default_factory=OffsetMap)  # since the last progress commit
    _metadata_wait_until: float | None = None

    def metadata_deadline(self) -> float:
        """Until when a produce refused for an unknown partition is tried again (once per task: a topic the
        restore created a moment ago, whose partitions the producer's metadata does not show yet)."""
        if self._metadata_wait_until is None:
            self._metadata_wait_until = time.monotonic() + UNKNOWN_PARTITION_WAIT_S
        return self._metadata_wait_until

    def on_delivery(self, err: RdKafkaError | None, msg: Any) -> None:
        # msg: a confluent_kafka Message, left untyped here: its offset() is typed Optional though a delivered message
        # always has one, and a cast per record would cost in this per-record callback
        source = self.in_flight.popleft() if self.in_flight else None
        if err is not None:
            if len(self.delivery_errors) < 5:
                hint = ""
                if err.code() == MSG_SIZE_TOO_LARGE:
                    size = len(msg.key() or b"") + len(msg.value() or b"")
                    hint = f" (a record of {size} bytes: raise the topic's max.message.bytes above it)"
                elif err.code() == TOPIC_AUTHORIZATION_FAILED:
                    hint = f" ({self.who} lacks WRITE on topic '{msg.topic()}')"
                self.delivery_errors.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}{hint}")
            return
        offset = msg.offset()
        if source is not None:
            self.delivered.add(source, offset)
        if self.first_target is None or offset < self.first_target:
            self.first_target = offset
        if self.last_target is None or offset > self.last_target:
            self.last_target = offset


def _produce_batch(producer: Producer, plan: RestorePlan, batch: pa.RecordBatch, outcome: Outcome) -> None:
    keys = batch.column("key").to_pylist()
    sources = batch.column("offset").to_pylist()
    values = batch.column("value").to_pylist()
    if plan.schema_ids:
        from kafka_s3.core.schemas import rewrite_schema_id

        ids = dict(plan.schema_ids)
        keys = [rewrite_schema_id(k, ids) for k in keys]
        values = [rewrite_schema_id(v, ids) for v in values]
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
    in_flight = outcome.in_flight
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
                in_flight.append(sources[i])
                break
            except BufferError:
                poll(0.05)
            except KafkaException as exc:
                if _unknown_partition(exc) and time.monotonic() < outcome.metadata_deadline():
                    poll(0.1)  # a topic created a moment ago: the producer's metadata catches up
                    continue
                raise _fenced(exc, plan) or _produce_error(exc, plan, batch, i, keys[i], values[i], headers) from None
        if i % 1000 == 0:
            poll(0)


FENCED_CODES = (47, 90, -144)  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED, librdkafka's _FENCED


def _fenced(exc: Exception, plan: RestorePlan) -> PlanError | None:
    """A transactional producer fenced by another one of the same id: another run of this restore took over the
    partition. This run stops (its open transaction is aborted by the fence); the other one goes on from the
    progress committed so far."""
    from kafka_s3.core.errors import PlanError

    error = retry.error_of(exc)
    if error is None or error.code() not in FENCED_CODES:
        return None
    return PlanError(
        f"{plan.target_topic}[{plan.target_partition}]: another run of this restore took over this partition (its "
        f"producer with transactional.id {plan.transactional_id!r} fenced this run's): this run stopped, and "
        f"nothing of its open transaction was committed ({error.str()})"
    )


def _start_decision(
    plan: RestorePlan, committed: int | None, metadata: str, consumer: Any, consumer_settings: dict[str, str]
) -> Decision:
    """Whether to resume from ``committed`` or start over (:func:`~kafka_s3.pipelines.restore.progress.decide`),
    with the target partition's end and, when no progress accounts for it, whether it holds records at all."""
    from confluent_kafka import TopicPartition

    from kafka_s3.io.kafka.admin import holding_records
    from kafka_s3.pipelines.restore.progress import decide

    identity = ProgressIdentity.from_metadata(plan.identity)
    if identity is None:  # a plan without an identity: its progress is taken as it is
        return Decision(Start.RESUME if committed is not None else Start.FRESH)
    where = TopicPartition(plan.target_topic, plan.target_partition)
    _, end = retry.call(
        f"read the end offset of {plan.target_topic}[{plan.target_partition}]",
        lambda remaining: consumer.get_watermark_offsets(where, timeout=min(30.0, remaining), cached=False),
        60.0,
    )
    holds = None
    if committed is None and end > 0:
        target = (plan.target_topic, plan.target_partition)
        holds = target in holding_records(consumer_settings, [target], f"{plan.progress_group}-probe")
    return decide(
        identity, committed, metadata, end, plan.restart, run=plan.run, append=plan.append, target_has_records=holds
    )


def _txn_cause(producer: Producer, exc: KafkaException) -> KafkaException:
    """The error that failed the transaction when ``exc`` only says its state is wrong: a refused write fails the
    transaction in the background, and the next call reports just "Erroneous state". A transaction that requires
    abort cannot commit: ``commit_transaction`` then raises the stored cause (and commits nothing)."""
    from confluent_kafka import KafkaException

    error = exc.args[0] if exc.args else None
    if error is None or not hasattr(error, "txn_requires_abort") or not error.txn_requires_abort():
        return exc
    try:
        producer.commit_transaction(10)
    except KafkaException as cause:
        return cause
    return exc


def _progress_refused(exc: Exception, plan: RestorePlan, settings: dict[str, str]) -> Exception:
    """A refused progress commit as the ACL it needs: committing offsets takes READ on the group and on the target
    topic (the restore's progress is the group's offsets of the target partitions)."""
    from kafka_s3.core.errors import KafkaError
    from kafka_s3.io.kafka.denied import denial

    error: Any = exc.args[0] if exc.args else None
    code = error.code() if hasattr(error, "code") else None
    text = error.str() if hasattr(error, "str") else str(exc)
    writing = "add partition" in text.lower()  # the transaction took in the target partition: a write, refused
    needed = denial(
        code,
        settings,
        topic=plan.target_topic,
        group=plan.progress_group,
        transactional_id=plan.transactional_id,
        write=writing,
    )
    if not needed:
        return exc
    if writing:
        return KafkaError(
            f"{plan.target_topic}[{plan.target_partition}]: the restore's writes were refused: {needed} ({text})"
        )
    return KafkaError(
        f"{plan.target_topic}[{plan.target_partition}]: committing the restore's progress was refused: {needed} "
        f"(progress is stored as group '{plan.progress_group}' offsets of the target partitions) ({text})"
    )


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
    from kafka_s3.core.errors import FormatError, KafkaError, PlanError
    from kafka_s3.core.records import payload_bytes
    from kafka_s3.io.kafka.admin import quiet_settings
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
    outcome = Outcome(who=principal(producer_settings))
    reporter = LiveReporter(live, plan.source_topic, plan.source_partition)
    produced_bytes = 0
    problems: list[Problem] = []
    error: str | None = None

    # librdkafka's own log lines (a connection refused every few milliseconds while a broker restarts) go to debug
    consumer = Consumer(
        quiet_settings({**consumer_settings, "group.id": plan.progress_group, "enable.auto.commit": "false"})
    )
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
    producer = Producer(quiet_settings(settings))
    target = TopicPartition(plan.target_topic, plan.target_partition)
    where = f"{plan.target_topic}[{plan.target_partition}]"

    def committed_offset(remaining: float) -> tuple[int | None, str]:
        found = consumer.committed([target], timeout=min(30.0, remaining))[0]
        if found.error is not None:
            raise KafkaException(found.error)
        return (found.offset if found.offset >= 0 else None), found.metadata or ""

    def refused_as_acl(call: Callable[[float], None]) -> Callable[[float], None]:
        """A transaction step whose failure is not retriable: the ACL it needs when the cluster refused it (the
        transaction's stored cause when the step only reports the aborted state)."""

        def attempt(remaining: float) -> None:
            try:
                call(remaining)
            except KafkaException as exc:
                fenced = _fenced(exc, plan)
                if fenced is not None:
                    raise fenced from None
                if retry.retriable(exc):
                    raise
                raise _progress_refused(_txn_cause(producer, exc), plan, producer_settings) from None

        return attempt

    def commit_offsets(offsets: list[TopicPartition]) -> None:
        def attempt(remaining: float) -> None:
            try:
                committed = consumer.commit(offsets=offsets, asynchronous=False) or []
            except KafkaException as exc:
                if retry.retriable(exc):
                    raise
                raise _progress_refused(exc, plan, consumer_settings) from None
            for tp in committed:
                if tp.error is not None:
                    raise _progress_refused(KafkaException(tp.error), plan, consumer_settings)

        retry.call(f"commit restore progress of {where} to group {plan.progress_group!r}", attempt, 60.0)

    try:
        if plan.exactly_once:
            # fences a zombie of a killed run before progress is read
            retry.call(
                f"init_transactions of transactional.id {plan.transactional_id!r}",
                lambda remaining: producer.init_transactions(min(60.0, remaining)),
                60.0,
            )
        committed, metadata = retry.call(
            f"read restore progress of {where} from group {plan.progress_group!r}", committed_offset, 30.0
        )
        # Decided now, not when the restore planned: any other producer of this partition is fenced by now, so the
        # progress read is final (another run may have committed since the plan, or this task may be a re-run).
        decision = _start_decision(plan, committed, metadata, consumer, consumer_settings)
        if decision.refused:
            raise PlanError(f"nothing was produced to {where}: {decision.reason}")
        resume = committed if decision.start is Start.RESUME else None
        identity = ProgressIdentity.from_metadata(plan.identity)
        stamp = identity.to_metadata(plan.run) if identity is not None else plan.identity  # committed with progress
        part = SourcePartition(plan.source_topic, plan.source_partition, list(plan.objects))
        in_txn = False
        pending = 0
        next_offset = resume
        progress = resume  # as committed
        map_reset = resume is None  # the first offset-map record of a restore starting over says so

        def write_map() -> None:
            """The offset map of the records since the last commit, produced with the progress that covers them
            (in the same transaction under exactly-once): a crash loses both or neither."""
            nonlocal map_reset
            if not plan.offset_map_topic:
                return
            remaining = producer.flush(120)
            if remaining:
                raise KafkaError(f"{plan.target_topic}[{plan.target_partition}]: {remaining} records not delivered")
            if outcome.delivery_errors:
                if plan.exactly_once:  # a failed transaction: its commit (refused, nothing committed) names the cause
                    try:
                        producer.commit_transaction(10)
                    except KafkaException as cause:
                        raise _progress_refused(cause, plan, producer_settings) from None
                raise KafkaError("produce failed: " + "; ".join(outcome.delivery_errors))
            if not outcome.delivered.ranges and not map_reset:
                return
            doc = {
                "restore": plan.progress_group,
                "source_topic": plan.source_topic,
                "source_partition": plan.source_partition,
                "target_topic": plan.target_topic,
                "target_partition": plan.target_partition,
                "identity": plan.identity,
                "reset": map_reset,
                "ranges": [list(r) for r in outcome.delivered.ranges],
            }
            key = f"{plan.progress_group}/{plan.source_topic}/{plan.source_partition}"
            producer.produce(plan.offset_map_topic, json.dumps(doc, separators=(",", ":")).encode(), key, partition=0)
            outcome.delivered = OffsetMap()
            map_reset = False

        def commit_progress(force: bool = False) -> None:
            nonlocal in_txn, pending, progress
            if next_offset is None or (pending == 0 and not in_txn and not force):
                return
            offsets = [TopicPartition(plan.target_topic, plan.target_partition, next_offset, metadata=stamp)]
            if plan.exactly_once:
                if not in_txn:
                    producer.begin_transaction()
                write_map()
                retry.call(
                    f"send restore progress of {where} to the transaction",
                    refused_as_acl(
                        lambda remaining: producer.send_offsets_to_transaction(
                            offsets, consumer.consumer_group_metadata(), min(60.0, remaining)
                        )
                    ),
                    60.0,
                )
                retry.call(
                    f"commit the transaction of {where}",
                    refused_as_acl(lambda remaining: producer.commit_transaction(min(120.0, remaining))),
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
                write_map()
                if producer.flush(120):
                    raise KafkaError(
                        f"{plan.offset_map_topic}: the offset map of {plan.target_topic}"
                        f"[{plan.target_partition}] was not delivered"
                    )
                commit_offsets(offsets)
            if outcome.delivery_errors:
                raise KafkaError("produce failed: " + "; ".join(outcome.delivery_errors))
            pending = 0
            progress = next_offset

        if resume is None and plan.objects and (committed is not None or not plan.exactly_once):
            # This run's progress is committed before anything is produced: another restore's progress is replaced,
            # so a crash from here on resumes this restore, not that one; and an at-least-once run killed before its
            # first commit finds its own progress, not records it cannot account for.
            next_offset = min(o.start for o in plan.objects)
            commit_progress(force=True)
            resume = None

        # Without stored offsets, the offsets of a partition spread over several directories are derived per object
        # (start + row) and overlap across objects: progress then counts whole objects, read in start order, and is
        # committed only between objects — "every object starting below next_offset is restored".
        by_object = not plugins.stored_offsets and len(part.directories) > 1
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
        track_gaps = plugins.stored_offsets or len(part.directories) <= 1

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
                outcome.delivered = OffsetMap()
                outcome.in_flight.clear()
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
