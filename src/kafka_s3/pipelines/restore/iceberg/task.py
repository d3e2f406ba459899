"""A restore task reading an Iceberg table: the data files the driver planned for one topic-partition, read with
pyarrow in the task (row groups outside the bounds or below the progress skipped by their statistics), their rows put
in offset order and produced through the restore's own transactional path (:class:`PartitionRestore`: fencing,
progress, offset map).

Files whose offset ranges overlap (a time-partitioned table whose records' times go back and forth) are read
together and sorted by offset; every other file streams a row group at a time. Imports stay lean: pyiceberg is the
driver's.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kafka_s3.core.iceberg.coverage import FileSpan, runs
from kafka_s3.core.records import RECORD_SCHEMA
from kafka_s3.pipelines.engine import Task, spread
from kafka_s3.pipelines.engine import at_once as run_at_once
from kafka_s3.pipelines.restore.result import RestoreResult
from kafka_s3.pipelines.restore.task import PartitionRestore, RestorePlan

if TYPE_CHECKING:
    from kafka_s3.core.store import Store
    from kafka_s3.pipelines.read.options import Bounds
    from kafka_s3.pipelines.task_settings import TaskSettings


@dataclass(frozen=True)
class TableRestorePlan:
    """A partition's restore (``plan``: target, bounds, transactions) and the table's data files it reads."""

    plan: RestorePlan
    table: str
    files: tuple[FileSpan, ...]


@dataclass
class TablePartitionRestore(PartitionRestore):
    """:class:`PartitionRestore` reading the table's data files instead of a bucket's objects."""

    files: tuple[FileSpan, ...] = ()
    open_file: Callable[[str], pq.ParquetFile] | None = None

    def first_offset(self) -> int | None:
        return min((f.first_offset for f in self.files), default=None)

    def produce_objects(self) -> None:
        """Read the files from where the restore starts and produce their rows in offset order."""
        assert self.open_file is not None, "a file opener"
        every = self.plugins.config["restore.transaction.records"]
        reader = TableRows(self.open_file, self.plan.source_topic, self.plan.source_partition, self.plan.bounds)
        for batch in reader.read(self.files, self.resume, self.begin_file):
            self.take(batch, every)

    def begin_file(self, span: FileSpan) -> None:
        self.counts.objects += 1


class TableRows:
    """One topic-partition's rows of a table's data files, in offset order, within ``bounds``."""

    def __init__(self, open_file: Callable[[str], pq.ParquetFile], topic: str, partition: int, bounds: Bounds) -> None:
        self.open_file = open_file
        self.topic = topic
        self.partition = partition
        self.bounds = bounds

    def read(
        self, files: Sequence[FileSpan], resume: int | None, on_file: Callable[[FileSpan], None]
    ) -> Iterator[pa.RecordBatch]:
        low = max(x for x in (resume, self.bounds.from_offset, 0) if x is not None)
        high = self.bounds.until_offset
        for run in runs(files):
            if max(f.last_offset for f in run) < low or (high is not None and min(f.first_offset for f in run) >= high):
                continue
            for span in run:
                on_file(span)
            if len(run) == 1:
                for batch in self._file(run[0], low, high):
                    yield from self._selected(batch, low)
                continue
            merged = pa.Table.from_batches(
                [b for span in run for b in self._file(span, low, high)], schema=RECORD_SCHEMA
            ).sort_by("offset")
            for batch in merged.to_batches():
                yield from self._selected(batch, low)

    def _file(self, span: FileSpan, low: int, high: int | None) -> Iterator[pa.RecordBatch]:
        """The file's row groups that may hold offsets in ``[low, high)``, as record batches."""
        parquet = self.open_file(span.path)
        column = parquet.schema_arrow.get_field_index("offset")
        for group in range(parquet.num_row_groups):
            stats = parquet.metadata.row_group(group).column(column).statistics
            if (
                stats is not None
                and stats.has_min_max
                and (stats.max < low or (high is not None and stats.min >= high))
            ):
                continue
            for batch in parquet.read_row_group(group).to_batches():
                yield records(batch)

    def _selected(self, batch: pa.RecordBatch, low: int) -> Iterator[pa.RecordBatch]:
        mask = pc.and_(
            pc.and_(pc.equal(batch.column("topic"), self.topic), pc.equal(batch.column("partition"), self.partition)),
            pc.greater_equal(batch.column("offset"), low),
        )
        bounded = self.bounds.mask(batch)
        if bounded is not None:
            mask = pc.and_(mask, bounded)
        selected = batch.filter(mask)
        if selected.num_rows:
            yield selected


def records(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A data file's rows as the restore produces records (the table's field ids dropped)."""
    return pa.RecordBatch.from_arrays([batch.column(f.name).cast(f.type) for f in RECORD_SCHEMA], schema=RECORD_SCHEMA)


class FileOpener:
    """Opens a table's data files (``s3://bucket/key``) through the restore's store settings, one store per bucket."""

    def __init__(self, settings: TaskSettings):
        self.settings = settings
        self.stores: dict[str, Store] = {}

    def __call__(self, path: str) -> pq.ParquetFile:
        location = urlsplit(path)
        store = self.stores.get(location.netloc)
        if store is None:
            spec = self.settings.store
            if spec.bucket == location.netloc:
                store = self.settings.open_store()
            else:
                store = dataclasses.replace(spec, bucket=location.netloc).open()
            self.stores[location.netloc] = store
        return pq.ParquetFile(store.open(location.path.lstrip("/")))


def run_table_partition(
    work: TableRestorePlan, settings: TaskSettings, live: tuple[str, int, int] | None = None
) -> RestoreResult:
    """Restore one topic-partition of the table in this worker (:class:`TablePartitionRestore`)."""
    from kafka_s3.io.kafka.producer import PartitionProducer, Target
    from kafka_s3.pipelines.read.plugins import ReadPlugins
    from kafka_s3.runtime.live import LiveReporter

    plan = work.plan
    plugins = settings.plugins("read-plugins", ReadPlugins.from_config)
    target = Target(
        plan.target_topic,
        plan.target_partition,
        plan.progress_group,
        plan.transactional_id if plan.exactly_once else None,
        f"{work.table} {plan.source_topic}[{plan.source_partition}]",
    )
    writer = PartitionProducer(target, settings.kafka, settings.consumer)
    reporter = LiveReporter(live, plan.source_topic, plan.source_partition)
    opener = FileOpener(settings)
    return TablePartitionRestore(
        plan, plugins, settings.open_store(), writer, reporter, files=work.files, open_file=opener
    ).run()


def table_restore_task(
    work: list[TableRestorePlan],
    settings: TaskSettings,
    slots: int,
    live: tuple[str, int, int] | None = None,
    at_once: int = 1,
) -> Task:
    """Spread the partitions over ``slots`` tasks by the bytes of their files; each task restores its partitions,
    ``at_once`` at a time, and yields each one's result as it ends."""
    weights = [sum(f.size for f in w.files) for w in work]
    groups = [[work[i] for i in group] for group in spread(weights, slots)]

    def timed(one: TableRestorePlan) -> RestoreResult:
        started = time.monotonic()
        result = run_table_partition(one, settings, live)
        return replace(result, seconds=time.monotonic() - started)

    def task(slot: int) -> Iterator[str]:
        for result in run_at_once(timed, groups[slot], at_once):
            yield result.to_json()

    return task
