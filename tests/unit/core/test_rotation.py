"""Rotation rules: the batched Rotator must cut exactly where Confluent's per-record state machine cuts."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_s3.core.rotation import RotationPolicy, Rotator


def reference_cuts(records, policy: RotationPolicy, time_based: bool):
    """Confluent's TopicPartitionWriter, record by record: returns the list of chunks (lists of offsets)."""
    chunks, current = [], []
    count = size = 0
    base = current_enc = None
    schemas: dict[str, str] = {}
    for offset, enc, ts, nbytes, schema in records:
        rotate_before = False
        if count > 0 and (
            schema
            and schema != schemas.setdefault(enc, schema)
            or (
                policy.rotate_interval_ms > 0
                and time_based
                and (ts - base >= policy.rotate_interval_ms or enc != current_enc)
            )
        ):  # "" (tombstones) fits any file
            rotate_before = True
        if rotate_before:
            chunks.append(current)
            current, count, size, base, current_enc, schemas = [], 0, 0, None, None, {}
            if schema:
                schemas[enc] = schema
        if count == 0:
            base = ts
        if schema:
            schemas.setdefault(enc, schema)
        current.append(offset)
        current_enc = enc
        count += 1
        size += nbytes
        if count >= policy.flush_size or (policy.rotate_size_bytes > 0 and size >= policy.rotate_size_bytes):
            chunks.append(current)
            current, count, size, base, current_enc, schemas = [], 0, 0, None, None, {}
    return chunks, current


def batched_cuts(records, policy: RotationPolicy, time_based: bool, batch_sizes):
    rotator = Rotator(policy)
    chunks, current = [], []
    i = 0
    sizes_iter = iter(batch_sizes)
    while i < len(records):
        n = max(1, next(sizes_iter, 7))
        batch = records[i : i + n]
        i += n
        offsets = np.array([r[0] for r in batch], dtype=np.int64)
        dictionary = sorted({r[1] for r in batch})
        codes = np.array([dictionary.index(r[1]) for r in batch])
        timestamps = np.array([r[2] for r in batch], dtype=np.int64) if time_based else None
        sizes = np.array([r[3] for r in batch], dtype=np.int64)
        schema_names = sorted({r[4] for r in batch})
        schema_codes = np.array([schema_names.index(r[4]) for r in batch]) if len(schema_names) > 1 else None
        for seg in rotator.split(offsets, codes, dictionary, timestamps, sizes, schema_codes, schema_names, 0):
            current.extend(int(o) for o in offsets[seg.start : seg.end])
            if seg.close:
                chunks.append(current)
                current = []
    return chunks, current


record_lists = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", "c"]), st.integers(0, 5000), st.integers(0, 300), st.sampled_from(["s1", "s2", ""])
    ),
    min_size=0,
    max_size=120,
)


@settings(max_examples=400, deadline=None)
@given(
    rows=record_lists,
    flush=st.integers(1, 12),
    interval=st.sampled_from([-1, 100, 1000]),
    size_limit=st.sampled_from([-1, 200, 1000]),
    time_based=st.booleans(),
    schema_varies=st.booleans(),
    batch_sizes=st.lists(st.integers(1, 20), max_size=40),
)
def test_batched_rotation_matches_record_by_record(
    rows, flush, interval, size_limit, time_based, schema_varies, batch_sizes
):
    records = [
        (o * 2 + 5, enc, ts, nbytes, schema if schema_varies else "s1")
        for o, (enc, ts, nbytes, schema) in enumerate(rows)
    ]
    policy = RotationPolicy(flush_size=flush, rotate_interval_ms=interval, rotate_size_bytes=size_limit)
    assert batched_cuts(records, policy, time_based, batch_sizes) == reference_cuts(records, policy, time_based)


def test_quickstart_flush_size_three():
    records = [(o, "partition=0", 0, 1, "s") for o in range(9)]
    chunks, tail = batched_cuts(records, RotationPolicy(flush_size=3), False, [4, 5])
    assert chunks == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and tail == []


def test_interval_ignored_without_record_times():
    # Confluent ignores rotate.interval.ms unless the partitioner is time based.
    records = [(o, "p", o * 10_000, 1, "s") for o in range(5)]
    chunks, tail = batched_cuts(records, RotationPolicy(flush_size=100, rotate_interval_ms=1), False, [5])
    assert chunks == [] and tail == [0, 1, 2, 3, 4]


def test_forced_end_reproduces_an_existing_chunk_then_resumes_rules():
    rotator = Rotator(RotationPolicy(flush_size=2), forced_end=6)
    offsets = np.array([4, 5, 6, 7, 8, 9])
    segments = rotator.split(offsets, np.zeros(6, dtype=int), ["p"], None, np.ones(6), None, None, 0)
    cuts = [(s.start, s.end, s.close) for s in segments]
    assert cuts == [(0, 3, True), (3, 5, True), (5, 6, False)]


def test_forced_end_with_records_gone_closes_empty():
    rotator = Rotator(RotationPolicy(flush_size=10), forced_end=3)
    segments = rotator.split(np.array([8, 9]), np.zeros(2, dtype=int), ["p"], None, np.ones(2), None, None, 0)
    assert [(s.start, s.end, s.close) for s in segments] == [(0, 0, True), (0, 2, False)]


def test_on_open_hook_can_force_a_chunk():
    opened = []

    def on_open(offset):
        opened.append(offset)
        return 11 if offset == 10 else None

    rotator = Rotator(RotationPolicy(flush_size=2), on_open=on_open)
    offsets = np.arange(10, 16)
    segments = rotator.split(offsets, np.zeros(6, dtype=int), ["p"], None, np.ones(6), None, None, 0)
    assert [(s.start, s.end, s.close) for s in segments] == [(0, 2, True), (2, 4, True), (4, 6, True)]
    assert opened == [10, 12, 14]


def _ms(year, month, day, hour=0, minute=0, tz="UTC"):
    return int(dt.datetime(year, month, day, hour, minute, tzinfo=ZoneInfo(tz)).timestamp() * 1000)


def test_next_scheduled_rotation_aligns_to_local_day():
    policy = RotationPolicy(
        flush_size=10, rotate_schedule_interval_ms=3_600_000, timezone=ZoneInfo("America/Los_Angeles")
    )
    now = _ms(2024, 3, 5, 10, 17, "America/Los_Angeles")
    assert policy.next_scheduled_rotation(now) == _ms(2024, 3, 5, 11, 0, "America/Los_Angeles")
    # 7-hour schedule: 00:00, 07:00, 14:00, 21:00 then the next local midnight (not 04:00).
    policy7 = RotationPolicy(flush_size=10, rotate_schedule_interval_ms=7 * 3_600_000, timezone=ZoneInfo("UTC"))
    assert policy7.next_scheduled_rotation(_ms(2024, 3, 5, 22)) == _ms(2024, 3, 6)


def test_scheduled_rotation_commits_open_chunk_when_due():
    policy = RotationPolicy(flush_size=100, rotate_schedule_interval_ms=60_000, timezone=ZoneInfo("UTC"))
    rotator = Rotator(policy)
    t0 = _ms(2024, 1, 1, 0, 0) + 10_000
    segs = rotator.split(np.array([0, 1]), np.zeros(2, dtype=int), ["p"], None, np.ones(2), None, None, t0)
    assert [(s.start, s.end, s.close) for s in segs] == [(0, 2, False)]
    assert not rotator.close_if_due(t0 + 1000)
    assert rotator.close_if_due(t0 + 60_000)  # the minute boundary passed: commit with no new record
    segs = rotator.split(np.array([2]), np.zeros(1, dtype=int), ["p"], None, np.ones(1), None, None, t0 + 61_000)
    assert [(s.start, s.end, s.close) for s in segs] == [(0, 1, False)]


def test_scheduled_rotation_due_at_batch_arrival_commits_before_it():
    policy = RotationPolicy(flush_size=100, rotate_schedule_interval_ms=60_000, timezone=ZoneInfo("UTC"))
    rotator = Rotator(policy)
    t0 = _ms(2024, 1, 1)
    rotator.split(np.array([0]), np.zeros(1, dtype=int), ["p"], None, np.ones(1), None, None, t0 + 1)
    segs = rotator.split(np.array([1, 2]), np.zeros(2, dtype=int), ["p"], None, np.ones(2), None, None, t0 + 60_001)
    assert [(s.start, s.end, s.close) for s in segs] == [(0, 0, True), (0, 2, False)]
