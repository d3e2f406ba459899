"""The table's partition spec from ``iceberg.tables.default-partition-by``, and each record's partition values as
Iceberg computes them (issue 31, item 2)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.iceberg.partitioning import (
    parse_partition_by,
    partition_path,
    partition_values,
    split_by_partition,
)
from kafka_s3.core.records import make_batch

pytestmark = pytest.mark.issue(31, item=2)


def _ms(*args: int) -> int:
    return int(dt.datetime(*args, tzinfo=dt.UTC).timestamp() * 1000)


def test_the_sinks_partition_by_list_becomes_fields_numbered_from_1000_with_icebergs_names():
    fields = parse_partition_by(" hours(timestamp) , partition,topic")
    assert [(f.name, f.transform, f.field_id, f.source_id) for f in fields] == [
        ("timestamp_hour", "hour", 1000, 6),
        ("partition", "identity", 1001, 4),
        ("topic", "identity", 1002, 3),
    ]
    assert parse_partition_by("") == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("bucket(key, 4)", "not by bucket or truncate"),
        ("truncate(value, 2)", "not by bucket or truncate"),
        ("week(timestamp)", "unknown transform 'week'"),
        ("hour(offset)", "takes the timestamp column"),
        ("customer_id", "no column 'customer_id'"),
        ("headers", "no column 'headers'"),
        ("partition, partition", "listed twice"),
    ],
)
def test_a_spec_kafka_s3_cannot_write_is_refused_naming_the_property_and_the_item(text, message):
    with pytest.raises(ConfigError, match=message) as error:
        parse_partition_by(text)
    assert error.value.key == "iceberg.tables.default-partition-by"


def test_time_transforms_count_from_1970_as_iceberg_does_and_a_record_without_timestamp_has_none():
    records = make_batch(
        [
            {"offset": 0, "timestamp": _ms(2026, 11, 29, 1, 59)},
            {"offset": 1, "timestamp": _ms(1969, 12, 31, 23, 30)},  # before 1970: the hour and day before it
            {"offset": 2, "timestamp": None},
        ]
    )
    values = {
        t: partition_values(records, parse_partition_by(f"{t}(timestamp)")[0]).to_pylist()
        for t in ("hour", "day", "month", "year")
    }
    hours_2026 = _ms(2026, 11, 29, 1) // 3_600_000
    assert values == {
        "hour": [hours_2026, -1, None],
        "day": [hours_2026 // 24, -1, None],
        "month": [56 * 12 + 10, -1, None],
        "year": [56, -1, None],
    }


def test_records_split_into_one_batch_per_partition_value_in_offset_order_and_each_gets_its_iceberg_path():
    fields = parse_partition_by("hour(timestamp), partition")
    records = make_batch(
        [
            {"partition": 0, "offset": 0, "timestamp": _ms(2026, 11, 29, 10, 0)},
            {"partition": 0, "offset": 1, "timestamp": _ms(2026, 11, 29, 11, 0)},
            {"partition": 0, "offset": 2, "timestamp": _ms(2026, 11, 29, 10, 59)},
            {"partition": 0, "offset": 3, "timestamp": None},
        ]
    )
    split = {
        partition_path(fields, values): batch.column("offset").to_pylist()
        for values, batch in split_by_partition(records, fields)
    }
    assert split == {
        "timestamp_hour=2026-11-29-10/partition=0": [0, 2],
        "timestamp_hour=2026-11-29-11/partition=0": [1],
        "timestamp_hour=null/partition=0": [3],
    }
    assert [values for values, _ in split_by_partition(records, ())] == [()]
    assert list(split_by_partition(records.slice(0, 0), fields)) == []
    assert isinstance(next(iter(split_by_partition(records, ())))[1], pa.RecordBatch)
