"""Where a backup resumes (pipelines/backup/resume.py) on a local store: chunk-aligned positions, the first
incomplete chunk, and a log that cannot be the one backed up."""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.errors import PlanError
from kafka_s3.core.manifest import FileEntry, Manifest, ManifestStore
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.resume import (
    LogRange,
    Resume,
    after_retention,
    check_log_end,
    committed_by_us,
    from_bucket,
    from_group,
)


def _key(start: int) -> str:
    return f"topics/t/partition=0/t+0+{start:010d}.bin"


@pytest.fixture
def manifests(tmp_path):
    """Chunks 0..2, 3..5 and 6..8 of t[0], each with its data object."""
    store = StoreSpec(store_class="local", bucket="b", region="us-east-1", local_root=str(tmp_path)).open()
    store.create_bucket()
    manifests = ManifestStore(store, "topics/_kafka-s3/bin")
    for start in (0, 3, 6):
        manifests.create(Manifest("t", 0, start, start + 2, (FileEntry(_key(start), "data", 3, start, start + 2, 9),)))
        store.put(_key(start), b"x" * 9)
    return manifests


@pytest.mark.issue(14, item=8)
def test_resume_point_is_the_first_incomplete_chunk(manifests):
    manifest, missing = manifests.resume_point("t", 0)
    assert (manifest.start, missing) == (6, [])
    manifests.store.delete([_key(3)])
    manifest, missing = manifests.resume_point("t", 0)
    assert (manifest.start, missing) == (3, [_key(3)])
    assert from_bucket(manifests, ("t", 0), "g", "s3://b", LogRange(0, 9)) == Resume(3, forced_end=5)
    assert manifests.resume_point("t", 1) is None


@pytest.mark.issue(14, item=9)
def test_positions_beyond_the_log_end_are_errors(manifests):
    with pytest.raises(PlanError, match=r"t\[0\]: group g has committed offset 9, but the log offsets 0..1"):
        from_group(manifests, ("t", 0), "g", 9, True, LogRange(0, 2))
    with pytest.raises(PlanError, match=r"bucket s3://b holds chunk 6..8 .*but the empty log \(next offset 0\)"):
        from_bucket(manifests, ("t", 0), "g", "s3://b", LogRange(0, 0))
    with pytest.raises(PlanError, match=r"t\[0\]: the backup has reached offset 9 .*ends at offset 3"):
        check_log_end(("t", 0), 9, 4, "g")
    check_log_end(("t", 0), 9, 9, "g")
    assert from_group(manifests, ("t", 0), "g", 9, True, LogRange(0, 9)) == Resume(9)


@pytest.mark.issue(14, item=13)
def test_a_position_inside_a_chunk_moves_to_its_start_or_past_it(manifests):
    assert from_group(manifests, ("t", 0), "g", 4, False, LogRange(0, 9)) == Resume(3, forced_end=5)
    assert from_group(manifests, ("t", 0), "g", 4, False, LogRange(4, 9)) == Resume(6)  # 3 is gone from Kafka
    assert from_group(manifests, ("t", 0), "g", 6, False, LogRange(0, 9)) == Resume(6)  # a chunk start
    assert from_group(manifests, ("t", 0), "g", 9, False, LogRange(0, 9)) == Resume(9)  # past every chunk
    assert after_retention(manifests, ("t", 0), 4) == Resume(6)
    assert after_retention(manifests, ("t", 0), 6) == Resume(6)


def test_offsets_committed_by_the_backup_are_recognised():
    assert committed_by_us('{"object": "k", "at": 1}')
    assert not committed_by_us("")
    assert not committed_by_us("not json")
    assert not committed_by_us('["at"]')


@pytest.mark.issue(14, item=9)
def test_a_group_offset_of_another_topic_id_is_an_error():
    from kafka_s3.pipelines.backup.resume import check_topic_id

    stamped = json.dumps({"object": "k", "at": 1, "topic_id": "id-old"})
    with pytest.raises(
        PlanError, match=r"orders\[2\]: group g committed its offsets for topic id id-old, but .* id-new"
    ):
        check_topic_id(("orders", 2), "g", stamped, "id-new")
    check_topic_id(("orders", 2), "g", stamped, "id-old")  # the same topic
    check_topic_id(("orders", 2), "g", stamped, "")  # a broker without topic ids: nothing to compare
    check_topic_id(("orders", 2), "g", json.dumps({"object": "k", "at": 1}), "id-new")  # committed before ids
