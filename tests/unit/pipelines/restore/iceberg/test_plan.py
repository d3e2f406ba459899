"""A table restore's scan: the row filter pushing the bounds down, and which topic-partition a data file holds by its
statistics (issue 31, item 4)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kafka_s3.pipelines.read.options import Bounds
from kafka_s3.pipelines.restore.iceberg.plan import owners_of, row_filter

pytestmark = pytest.mark.issue(31, item=4)


def data_file(topic_low: str, topic_high: str, partition_low: int, partition_high: int) -> SimpleNamespace:
    return SimpleNamespace(
        lower_bounds={3: topic_low.encode(), 4: partition_low.to_bytes(4, "little")},
        upper_bounds={3: topic_high.encode(), 4: partition_high.to_bytes(4, "little")},
    )


def test_a_file_of_one_topic_partition_belongs_to_it_alone():
    tps = [("orders", 0), ("orders", 1), ("payments", 0)]
    assert owners_of(data_file("orders", "orders", 1, 1), tps) == ([("orders", 1)], True)


def test_a_file_whose_statistics_span_several_topic_partitions_is_read_for_each_and_judged_for_none():
    tps = [("orders", 0), ("orders", 1), ("payments", 0)]
    assert owners_of(data_file("orders", "orders", 0, 1), tps) == ([("orders", 0), ("orders", 1)], False)


def test_offset_bounds_go_to_their_partition_and_time_bounds_to_every_row():
    bounds = {("orders", 0): Bounds(120, 140, 1_000, None), ("orders", 1): Bounds(None, None, 1_000, None)}
    text = str(row_filter(sorted(bounds), bounds, with_time=True))
    assert "GreaterThanOrEqual(term=Reference(name='offset'), literal=LongLiteral(120))" in text
    assert "LessThan(term=Reference(name='offset'), literal=LongLiteral(140))" in text
    assert "Reference(name='timestamp'), literal=LongLiteral(1000000)" in text
    assert "timestamp" not in str(row_filter(sorted(bounds), bounds, with_time=False))
