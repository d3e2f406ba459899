"""The prune plan (which oldest chunks go), the pruned-range record, stale snapshots and the selectors' syntax: every
rule of :mod:`kafka_s3.core.prune`, on chunks alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.prune import (
    ChunkSpan,
    PrunedRange,
    PrunedStart,
    Selectors,
    parse_duration,
    parse_size,
    plan_cut,
    record_name,
    record_start,
    stale_snapshots,
)

pytestmark = pytest.mark.issue(29, item=1)


def chunks_of(sizes: list[int], times: list[int | None] | None = None) -> list[ChunkSpan]:
    """Chunks of 10 offsets each, ``sizes`` bytes, newest record times ``times`` (default: 1000 × index)."""
    times = times if times is not None else [1000 * i for i in range(len(sizes))]
    return [ChunkSpan(10 * i, 10 * i + 9, 10, size, t) for i, (size, t) in enumerate(zip(sizes, times, strict=True))]


def test_before_removes_the_oldest_chunks_whose_records_are_all_older():
    chunks = chunks_of([1] * 5)  # newest record times 0, 1000, 2000, 3000, 4000
    assert plan_cut(chunks, Selectors(before=2000), None).count == 2  # the chunk at 2000 is not older
    assert plan_cut(chunks, Selectors(before=2001), None).count == 3


def test_a_chunk_of_unknown_time_stops_a_time_selector():
    chunks = chunks_of([1] * 4, [0, None, 0, 0])
    assert plan_cut(chunks, Selectors(before=10_000), None).count == 1


def test_max_bytes_removes_the_oldest_until_the_rest_fit():
    chunks = chunks_of([100, 200, 300, 400])
    assert plan_cut(chunks, Selectors(max_bytes=700), None).count == 2  # 300 + 400 left
    assert plan_cut(chunks, Selectors(max_bytes=1000), None).count == 0
    assert plan_cut(chunks, Selectors(max_bytes=699), None).count == 3  # stopped: the newest chunk stays


def test_either_selector_asks_for_a_chunk():
    chunks = chunks_of([100] * 5)
    assert plan_cut(chunks, Selectors(before=1500, max_bytes=200), None).count == 3
    assert plan_cut(chunks, Selectors(before=3500, max_bytes=400), None).count == 4


def test_the_newest_committed_chunk_and_every_later_one_stay():
    chunks = chunks_of([1] * 5)
    cut = plan_cut(chunks, Selectors(before=10**9), committed_start=20)  # chunks 30.. and 40.. are uploading
    assert cut.count == 2
    assert "20..29 is the backup's newest committed chunk" in cut.kept_because
    assert plan_cut(chunks, Selectors(before=10**9), None).count == 4  # no mark: the newest chunk is the committed


def test_the_chunk_holding_the_resume_position_stays():
    chunks = chunks_of([1] * 5)
    cut = plan_cut(chunks, Selectors(before=10**9), None, resume=15)
    assert cut.count == 1 and "resume position (offset 15)" in cut.kept_because
    assert plan_cut(chunks, Selectors(before=10**9), None, resume=20).count == 2


def test_no_selector_or_no_chunk_removes_nothing():
    assert plan_cut(chunks_of([1, 1]), Selectors(), None).count == 0
    assert plan_cut([], Selectors(before=10), None).count == 0


@given(
    sizes=st.lists(st.integers(0, 1000), min_size=0, max_size=30),
    time_steps=st.lists(st.one_of(st.none(), st.integers(0, 100)), min_size=30, max_size=30),
    before=st.one_of(st.none(), st.integers(-10, 4000)),
    max_bytes=st.one_of(st.none(), st.integers(0, 20_000)),
    committed=st.one_of(st.none(), st.integers(0, 29)),
    resume=st.one_of(st.none(), st.integers(0, 320)),
)
def test_a_cut_is_an_oldest_first_run_that_never_takes_a_protected_chunk(
    sizes, time_steps, before, max_bytes, committed, resume
):
    times: list[int | None] = []
    clock = 0
    for step in time_steps[: len(sizes)]:
        clock += step or 0
        times.append(None if step is None else clock)
    chunks = chunks_of(sizes, times)
    committed_start = None if committed is None or not chunks else chunks[min(committed, len(chunks) - 1)].start
    cut = plan_cut(chunks, Selectors(before, max_bytes), committed_start, resume)
    removed, kept = chunks[: cut.count], chunks[cut.count :]
    newest = committed_start if committed_start is not None else (chunks[-1].start if chunks else 0)
    assert all(c.start < newest for c in removed), "the newest committed chunk is never removed"
    assert resume is None or all(c.end < resume for c in removed), "nor the resume position's"
    assert all(c in removed for c in chunks if c.start < newest and c not in kept), "one run from the oldest"
    for chunk in removed:  # each removed chunk was asked for by a selector
        by_time = before is not None and all(
            c.last_time is not None and c.last_time < before for c in chunks[: chunks.index(chunk) + 1]
        )
        by_bytes = max_bytes is not None and sum(c.bytes for c in chunks[chunks.index(chunk) :]) > max_bytes
        assert by_time or by_bytes
    if kept and not cut.kept_because:  # stopped because no selector asks for the next one
        nxt = kept[0]
        by_time = before is not None and all(
            c.last_time is not None and c.last_time < before for c in chunks[: cut.count + 1]
        )
        by_bytes = max_bytes is not None and sum(c.bytes for c in kept) > max_bytes
        assert not (by_time or by_bytes), nxt


def test_the_record_round_trips_and_names_its_start():
    record = PrunedRange(
        "orders", 3, 1200, 1_800_000_000_000, 1_799_000_000_000, 0, 12, 1200, 64_000, "records before x"
    )
    assert PrunedRange.from_bytes(record.to_bytes()) == record
    assert record_name(1200) == "00000000000000001200.pruned" and record_start(record_name(1200)) == 1200
    assert record_start("00000000000000001200.chunk") is None and record_start("x.pruned") is None


def test_a_record_of_a_newer_version_or_garbage_is_refused_by_key():
    newer = PrunedRange("orders", 0, 1, 2, version=99).to_bytes()
    with pytest.raises(FormatError, match="version 99 is newer") as caught:
        PrunedRange.from_bytes(newer, "k.pruned")
    assert caught.value.object_key == "k.pruned"
    with pytest.raises(FormatError):
        PrunedRange.from_bytes(b"[1]", "k.pruned")


def test_a_pruned_start_says_where_the_backup_starts_now():
    assert PrunedStart(500, 1_800_000_000).describe() == "pruned up to offset 499 at 2027-01-15T08:00:00Z"


def test_snapshots_older_than_the_one_a_restore_from_the_new_start_picks_go():
    times = [100, 200, 300, 400]
    assert stale_snapshots(times, 250) == [100]  # 200 describes the topic at 250
    assert stale_snapshots(times, 50) == []  # nothing at or before: everything is still needed
    assert stale_snapshots(times, 10_000) == [100, 200, 300]  # the newest always stays
    assert stale_snapshots(times, None) == []


@pytest.mark.parametrize(
    ("text", "ms"),
    [("30d", 30 * 86_400_000), ("12h", 43_200_000), ("90m", 5_400_000), ("1w", 604_800_000), ("1d12h", 129_600_000)]
    + [("500ms", 500), ("45s", 45_000), ("2500", 2500)],
)
def test_durations(text, ms):
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["", "30x", "d", "1.5d", "-3d", "3d extra"])
def test_a_bad_duration_names_the_flag_and_the_forms(text):
    with pytest.raises(ConfigError, match="--older-than: not a duration.*30d"):
        parse_duration(text)


def test_sizes():
    assert parse_size("1000") == 1000 and parse_size("500MiB") == 500 * 2**20 and parse_size("20GB") == 20 * 10**9
    with pytest.raises(ConfigError, match="--max-total-bytes: not a size"):
        parse_size("lots")
