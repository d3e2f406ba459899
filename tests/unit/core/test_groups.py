"""Issue 17: consumer-group snapshots and the offset map (pure core)."""

from __future__ import annotations

import pytest

from kafka_s3.core.errors import FormatError
from kafka_s3.core.groups import (
    SERIES,
    GroupSnapshot,
    OffsetMap,
    Translation,
    pick_snapshot,
    translate_offset,
)
from kafka_s3.core.manifest import ManifestStore
from kafka_s3.io.stores.spec import StoreSpec


def test_snapshot_round_trip_and_name_is_not_a_data_extension():
    snap = GroupSnapshot("t", 1_700_000_000_123, {"g": {0: 5, 2: 7}, "a": {1: 0}})
    assert GroupSnapshot.from_bytes(snap.to_bytes()) == snap
    name = SERIES.name(snap.at)
    assert name.endswith(".offsets") and SERIES.time(name) == snap.at
    for extension in (".json", ".avro", ".parquet", ".bin", ".gz", ".csv"):
        assert not name.endswith(extension)
    assert SERIES.time("00001.json") is None and SERIES.time("x.offsets") is None
    with pytest.raises(FormatError, match="k1"):
        GroupSnapshot.from_bytes(b"{", "k1")


def test_pick_snapshot_uses_the_newest_at_or_before_the_bound():
    assert pick_snapshot([10, 20, 30], None) == 30
    assert pick_snapshot([10, 20, 30], 25) == 20
    assert pick_snapshot([10, 20, 30], 20) == 20
    assert pick_snapshot([10, 20, 30], 5) is None
    assert pick_snapshot([], None) is None


def test_offset_map_ranges_have_a_constant_delta():
    m = OffsetMap()
    for source, target in [(0, 37), (1, 38), (2, 39), (3, 41), (4, 42), (7, 43), (8, 44)]:
        m.add(source, target)
    assert m.ranges == [(0, 2, 37), (3, 4, 41), (7, 8, 43)]
    assert [m.translate(s) for s in range(10)] == [37, 38, 39, 41, 42, 43, 43, 43, 44, None]


def test_translate_before_inside_between_and_past_the_restored_range():
    m = OffsetMap([(100, 199, 10), (300, 399, 111)])
    assert translate_offset(m, 0, 500) == (10, "record")  # before: the first restored record
    assert translate_offset(m, 150, 500) == (60, "record")
    assert translate_offset(m, 250, 500) == (111, "record")  # in a gap: the next restored record
    assert translate_offset(m, 400, 500) == (500, "after")  # past: the target's end
    assert translate_offset(OffsetMap(), 5, 0) == (0, "after")
    assert translate_offset(OffsetMap(), 5, None) == (None, "pending")


def test_later_ranges_supersede_from_their_first_source_offset():
    m = OffsetMap([(0, 99, 0), (100, 199, 101)])
    m.extend([(150, 249, 400)])  # redelivered from 150 on (at-least-once after a crash)
    assert m.ranges == [(0, 99, 0), (100, 149, 101), (150, 249, 400)]
    m.extend([(0, 9, 900)])
    assert m.ranges == [(0, 9, 900)]


def test_snapshots_live_next_to_the_manifests_and_are_never_replaced(tmp_path):
    objects = StoreSpec(store_class="local", bucket="b", region="us-east-1", local_root=str(tmp_path)).open()
    objects.create_bucket()
    store = ManifestStore(objects, "topics/_kafka-s3/avro")
    assert store.note(SERIES, GroupSnapshot("t", 5, {"g": {0: 1}}))
    assert not store.note(SERIES, GroupSnapshot("t", 5, {"g": {0: 2}}))
    store.note(SERIES, GroupSnapshot("t", 9, {"g": {0: 3}}))
    assert store.times(SERIES, "t") == [5, 9]
    assert store.load(SERIES, "t", 5).groups == {"g": {0: 1}}
    assert store.load_topic("t") == {}  # not mistaken for chunk manifests


@pytest.mark.issue(29, item=1)
def test_a_translation_below_the_pruned_start_says_the_offset_was_pruned():
    pruned = Translation("app", "orders", 0, 2, "orders-copy", 0, 0, "record", pruned_start=6)
    assert pruned.line() == (
        "group app: orders[0] 2 -> orders-copy[0] 0 (offset 2 was pruned: the backup starts at offset 6)"
    )
    assert pruned.to_dict()["pruned_start"] == 6
    pending = Translation("app", "orders", 0, 2, "orders-copy", 0, None, "pending", pruned_start=6)
    assert pending.line().endswith("? (not restored yet; offset 2 was pruned: the backup starts at offset 6)")
    assert Translation("app", "orders", 0, 7, "orders-copy", 0, 1, "record").line().endswith("orders-copy[0] 1")
