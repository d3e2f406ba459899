"""The driver of a backup into an Iceberg table: each cycle reads the table's position, runs one Spark job whose tasks
write the data files, and commits them as one snapshot recording every topic-partition's next offset.

The table is the backup's only committed state. A cycle starts from the position the table's newest snapshot records
(the log's start for a partition it does not hold yet), whatever the consumer group says; the group is committed
after the snapshot, to the table's position, so Kafka's tools show the backup's lag. Hence:

- killed after its files were written and before the commit: the files are orphans outside every snapshot; the rerun
  starts from the table again, writes the range anew (under other names) and commits it once;
- killed after the commit and before the group's: the rerun starts from the table, which already holds the range,
  and moves the group up to it;
- two backups of one table at once: both write, the first commit wins, the second re-reads the table and leaves out
  every topic-partition the first moved (:meth:`BackupTable.commit`): no record is in the table twice.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import (
    BackupFailed,
    ConfigError,
    DataError,
    Interrupted,
    KafkaS3Error,
    PlanError,
)
from kafka_s3.io.iceberg.table import BackupTable, Covered
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.clients import TP
from kafka_s3.io.kafka.settings import client_settings
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.cycle import ONCE_ATTEMPTS, ONCE_RETRY_BASE_SECONDS, backoff, gave_up
from kafka_s3.pipelines.backup.driver import backup_topics, group_id
from kafka_s3.pipelines.backup.iceberg.result import TablePartitionResult
from kafka_s3.pipelines.backup.iceberg.task import TablePlan, TableTarget, table_backup_task
from kafka_s3.pipelines.backup.resume import check_log_end
from kafka_s3.pipelines.engine import Engine, task_slots
from kafka_s3.pipelines.task_settings import TaskSettings

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

log = logging.getLogger("kafka_s3.backup")
RECORDS_PER_FILE = 1_000_000  # a data file rolls at this many records (the sink's flush.size when it sets one)
S3_SCHEMES = ("s3", "s3a", "s3n")


@dataclass
class TableCycleReport:
    cycle: int
    partitions: int
    records: int = 0
    files: int = 0
    bytes: int = 0
    dropped_files: int = 0  # files of topic-partitions another backup committed first (orphans)
    snapshot_id: int | None = None
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def objects(self) -> int:
        """The data files committed (what an object backup's cycle counts as objects)."""
        return self.files


@dataclass
class TableBackupSummary:
    table: str
    cycles: list[TableCycleReport] = field(default_factory=list)
    committed: dict[TP, int] = field(default_factory=dict)  # the table's position at the end
    targets: dict[TP, int] = field(default_factory=dict)

    @property
    def records(self) -> int:
        return sum(c.records for c in self.cycles)

    @property
    def files(self) -> int:
        return sum(c.files for c in self.cycles)

    @property
    def dropped_files(self) -> int:
        return sum(c.dropped_files for c in self.cycles)

    @property
    def bytes(self) -> int:
        return sum(c.bytes for c in self.cycles)

    @property
    def snapshots(self) -> list[int]:
        return [c.snapshot_id for c in self.cycles if c.snapshot_id is not None]


@dataclass
class TablesSummary:
    """What a backup into one or more Iceberg tables committed, table by table."""

    tables: list[TableBackupSummary]

    @property
    def records(self) -> int:
        return sum(t.records for t in self.tables)

    @property
    def files(self) -> int:
        return sum(t.files for t in self.tables)

    @property
    def bytes(self) -> int:
        return sum(t.bytes for t in self.tables)

    @property
    def snapshots(self) -> int:
        return sum(len(t.snapshots) for t in self.tables)

    @property
    def dropped_files(self) -> int:
        return sum(t.dropped_files for t in self.tables)


class TableBackup:
    """A configured backup of ``config``'s topics into the Iceberg table ``table`` of ``catalog``."""

    def __init__(
        self,
        config: Config,
        engine: Engine,
        catalog: Catalog,
        table: str,
        partition_by: str = "",
        auto_create: bool = True,
        records_per_file: int = RECORDS_PER_FILE,
        takes: Callable[[str], bool] | None = None,
        properties: Mapping[str, str] | None = None,
    ):
        self.config = config
        self.engine = engine
        self.group = group_id(config)
        self.kafka_settings = client_settings(config, "consumer")
        self.admin = Admin.for_config(config)
        self.store_spec = StoreSpec.from_config(config)
        self.table = BackupTable.open(catalog, table, partition_by, create=auto_create, properties=properties)
        self.takes = takes  # the topics routed to this table (None: every topic of the configuration)
        self.finished: list[TableCycleReport] = []  # every cycle that ran to its commit
        self.records_per_file = records_per_file
        self.task_settings = TaskSettings(config, self.store_spec, self.kafka_settings)
        self.cycle_number = 0
        self._group_at: dict[TP, int | None] | None = None  # the group's offsets as last read or committed

    # ------------------------------------------------------------------------------------------------ a cycle
    def target(self) -> TableTarget:
        """Where this cycle's tasks write: the table's data location, through the backup's own store settings."""
        location = urlsplit(self.table.data_location)
        if location.scheme not in S3_SCHEMES or not location.netloc:
            raise ConfigError(
                f"Iceberg table {self.table.identifier}: data location {self.table.data_location} is not on S3 "
                "(s3://bucket/...): kafka-s3 writes a table's files through its S3 store",
                key="iceberg.catalog.warehouse",
            )
        spec = self.store_spec
        if location.netloc != spec.bucket:
            spec = dataclasses.replace(spec, bucket=location.netloc)
        return TableTarget(
            store=spec,
            bucket=location.netloc,
            prefix=location.path.strip("/"),
            fields=self.table.fields,
            records_per_file=self.records_per_file,
            cycle_id=uuid.uuid4().hex[:16],
        )

    def plan(self, ends: dict[TP, int], position: dict[TP, int]) -> list[TablePlan]:
        """``[from the table's position, the end)`` of every partition with records the table lacks, capped per
        cycle. A partition the table does not hold starts at the log's start; one whose records were deleted by
        retention before they were backed up continues after the gap, said in the log."""
        cap = self.config["max.records.per.partition.per.cycle"]
        reset_latest = self.config.originals.get("consumer.override.auto.offset.reset", "earliest") == "latest"
        missing = [tp for tp in ends if tp not in position]
        log_start = self.admin.start_offsets(sorted(ends))
        log_end = self.admin.end_offsets(missing, read_committed=False) if missing and reset_latest else {}
        plans = []
        for tp, end in sorted(ends.items()):
            start = position.get(tp, log_end.get(tp, log_start[tp]))
            if start < log_start[tp]:
                log.warning(
                    "%s[%d]: offsets %d..%d were deleted from Kafka before being backed up (retention); continuing "
                    "from %d",
                    tp[0],
                    tp[1],
                    start,
                    log_start[tp] - 1,
                    log_start[tp],
                )
                start = log_start[tp]
            if end < start:
                check_log_end(tp, start, self.admin.end_offsets([tp], read_committed=False)[tp], self.group)
            if start < end:
                plans.append(TablePlan(tp[0], tp[1], start, min(end, start + cap)))
        return plans

    def run_cycle(self, ends: dict[TP, int]) -> TableCycleReport:
        """One cycle: the table's position, the files of what it lacks up to ``ends``, one snapshot, the group."""
        started = time.monotonic()
        self.cycle_number += 1
        self.table.refresh()
        position = self.table.position()
        self._compare_group(sorted(ends), position)
        plans = self.plan(ends, position)
        report = TableCycleReport(self.cycle_number, len(plans))
        if plans:
            slots = task_slots(len(plans), self.engine.parallelism)
            task = table_backup_task(plans, self.task_settings, self.target(), slots)
            description = f"kafka-s3 table backup {self.table.identifier} cycle {self.cycle_number}"
            results = [TablePartitionResult.from_json(r) for r in self.engine.run_tasks(description, task, slots)]
            covered = {}
            for result in results:
                tp = (result.topic, result.partition)
                if result.error:
                    report.errors.append(f"{tp[0]}[{tp[1]}]: {result.error}")
                else:
                    covered[tp] = Covered(position.get(tp), result.next_offset, result.files)
            outcome = self.table.commit(covered, self.config["name"])
            report.snapshot_id = outcome.snapshot_id
            report.dropped_files = sum(len(files) for files in outcome.dropped.values())
            for result in results:
                tp = (result.topic, result.partition)
                if tp in outcome.committed:
                    report.records += result.records
                    report.files += len(result.files)
                    report.bytes += sum(f.size for f in result.files)
            position = outcome.position
            if outcome.snapshot_id is not None:
                log.info(
                    "committed snapshot %d of Iceberg table %s: %d records in %d files, %d partitions",
                    outcome.snapshot_id,
                    self.table.identifier,
                    report.records,
                    report.files,
                    len(outcome.committed),
                )
        self._follow_table(position, outcome_snapshot=report.snapshot_id)
        report.seconds = time.monotonic() - started
        return report

    # ------------------------------------------------------------------------------------------------ the group
    def _compare_group(self, tps: list[TP], position: dict[TP, int]) -> None:
        """Once per partition and run (a partition added while following too): where the group and the table
        disagree, the table wins (said in the log)."""
        if self._group_at is None:
            self._group_at = {}
        new = [tp for tp in tps if tp not in self._group_at]
        if not new:
            return
        read = self.admin.group_offsets(self.group, new)
        for tp in new:
            at = self._group_at[tp] = read.get(tp)
            if at is not None and at != position.get(tp):
                log.info(
                    "%s[%d]: group %s is at offset %d, Iceberg table %s at %s: the backup goes on from the table",
                    tp[0],
                    tp[1],
                    self.group,
                    at,
                    self.table.identifier,
                    position.get(tp, "nothing of it"),
                )

    def _follow_table(self, position: dict[TP, int], outcome_snapshot: int | None) -> None:
        """The group's offsets moved to the table's position where they differ (after the snapshot: a crash in
        between leaves the group behind, and the next run reads the table)."""
        assert self._group_at is not None  # read by _compare_group at the cycle's start
        known = set(self._group_at)
        moves = {tp: offset for tp, offset in position.items() if tp in known and self._group_at.get(tp) != offset}
        if not moves:
            return
        metadata = json.dumps(
            {"table": self.table.identifier, "snapshot": outcome_snapshot, "at": int(time.time() * 1000)}
        )
        self.admin.commit_group_offsets(self.group, moves, dict.fromkeys(moves, metadata))
        self._group_at.update(moves)

    # ------------------------------------------------------------------------------------------------ modes
    def topics(self) -> dict[str, int]:
        """The configuration's topics routed to this table, and their partition counts."""
        topics, _ = backup_topics(self.admin, self.config)
        if not topics and not self.config["topics.regex"]:
            raise KafkaS3Error("no topic to back up")
        return {t: n for t, n in sorted(topics.items()) if self.takes is None or self.takes(t)}

    def partitions(self) -> list[TP]:
        return [(t, p) for t, n in self.topics().items() for p in range(n)]

    def run_once(self) -> TableBackupSummary:
        """Back up every record below the ends seen now into the table, a cycle at a time; a partition failing
        ``ONCE_ATTEMPTS`` times in a row ends the run (what the others committed stays)."""
        tps = self.partitions()
        targets = self.admin.end_offsets(tps, read_committed=self.config["isolation.level"] == "read_committed")
        summary = TableBackupSummary(self.table.identifier, targets=dict(targets))
        failures: dict[str, int] = {}
        while True:
            report = self.run_cycle(targets)
            summary.cycles.append(report)
            self.finished.append(report)
            if not report.partitions:
                break
            if report.errors:
                for line in report.errors:
                    where = line.split(":", 1)[0]
                    failures[where] = failures.get(where, 0) + 1
                if max(failures.values()) >= ONCE_ATTEMPTS:
                    raise gave_up(f"gave up after {ONCE_ATTEMPTS} attempts: " + "; ".join(report.errors), report.errors)
                time.sleep(backoff(ONCE_RETRY_BASE_SECONDS, max(failures.values())))
        summary.committed = {tp: offset for tp, offset in self.table.position().items() if tp in targets}
        return summary

    def follow_cycle(self) -> TableCycleReport:
        """One cycle of following: up to the ends seen now (records of open transactions wait for the next)."""
        read_committed = self.config["isolation.level"] == "read_committed"
        report = self.run_cycle(self.admin.end_offsets(self.partitions(), read_committed=read_committed))
        self.finished.append(report)
        for line in report.errors:
            log.error("Iceberg table %s: backup failed for %s (tried again next cycle)", self.table.identifier, line)
        return report


class TableBackups:
    """The backup an Iceberg sink configuration asks for: one :class:`TableBackup` per table of ``iceberg.tables``,
    each taking the topics routed to it, on one Spark engine and one catalog."""

    def __init__(self, config: Config, engine: Engine, catalog: Catalog | None = None):
        from kafka_s3.core.config.iceberg import iceberg_sink
        from kafka_s3.io.iceberg import catalog_from_config

        sink = iceberg_sink(config)
        if sink is None:
            raise ConfigError("not an Iceberg sink configuration (connector.class)", key="connector.class")
        self.config = config
        self.engine = engine
        catalog = catalog if catalog is not None else catalog_from_config(config)
        self.backups = [
            TableBackup(
                config,
                engine,
                catalog,
                route.table,
                partition_by=", ".join(sink.partition_by.get(route.table, ())),
                auto_create=sink.auto_create,
                records_per_file=config["flush.size"],
                takes=route.takes,
                properties=sink.auto_create_props,
            )
            for route in sink.routes
        ]

    @property
    def finished(self) -> list[TableCycleReport]:
        return [report for backup in self.backups for report in backup.finished]

    def topics(self) -> dict[str, int]:
        return {topic: n for backup in self.backups for topic, n in backup.topics().items()}

    def summary(self) -> TablesSummary:
        """What the finished cycles committed, table by table (after ``follow``)."""
        return TablesSummary(
            [TableBackupSummary(b.table.identifier, list(b.finished), b.table.position(), {}) for b in self.backups]
        )

    def run_once(self) -> TablesSummary:
        """Each table backed up to the ends seen as its turn comes, one table after the other."""
        return TablesSummary([backup.run_once() for backup in self.backups])

    def follow(self, stop: threading.Event | None = None) -> None:
        """A cycle of every table every ``cycle.interval.ms`` until ``stop`` is set; a failing cycle is retried with
        backoff (the configuration, the log or the table being wrong ends it)."""
        stop = stop or threading.Event()
        interval = self.config["cycle.interval.ms"] / 1000
        failures = 0
        while not stop.is_set():
            started = time.monotonic()
            try:
                for backup in self.backups:
                    if stop.is_set():
                        return
                    backup.follow_cycle()
                failures = 0
            except (BackupFailed, ConfigError, PlanError, DataError, Interrupted):
                raise
            except Exception as exc:  # Kafka, S3 or the catalog failing: nothing was committed past the table
                failures += 1
                wait = backoff(interval, failures)
                log.error("cycle failed (%d in a row), retrying in %.0fs: %s", failures, wait, exc)
                stop.wait(wait)
                continue
            stop.wait(max(0.0, interval - (time.monotonic() - started)))
