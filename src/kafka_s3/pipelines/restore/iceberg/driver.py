"""The restore of an Iceberg sink configuration: its tables' rows back into Kafka, record for record and exactly once.

The restore's own run (:class:`~kafka_s3.pipelines.restore.driver.Restore`: target checks, lease, transactions and
progress, the summary) with two parts of its own: the plan reads the tables' snapshots and plans their scans on the
driver (:mod:`.plan`), and the job's tasks read the planned data files (:mod:`.task`). A progress's identity names the
table, so the progress of an object restore (or of another table) is never taken for this one's.
"""

from __future__ import annotations

import dataclasses
import logging
import threading

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import ConfigError
from kafka_s3.io.kafka.clients import TP
from kafka_s3.pipelines.engine import Engine, Task
from kafka_s3.pipelines.read.options import RestoreOptions
from kafka_s3.pipelines.restore.driver import Restore
from kafka_s3.pipelines.restore.fencing import Fencing
from kafka_s3.pipelines.restore.iceberg.plan import TableScanPlan, table_sources
from kafka_s3.pipelines.restore.iceberg.task import TableRestorePlan, table_restore_task
from kafka_s3.pipelines.restore.plan import RestorePlanSet
from kafka_s3.pipelines.restore.progress import ProgressIdentity
from kafka_s3.pipelines.restore.task import RestorePlan

log = logging.getLogger("kafka_s3.restore")


class TableFencing(Fencing):
    """The restore's fencing, each partition's progress identified by the table it is restored from."""

    def __init__(self, restore: TableRestore):
        super().__init__(restore.ctx)
        self.restore = restore

    def identities(self, plans: list[RestorePlan]) -> list[ProgressIdentity]:
        tables = self.restore.table_of
        return [
            dataclasses.replace(identity, source=f"iceberg:{tables.get((plan.source_topic, plan.source_partition))}")
            for plan, identity in zip(plans, super().identities(plans), strict=True)
        ]


class TableRestore(Restore):
    """The restore of an Iceberg sink configuration's tables (``run()`` once; ``--follow`` is the object restore's)."""

    JOB_NAME = "kafka-s3 restore from Iceberg"

    def __init__(self, config: Config, engine: Engine, options: RestoreOptions | None = None):
        super().__init__(config, engine, options)
        self.fencing = TableFencing(self)
        self.scans: list[TableScanPlan] = []
        self.table_of: dict[TP, str] = {}  # each topic-partition's table
        self.files: dict[TP, TableRestorePlan] = {}

    def plan(self, only_new_after: dict[TP, int] | None = None, probe_transactions: bool = True) -> RestorePlanSet:
        """Each table's snapshot and scan (bounds pushed down, row gaps refused), a plan per topic-partition with
        files to read; a topic held by several tables is restored from the first (``iceberg.tables``' order)."""
        if only_new_after is not None:
            raise ConfigError("restore --follow reads a bucket's objects: not an Iceberg table", key="--follow")
        self.scans, self.table_of = [], {}
        for source in table_sources(self.config, self.options):
            scan = source.plan()
            self.scans.append(scan)
            for tp in scan.files:
                self.table_of.setdefault(tp, scan.table)
            log.info(
                "Iceberg table %s, snapshot %s: %d data file(s) planned for %d topic-partition(s)",
                scan.table,
                scan.snapshot_id,
                sum(len(files) for files in scan.files.values()),
                len(scan.files),
            )
        if self.options.topics:
            held = {tp[0] for scan in self.scans for tp in scan.position}
            missing = [t for t in self.options.topics if t not in held]
            if missing:
                raise ConfigError(f"no Iceberg table of the file holds topic(s) {', '.join(missing)}", key="topics")
        targets = {tp[0]: self.ctx.route(tp[0]) for tp in self.table_of}
        exactly_once = self.fencing.exactly_once() if self.table_of and probe_transactions else False
        plans = []
        self.files = {}
        for scan in self.scans:
            for tp, files in sorted(scan.files.items()):
                if self.table_of[tp] != scan.table:
                    continue
                plan = RestorePlan(
                    source_topic=tp[0],
                    source_partition=tp[1],
                    target_topic=targets[tp[0]],
                    objects=(),
                    bounds=self.options.bounds(tp),
                    exactly_once=exactly_once,
                    transactional_id=f"{self.ctx.progress_base}-{tp[0]}-{tp[1]}",
                    progress_group=f"{self.ctx.progress_base}-{tp[0]}",
                    offset_map_topic=self.config["restore.offset.map.topic"],
                )
                plans.append(plan)
                self.files[tp] = TableRestorePlan(plan, scan.table, files)
        layout = "; ".join(f"Iceberg table {s.table} at snapshot {s.snapshot_id}" for s in self.scans)
        return RestorePlanSet({}, targets, plans, [], timestamps="the records' own", layout=layout)

    def follow(self, stop: threading.Event | None = None) -> None:
        raise ConfigError("restore --follow reads a bucket's objects: not an Iceberg table", key="--follow")

    def _job_task(self, plans: list[RestorePlan], slots: int, live: tuple[str, int, int] | None, at_once: int) -> Task:
        work = [
            TableRestorePlan(plan, self.files[key].table, self.files[key].files)
            for plan in plans
            for key in [(plan.source_topic, plan.source_partition)]
        ]
        return table_restore_task(work, self.ctx.task_settings(), slots, live, at_once)
