"""Issue 18 item 5: the filters Spark pushes to ``spark.read.format("kafka-s3")`` as a selection; the ones the reader
does not apply exactly go back to Spark."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringStartsWith,
)

from kafka_s3.core.errors import ConfigError
from kafka_s3.pipelines.read.planning import HIGH, LOW, Ranges, Selection
from kafka_s3.spark.backup_source import BackupDataSource, BackupReader, PushdownReader, scoped_read_plans
from kafka_s3.spark.pushdown import micros, push

TOPIC, PARTITION, OFFSET, TIMESTAMP = ("topic",), ("partition",), ("offset",), ("timestamp",)


def test_a_topic_a_partition_and_ten_offsets_are_all_applied_by_the_reader():
    filters = [EqualTo(TOPIC, "orders"), EqualTo(PARTITION, 3), In(OFFSET, tuple(range(100, 110))), IsNotNull(OFFSET)]
    selection, rest = push(filters)
    assert rest == []  # all applied by the reader
    assert selection == Selection(frozenset({"orders"}), Ranges.values([3]), Ranges.of([(100, 110)]))


def test_comparisons_on_one_column_intersect_into_one_range():
    selection, rest = push(
        [GreaterThan(OFFSET, 10), LessThanOrEqual(OFFSET, 20), GreaterThanOrEqual(PARTITION, 1), LessThan(PARTITION, 3)]
    )
    assert rest == []
    assert selection.offsets == Ranges.of([(11, 21)]) and selection.partitions == Ranges.of([(1, 3)])


def test_negations_of_integer_columns_are_complements_and_not_in_with_a_null_goes_back_to_spark():
    selection, rest = push([Not(EqualTo(PARTITION, 1)), Not(In(OFFSET, (5, 6)))])
    assert rest == []
    assert selection.partitions == Ranges.of([(LOW, 1), (2, HIGH)])
    assert selection.offsets == Ranges.of([(LOW, 5), (7, HIGH)])
    # x NOT IN (5, NULL) holds for no row: left to Spark
    odd = Not(In(OFFSET, (5, None)))
    assert push([odd]) == (Selection(), [odd])


def test_nulls_and_unusable_literals_go_back_to_spark():
    unusable = [
        EqualTo(OFFSET, 1.5),
        EqualTo(PARTITION, True),
        IsNull(OFFSET),
        IsNotNull(TIMESTAMP),
        StringStartsWith(TOPIC, "ord"),
        Not(EqualTo(TOPIC, "x")),
        EqualTo(("key",), b"k"),
        EqualTo(("headers", "key"), "h"),
        EqualTo(TIMESTAMP, dt.datetime(2024, 1, 1)),  # no zone: cannot be placed
    ]
    for f in unusable:
        assert push([f]) == (Selection(), [f]), f
    selection, rest = push([EqualNullSafe(TOPIC, None)])  # topic IS NULL: never
    assert rest == [] and selection.nothing
    selection, rest = push([In(OFFSET, (None,))])
    assert rest == [] and selection.nothing


def test_timestamps_choose_objects_and_spark_applies_them():
    moment = dt.datetime(2024, 5, 1, 12, 0, 0, 1000, tzinfo=dt.UTC)
    elsewhere = moment.astimezone(dt.timezone(dt.timedelta(hours=-7)))  # the same instant, another zone
    assert micros(moment) == micros(elsewhere) == 1_714_564_800_001_000
    after, before = GreaterThanOrEqual(TIMESTAMP, elsewhere), LessThan(TIMESTAMP, moment + dt.timedelta(seconds=1))
    selection, rest = push([after, before])
    assert rest == [after, before]
    assert selection.times_us == Ranges.of([(1_714_564_800_001_000, 1_714_564_801_001_000)])


def test_the_reader_takes_the_filters_and_returns_the_rest():
    reader = PushdownReader({"name": "r"})
    kept = GreaterThan(TIMESTAMP, dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
    handled = EqualTo(PARTITION, 0)
    assert list(reader.pushFilters([handled, kept])) == [kept]
    assert reader.selection.partitions == Ranges.values([0])
    contradiction = PushdownReader({"name": "r"})  # no store named: none is needed to plan nothing
    assert list(contradiction.pushFilters([EqualTo(TOPIC, "a"), EqualTo(TOPIC, "b")])) == []
    assert contradiction.partitions() == []


def test_filters_are_pushed_only_where_spark_keeps_a_read_plan_per_query():
    """Spark 4 serves the plan a pushed query made to later queries of the same DataFrame that push nothing: there,
    pushdown (even pushdown=true) plans without filters, which answers every query right; Spark 5 keeps the plan in
    its scan."""
    assert not scoped_read_plans("4.3.0") and not scoped_read_plans("4.1.1") and scoped_read_plans("5.0.0")
    assert not scoped_read_plans()  # the Spark installed
    for options in ({"s3.bucket.name": "b"}, {"pushdown": "TRUE"}, {"pushdown": "false"}):
        reader = BackupDataSource(options).reader(None)
        assert type(reader) is BackupReader and type(reader).pushFilters is DataSourceReader.pushFilters
    with pytest.raises(ConfigError, match="pushdown: expected true or false, got 'yes'"):
        BackupDataSource({"pushdown": "yes"}).reader(None)
