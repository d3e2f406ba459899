"""A recorded prune is the partition's new start, not a loss; oldest objects gone without one are told apart (an
S3 lifecycle rule) and still a problem."""

from __future__ import annotations

import pytest

from kafka_s3.core.layout import ObjectName
from kafka_s3.core.manifest import FileEntry, Manifest, PartitionManifests
from kafka_s3.core.prune import PrunedStart
from kafka_s3.pipelines.read.discovery import BackupObject, SourcePartition
from kafka_s3.pipelines.read.integrity import Kind, check_partition

T = "orders"


def key(start: int) -> str:
    return f"topics/{T}/partition=0/{T}+0+{start:010d}.json"


def chunk(start: int, end: int, follows: int | None) -> Manifest:
    return Manifest(
        T, 0, start, end, (FileEntry(key(start), "data", end - start + 1, start, end, 100),), follows=follows
    )


def chain(count: int) -> list[Manifest]:
    """``count`` linked chunks of 10 offsets each."""
    return [chunk(10 * i, 10 * i + 9, 10 * i - 1 if i else None) for i in range(count)]


def listing(manifests: list[Manifest]) -> tuple[SourcePartition, dict[str, int]]:
    sizes = {f.key: f.bytes for m in manifests for f in m.files}
    objects = [BackupObject(ObjectName(k, T, 0, int(k[-15:-5]), f"{T}/partition=0", ".json"), 100) for k in sizes]
    return SourcePartition(T, 0, objects), sizes


@pytest.mark.issue(29, item=1)
def test_chunks_removed_by_a_recorded_prune_are_the_new_start_not_missing():
    kept = chain(5)[2:]  # chunks 0..9 and 10..19 pruned: the first kept one follows offset 19
    part, sizes = listing(kept)
    marks = (20, 40)  # an interrupted prune's leftover marks below the start are no longer listed (load_topic)
    held = PartitionManifests(T, 0, tuple(kept), 40, marks, pruned=PrunedStart(20, 1_800_000_000))
    check = check_partition(T, 0, part, held, sizes)
    assert check.blocking == []
    [note] = check.findings
    assert note.kind is Kind.PRUNED and not note.blocking
    assert "pruned up to offset 19 at 2027-01-15T08:00:00Z by kafka-s3 prune: the backup starts at offset 20" in str(
        note
    )
    assert (check.first, check.last, check.records) == (20, 49, 30)


@pytest.mark.issue(29, item=2)
def test_oldest_chunks_gone_with_their_manifests_and_no_prune_recorded_say_lifecycle_and_prune():
    kept = chain(5)[2:]
    part, sizes = listing(kept)
    check = check_partition(T, 0, part, PartitionManifests(T, 0, tuple(kept), 40, (40,)), sizes)
    [finding] = check.blocking
    assert finding.kind is Kind.MISSING
    assert "the oldest objects of the partition vanished without a recorded prune" in finding.message
    assert "an S3 lifecycle rule" in finding.message and "kafka-s3 prune" in finding.message
    assert "the backup now starts at offset 20" in finding.message


@pytest.mark.issue(29, item=2)
def test_oldest_objects_gone_under_their_manifests_say_lifecycle_and_prune():
    chunks = chain(4)
    part, sizes = listing(chunks)
    for lost in (key(0), key(10)):  # a lifecycle rule on the data prefix only: manifests still there
        del sizes[lost]
    part.objects = [o for o in part.objects if o.key in sizes]
    check = check_partition(T, 0, part, PartitionManifests(T, 0, tuple(chunks), 30, (30,)), sizes)
    assert len(check.blocking) == 2
    assert all("vanished without a recorded prune" in f.message for f in check.blocking)
    assert all("starts at offset 20" in f.message for f in check.blocking)


@pytest.mark.issue(29, item=2)
def test_a_hole_in_the_middle_is_not_taken_for_a_lifecycle_rule():
    chunks = chain(4)
    part, sizes = listing(chunks)
    del sizes[key(20)]
    part.objects = [o for o in part.objects if o.key in sizes]
    check = check_partition(T, 0, part, PartitionManifests(T, 0, tuple(chunks), 30, (30,)), sizes)
    [finding] = check.blocking
    assert "vanished" not in finding.message
