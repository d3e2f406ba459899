"""The backup's consumer group as a witness: chunks it committed that the bucket lacks are found (issue 26)."""

from __future__ import annotations

from kafka_s3.core.manifest import FileEntry, Manifest, PartitionManifests
from kafka_s3.pipelines.read.committed import GroupMark, cross_check
from kafka_s3.pipelines.read.integrity import Kind, PartitionCheck

T = "orders"


def chunk(start: int, end: int) -> Manifest:
    return Manifest(T, 0, start, end, (FileEntry(f"k{start}", "data", end - start + 1, start, end, 10),))


def held(*chunks: Manifest) -> dict[str, dict[int, PartitionManifests]]:
    return {T: {0: PartitionManifests(T, 0, chunks, chunks[-1].start, (chunks[-1].start,))}}


def test_a_group_that_committed_a_chunk_the_bucket_lacks_is_a_missing_tail():
    checks = {(T, 0): PartitionCheck(T, 0, verified=True)}
    cross_check(checks, held(chunk(0, 99), chunk(100, 199)), {(T, 0): GroupMark("g", 300, 200, "k200")}, set())
    [finding] = checks[(T, 0)].blocking
    assert (finding.kind, finding.first, finding.last) == (Kind.MISSING, 200, 299)
    assert "group g committed up to offset 300 (its newest chunk starts at 200)" in finding.message


def test_a_group_behind_or_at_the_bucket_says_nothing():
    for mark in (GroupMark("g", 200, 100, "k100"), GroupMark("g", 100, 0, "k0")):
        checks = {(T, 0): PartitionCheck(T, 0, verified=True)}
        cross_check(checks, held(chunk(0, 99), chunk(100, 199)), {(T, 0): mark}, set())
        assert checks[(T, 0)].findings == []


def test_offsets_committed_by_older_versions_are_judged_by_the_object_they_name():
    checks = {(T, 0): PartitionCheck(T, 0, verified=True)}
    cross_check(checks, held(chunk(0, 99)), {(T, 0): GroupMark("g", 200, None, "k100")}, set())
    assert [f.kind for f in checks[(T, 0)].findings] == [Kind.MISSING]
    checks = {(T, 0): PartitionCheck(T, 0, verified=True)}
    cross_check(checks, held(chunk(0, 99)), {(T, 0): GroupMark("g", 100, None, "k0")}, set())
    assert checks[(T, 0)].findings == []


def test_a_partition_the_bucket_holds_nothing_of_is_missing_when_the_group_committed_it():
    checks: dict[tuple[str, int], PartitionCheck] = {}
    cross_check(checks, {}, {(T, 1): GroupMark("g", 50, 0, "k0")}, set())
    [finding] = checks[(T, 1)].findings
    assert finding.blocking and "manifests hold nothing of it" in finding.message
