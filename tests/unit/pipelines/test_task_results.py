"""What tasks send to the driver survives the trip through JSON unchanged (backup and restore results)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_s3.core.manifest import FileEntry, Manifest
from kafka_s3.pipelines.backup.result import OpenChunk, PartitionResult
from kafka_s3.pipelines.read.discovery import Problem
from kafka_s3.pipelines.read.reader import Gap
from kafka_s3.pipelines.restore.result import RestoreResult

offsets = st.integers(min_value=0, max_value=2**62)
maybe_offsets = st.none() | offsets
text = st.text(max_size=20)
kinds = st.sampled_from(["data", "keys", "headers", "index"])
files = st.builds(
    FileEntry,
    key=text,
    kind=kinds,
    records=offsets,
    first_offset=offsets,
    last_offset=offsets,
    bytes=offsets,
    directory=text,
)
manifests = st.builds(
    Manifest,
    topic=text,
    partition=st.integers(0, 10_000),
    start=offsets,
    end=offsets,
    files=st.lists(files, max_size=4).map(tuple),
)
partition_results = st.builds(
    PartitionResult,
    topic=text,
    partition=st.integers(0, 10_000),
    start=offsets,
    read_until=offsets,
    committed_offset=offsets,
    chunks=st.lists(manifests, max_size=3).map(tuple),
    open_chunk=st.none() | st.builds(OpenChunk, start=offsets, records=offsets, first_timestamp=maybe_offsets),
    records_in=offsets,
    replayed_files=offsets,
    read_bytes=offsets,
    error=st.none() | text,
    retryable=st.booleans(),
)
restore_results = st.builds(
    RestoreResult,
    source_topic=text,
    source_partition=st.integers(0, 10_000),
    target_topic=text,
    target_partition=st.integers(0, 10_000),
    resumed_from=maybe_offsets,
    progress=maybe_offsets,
    objects=offsets,
    records=offsets,
    first_source_offset=maybe_offsets,
    last_source_offset=maybe_offsets,
    first_target_offset=maybe_offsets,
    last_target_offset=maybe_offsets,
    problems=st.lists(st.builds(Problem, key=text, position=text, message=text), max_size=3).map(tuple),
    gaps=st.lists(
        st.builds(Gap, topic=text, partition=st.integers(0, 100), first=offsets, last=offsets, before=text, after=text),
        max_size=3,
    ).map(tuple),
    error=st.none() | text,
    seconds=st.floats(min_value=0, max_value=1e6),
)


@given(partition_results)
def test_backup_partition_results_round_trip(result):
    assert PartitionResult.from_json(result.to_json()) == result


@given(restore_results)
def test_restore_results_round_trip(result):
    assert RestoreResult.from_json(result.to_json()) == result


def test_a_result_lists_the_files_of_all_its_chunks():
    entry = FileEntry("k", "data", 3, 0, 2, 100)
    result = PartitionResult("t", 0, 0, 3, 3, chunks=(Manifest("t", 0, 0, 2, (entry,)), Manifest("t", 0, 3, 3)))
    assert result.files == [entry]
