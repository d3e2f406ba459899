"""Issue 15 item 3 (A5): tombstone files (CS ``util/TombstoneSupportedPartitioner``: null values go to the encoded
partition ``tombstone``, where ``format/KeyValueHeaderRecordWriterProvider.getRecordWriter`` writes keys and headers
only) go back among the values at their offsets, or the restore refuses when names and counts cannot tell."""

from __future__ import annotations

import pytest

from kafka_s3.core.errors import FormatError
from kafka_s3.core.layouts.tombstones import TOMBSTONES, VALUES, Merged, Run, Source, interleave


def _offsets(merged: list[Merged]) -> list[tuple[int, int, int]]:
    """(offset, kind, file) of every record, as placed."""
    out = []
    for m in merged:
        offset = m.start
        for run in m.runs:
            for _ in range(run.count):
                out.append((offset, run.kind, run.file))
                offset += 1
    return out


def test_tombstones_placed_from_names_and_counts():
    # flush.size=4: 0-3 | 4-7 | 8; tombstones at 2, 5, 6, 7
    values = [Source(0, 3, "v0"), Source(4, 1, "v4"), Source(8, 1, "v8")]
    tombstones = [Source(2, 1, "t2"), Source(5, 3, "t5")]
    merged = interleave(values, tombstones, "t[0]")
    kinds = {o: k for o, k, _ in _offsets(merged)}
    assert [o for o, k in sorted(kinds.items()) if k == TOMBSTONES] == [2, 5, 6, 7]
    assert [m.start for m in merged] == [0, 4, 8]  # one merged object per values file
    assert merged[0].runs == (Run(VALUES, 0, 0, 2), Run(TOMBSTONES, 0, 0, 1), Run(VALUES, 0, 2, 1))


def test_ambiguous_order_is_refused_naming_the_files():
    values = [Source(0, 2, "topics/t/partition=0/t+0+0000000000.json")]
    tombstones = [Source(1, 2, "topics/t/tombstone/t+0+0000000001.keys.avro")]
    with pytest.raises(FormatError, match=r"t\[0\]: offset 2 may be a value of .*t\+0\+0000000000.json"):
        interleave(values, tombstones, "t[0]")


def test_recorded_offsets_make_any_order_exact():
    values = [Source(0, 3, "v0")]
    tombstones = [Source(1, 2, "t1", (1, 3))]  # as our chunk manifest records them
    placed = _offsets(interleave(values, tombstones, "t[0]"))
    assert [(o, k) for o, k, _ in placed] == [(0, VALUES), (1, TOMBSTONES), (2, VALUES), (3, TOMBSTONES), (4, VALUES)]


def test_a_leading_tombstone_file_and_gaps_start_new_objects():
    values = [Source(2, 1, "v2"), Source(10, 1, "v10")]
    tombstones = [Source(0, 2, "t0"), Source(11, 1, "t11")]
    merged = interleave(values, tombstones, "t[0]")
    assert [(m.start, m.records) for m in merged] == [(0, 2), (2, 1), (10, 2)]


def test_counts_that_do_not_fit_the_names_are_an_error():
    with pytest.raises(FormatError, match="still has 2 records"):
        interleave([Source(0, 4, "v0"), Source(2, 1, "v2")], [], "t[0]")
