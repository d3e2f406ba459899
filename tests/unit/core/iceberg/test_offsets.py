"""The table's position: each snapshot's summary holds every topic-partition's next offset (issue 31, item 3)."""

from __future__ import annotations

import pytest

from kafka_s3.core.errors import DataError
from kafka_s3.core.iceberg.offsets import has_offsets, offsets_summary, parse_offsets, parse_starts, starts_summary

pytestmark = pytest.mark.issue(31, item=3)


def test_a_summary_records_each_topics_partitions_under_one_key_and_reads_back_the_same_offsets():
    offsets = {("orders", 0): 12, ("orders", 1): 0, ("a.b-c_d", 3): 9_000_000_000}
    summary = offsets_summary(offsets)
    assert summary == {"kafka-s3.offsets.a.b-c_d": '{"3":9000000000}', "kafka-s3.offsets.orders": '{"0":12,"1":0}'}
    assert parse_offsets({**summary, "added-records": "5"}) == offsets
    assert has_offsets(summary) and not has_offsets({"added-records": "5"})


@pytest.mark.parametrize("text", ["[1]", '{"0": -1}', '{"0": "5"}', '{"0": true}', "{", '{"x": 1}'])
def test_a_damaged_position_is_an_error_naming_the_key_rather_than_a_guess(text):
    with pytest.raises(DataError, match=r"kafka-s3\.offsets\.orders="):
        parse_offsets({"kafka-s3.offsets.orders": text})


def test_where_each_partitions_backup_began_is_kept_apart_from_its_position():
    starts = {("orders", 0): 0, ("orders", 1): 17}
    summary = {**offsets_summary({("orders", 0): 12, ("orders", 1): 20}), **starts_summary(starts)}
    assert summary["kafka-s3.starts.orders"] == '{"0":0,"1":17}'
    assert parse_starts(summary) == starts
    assert parse_offsets(summary) == {("orders", 0): 12, ("orders", 1): 20}
    with pytest.raises(DataError, match=r"kafka-s3\.starts\.orders="):
        parse_starts({"kafka-s3.starts.orders": '{"0": -1}'})
