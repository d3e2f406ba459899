"""``kafka-s3 status``'s table: the ``backup start`` column says where a pruned partition begins now."""

from __future__ import annotations

import pytest

from kafka_s3.cli.render import render_status

ROW = {
    "group": "connect-orders",
    "topic": "orders",
    "partition": 0,
    "committed": 600,
    "end": 640,
    "lag": 40,
    "bucket_committed": 600,
    "last_object": "topics/orders/partition=0/orders+0+0000000500.json",
    "last_commit": "2026-11-26T14:45:16+00:00",
    "last_commit_age_s": 32,
    "view": "group",
}


@pytest.mark.issue(29, item=1)
def test_status_table_shows_the_first_restorable_offset_and_time_of_a_pruned_partition():
    pruned = {**ROW, "pruned_start": 6, "pruned_start_time": "2023-11-14T22:13:26Z"}
    never = {**ROW, "partition": 1, "pruned_start": None, "pruned_start_time": None}
    unknown_time = {**ROW, "partition": 2, "pruned_start": 9, "pruned_start_time": None}
    table = render_status([pruned, never, unknown_time])
    assert "backup start" in table
    starts = [[c.strip() for c in line.split("│")][-3] for line in table.splitlines() if line.startswith("│ orders")]
    assert starts == ["6 (2023-11-14T22:13:26Z)", "-", "9"]
