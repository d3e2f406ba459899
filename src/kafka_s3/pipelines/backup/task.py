"""The backup's task: read one topic-partition range from Kafka and write its objects, in one Python worker.

Reading and writing are fused in the same task (rather than a Kafka DataFrame piped into ``mapInArrow``) because
the JVM round trip in between halved throughput in our measurements; the Kafka reader is the same code the
``kafka-s3-topic`` data source uses. Only a small :class:`PartitionResult` per partition travels back to the driver.
Imports stay lean: this module is loaded by every Python worker.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from kafka_s3.pipelines.backup.result import PartitionResult, logged_objects
from kafka_s3.pipelines.engine import BACKUP_PARTITIONS_AT_ONCE, Task, at_once, spread

if TYPE_CHECKING:
    from kafka_s3.core.manifest import Manifest
    from kafka_s3.core.store import Store
    from kafka_s3.io.kafka.reader import TaskConsumer
    from kafka_s3.pipelines.backup.partition import PartitionBackup
    from kafka_s3.pipelines.backup.plugins import BackupPlugins
    from kafka_s3.pipelines.task_settings import TaskSettings
    from kafka_s3.runtime.live import LiveReporter

# Past the cycle's planned end with no record-count rule to say where the open chunk ends (time rules): records fed
# to the writer at a time, which bounds how far the read goes beyond that chunk's last record.
TAIL_PIECE_RECORDS = 1000
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartitionPlan:
    """One task's work: read ``[start, end)`` (at least), up to ``hard_end`` while a chunk is still open."""

    topic: str
    partition: int
    start: int
    end: int
    hard_end: int
    forced_end: int | None = None
    flush_open: bool = False  # --once: commit what is open when the input is exhausted
    # The chunk starting at ``start`` was left open by an earlier cycle: wall time it was first seen open, and the
    # offset its records reached (scheduled rotation counts from then, and keeps those records together).
    open_since_ms: int | None = None
    open_until: int | None = None
    # End of the chunk before ``start`` (the next manifest's ``follows``) and the digest of its last record, when the
    # driver knows them (``previous_known``); else they are looked up in the bucket
    previous_end: int | None = None
    previous_known: bool = False
    previous_record: str | None = None
    # The driver found no chunk of this partition in the bucket (``previous_known`` then says there is none before
    # ``start``): no chunk to replay is looked for (:class:`.cycle.PartitionState`)
    unrecorded: bool = False
    topic_id: str = ""  # the source topic's id now ("" where the broker gives none)


@dataclass(frozen=True)
class Boundary:
    """The end of the chunk the bucket holds before a task's start: where the log must still be the backed-up one."""

    end: int
    record: str | None  # digest of the record at ``end`` (None: not recorded)


# How far before a task's start the record at the previous chunk's end may lie for it to be read and compared (offsets
# in between are read and dropped: transaction markers usually, a few)
BOUNDARY_REACH = 1000


def run_partition(
    plan: PartitionPlan,
    settings: TaskSettings,
    live: tuple[str, int, int] | None = None,
    reader: TaskConsumer | None = None,
) -> PartitionResult:
    """Back up ``plan`` (reading through the task's ``reader`` when given, else a consumer of its own). A failure
    another attempt may cure (the store or Kafka failing for this partition) is returned as a retryable error with
    nothing committed, rather than failing the whole job: the driver retries this partition with backoff while the
    others go on."""
    from kafka_s3.core.errors import PlanError

    try:
        return _run_partition(plan, settings, live, reader)
    except PlanError:
        raise  # the log is not the one backed up (SourceChanged): another attempt would be refused again
    except Exception as exc:
        from kafka_s3.core.errors import KafkaS3Error

        # The project's own errors say all there is (the object, the endpoint); the trace only of a surprise
        own = isinstance(exc, KafkaS3Error)
        log.warning("%s[%d]: backup task failed: %s", plan.topic, plan.partition, exc, exc_info=not own)
        return PartitionResult(
            topic=plan.topic,
            partition=plan.partition,
            start=plan.start,
            read_until=plan.start,
            committed_offset=plan.start,
            error=f"{type(exc).__name__}: {exc}",
            retryable=True,
        )


def _run_partition(
    plan: PartitionPlan, settings: TaskSettings, live: tuple[str, int, int] | None, reader: TaskConsumer | None
) -> PartitionResult:
    from kafka_s3.core.errors import ConfigError, ConversionError, DataError, FormatError, PartitionerError
    from kafka_s3.core.records import payload_bytes
    from kafka_s3.pipelines.backup.commit import ChunkConflict
    from kafka_s3.pipelines.backup.partition import PartitionBackup
    from kafka_s3.pipelines.backup.plugins import BackupPlugins
    from kafka_s3.runtime.live import LiveReporter
    from kafka_s3.runtime.worker_memory import Releaser

    RECORD_ERRORS = (ConversionError, PartitionerError, DataError, ConfigError, FormatError)

    plugins = settings.plugins("backup-plugins", BackupPlugins.from_config)
    store = settings.open_store()
    isolation = plugins.config["isolation.level"]
    start, forced_end = plan.start, plan.forced_end
    open_since_ms, open_until = plan.open_since_ms, plan.open_until
    boundary = _boundary(plan, plugins, store)
    previous: tuple[int | None] | None = (boundary.end if boundary else None,)
    recover = not plan.unrecorded
    reporter = LiveReporter(live, plan.topic, plan.partition)
    read_bytes = 0
    releaser = Releaser()
    while True:
        writer = PartitionBackup(
            plugins,
            store,
            plan.topic,
            plan.partition,
            forced_end=forced_end,
            open_since_ms=open_since_ms,
            open_until=open_until,
            previous=previous,
            recover=recover,
            topic_id=plan.topic_id,
        )
        writer.committer.on_stored = lambda chunk: _tell_stored(reporter, chunk)
        position = start
        soft_end_commits: int | None = None  # chunks committed when the read reached plan.end

        # ``writer`` is bound as a default: the helpers belong to this iteration's writer
        def write(piece: pa.RecordBatch, writer: PartitionBackup = writer) -> None:
            nonlocal position, read_bytes
            writer.write(piece)
            position = piece.column("offset")[-1].as_py() + 1
            size = payload_bytes(piece)
            read_bytes += size
            releaser.add(size)
            reporter.update(position - plan.start, read_bytes)

        def may_stop(writer: PartitionBackup = writer) -> bool:
            """At or past plan.end: stop once no chunk is open, or the one open at plan.end has committed."""
            nonlocal soft_end_commits
            if soft_end_commits is None:
                soft_end_commits = len(writer.committed)
            return not writer.open or len(writer.committed) > soft_end_commits

        try:
            for batch in _checked_range(
                settings.kafka,
                plan,
                start,
                boundary,
                isolation_level=isolation,
                headers=plugins.needs_headers,
                timestamps=plugins.needs_timestamps,
                shared=reader,
            ):
                # Up to plan.end in one piece; past it (completing the open chunk) in pieces no bigger than what
                # the chunk can still take, so the cycle reads little beyond the chunk's end.
                below = int(np.searchsorted(batch.column("offset").to_numpy(), plan.end))
                if below:
                    write(batch.slice(0, below))
                rest = batch.slice(below)
                while rest.num_rows and not may_stop():
                    step = writer.records_until_flush() or TAIL_PIECE_RECORDS
                    write(rest.slice(0, step))
                    rest = rest.slice(step)
                if rest.num_rows or (position >= plan.end and may_stop()):
                    break
            else:
                position = plan.hard_end
        except ChunkConflict as conflict:
            writer.abort_open()
            # The chunks this writer committed before the conflict must be durable before the restart reads past
            # them: a failed background upload is raised here, not forgotten with the writer.
            writer.settle()
            log.warning("%s", conflict)
            start, forced_end = conflict.existing.start, conflict.existing.end
            open_since_ms = open_until = None
            previous = None  # restarting at the bucket's chunk: the chunk before it is looked up
            recover = True
            boundary = None
            continue
        except RECORD_ERRORS as exc:
            # Deterministic: retrying the task cannot help. Report it; keep what is durable.
            writer.abort_open()
            last = writer.committed[-1].end + 1 if writer.committed else plan.start
            return writer.finish(last, flush_open=False, start=plan.start, error=f"{type(exc).__name__}: {exc}")
        except BaseException:
            writer.abort_open()
            with contextlib.suppress(Exception):  # the task fails with the first error; stop the commit threads
                writer.settle()
            raise
        exhausted = position >= plan.hard_end
        result = writer.finish(
            position, flush_open=plan.flush_open and exhausted, start=plan.start, read_bytes=read_bytes
        )
        reporter.update(position - plan.start, read_bytes, final=True)
        reporter.close()
        return result


def _tell_stored(reporter: LiveReporter, chunk: Manifest) -> None:
    """The driver logs each object of ``chunk`` as it hears of it: now, not when the Spark job ends."""
    for f in logged_objects(chunk):
        reporter.stored(
            {"key": f.key, "records": f.records, "first": f.first_offset, "last": f.last_offset, "bytes": f.bytes}
        )


def _boundary(plan: PartitionPlan, plugins: BackupPlugins, store: Store) -> Boundary | None:
    """The end of the chunk before ``plan.start`` and its last record's digest: from the driver, else from the
    bucket's manifest (whose source topic id must be the topic's now: :class:`SourceChanged` otherwise)."""
    from kafka_s3.core.errors import SourceChanged
    from kafka_s3.core.manifest import ManifestStore

    if plan.previous_known:
        return None if plan.previous_end is None else Boundary(plan.previous_end, plan.previous_record)
    manifests = ManifestStore(store, plugins.manifest_root, plugins.layout.directory_delim)
    earlier = [s for s in manifests.starts(plan.topic, plan.partition) if s < plan.start]
    previous = manifests.get(plan.topic, plan.partition, earlier[-1]) if earlier else None
    if previous is None:
        return None
    if previous.source_topic_id and plan.topic_id and previous.source_topic_id != plan.topic_id:
        raise SourceChanged(
            f"{plan.topic}[{plan.partition}]: the topic's id is {plan.topic_id}, and the bucket's chunks up to offset "
            f"{previous.end} were backed up from topic id {previous.source_topic_id} "
            f"({manifests.key(plan.topic, plan.partition, previous.start)}): this is not the log the bucket holds (the "
            "topic was deleted and re-created, or this is another cluster's topic of the same name). Nothing of it was "
            "written; back this log up under another topics.dir (or bucket), or remove the old backup first"
        )
    return Boundary(previous.end, previous.last_record)


def _checked_range(
    settings: Mapping[str, str],
    plan: PartitionPlan,
    start: int,
    boundary: Boundary | None,
    **read: object,
) -> Iterator[pa.RecordBatch]:
    """The records of ``plan`` from ``start`` on. First, when the log still has it near ``start``, the record at the
    end of the chunk before is read and compared with the digest its manifest recorded: a log re-created with more
    records than the bucket holds would otherwise be backed up as the continuation of the old one."""
    from itertools import chain

    from kafka_s3.core.errors import OffsetOutOfRange, SourceChanged
    from kafka_s3.core.records import record_checksum
    from kafka_s3.io.kafka.reader import read_range

    def plain() -> Iterator[pa.RecordBatch]:
        return read_range(settings, plan.topic, plan.partition, start, plan.hard_end, **read)  # type: ignore[arg-type]

    if boundary is None or boundary.record is None or not 0 < start - boundary.end <= BOUNDARY_REACH:
        yield from plain()
        return
    batches = read_range(settings, plan.topic, plan.partition, boundary.end, plan.hard_end, **read)  # type: ignore[arg-type]
    try:
        first = next(batches, None)
    except OffsetOutOfRange:  # that record was deleted (retention): nothing to compare with
        yield from plain()
        return
    if first is None:
        return
    if first.column("offset")[0].as_py() == boundary.end and record_checksum(first, 0) != boundary.record:
        raise SourceChanged(
            f"{plan.topic}[{plan.partition}]: the record at offset {boundary.end} is not the one backed up there (the "
            "last record of the bucket's chunk before offset "
            f"{start}): this is not the log the bucket holds (the topic was deleted and re-created, or this is another "
            "cluster's topic of the same name). Nothing of it was written; back this log up under another topics.dir "
            "(or bucket), or remove the old backup first"
        )
    for batch in chain([first], batches):
        below = int(np.searchsorted(batch.column("offset").to_numpy(), start))
        if below < batch.num_rows:
            yield batch.slice(below)


def backup_task(
    plans: list[PartitionPlan], settings: TaskSettings, slots: int, live: tuple[str, int, int] | None = None
) -> Task:
    """Spread ``plans`` over ``slots`` tasks (:func:`~kafka_s3.pipelines.engine.spread`, by the offsets each has to
    read): slot ``i`` backs up its plans, :data:`~kafka_s3.pipelines.engine.BACKUP_PARTITIONS_AT_ONCE` at a time,
    reading them with one consumer (:class:`~kafka_s3.io.kafka.reader.TaskConsumer`), and yields each one's result as
    it ends — each plan with its own result, retryable error and chunk-conflict restarts (:func:`run_partition`).
    ``live``: where to send running counts (:mod:`kafka_s3.runtime.live`), if anywhere."""
    groups = [[plans[i] for i in group] for group in spread([p.hard_end - p.start for p in plans], slots)]

    def task(slot: int) -> Iterator[str]:
        from kafka_s3.io.kafka.reader import TaskConsumer
        from kafka_s3.pipelines.backup.plugins import BackupPlugins

        group = groups[slot]
        isolation = settings.plugins("backup-plugins", BackupPlugins.from_config).config["isolation.level"]
        ahead = [(p.topic, p.partition, first_read(p), p.hard_end) for p in group]
        reader = TaskConsumer(settings.kafka, isolation, ahead)
        try:
            for result in at_once(
                lambda plan: run_partition(plan, settings, live, reader), group, BACKUP_PARTITIONS_AT_ONCE
            ):
                yield result.to_json()
        finally:
            reader.shutdown()

    return task


def first_read(plan: PartitionPlan) -> int:
    """The offset a task's first read of ``plan`` starts at, as far as the plan tells: the record ending the chunk
    before (:func:`_checked_range` compares it) when the driver knows it, else the plan's start."""
    known = plan.previous_known and plan.previous_end is not None and plan.previous_record is not None
    if known and plan.previous_end is not None and 0 < plan.start - plan.previous_end <= BOUNDARY_REACH:
        return plan.previous_end
    return plan.start
