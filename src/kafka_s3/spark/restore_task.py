"""The restore's Spark task: stream one source partition's objects and produce them to the target partition.

Exactly-once: the task's producer is transactional with an id fixed per (restore, source partition), so a re-run
fences any zombie of a killed run before it reads its progress; progress (the next source offset to restore) is
committed inside each transaction with ``send_offsets_to_transaction``, to a consumer group of the restore. A
re-run therefore resumes exactly after the last committed record, and a finished restore writes nothing.
At-least-once (``exactly.once.support=disabled``): an idempotent producer, progress committed after each flush.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Iterator

import pyarrow as pa

from .backup_task import _cached

log = logging.getLogger(__name__)
RESULT_SCHEMA = "result string"


@dataclass(frozen=True)
class RestorePlan:
    source_topic: str
    source_partition: int
    target_topic: str
    objects: tuple  # BackupObject, in start-offset order
    bounds: Any  # reading.Bounds
    exactly_once: bool
    transactional_id: str
    progress_group: str

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

    def on_delivery(self, err, msg) -> None:
        if err is not None:
            if len(self.delivery_errors) < 5:
                self.delivery_errors.append(f"{msg.topic()}[{msg.partition()}]: {err.str()}")
            return
        offset = msg.offset()
        if self.first_target is None or offset < self.first_target:
            self.first_target = offset
        if self.last_target is None or offset > self.last_target:
            self.last_target = offset


def _produce_batch(producer, plan: RestorePlan, batch: pa.RecordBatch, outcome: Outcome) -> None:
    keys = batch.column("key").to_pylist()
    values = batch.column("value").to_pylist()
    stamps = batch.column("timestamp").cast(pa.int64()).to_pylist()
    headers_col = batch.column("headers")
    header_offsets = headers_col.offsets.to_pylist() if len(headers_col) else [0]
    flat = headers_col.values
    header_keys = flat.field("key").to_pylist() if len(flat) else []
    header_values = flat.field("value").to_pylist() if len(flat) else []
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
                    produce(topic, values[i], keys[i], partition=partition, headers=headers,
                            timestamp=ts // 1000, on_delivery=on_delivery)
                break
            except BufferError:
                poll(0.05)
        if i % 1000 == 0:
            poll(0)


def run_restore_partition(plan: RestorePlan, config_raw: dict[str, str], store_spec, producer_settings: dict,
                          consumer_settings: dict) -> dict:
    from confluent_kafka import Consumer, Producer, TopicPartition

    from ..config.source import SOURCE
    from ..errors import FormatError, KafkaError
    from ..reading import Problem, ReadPlugins, SourcePartition, read_partition

    fingerprint = json.dumps(config_raw, sort_keys=True)
    plugins = _cached("read-plugins:" + fingerprint, lambda: ReadPlugins.from_config(SOURCE.parse(config_raw)))
    store = _cached("store:" + repr(store_spec), store_spec.open)
    on_error = plugins.config["behavior.on.error"]
    txn_records = plugins.config["restore.transaction.records"]
    outcome = Outcome()
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
    try:
        if plan.exactly_once:
            producer.init_transactions(60)  # fences a zombie of a killed run before progress is read
        committed = consumer.committed([target], timeout=30)[0].offset
        resume = committed if committed is not None and committed >= 0 else None
        part = SourcePartition(plan.source_topic, plan.source_partition, list(plan.objects))
        in_txn = False
        pending = 0
        next_offset = resume

        def commit_progress() -> None:
            nonlocal in_txn, pending
            if next_offset is None or (pending == 0 and not in_txn):
                return
            offsets = [TopicPartition(plan.target_topic, plan.target_partition, next_offset)]
            if plan.exactly_once:
                if not in_txn:
                    producer.begin_transaction()
                producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 60)
                producer.commit_transaction(120)
                in_txn = False
            else:
                remaining = producer.flush(120)
                if remaining:
                    raise KafkaError(f"{plan.target_topic}[{plan.target_partition}]: {remaining} records not delivered")
                consumer.commit(offsets=offsets, asynchronous=False)
            if outcome.delivery_errors:
                raise KafkaError("produce failed: " + "; ".join(outcome.delivery_errors))
            pending = 0

        def count_object(_obj) -> None:
            outcome.objects += 1

        try:
            for batch in read_partition(store, plugins, part, plan.bounds, resume, on_error, problems, count_object):
                if plan.exactly_once and not in_txn:
                    producer.begin_transaction()
                    in_txn = True
                _produce_batch(producer, plan, batch, outcome)
                offsets = batch.column("offset")
                first, last = offsets[0].as_py(), offsets[-1].as_py()
                outcome.first_source = first if outcome.first_source is None else outcome.first_source
                outcome.last_source = last
                outcome.records += batch.num_rows
                next_offset = last + 1
                pending += batch.num_rows
                if pending >= txn_records:
                    commit_progress()
        except FormatError as exc:
            # behavior.on.error=fail: everything before the bad record is good and is committed; nothing after.
            error = f"FormatError: {exc}"
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
    return {
        "source_topic": plan.source_topic,
        "source_partition": plan.source_partition,
        "target_topic": plan.target_topic,
        "target_partition": plan.target_partition,
        "resumed_from": resume,
        "objects": outcome.objects,
        "records": outcome.records,
        "first_source_offset": outcome.first_source,
        "last_source_offset": outcome.last_source,
        "first_target_offset": outcome.first_target,
        "last_target_offset": outcome.last_target,
        "problems": [p.__dict__ for p in problems],
        "error": error,
    }


def restore_task(plans: list[RestorePlan], config_raw: dict[str, str], store_spec, producer_settings: dict,
                 consumer_settings: dict, slots: int):
    """The ``mapInArrow`` function: Spark partition ``i`` restores plans ``i, i+slots, ...`` one after another."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for slot in batch.column(0).to_pylist():
                for plan in plans[slot::slots]:
                    started = time.monotonic()
                    result = run_restore_partition(plan, config_raw, store_spec, producer_settings, consumer_settings)
                    result["seconds"] = time.monotonic() - started
                    yield pa.RecordBatch.from_pydict({"result": [json.dumps(result)]})

    return run
