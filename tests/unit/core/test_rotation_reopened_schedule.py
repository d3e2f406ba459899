"""Scheduled rotation of a chunk left open by an earlier follow cycle and re-read by a new task."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import numpy as np

from kafka_s3.core.rotation import RotationPolicy, Rotator

POLICY = RotationPolicy(flush_size=100, rotate_schedule_interval_ms=60_000, timezone=ZoneInfo("UTC"))
T0 = int(dt.datetime(2024, 1, 1, 0, 0, 10, tzinfo=dt.UTC).timestamp() * 1000)


def _split(rotator, offsets, now):
    n = len(offsets)
    segments = rotator.split(np.array(offsets), np.zeros(n, dtype=int), ["p"], None, np.ones(n), None, None, now)
    return [(s.start, s.end, s.close) for s in segments]


def test_schedule_counts_from_when_the_chunk_was_first_open_not_from_the_new_task():
    # Open since T0 (00:00:10) holding offsets 0-2; the re-reading task starts after 00:01:00.
    rotator = Rotator(POLICY, opened_at_ms=T0, open_until=3)
    # The records it already had stay together; the chunk commits before the first new record.
    assert _split(rotator, [0, 1, 2, 3, 4], T0 + 55_000) == [(0, 3, True), (3, 5, False)]
    # The next rotation counts from that commit.
    assert not rotator.close_if_due(T0 + 100_000)
    assert rotator.close_if_due(T0 + 111_000)


def test_due_reopened_chunk_without_new_records_commits_at_the_end_of_input():
    rotator = Rotator(POLICY, opened_at_ms=T0, open_until=3)
    assert _split(rotator, [0, 1], T0 + 55_000) == [(0, 2, False)]
    assert _split(rotator, [2], T0 + 55_000) == [(0, 1, False)]
    assert rotator.close_if_due(T0 + 55_000)


def test_not_yet_due_reopened_chunk_stays_open():
    rotator = Rotator(POLICY, opened_at_ms=T0, open_until=3)
    assert _split(rotator, [0, 1, 2, 3], T0 + 20_000) == [(0, 4, False)]
    assert not rotator.close_if_due(T0 + 30_000)


def test_after_the_scheduled_commit_other_rules_cut_as_usual():
    policy = RotationPolicy(flush_size=2, rotate_schedule_interval_ms=60_000, timezone=ZoneInfo("UTC"))
    rotator = Rotator(policy, opened_at_ms=T0, open_until=1)
    # Offset 0 was open since 00:00:10; at 00:01:05 it commits alone, then flush.size cuts pairs (no cut after a
    # single record: the schedule restarted at the commit).
    assert _split(rotator, [0, 1, 2, 3, 4], T0 + 55_000) == [(0, 1, True), (1, 3, True), (3, 5, True)]
