"""The restore's task: stream one source partition's objects and produce them to the target partition.

Exactly-once: the task's producer is transactional with an id fixed per (restore, source partition), so a re-run
fences any zombie of a killed run before it reads its progress; progress (the next source offset to restore) is
committed inside each transaction with ``send_offsets_to_transaction``, to a consumer group of the restore. A
re-run therefore resumes exactly after the last committed record, and a finished restore writes nothing.
At-least-once (``exactly.once.support=disabled``): an idempotent producer, progress committed after each flush.
A partition without stored offsets spread over several directories (field or time partitioners, Confluent's layout)
has no exact offsets across objects: its progress counts whole objects ("every object starting below it").

The Kafka side (producer, progress, refusals) is :mod:`kafka_s3.io.kafka.producer`'s; this module is the steps of
one partition's restore: start (fence, read progress, decide), claim the progress, produce the objects, finish.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kafka_s3.core.groups import OffsetMap
from kafka_s3.io.kafka.producer import PartitionProducer, Target
from kafka_s3.pipelines.engine import Task, spread
from kafka_s3.pipelines.engine import at_once as run_at_once
from kafka_s3.pipelines.restore.progress import Decision, ProgressIdentity, Start, decide
from kafka_s3.pipelines.restore.result import RestoreResult

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_s3.core.store import Store
    from kafka_s3.pipelines.read.discovery import BackupObject, Problem
    from kafka_s3.pipelines.read.options import Bounds
    from kafka_s3.pipelines.read.plugins import ReadPlugins
    from kafka_s3.pipelines.task_settings import TaskSettings
    from kafka_s3.runtime.live import LiveReporter

log = logging.getLogger(__name__)


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
class Counts:
    """What a partition's restore produced so far (``pending``: records since the last progress commit)."""

    records: int = 0
    objects: int = 0
    bytes: int = 0
    first_source: int | None = None
    last_source: int | None = None
    pending: int = 0


@dataclass
class PartitionRestore:
    """One source partition restored into its target partition, step by step (:meth:`run`)."""

    plan: RestorePlan
    plugins: ReadPlugins
    store: Store
    writer: PartitionProducer
    reporter: LiveReporter
    counts: Counts = field(default_factory=Counts)
    problems: list[Problem] = field(default_factory=list)
    spans: list[tuple[int, int | None, str]] = field(default_factory=list)  # offsets each object read holds
    resume: int | None = None  # where this run resumed (the progress it found and kept)
    progress: int | None = None  # the progress committed last
    next_offset: int | None = None  # the progress the records produced so far reach
    map_reset: bool = False  # the next offset-map record says the restore starts over
    current: BackupObject | None = None  # the object being read, when progress counts whole objects
    error: str | None = None  # behavior.on.error=fail: the object or record the restore stopped at

    @property
    def where(self) -> str:
        return f"{self.plan.target_topic}[{self.plan.target_partition}]"

    @property
    def by_object(self) -> bool:
        """Offsets derived per object (start + row) that overlap across directories: progress counts whole objects,
        read in start order, committed only between objects — "every object starting below next_offset is
        restored"."""
        return not self.plugins.stored_offsets and len({o.name.directory for o in self.plan.objects}) > 1

    def run(self) -> RestoreResult:
        from kafka_s3.core.errors import FormatError

        try:
            self.start()
            try:
                self.produce_objects()
            except FormatError as exc:
                self.stop_at(exc)
            self.commit_progress()
        except BaseException:
            with contextlib.suppress(Exception):  # the next run's init_transactions cleans up anyway
                self.writer.abort(30)
            raise
        finally:
            self.writer.close()
            self.reporter.update(self.counts.records, self.counts.bytes, final=True)
            self.reporter.close()
        return self.result()

    # ------------------------------------------------------------------------------------------------ steps
    def start(self) -> None:
        """Fence any other producer of the partition, then decide from the progress read — final by then (another
        run may have committed since the plan, or this task may be a re-run) — where to start. This run's progress
        is committed before anything is produced when it starts over: another restore's progress is replaced, so a
        crash from here on resumes this restore, not that one; and an at-least-once run killed before its first
        commit finds its own progress, not records it cannot account for."""
        from kafka_s3.core.errors import PlanError

        plan = self.plan
        self.writer.fence()
        committed, metadata = self.writer.progress()
        decision = self.decide(committed, metadata)
        if decision.refused:
            raise PlanError(f"nothing was produced to {self.where}: {decision.reason}")
        self.resume = committed if decision.start is Start.RESUME else None
        self.next_offset = self.progress = self.resume
        self.map_reset = self.resume is None  # the first offset-map record of a restore starting over says so
        first = self.first_offset()
        if self.resume is None and first is not None and (committed is not None or not plan.exactly_once):
            self.next_offset = first
            self.commit_progress(force=True)

    def first_offset(self) -> int | None:
        """The lowest source offset the plan reads (``None``: it reads nothing)."""
        return min((o.start for o in self.plan.objects), default=None)

    def decide(self, committed: int | None, metadata: str) -> Decision:
        """Resume from ``committed`` or start over (:func:`~kafka_s3.pipelines.restore.progress.decide`), with the
        target's end and, when no progress accounts for it, whether it holds records at all."""
        plan = self.plan
        identity = ProgressIdentity.from_metadata(plan.identity)
        if identity is None:  # a plan without an identity: its progress is taken as it is
            return Decision(Start.RESUME if committed is not None else Start.FRESH)
        end = self.writer.end_offset()
        holds = self.writer.holds_records() if committed is None and end > 0 else None
        return decide(
            identity, committed, metadata, end, plan.restart, run=plan.run, append=plan.append, target_has_records=holds
        )

    def produce_objects(self) -> None:
        """Read the objects from where the restore starts and produce their records, committing progress every
        ``restore.transaction.records`` records (between objects, when progress counts whole objects)."""
        from kafka_s3.pipelines.read.discovery import SourcePartition
        from kafka_s3.pipelines.read.reader import read_partition

        plan = self.plan
        config = self.plugins.config
        # Skipped objects are collected in ``problems``; under ``log`` the driver logs them (a worker's log is lost)
        on_error = {"log": "ignore"}.get(config["behavior.on.error"], config["behavior.on.error"])
        every = config["restore.transaction.records"]
        part = SourcePartition(plan.source_topic, plan.source_partition, list(plan.objects))
        # derived offsets of one partition spread over several directories are not the source's: no gaps told there
        track_gaps = self.plugins.stored_offsets or len(part.directories) <= 1
        for batch in read_partition(
            self.store,
            self.plugins,
            part,
            plan.bounds,
            self.resume,
            on_error,
            self.problems,
            self.begin_object,
            self.note_span if track_gaps else None,
        ):
            self.take(batch, every)
        if self.by_object and self.current is not None:
            self.next_offset = self.current.start + 1

    def take(self, batch: pa.RecordBatch, every: int) -> None:
        """Produce ``batch`` (in offset order) and count it; commit progress every ``every`` records (unless
        progress counts whole objects)."""
        from kafka_s3.core.records import payload_bytes

        counts = self.counts
        self.writer.produce(batch, self.plan.schema_ids)
        offsets = batch.column("offset")
        first, last = offsets[0].as_py(), offsets[-1].as_py()
        counts.first_source = first if counts.first_source is None else counts.first_source
        counts.last_source = last
        counts.records += batch.num_rows
        counts.bytes += payload_bytes(batch)
        self.reporter.update(counts.records, counts.bytes)
        counts.pending += batch.num_rows
        if not self.by_object:
            self.next_offset = last + 1
            if counts.pending >= every:
                self.commit_progress()

    def begin_object(self, obj: BackupObject) -> None:
        self.counts.objects += 1
        if self.by_object:
            if self.current is not None:  # the previous object was read to its end (or skipped)
                self.next_offset = self.current.start + 1
                if self.counts.pending >= self.plugins.config["restore.transaction.records"]:
                    self.commit_progress()
            self.current = obj

    def note_span(self, obj: BackupObject, first: int | None, last: int | None) -> None:
        self.spans.append((obj.start if first is None else first, last, obj.key))

    def stop_at(self, exc: Exception) -> None:
        """behavior.on.error=fail: everything before the bad record is good and is committed; nothing after. Where
        progress counts whole objects, the records of the object cut short, and of those since the last commit, are
        aborted: the next run restores them from that object on."""
        self.error = f"FormatError: {exc}"
        if self.by_object and self.plan.exactly_once and self.writer.in_transaction:
            self.writer.abort(60)
            self.counts.records -= self.counts.pending
            self.counts.pending = 0

    def commit_progress(self, force: bool = False) -> None:
        """Commit the progress the records produced so far reach, with their offset map (one transaction)."""
        plan = self.plan
        if self.next_offset is None or (self.counts.pending == 0 and not self.writer.in_transaction and not force):
            return
        identity = ProgressIdentity.from_metadata(plan.identity)
        stamp = identity.to_metadata(plan.run) if identity is not None else plan.identity
        self.writer.commit(self.next_offset, stamp, self.offset_map if plan.offset_map_topic else None)
        self.counts.pending = 0
        self.progress = self.next_offset

    def offset_map(self, delivered: OffsetMap) -> tuple[str, bytes, bytes] | None:
        """The offset map of the records delivered since the last commit, written with the progress that covers
        them: ``restore --consumer-groups`` translates groups' offsets with it."""
        plan = self.plan
        if not delivered.ranges and not self.map_reset:
            return None
        doc = {
            "restore": plan.progress_group,
            "source_topic": plan.source_topic,
            "source_partition": plan.source_partition,
            "target_topic": plan.target_topic,
            "target_partition": plan.target_partition,
            "identity": plan.identity,
            "reset": self.map_reset,
            "ranges": [list(r) for r in delivered.ranges],
        }
        self.map_reset = False
        key = f"{plan.progress_group}/{plan.source_topic}/{plan.source_partition}"
        return plan.offset_map_topic, key.encode(), json.dumps(doc, separators=(",", ":")).encode()

    def result(self) -> RestoreResult:
        from kafka_s3.pipelines.read.reader import missing_offsets

        plan, counts, delivery = self.plan, self.counts, self.writer.delivery
        return RestoreResult(
            source_topic=plan.source_topic,
            source_partition=plan.source_partition,
            target_topic=plan.target_topic,
            target_partition=plan.target_partition,
            resumed_from=self.resume,
            progress=self.progress,
            objects=counts.objects,
            records=counts.records,
            first_source_offset=counts.first_source,
            last_source_offset=counts.last_source,
            first_target_offset=delivery.first_target,
            last_target_offset=delivery.last_target,
            problems=tuple(self.problems),
            gaps=tuple(missing_offsets(plan.source_topic, plan.source_partition, self.spans)),
            error=self.error,
        )


def run_restore_partition(
    plan: RestorePlan, settings: TaskSettings, live: tuple[str, int, int] | None = None
) -> RestoreResult:
    """Restore ``plan``'s source partition in this worker (:class:`PartitionRestore`)."""
    from kafka_s3.pipelines.read.plugins import ReadPlugins
    from kafka_s3.runtime.live import LiveReporter

    plugins = settings.plugins("read-plugins", ReadPlugins.from_config)
    store = settings.open_store()
    target = Target(
        plan.target_topic,
        plan.target_partition,
        plan.progress_group,
        plan.transactional_id if plan.exactly_once else None,
        f"{plan.source_topic}[{plan.source_partition}]",
    )
    writer = PartitionProducer(target, settings.kafka, settings.consumer)
    reporter = LiveReporter(live, plan.source_topic, plan.source_partition)
    return PartitionRestore(plan, plugins, store, writer, reporter).run()


def restore_task(
    plans: list[RestorePlan],
    settings: TaskSettings,
    slots: int,
    live: tuple[str, int, int] | None = None,
    at_once: int = 1,
) -> Task:
    """Spread ``plans`` over ``slots`` tasks by the bytes of their objects (``tasks.max`` caps the slots): each task
    restores its plans, ``at_once`` at a time, and yields each one's result as it ends. ``live``: where to send
    running counts (:mod:`kafka_s3.runtime.live`), if anywhere."""
    weights = [sum(o.size for o in plan.objects) for plan in plans]
    groups = [[plans[i] for i in group] for group in spread(weights, slots)]

    def timed(plan: RestorePlan) -> RestoreResult:
        started = time.monotonic()
        result = run_restore_partition(plan, settings, live)
        return replace(result, seconds=time.monotonic() - started)

    def task(slot: int) -> Iterator[str]:
        for result in run_at_once(timed, groups[slot], at_once):
            yield result.to_json()

    return task
