"""A backup's Iceberg table through pyiceberg: created with the envelope's columns and the configured partition spec,
its position read from the newest snapshot that records one, and each cycle's data files committed as one snapshot.

Commits are optimistic: pyiceberg's append asserts that the branch still points at the snapshot it was built on, and
the catalog swaps the table's metadata only if nobody else did meanwhile. When another backup of the same table
committed first, the table is read again and the positions re-checked: a topic-partition whose position is still the
one this cycle started from is committed; one another backup moved has its files left out (orphans, which a prune
removes), so no record is in the table twice, whichever backup wins.
"""

from __future__ import annotations

import base64
import io
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from kafka_s3.core.errors import ConfigError, DataError, StoreError
from kafka_s3.core.iceberg.offsets import BACKUP_KEY, TopicPartition, offsets_summary, recorded, starts_summary
from kafka_s3.core.iceberg.partitioning import TIME_TRANSFORMS, PartitionField, parse_partition_by
from kafka_s3.core.iceberg.schema import FIELD_IDS, TABLE_SCHEMA

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.manifest import DataFile
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table
    from pyiceberg.table.metadata import TableMetadata
    from pyiceberg.table.snapshots import Snapshot

log = logging.getLogger("kafka_s3.backup")
COMMIT_ATTEMPTS = 20  # commits lost to other writers in a row before the cycle fails (its files stay orphans)
# A data file's topic bounds whole, not cut at Iceberg's default 16 characters: a restore tells which topic-partition
# a file holds from them, and checks that partition's offsets for gaps only where it can tell.
FULL_TOPIC_STATISTICS = {"write.metadata.metrics.column.topic": "full"}


@dataclass(frozen=True)
class WrittenFile:
    """A data file a task wrote and completed: where, how big, its partition values and its Parquet footer (the
    driver builds the table's column statistics from it without reading the file)."""

    path: str  # s3://bucket/key
    size: int
    records: int
    partition: tuple[object, ...]
    footer: str  # base64 of the file's Parquet metadata
    topic: str
    kafka_partition: int
    first_offset: int
    last_offset: int

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "size": self.size,
            "records": self.records,
            "partition": list(self.partition),
            "footer": self.footer,
            "topic": self.topic,
            "kafka_partition": self.kafka_partition,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, object]) -> WrittenFile:
        partition = doc["partition"]
        assert isinstance(partition, list)
        return cls(
            path=str(doc["path"]),
            size=int(doc["size"]),  # type: ignore[call-overload]
            records=int(doc["records"]),  # type: ignore[call-overload]
            partition=tuple(partition),
            footer=str(doc["footer"]),
            topic=str(doc["topic"]),
            kafka_partition=int(doc["kafka_partition"]),  # type: ignore[call-overload]
            first_offset=int(doc["first_offset"]),  # type: ignore[call-overload]
            last_offset=int(doc["last_offset"]),  # type: ignore[call-overload]
        )


@dataclass(frozen=True)
class Covered:
    """What a cycle backed up of one topic-partition: from the table's position ``start`` (``None``: the table held
    none of it) up to ``next_offset``, in ``files``."""

    start: int | None
    next_offset: int
    files: tuple[WrittenFile, ...] = ()


@dataclass
class CommitOutcome:
    snapshot_id: int | None = None
    committed: dict[TopicPartition, int] = field(default_factory=dict)  # next offsets this commit recorded
    dropped: dict[TopicPartition, tuple[WrittenFile, ...]] = field(default_factory=dict)  # another backup had them
    position: dict[TopicPartition, int] = field(default_factory=dict)  # the table's whole position after the commit
    attempts: int = 1


class BackupTable:
    """One Iceberg table a backup writes (``identifier``: ``namespace.table``)."""

    def __init__(self, catalog: Catalog, identifier: str, table: Table):
        self.catalog = catalog
        self.identifier = identifier
        self.table = table
        self.fields = spec_fields(table)

    @classmethod
    def open(
        cls,
        catalog: Catalog,
        identifier: str,
        partition_by: str = "",
        create: bool = True,
        properties: Mapping[str, str] | None = None,
    ) -> BackupTable:
        """The table, created when absent and ``create`` (its namespace too) with the envelope's columns,
        ``partition_by``'s spec and the table ``properties`` (``iceberg.tables.auto-create-props.*``); an existing
        table keeps its own spec, which must be one kafka-s3 can write."""
        from pyiceberg.exceptions import NoSuchTableError

        try:
            table = catalog.load_table(identifier)
        except NoSuchTableError:
            if not create:
                raise ConfigError(
                    f"Iceberg table {identifier} does not exist (iceberg.tables.auto-create-enabled=false)",
                    key="iceberg.tables",
                ) from None
            fields = parse_partition_by(partition_by)
            namespace = identifier.rsplit(".", 1)[0] if "." in identifier else ""
            if namespace:
                catalog.create_namespace_if_not_exists(namespace)
            table = catalog.create_table_if_not_exists(
                identifier,
                schema=table_schema(),
                partition_spec=partition_spec(fields),
                properties=dict(properties or {}),
            )
            log.info("created Iceberg table %s at %s", identifier, table.location())
        check_columns(identifier, table)
        return cls(catalog, identifier, table)

    @property
    def data_location(self) -> str:
        """Where the data files go: ``write.data.path``, else ``<table location>/data``."""
        return str(self.table.properties.get("write.data.path") or f"{self.table.location().rstrip('/')}/data")

    def refresh(self) -> None:
        self.table = self.table.refresh()

    def position(self) -> dict[TopicPartition, int]:
        """Each topic-partition's next offset, as the newest snapshot recording positions holds them (a snapshot of
        another writer — a compaction, an expiry — records none and is looked past)."""
        return self._recorded()[0]

    def _recorded(self) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """The newest recorded positions and, beside them, where each topic-partition's backup began."""
        return recorded(ancestry(self.table.current_snapshot(), self.table.metadata), self.identifier)

    def commit(self, covered: Mapping[TopicPartition, Covered], backup: str) -> CommitOutcome:
        """One snapshot appending the files of ``covered`` and recording the positions they reach; a topic-partition
        another backup moved since this cycle read the table is left out (its files dropped, reported)."""
        from pyiceberg.exceptions import CommitFailedException

        outcome = CommitOutcome()
        pending = dict(covered)
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            outcome.attempts = attempt
            position, starts = self._recorded()
            for tp, cover in list(pending.items()):
                if position.get(tp) != cover.start:
                    outcome.dropped[tp] = cover.files
                    del pending[tp]
                    log.warning(
                        "%s[%d]: another backup committed offsets %s..%d to Iceberg table %s meanwhile; this cycle's "
                        "%d file(s) of it are left out (orphans for prune), the backup goes on from the table",
                        tp[0],
                        tp[1],
                        cover.start if cover.start is not None else "(start)",
                        position.get(tp, 0) - 1,
                        self.identifier,
                        len(cover.files),
                    )
            advancing = {tp: c for tp, c in pending.items() if c.next_offset != position.get(tp)}
            if not advancing:
                outcome.position = position
                return outcome
            recorded = {**position, **{tp: c.next_offset for tp, c in advancing.items()}}
            began = {  # a topic-partition's first files: where its backup began (its first record's offset)
                tp: min(f.first_offset for f in c.files)
                for tp, c in advancing.items()
                if c.start is None and c.files and tp not in starts
            }
            try:
                self._append([f for c in advancing.values() for f in c.files], recorded, {**starts, **began}, backup)
            except CommitFailedException as exc:
                log.info(
                    "Iceberg table %s: commit lost to another writer (%s); reading the table again",
                    self.identifier,
                    exc,
                )
                time.sleep(min(2.0, 0.05 * 2**attempt))
                self.refresh()
                continue
            snapshot = self.table.current_snapshot()
            outcome.snapshot_id = snapshot.snapshot_id if snapshot is not None else None
            outcome.committed = {tp: c.next_offset for tp, c in advancing.items()}
            outcome.position = recorded
            return outcome
        raise StoreError(
            f"Iceberg table {self.identifier}: {COMMIT_ATTEMPTS} commits in a row lost to other writers; nothing of "
            "this cycle was committed (its files stay orphans for prune), the next run starts from the table"
        )

    def _append(
        self,
        files: Sequence[WrittenFile],
        recorded: Mapping[TopicPartition, int],
        starts: Mapping[TopicPartition, int],
        backup: str,
    ) -> None:
        data_files = [self._data_file(f) for f in files]
        properties = {**offsets_summary(recorded), **starts_summary(starts), BACKUP_KEY: backup}
        transaction = without_blind_retries(self.table).transaction()
        with transaction, transaction.update_snapshot(snapshot_properties=properties).fast_append() as append:
            for data_file in data_files:
                append.append_data_file(data_file)
        self.refresh()

    def _data_file(self, written: WrittenFile) -> DataFile:
        """The table's entry for a file a task wrote: its partition values as the task split by them, its column
        statistics from its footer (the same pyiceberg computes when it writes a file itself)."""
        from pyiceberg.io.pyarrow import (
            compute_statistics_plan,
            data_file_statistics_from_parquet_metadata,
            parquet_path_to_id_mapping,
        )
        from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
        from pyiceberg.typedef import Record

        metadata = pq.read_metadata(io.BytesIO(base64.b64decode(written.footer)))
        schema = self.table.schema()
        statistics = data_file_statistics_from_parquet_metadata(
            parquet_metadata=metadata,
            stats_columns=compute_statistics_plan(schema, {**self.table.properties, **FULL_TOPIC_STATISTICS}),
            parquet_column_mapping=parquet_path_to_id_mapping(schema),
        )
        return DataFile.from_args(
            content=DataFileContent.DATA,
            file_path=written.path,
            file_format=FileFormat.PARQUET,
            partition=Record(*written.partition),
            file_size_in_bytes=written.size,
            sort_order_id=None,
            spec_id=self.table.metadata.default_spec_id,
            equality_ids=None,
            key_metadata=None,
            **statistics.to_serialized_dict(),
        )


def without_blind_retries(table: Table) -> Table:
    """``table`` as a transaction is to see it: with ``commit.retry.num-retries=0`` (in memory only; the catalog's
    table keeps its properties). pyiceberg retries a lost append on the new snapshot by itself, which would add files
    of offsets another backup committed meanwhile: :meth:`BackupTable.commit` retries, after re-checking them."""
    from pyiceberg.table import Table, TableProperties

    properties = {**table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}
    return Table(
        table.name(),
        metadata=table.metadata.model_copy(update={"properties": properties}),
        metadata_location=table.metadata_location,
        io=table.io,
        catalog=table.catalog,
    )


def table_schema() -> Schema:
    """The Iceberg schema of :data:`~kafka_s3.core.iceberg.schema.TABLE_SCHEMA` (its field ids kept)."""
    from pyiceberg.io.pyarrow import pyarrow_to_schema

    return pyarrow_to_schema(TABLE_SCHEMA)


def partition_spec(fields: Sequence[PartitionField]) -> PartitionSpec:
    from pyiceberg.partitioning import PartitionField as IcebergField
    from pyiceberg.partitioning import PartitionSpec
    from pyiceberg.transforms import DayTransform, HourTransform, IdentityTransform, MonthTransform, YearTransform

    transforms = {
        "identity": IdentityTransform,
        "year": YearTransform,
        "month": MonthTransform,
        "day": DayTransform,
        "hour": HourTransform,
    }
    return PartitionSpec(
        *[
            IcebergField(source_id=f.source_id, field_id=f.field_id, transform=transforms[f.transform](), name=f.name)
            for f in fields
        ]
    )


def spec_fields(table: Table) -> tuple[PartitionField, ...]:
    """The table's partition spec as the fields a task computes; a transform kafka-s3 does not compute (a table
    created by another writer with ``bucket``) is a :class:`ConfigError`."""
    names = {field_id: name for name, field_id in FIELD_IDS.items()}
    fields = []
    for f in table.spec().fields:
        transform = str(f.transform).split("[")[0].lower()
        source = names.get(f.source_id)
        if source is None or transform not in ("identity", *TIME_TRANSFORMS):
            raise ConfigError(
                f"Iceberg table {table.name()}: partition field {f.name} ({f.transform}) is not one kafka-s3 writes "
                "(identity of a column, year/month/day/hour of timestamp)",
                key="iceberg.tables.default-partition-by",
            )
        fields.append(PartitionField(source, transform, f.field_id))
    return tuple(fields)


def check_columns(identifier: str, table: Table) -> None:
    """The table has the envelope's columns under their field ids (a table of another schema is not a backup)."""
    schema = table.schema()
    for name, field_id in FIELD_IDS.items():
        try:
            found = schema.find_field(field_id)
        except ValueError:
            found = None
        if found is None or found.name != name:
            raise DataError(
                f"Iceberg table {identifier} is not a kafka-s3 backup table: its field {field_id} is "
                f"{found.name if found else 'missing'}, not {name} (the columns of Spark's Kafka source)"
            )


def ancestry(snapshot: Snapshot | None, metadata: TableMetadata) -> Iterator[tuple[int, dict[str, str]]]:
    """``snapshot`` and its ancestors, newest first, as (id, summary properties)."""
    from pyiceberg.table.snapshots import ancestors_of

    for ancestor in ancestors_of(snapshot, metadata):
        summary = ancestor.summary.additional_properties if ancestor.summary is not None else {}
        yield ancestor.snapshot_id, summary
