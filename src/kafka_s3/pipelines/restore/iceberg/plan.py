"""What a restore from an Iceberg table reads, planned on the driver with pyiceberg: the snapshot (the current one, or
``--as-of-snapshot`` / ``--as-of-timestamp``), each topic-partition's position recorded there, and the data files of
each topic-partition its scan plans, the restore's offset and time bounds pushed down to the scan's row filter (the
files' statistics prune the others). No row is read here: the files go to the Spark tasks.

Before anything is produced, each topic-partition's files are checked for a row gap (:mod:`kafka_s3.core.iceberg.
coverage`): where the files say the source's offsets were contiguous, an offset missing between them, or below the
position the snapshot records, is an error naming the table, the partition and the offset.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_s3.core.config.iceberg import IcebergRoute, iceberg_sink
from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import BackupIncomplete, ConfigError, DataError
from kafka_s3.core.iceberg.coverage import (
    OFFSET_FIELD_ID,
    PARTITION_FIELD_ID,
    FileSpan,
    bound,
    first_missing,
)
from kafka_s3.core.iceberg.offsets import TopicPartition, recorded
from kafka_s3.io.iceberg.table import ancestry
from kafka_s3.pipelines.read.options import Bounds, RestoreOptions

__all__ = ["FileSpan", "TableScanPlan", "TableSource", "table_sources"]

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

log = logging.getLogger("kafka_s3.restore")
TOPIC_FIELD_ID = 3


@dataclass
class TableScanPlan:
    """One table's part of a restore: the snapshot read, the position it records per topic-partition and the data
    files the scan planned for each (in offset order)."""

    table: str
    snapshot_id: int | None
    position: dict[TopicPartition, int] = field(default_factory=dict)
    files: dict[TopicPartition, tuple[FileSpan, ...]] = field(default_factory=dict)


class TableSource:
    """One Iceberg table a restore reads (``identifier``), and the topics it restores from it (``route``)."""

    def __init__(self, table: Table, identifier: str, options: RestoreOptions, route: IcebergRoute | None = None):
        self.table = table
        self.identifier = identifier
        self.options = options
        self.route = route

    @classmethod
    def open(
        cls, config: Config, options: RestoreOptions, table: str | None = None, catalog: Catalog | None = None
    ) -> TableSource:
        """The table ``table`` of the configuration's catalog (by default its first table)."""
        return next(iter(table_sources(config, options, catalog, only=table)))

    # ------------------------------------------------------------------------------------------------ snapshot
    def snapshot(self) -> Snapshot | None:
        """The snapshot to restore: ``--as-of-snapshot``'s, the newest at or before ``--as-of-timestamp``, or the
        current one (``None``: the table holds nothing yet)."""
        snapshot_id, timestamp = self.options.as_of_snapshot, self.options.as_of_timestamp
        if snapshot_id is not None:
            snapshot = self.table.snapshot_by_id(snapshot_id)
            if snapshot is None:
                known = ", ".join(str(s.snapshot_id) for s in self.table.snapshots()[-5:]) or "none"
                raise ConfigError(
                    f"--as-of-snapshot {snapshot_id}: Iceberg table {self.identifier} has no such snapshot (its "
                    f"newest: {known})",
                    key="--as-of-snapshot",
                )
            return snapshot
        if timestamp is not None:
            snapshot = self.table.snapshot_as_of_timestamp(timestamp)
            if snapshot is None:
                raise ConfigError(
                    f"--as-of-timestamp {timestamp}: Iceberg table {self.identifier} has no snapshot at or before it",
                    key="--as-of-timestamp",
                )
            return snapshot
        return self.table.current_snapshot()

    def recorded(self, snapshot: Snapshot) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """Each topic-partition's next offset and the offset its backup began at, as ``snapshot`` (or its newest
        ancestor recording positions) holds them."""
        return recorded(ancestry(snapshot, self.table.metadata), self.identifier)

    # ------------------------------------------------------------------------------------------------ planning
    def plan(self) -> TableScanPlan:
        """The snapshot's files for each topic-partition the restore asks for, bounds pushed down; a row gap among
        them is a :class:`BackupIncomplete` naming the table, the partition and the offset."""
        snapshot = self.snapshot()
        if snapshot is None:
            return TableScanPlan(self.identifier, None)
        positions, starts = self.recorded(snapshot)
        position = {tp: offset for tp, offset in positions.items() if self._asked(tp[0])}
        plan = TableScanPlan(self.identifier, snapshot.snapshot_id, position)
        if not position:
            return plan
        tps = sorted(position)
        bounds = {tp: self.options.bounds(tp) for tp in tps}
        planned = self._files(snapshot.snapshot_id, tps, bounds, with_time=True)
        whole = planned if not any(b.by_time for b in bounds.values()) else None
        if whole is None:  # the gap check judges every file of the offsets asked for, whatever their times
            whole = self._files(snapshot.snapshot_id, tps, bounds, with_time=False)
        for tp in tps:
            spans, exact = whole.get(tp, ((), True))
            if exact:
                self._check_gap(snapshot.snapshot_id, tp, spans, position[tp], starts.get(tp), bounds[tp])
            files = planned.get(tp, ((), True))[0]
            if files:
                plan.files[tp] = files
        return plan

    def _asked(self, topic: str) -> bool:
        topics = self.options.topics
        return (not topics or topic in topics) and (self.route is None or self.route.takes(topic))

    def _files(
        self, snapshot_id: int, tps: list[TopicPartition], bounds: dict[TopicPartition, Bounds], with_time: bool
    ) -> dict[TopicPartition, tuple[tuple[FileSpan, ...], bool]]:
        """Per topic-partition: the files the scan plans, in offset order, and whether each holds that
        topic-partition alone (by its statistics: a file of kafka-s3's always does)."""
        scan = self.table.scan(row_filter=row_filter(tps, bounds, with_time), snapshot_id=snapshot_id)
        found: dict[TopicPartition, list[FileSpan]] = {}
        exact: dict[TopicPartition, bool] = {}
        for task in scan.plan_files():
            span = file_span(task.file, self.identifier)
            owners, single = owners_of(task.file, tps)
            for tp in owners:
                found.setdefault(tp, []).append(span)
                exact[tp] = exact.get(tp, True) and single
        return {
            tp: (tuple(sorted(spans, key=lambda s: (s.first_offset, s.path))), exact[tp]) for tp, spans in found.items()
        }

    def _check_gap(
        self,
        snapshot_id: int,
        tp: TopicPartition,
        spans: Iterable[FileSpan],
        next_offset: int,
        start: int | None,
        bounds: Bounds,
    ) -> None:
        until = next_offset if bounds.until_offset is None else min(next_offset, bounds.until_offset)
        spans = [s for s in spans if bounds.from_offset is None or s.last_offset >= bounds.from_offset]
        if start is not None and bounds.from_offset is not None and bounds.from_offset > start:
            start = None  # the first record asked for is past the first backed up: not known to exist
        missing = first_missing(spans, until, start)
        if missing is not None:
            began = f"from offset {start} " if start is not None else ""
            raise BackupIncomplete(
                f"Iceberg table {self.identifier}, snapshot {snapshot_id}: {tp[0]}[{tp[1]}] has no row of offset "
                f"{missing}, though the snapshot records the partition backed up {began}to offset {next_offset - 1}: "
                "a data file is missing from the table; nothing was produced"
            )


def table_sources(
    config: Config, options: RestoreOptions, catalog: Catalog | None = None, only: str | None = None
) -> Iterator[TableSource]:
    """The tables of an Iceberg sink configuration, each with the topics routed to it, opened in its catalog."""
    from pyiceberg.exceptions import NoSuchTableError

    from kafka_s3.io.iceberg import catalog_from_config

    sink = iceberg_sink(config)
    if sink is None:
        raise ConfigError("not an Iceberg sink configuration (connector.class)", key="connector.class")
    catalog = catalog if catalog is not None else catalog_from_config(config)
    routed = len(sink.routes) > 1
    for route in sink.routes:
        if only is not None and route.table != only:
            continue
        try:
            table = catalog.load_table(route.table)
        except NoSuchTableError:
            raise ConfigError(
                f"Iceberg table {route.table} does not exist in catalog {sink.catalog_name!r}: nothing to restore",
                key="iceberg.tables",
            ) from None
        yield TableSource(table, route.table, options, route if routed else None)


def row_filter(tps: list[TopicPartition], bounds: dict[TopicPartition, Bounds], with_time: bool) -> BooleanExpression:
    """The scan's filter: the topic-partitions asked for, each within its offset bounds, and (``with_time``) the
    records' time bounds: Iceberg prunes the data files whose statistics lie outside."""
    from pyiceberg.expressions import AlwaysTrue, And, Or

    def offsets(b: Bounds) -> BooleanExpression:
        term: BooleanExpression = AlwaysTrue()
        if b.from_offset is not None:
            term = And(term, predicate("GreaterThanOrEqual", "offset", b.from_offset))
        if b.until_offset is not None:
            term = And(term, predicate("LessThan", "offset", b.until_offset))
        return term

    terms: list[BooleanExpression] = []
    for topic in sorted({tp[0] for tp in tps}):
        partitions = [tp for tp in tps if tp[0] == topic]
        if all(bounds[tp].from_offset is None and bounds[tp].until_offset is None for tp in partitions):
            terms.append(
                And(predicate("EqualTo", "topic", topic), predicate("In", "partition", {tp[1] for tp in partitions}))
            )
            continue
        for tp in partitions:
            terms.append(
                And(predicate("EqualTo", "topic", topic), predicate("EqualTo", "partition", tp[1]), offsets(bounds[tp]))
            )
    expression = terms[0] if len(terms) == 1 else Or(*terms)
    times = next(iter(bounds.values()))  # the time bounds are the restore's, the same for every partition
    if with_time and times.from_timestamp is not None:
        expression = And(expression, predicate("GreaterThanOrEqual", "timestamp", times.from_timestamp * 1000))
    if with_time and times.until_timestamp is not None:
        expression = And(expression, predicate("LessThan", "timestamp", times.until_timestamp * 1000))
    return expression


def predicate(kind: str, column: str, value: object) -> BooleanExpression:
    """pyiceberg's predicate ``kind`` (``EqualTo``, ``In``, ``LessThan``...) of ``column`` and ``value`` (timestamps in
    microseconds), looked up by name: its classes are pydantic models whose generated signatures type checkers
    misread."""
    from pyiceberg import expressions

    made: BooleanExpression = getattr(expressions, kind)(column, value)
    return made


def file_span(data_file: DataFile, table: str) -> FileSpan:
    """The file's offsets from its statistics (kafka-s3's and pyiceberg's writers always keep them)."""
    first = bound(data_file.lower_bounds, OFFSET_FIELD_ID)
    last = bound(data_file.upper_bounds, OFFSET_FIELD_ID)
    if first is None or last is None:
        raise DataError(
            f"Iceberg table {table}: data file {data_file.file_path} carries no offset statistics: its rows cannot be "
            "placed in offset order without reading every file first"
        )
    return FileSpan(data_file.file_path, data_file.file_size_in_bytes, data_file.record_count, first, last)


def owners_of(data_file: DataFile, tps: list[TopicPartition]) -> tuple[list[TopicPartition], bool]:
    """The topic-partitions among ``tps`` the file may hold (by its topic and partition statistics), and whether it
    holds exactly one (both statistics a single value: a topic name over 16 characters is kept truncated)."""
    low_partition = bound(data_file.lower_bounds, PARTITION_FIELD_ID, width=4)
    high_partition = bound(data_file.upper_bounds, PARTITION_FIELD_ID, width=4)
    low_topic = (data_file.lower_bounds or {}).get(TOPIC_FIELD_ID)
    high_topic = (data_file.upper_bounds or {}).get(TOPIC_FIELD_ID)
    owners = []
    for topic, partition in tps:
        name = topic.encode()
        if low_partition is not None and partition < low_partition:
            continue
        if high_partition is not None and partition > high_partition:
            continue
        if low_topic is not None and name < low_topic:
            continue
        if high_topic is not None and name > high_topic:
            continue
        owners.append((topic, partition))
    single = (
        low_partition is not None
        and low_partition == high_partition
        and low_topic is not None
        and low_topic == high_topic
        and len(owners) == 1
    )
    return owners, single
