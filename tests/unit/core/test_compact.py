"""Which chunks ``kafka-s3 compact`` merges, and how readers take a recorded merge (pure)."""

from __future__ import annotations

import hashlib

import pytest

from kafka_s3.core.compact import (
    Compaction,
    Target,
    final_key,
    plan_groups,
    record_name,
    record_start,
    staging_dir,
    superseding,
)
from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.manifest import FileEntry, Manifest, ManifestStore, _same_bytes
from kafka_s3.io.stores.spec import StoreSpec

pytestmark = pytest.mark.issue(29, item=3)


def chunk(
    start: int,
    end: int,
    size: int = 100,
    follows: int | None = None,
    directory: str = "d",
    offsets: tuple[int, ...] | None = None,
) -> Manifest:
    key = f"topics/t/partition=0/t+0+{start:010d}.json"
    entry = FileEntry(key, "data", end - start + 1, start, end, size, directory, offsets=offsets)
    return Manifest("t", 0, start, end, (entry,), follows=follows)


def chain(*spans: tuple[int, int], size: int = 100) -> list[Manifest]:
    out: list[Manifest] = []
    for start, end in spans:
        out.append(chunk(start, end, size, out[-1].end if out else None))
    return out


def starts(groups: list[tuple[Manifest, ...]]) -> list[list[int]]:
    return [[c.start for c in group] for group in groups]


def test_groups_stop_before_the_newest_committed_chunk_and_fit_the_target():
    chunks = chain((0, 9), (10, 19), (20, 29), (30, 39), (40, 49), (50, 59))
    assert starts(plan_groups(chunks, 50, Target(records=20))) == [[0, 10], [20, 30]]
    assert starts(plan_groups(chunks, 50, Target(bytes=1000))) == [[0, 10, 20, 30, 40]]
    assert starts(plan_groups(chunks, None, Target(bytes=1000))) == [[0, 10, 20, 30, 40]]  # no mark: the newest
    assert starts(plan_groups(chunks, 20, Target(bytes=1000))) == [[0, 10]]  # the tail at 20: nothing from it on


def test_a_lone_small_chunk_or_a_big_one_is_left_as_it_is():
    chunks = chain((0, 9), (10, 19), (20, 29), size=500)
    assert plan_groups(chunks, 20, Target(bytes=800)) == []  # two chunks of 500 do not fit in 800
    assert plan_groups(chain((0, 9), (10, 19)), 10, Target(bytes=800)) == []  # one chunk below the tail


def test_a_broken_chain_a_tombstone_file_or_another_directory_ends_a_run():
    lost = [chunk(0, 9), chunk(10, 19, follows=9), chunk(30, 39, follows=25), chunk(40, 49, follows=39)]
    assert starts(plan_groups(lost + [chunk(50, 59, follows=49)], 50, Target(bytes=10_000))) == [[0, 10], [30, 40]]
    tomb = [chunk(0, 9), chunk(10, 19, follows=9, offsets=(10, 12)), chunk(20, 29, follows=19), chunk(30, 39)]
    assert plan_groups(tomb, 30, Target(bytes=10_000)) == []
    moved = [chunk(0, 9), chunk(10, 19, follows=9, directory="e"), chunk(20, 29, follows=19, directory="e")]
    assert starts(plan_groups(moved + [chunk(30, 39, follows=29)], 30, Target(bytes=10_000))) == [[10, 20]]


def test_a_target_needs_a_limit():
    with pytest.raises(ConfigError, match="set one of them"):
        Target.of(-1, -1)
    assert Target.of(-1, 500) == Target(records=500)


def test_a_record_round_trips_and_names_its_start():
    group = chain((0, 9), (10, 19))
    merged = chunk(0, 19)
    record = Compaction("t", 0, 0, 19, tuple(group), (merged,), (merged,), 5)
    assert Compaction.from_bytes(record.to_bytes()) == record
    assert record_name(0) == "00000000000000000000.compacting" and record_start(record_name(42)) == 42
    assert record_start("00000000000000000000.chunk") is None
    with pytest.raises(FormatError, match="unreadable compaction record"):
        Compaction.from_bytes(b"[]", "k")


def test_readers_take_the_recorded_chunk_in_place_of_every_chunk_of_its_range():
    originals = chain((0, 9), (10, 19), (20, 29), (30, 39))
    merged = chunk(0, 29, follows=None)
    record = Compaction("t", 0, 0, 29, tuple(originals[:3]), (merged,), (merged,))
    pairs = [(m, f"k{m.start}") for m in originals[1:]]  # the first original already deleted
    chunks, marks = superseding(pairs, [0, 10, 20, 30], [(record, "rec")])
    assert [(m.start, m.end, key) for m, key in chunks] == [(0, 29, "rec"), (30, 39, "k30")]
    assert marks == [0, 30]
    assert superseding(pairs, [30, 10], []) == (pairs, [10, 30])


def test_staged_files_keep_their_path_under_topics_dir():
    staging = staging_dir("topics/_kafka-s3/json", "/", "t", 3)
    assert staging == "topics/_kafka-s3/json/t/_compacting/3"
    staged = f"{staging}/t/partition=3/t+3+0000000000.json"
    assert final_key(staged, staging, "topics/", "/") == "topics/t/partition=3/t+3+0000000000.json"
    with pytest.raises(FormatError):
        final_key("elsewhere/t+3+0.json", staging, "topics/", "/")


def test_a_recorded_merge_replaces_its_range_when_manifests_are_loaded_and_is_never_a_resume_point(tmp_path):
    """The crash window between the record and the originals' deletion: listings give the merged chunk, once."""
    store = StoreSpec(store_class="local", bucket="b", region="us-east-1", local_root=str(tmp_path)).open()
    store.create_bucket()
    manifests = ManifestStore(store, "topics/_kafka-s3/json")
    originals = chain((0, 9), (10, 19), (20, 29))
    for manifest in originals:
        manifests.create(manifest)
        manifests.mark_committed("t", 0, manifest.start)
    merged = chunk(0, 19)
    record = Compaction("t", 0, 0, 19, tuple(originals[:2]), (merged,), (merged,))
    store.put(manifests.prefix("t", 0) + record_name(0), record.to_bytes())
    held = manifests.load_topic("t")[0]
    assert [(m.start, m.end) for m in held.chunks] == [(0, 19), (20, 29)]
    assert held.keys[0].endswith("00000000000000000000.compacting")
    assert held.marked_starts == (0, 20) and held.committed_start == 20
    assert manifests.starts("t", 0) == [20]


def test_a_cached_manifest_is_read_again_once_its_listed_etag_says_a_merge_re_created_it():
    """A long-running reader (restore --follow) cached the first original's manifest under the key the merged chunk's
    manifest takes: the listing's ETag (the MD5 of a single-part upload) tells them apart."""
    original, merged = chunk(0, 9), chunk(0, 49, size=500)
    assert _same_bytes(original, hashlib.md5(original.to_bytes()).hexdigest())
    assert not _same_bytes(original, hashlib.md5(merged.to_bytes()).hexdigest())
    assert _same_bytes(original, "") and _same_bytes(original, "3858f62230ac3c915f300c664312c63f-2")
