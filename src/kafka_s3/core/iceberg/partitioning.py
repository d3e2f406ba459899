"""The table's partition spec, as the Iceberg sink's ``iceberg.tables.default-partition-by`` writes it, and each
record's partition values.

The property is a comma-separated list of columns (identity) and transforms of them: ``hour(timestamp)``,
``day(timestamp)``, ``month(timestamp)``, ``year(timestamp)`` (or ``hours`` ... ``years``, as the sink accepts).
A backup's tasks split their records by these values, one data file per value, so every data file belongs to one
partition and its value is known without reading it back. ``bucket`` and ``truncate`` (which the sink also takes)
are refused by name: nothing of a backup's columns calls for them.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.iceberg.schema import FIELD_IDS

PARTITION_BY_KEY = "iceberg.tables.default-partition-by"
FIRST_PARTITION_FIELD_ID = 1000  # Iceberg's partition field ids start here
TIME_TRANSFORMS = ("year", "month", "day", "hour")
_PLURALS = {f"{name}s": name for name in TIME_TRANSFORMS}
_TRANSFORM = re.compile(r"^\s*(\w+)\s*\(\s*([^()]*?)\s*\)\s*$")
_MICROS_PER = {"hour": 3_600_000_000, "day": 86_400_000_000}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class PartitionField:
    """One field of the spec: ``transform`` (``identity`` or a time transform) of the envelope column ``source``."""

    source: str
    transform: str
    field_id: int

    @property
    def name(self) -> str:
        """The partition field's name, as Iceberg's engines name it (``timestamp_hour``; a column's own name)."""
        return self.source if self.transform == "identity" else f"{self.source}_{self.transform}"

    @property
    def source_id(self) -> int:
        return FIELD_IDS[self.source]


def parse_partition_by(text: str) -> tuple[PartitionField, ...]:
    """The fields of a ``default-partition-by`` value ("" or blank: an unpartitioned table)."""
    fields: list[PartitionField] = []
    for item in _split(text):
        transform, source = "identity", item
        match = _TRANSFORM.match(item)
        if match:
            transform, source = _PLURALS.get(match.group(1).lower(), match.group(1).lower()), match.group(2)
            if transform in ("bucket", "truncate"):
                raise ConfigError(
                    f"{PARTITION_BY_KEY}: {item!r}: kafka-s3 partitions a backup's table by its columns and by "
                    "year/month/day/hour of timestamp only, not by bucket or truncate",
                    key=PARTITION_BY_KEY,
                )
            if transform not in TIME_TRANSFORMS:
                raise ConfigError(
                    f"{PARTITION_BY_KEY}: {item!r}: unknown transform {match.group(1)!r} (year, month, day, hour, "
                    "or a column name alone)",
                    key=PARTITION_BY_KEY,
                )
        if source not in FIELD_IDS or source == "headers":
            raise ConfigError(
                f"{PARTITION_BY_KEY}: {item!r}: a backup's table has no column {source!r} to partition by (topic, "
                "partition, timestamp, timestampType, key, value)",
                key=PARTITION_BY_KEY,
            )
        if transform in TIME_TRANSFORMS and source != "timestamp":
            raise ConfigError(
                f"{PARTITION_BY_KEY}: {item!r}: {transform}() takes the timestamp column", key=PARTITION_BY_KEY
            )
        field = PartitionField(source, transform, FIRST_PARTITION_FIELD_ID + len(fields))
        if any(f.name == field.name for f in fields):
            raise ConfigError(f"{PARTITION_BY_KEY}: {item!r} is listed twice", key=PARTITION_BY_KEY)
        fields.append(field)
    return tuple(fields)


def _split(text: str) -> Iterator[str]:
    """The comma-separated items of ``text``, commas inside parentheses kept (``bucket(id, 4)``)."""
    depth, item = 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            if item.strip():
                yield item.strip()
            item = ""
        else:
            item += char
    if item.strip():
        yield item.strip()


def partition_values(records: pa.RecordBatch, field: PartitionField) -> pa.Array:
    """Each record's value of ``field``: the column itself, or Iceberg's transform of the timestamp (hours, days,
    months or years since 1970; null for a record without a timestamp)."""
    column = records.column(field.source)
    if field.transform == "identity":
        return column
    micros = column.cast(pa.int64())
    if field.transform in _MICROS_PER:
        # floor division: a time before 1970 belongs to the hour (day) that starts before it, as Iceberg counts
        unit = _MICROS_PER[field.transform]
        truncated = pc.divide(micros, unit)  # integer division, towards zero
        below = pc.and_(pc.less(micros, 0), pc.not_equal(pc.multiply(truncated, unit), micros))
        return pc.subtract(truncated, pc.cast(below, pa.int64())).cast(pa.int32())
    years = pc.subtract(pc.year(column), 1970)
    if field.transform == "year":
        return years.cast(pa.int32())
    return pc.add(pc.multiply(years, 12), pc.subtract(pc.month(column), 1)).cast(pa.int32())


def split_by_partition(
    records: pa.RecordBatch, fields: tuple[PartitionField, ...]
) -> Iterator[tuple[tuple[object, ...], pa.RecordBatch]]:
    """``records`` in one batch per partition value (a tuple, one item per field), each in the records' order."""
    if not fields or not records.num_rows:
        if records.num_rows:
            yield (), records
        return
    values = [partition_values(records, field) for field in fields]
    names = [f"p{i}" for i in range(len(fields))]
    keys = pa.table(values, names=names)
    for combination in keys.group_by(names, use_threads=False).aggregate([]).to_pylist():
        mask = None
        for name, array in zip(names, values, strict=True):
            value = combination[name]
            match = pc.is_null(array) if value is None else pc.fill_null(pc.equal(array, value), False)
            mask = match if mask is None else pc.and_(mask, match)
        yield tuple(combination[name] for name in names), records.filter(mask)


def human_value(field: PartitionField, value: object) -> str:
    """A partition value as Iceberg writes it in paths (``2026-11-29-01`` for an hour, ``null``)."""
    if value is None:
        return "null"
    if field.transform == "identity":
        return str(value)
    count = int(value)  # type: ignore[call-overload]
    if field.transform == "hour":
        return (_EPOCH + dt.timedelta(hours=count)).strftime("%Y-%m-%d-%H")
    if field.transform == "day":
        return (_EPOCH + dt.timedelta(days=count)).strftime("%Y-%m-%d")
    year, month = divmod(count, 12)
    return f"{1970 + year:04d}-{month + 1:02d}" if field.transform == "month" else f"{1970 + count:04d}"


def partition_path(fields: tuple[PartitionField, ...], values: tuple[object, ...]) -> str:
    """The directory of a partition's data files under the table's ``data/`` (``partition=0/timestamp_hour=...``)."""
    from urllib.parse import quote

    return "/".join(
        f"{quote(f.name, safe='')}={quote(human_value(f, v), safe='')}" for f, v in zip(fields, values, strict=True)
    )
