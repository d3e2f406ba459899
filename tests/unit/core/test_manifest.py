"""Chunk manifests: deterministic bytes, round trip, conditional creation returning the existing cut."""

from __future__ import annotations

import pytest

from kafka_s3.core.manifest import FileEntry, Manifest, ManifestStore
from kafka_s3.io.stores.spec import StoreSpec


def _manifest(start=0, end=2):
    return Manifest(
        "t", 0, start, end, (FileEntry("topics/t/partition=0/t+0+0000000000.json", "data", 3, start, end, 30),)
    )


def test_bytes_are_deterministic_and_round_trip():
    m = _manifest()
    assert m.to_bytes() == _manifest().to_bytes()
    assert Manifest.from_bytes(m.to_bytes()) == m
    assert m.records == 3


def test_create_returns_existing_cut(tmp_path):
    store = StoreSpec(store_class="local", bucket="b", region="us-east-1", local_root=str(tmp_path)).open()
    store.create_bucket()
    manifests = ManifestStore(store, "topics/_kafka-s3")
    assert manifests.create(_manifest(0, 2)) == _manifest(0, 2)
    existing = manifests.create(_manifest(0, 5))
    assert existing.end == 2 and not existing.same_cut(_manifest(0, 5))
    manifests.create(_manifest(3, 5))
    assert manifests.latest("t", 0).start == 3
    assert manifests.latest("t", 1) is None
    assert manifests.get("t", 0, 3).end == 5


@pytest.mark.issue(14, item=5)
def test_file_entries_record_ambiguous_records_and_old_manifests_still_load():
    entry = FileEntry("k", "data", 3, 0, 2, 10, ambiguous=2)
    manifest = Manifest("t", 0, 0, 2, (entry,))
    assert Manifest.from_bytes(manifest.to_bytes()).files[0].ambiguous == 2
    old = b'{"end":2,"files":[{"bytes":10,"directory":"","first_offset":0,"key":"k","kind":"data","last_offset":2,'
    old += b'"records":3}],"partition":0,"start":0,"topic":"t","version":1}'
    assert Manifest.from_bytes(old).files[0].ambiguous == 0
