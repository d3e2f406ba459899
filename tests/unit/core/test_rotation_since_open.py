"""Issue 15 (B6): Lenses' interval rule in the pure rotation policy (``rotate.schedule.anchor=open``).

LS ``sink/commit/CommitPolicyConditions.Interval``: a file is due once ``now >= lastModified + interval``, where
``lastModified`` is the wall time its writer was created or last flushed (LS ``sink/commit/CommitContext``); it is
evaluated after every record (LS ``WriterManager.writeAndCommit``) and for idle writers (``commitFlushableWriters``).
kafka-s3 counts from the moment the chunk opened; no alignment on local midnight.
"""

from __future__ import annotations

import datetime as dt

import numpy as np

from kafka_s3.core.rotation import RotationPolicy, Rotator

OPEN = RotationPolicy(flush_size=1000, rotate_schedule_interval_ms=60_000, rotate_schedule_anchor="open")
# 00:00:50 UTC: a midnight-aligned 60 s schedule would be due at 00:01:00, ten seconds later
T = int(dt.datetime(2024, 1, 1, 0, 0, 50, tzinfo=dt.UTC).timestamp() * 1000)


def _split(rotator, offsets, now):
    n = len(offsets)
    segments = rotator.split(np.array(offsets), np.zeros(n, dtype=int), ["p"], None, np.ones(n), None, None, now)
    return [(s.start, s.end, s.close) for s in segments]


def test_next_rotation_counts_from_the_opening_not_from_midnight():
    assert OPEN.next_scheduled_rotation(T) == T + 60_000
    day = RotationPolicy(flush_size=1000, rotate_schedule_interval_ms=60_000, timezone=dt.UTC)
    assert day.next_scheduled_rotation(T) == T + 10_000  # Confluent's: the next minute of the day


def test_object_opened_at_t_closes_at_the_first_check_at_or_after_t_plus_interval():
    rotator = Rotator(OPEN)
    assert _split(rotator, [0, 1, 2], T) == [(0, 3, False)]
    assert not rotator.close_if_due(T + 10_000)  # midnight alignment would close here
    assert not rotator.close_if_due(T + 59_999)
    assert rotator.close_if_due(T + 60_000)


def test_a_record_processed_when_due_starts_the_next_object():
    rotator = Rotator(OPEN)
    assert _split(rotator, [0, 1], T) == [(0, 2, False)]
    assert _split(rotator, [2, 3], T + 30_000) == [(0, 2, False)]
    assert _split(rotator, [4, 5], T + 61_000) == [(0, 0, True), (0, 2, False)]
    # the new object opened at T+61s: due at T+121s, not T+60s+60s
    assert not rotator.close_if_due(T + 120_999)
    assert rotator.close_if_due(T + 121_000)


def test_the_next_object_counts_from_its_own_opening_after_an_idle_gap():
    rotator = Rotator(OPEN)
    assert _split(rotator, [0], T) == [(0, 1, False)]
    assert rotator.close_if_due(T + 60_000)
    # idle for ten minutes, then a record: its object is due one interval after it opened
    later = T + 600_000
    assert _split(rotator, [1], later) == [(0, 1, False)]
    assert not rotator.close_if_due(later + 59_000)
    assert rotator.close_if_due(later + 60_000)


def test_a_chunk_reopened_by_a_new_cycle_counts_from_its_first_opening():
    # open since T holding offsets 0-2 (an earlier cycle), re-read by a new task at T+65s: due, and its records
    # stay together
    rotator = Rotator(OPEN, opened_at_ms=T, open_until=3)
    assert _split(rotator, [0, 1, 2, 3, 4], T + 65_000) == [(0, 3, True), (3, 5, False)]
    assert not rotator.close_if_due(T + 124_000)
    assert rotator.close_if_due(T + 125_000)


def test_a_reopened_chunk_not_yet_due_stays_open():
    rotator = Rotator(OPEN, opened_at_ms=T, open_until=3)
    assert _split(rotator, [0, 1, 2, 3], T + 59_000) == [(0, 4, False)]
    assert not rotator.close_if_due(T + 59_999)
    assert rotator.close_if_due(T + 60_000)


def test_a_replayed_chunk_keeps_the_buckets_cut_and_the_next_counts_from_its_opening():
    # A resumed run replays the chunk the bucket's manifest holds (offsets 0-4), however late it is, then opens the
    # next chunk, whose interval starts then.
    rotator = Rotator(OPEN, forced_end=4)
    assert _split(rotator, [0, 1, 2, 3, 4, 5, 6], T + 900_000) == [(0, 5, True), (5, 7, False)]
    assert not rotator.close_if_due(T + 959_999)
    assert rotator.close_if_due(T + 960_000)
