"""Which offsets a table's data files hold, from their statistics: runs of overlapping files and the first missing
offset (issue 31, item 4)."""

from __future__ import annotations

import pytest

from kafka_s3.core.iceberg.coverage import FileSpan, bound, first_missing, runs

pytestmark = pytest.mark.issue(31, item=4)


def span(first: int, last: int, records: int | None = None, name: str = "") -> FileSpan:
    return FileSpan(name or f"f{first}", 1, last - first + 1 if records is None else records, first, last)


def test_files_whose_offsets_interleave_form_one_run_and_others_stay_apart():
    evens, odds, later = span(0, 4, 3, "evens"), span(1, 5, 3, "odds"), span(6, 9)
    assert runs([later, odds, evens]) == [[evens, odds], [later]]


def test_a_hole_between_dense_files_is_the_first_missing_offset():
    assert first_missing([span(0, 49), span(100, 149)], 150) == 50


def test_files_short_of_the_recorded_position_miss_the_offsets_after_them():
    assert first_missing([span(0, 49), span(50, 99)], 120) == 100
    assert first_missing([span(0, 49), span(50, 99)], 100) is None
    assert first_missing([span(0, 49), span(50, 99)], None) is None


def test_interleaving_files_that_hold_every_offset_of_their_range_miss_nothing():
    assert first_missing([span(0, 4, 3), span(1, 5, 3), span(6, 9)], 10) is None


def test_a_source_with_offsets_kafka_never_gave_a_record_is_not_taken_for_a_lost_row():
    # a transactional topic: each file's last offset is followed by a commit marker
    assert first_missing([span(0, 99, 99), span(101, 200, 99)], 202) is None


def test_bounds_decode_as_little_endian_signed_numbers():
    assert bound({5: (1234).to_bytes(8, "little")}, 5) == 1234
    assert bound({4: (-1).to_bytes(4, "little", signed=True)}, 4, width=4) == -1
    assert bound({}, 5) is None


def test_files_that_begin_after_the_partitions_first_backed_up_record_miss_that_record():
    assert first_missing([span(50, 99), span(100, 149)], 150, start=0) == 0
    assert first_missing([span(0, 49), span(50, 99)], 100, start=0) is None


def test_a_partition_with_no_file_left_misses_its_first_backed_up_record():
    assert first_missing([], 150, start=0) == 0
    assert first_missing([], 150, start=None) is None
    assert first_missing([], 150, start=150) is None


def test_the_first_record_is_judged_even_where_the_sources_offsets_have_holes():
    # compacted: its files are not dense, yet a file beginning after the first record backed up lost rows
    assert first_missing([span(60, 99, 20), span(101, 140, 20)], 141, start=3) == 3
    assert first_missing([span(3, 99, 20), span(101, 140, 20)], 141, start=3) is None
