"""A table backup's task: read one topic-partition range from Kafka and write it as Parquet data files of the table,
one file per partition value (rolled at ``records_per_file``), each carrying the table's field ids and statistics.

Files are created under a name unique to the cycle, so a file of a run that died before its commit is never
overwritten nor taken for this cycle's: it stays an orphan, outside every snapshot. Only the files' metadata goes back
to the driver. Imports stay lean: this module is loaded by every Python worker (pyiceberg is the driver's).
"""

from __future__ import annotations

import base64
import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_s3.core.iceberg.partitioning import PartitionField, partition_path, split_by_partition
from kafka_s3.core.iceberg.schema import TABLE_SCHEMA, table_batch
from kafka_s3.io.iceberg.table import WrittenFile
from kafka_s3.pipelines.backup.iceberg.result import TablePartitionResult
from kafka_s3.pipelines.engine import PARTITIONS_AT_ONCE, Task, at_once, spread

if TYPE_CHECKING:
    from kafka_s3.core.store import Store, Upload
    from kafka_s3.io.stores.spec import StoreSpec
    from kafka_s3.pipelines.task_settings import TaskSettings

log = logging.getLogger(__name__)
# What a file buffers before it goes out as one row group: whichever comes first (a task writes several partitions
# at once, each with a file per partition value open, so the bytes bound the memory)
ROW_GROUP_ROWS = 100_000
ROW_GROUP_BYTES = 16 << 20
CODEC = "zstd"  # Iceberg's default for Parquet data files (write.parquet.compression-codec)


@dataclass(frozen=True)
class TablePlan:
    """Back up ``[start, end)`` of one topic-partition into the table."""

    topic: str
    partition: int
    start: int
    end: int


@dataclass(frozen=True)
class TableTarget:
    """Where and how a cycle's tasks write: the store holding the table's data location (``bucket``, key ``prefix``),
    the table's partition fields, when a file rolls, and the cycle's id in every file name."""

    store: StoreSpec
    bucket: str
    prefix: str
    fields: tuple[PartitionField, ...]
    records_per_file: int
    cycle_id: str


@dataclass
class _OpenFile:
    key: str
    upload: Upload
    writer: pq.ParquetWriter
    first_offset: int
    last_offset: int = -1
    records: int = 0
    buffered: list[pa.RecordBatch] = field(default_factory=list)
    buffered_rows: int = 0
    buffered_bytes: int = 0


class PartitionFiles:
    """The data files of one topic-partition's range, open per partition value until they roll or the range ends."""

    def __init__(self, store: Store, target: TableTarget, topic: str, partition: int):
        self.store = store
        self.target = target
        self.topic = topic
        self.partition = partition
        self.open: dict[tuple[object, ...], _OpenFile] = {}
        self.done: list[WrittenFile] = []

    def write(self, records: pa.RecordBatch) -> None:
        for values, rows in split_by_partition(table_batch(records), self.target.fields):
            while rows.num_rows:
                file = self.open.get(values)
                if file is None:
                    file = self.open[values] = self._create(values, rows.column("offset")[0].as_py())
                head = rows.slice(0, self.target.records_per_file - file.records)
                self._buffer(file, head)
                rows = rows.slice(head.num_rows)
                if file.records >= self.target.records_per_file:
                    self._close(values)

    def finish(self) -> list[WrittenFile]:
        for values in list(self.open):
            self._close(values)
        return self.done

    def abort(self) -> None:
        for file in self.open.values():
            file.upload.abort()
        self.open.clear()

    def _create(self, values: tuple[object, ...], first_offset: int) -> _OpenFile:
        directory = partition_path(self.target.fields, values)
        name = f"{self.topic}-{self.partition}-{first_offset:020d}-{self.target.cycle_id}.parquet"
        key = "/".join(part for part in (self.target.prefix, directory, name) if part)
        upload = self.store.create(key)
        writer = pq.ParquetWriter(
            upload,  # an Upload is the file-like sink pyarrow writes to
            TABLE_SCHEMA,
            compression=CODEC,
            write_statistics=True,  # every column: Iceberg's value and null counts need them (min/max over 4 KiB: none)
        )
        return _OpenFile(key, upload, writer, first_offset)

    def _buffer(self, file: _OpenFile, rows: pa.RecordBatch) -> None:
        if not rows.num_rows:
            return
        file.buffered.append(rows)
        file.buffered_rows += rows.num_rows
        file.buffered_bytes += rows.nbytes
        file.records += rows.num_rows
        file.last_offset = rows.column("offset")[-1].as_py()
        if file.buffered_rows >= ROW_GROUP_ROWS or file.buffered_bytes >= ROW_GROUP_BYTES:
            self._write_group(file)

    @staticmethod
    def _write_group(file: _OpenFile) -> None:
        if file.buffered:
            table = pa.Table.from_batches(file.buffered, schema=TABLE_SCHEMA)
            file.writer.write_table(table, row_group_size=max(table.num_rows, 1))
            file.buffered, file.buffered_rows, file.buffered_bytes = [], 0, 0

    def _close(self, values: tuple[object, ...]) -> None:
        file = self.open.pop(values)
        self._write_group(file)
        file.writer.close()
        info = file.upload.commit()
        footer = io.BytesIO()
        file.writer.writer.metadata.write_metadata_file(footer)
        self.done.append(
            WrittenFile(
                path=f"s3://{self.target.bucket}/{file.key}",
                size=info.size,
                records=file.records,
                partition=values,
                footer=base64.b64encode(footer.getvalue()).decode(),
                topic=self.topic,
                kafka_partition=self.partition,
                first_offset=file.first_offset,
                last_offset=file.last_offset,
            )
        )


def run_table_partition(plan: TablePlan, settings: TaskSettings, target: TableTarget) -> TablePartitionResult:
    """Back up ``plan`` into data files. A failure is returned as this partition's error with no file of it to be
    committed (those it completed stay orphans): the driver commits the others and tries it again."""
    from kafka_s3.io.kafka.reader import read_range

    store = settings.open_store() if target.store == settings.store else target.store.open()
    files = PartitionFiles(store, target, plan.topic, plan.partition)
    records = 0
    try:
        for batch in read_range(
            settings.kafka,
            plan.topic,
            plan.partition,
            plan.start,
            plan.end,
            isolation_level=settings.config["isolation.level"],
        ):
            files.write(batch)
            records += batch.num_rows
        written = files.finish()
    except Exception as exc:
        files.abort()
        log.warning("%s[%d]: table backup task failed: %s", plan.topic, plan.partition, exc, exc_info=True)
        return TablePartitionResult(
            plan.topic, plan.partition, plan.start, plan.start, error=f"{type(exc).__name__}: {exc}"
        )
    return TablePartitionResult(plan.topic, plan.partition, plan.start, plan.end, records, tuple(written))


def table_backup_task(plans: list[TablePlan], settings: TaskSettings, target: TableTarget, slots: int) -> Task:
    """Spread ``plans`` over ``slots`` tasks by the offsets each reads; each task backs up its plans
    :data:`~kafka_s3.pipelines.engine.PARTITIONS_AT_ONCE` at a time and yields each one's result as it ends."""
    groups = [[plans[i] for i in group] for group in spread([p.end - p.start for p in plans], slots)]

    def task(slot: int) -> Iterator[str]:
        work = groups[slot]
        for result in at_once(lambda plan: run_table_partition(plan, settings, target), work, PARTITIONS_AT_ONCE):
            yield result.to_json()

    return task
