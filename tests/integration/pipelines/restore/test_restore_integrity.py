"""Issue 14 item 1 (and 2, 7): a restore checks the bucket before producing anything.

A data object or sidecar deleted (the first, a middle or the last of a partition), an object truncated, a chunk's
manifest gone, two chunks overlapping: the restore (and its dry run) exits non-zero naming topic, partition, offsets
and keys, and not one record reaches the target. ``--allow-gaps`` restores the rest and lists what it skipped. A
chunk a backup is still uploading is left out and said so; a bucket without manifests is restored with a note that
its continuity cannot be verified.
"""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.errors import BackupIncomplete
from tests.support.restore import as_another_tools_bucket, get_object, read_topic, records, run_cli, write_properties

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 9  # flush.size=3: chunks start at offsets 0, 3 and 6
SIDECARS = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
    "store.kafka.keys": "true",
    "store.kafka.headers": "true",
    "keys.format.class": "json",
    "headers.format.class": "json",
    "key.converter": "bytearray",
}
EXTENSIONS = {"data": ".json", "keys": ".keys.json", "headers": ".headers.json"}
POSITIONS = {"first": 0, "middle": 3, "last": 6}


def key_of(topic: str, partition: int, start: int, kind: str) -> str:
    return f"topics/{topic}/partition={partition}/{topic}+{partition}+{start:010d}{EXTENSIONS[kind]}"


def manifest_key(topic: str, partition: int, start: int, suffix: str = ".chunk") -> str:
    return f"topics/_kafka-s3/json/{topic}/{partition}/{start:020d}{suffix}"


@pytest.fixture
def backed_up(backup, fresh_bucket, fresh_topic, produce):
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))
    assert backup(fresh_bucket, topic, SIDECARS).records == PARTITIONS * PER_PARTITION
    return topic


@pytest.fixture
def restore_cli(make_config, fresh_bucket, tmp_path):
    """``restore_cli(source, target, *flags)`` → the finished ``kafka-s3 restore`` subprocess."""

    def run(source: str, target: str, *flags: str):
        raw, _ = make_config(
            fresh_bucket, source, source=True, **{k.replace(".", "__"): v for k, v in SIDECARS.items()}
        )
        raw["topic.rename"] = f"{source}:{target}"
        path = write_properties(tmp_path / "restore.properties", raw)
        return run_cli(["restore", "--config", str(path), "--no-progress", *flags])

    return run


def total(bootstrap: str, topic: str) -> int:
    return sum(len(rows) for rows in read_topic(bootstrap, topic).values())


def test_any_deleted_object_stops_restore_and_verify_before_producing(
    backed_up, restore_cli, fresh_topic, fresh_bucket, s3_client, kafka_bootstrap, make_config, tmp_path
):
    target = fresh_topic(PARTITIONS)
    for position, start in POSITIONS.items():
        for kind in EXTENSIONS:
            partition = start // 3  # a different partition each time
            key = key_of(backed_up, partition, start, kind)
            body = get_object(s3_client, fresh_bucket, key)
            s3_client.delete_object(Bucket=fresh_bucket, Key=key)
            try:
                result = restore_cli(backed_up, target)
                assert result.returncode == BackupIncomplete.exit_code, (position, kind, result.stderr[-2000:])
                message = result.stderr
                assert f"{backed_up}[{partition}] offsets {start}..{start + 2}: missing" in message, message
                assert key in message and "nothing was produced" in message and "--allow-gaps" in message
                assert total(kafka_bootstrap, target) == 0, (position, kind)
            finally:
                s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    # With every object back in place the same restore succeeds.
    result = restore_cli(backed_up, target)
    assert result.returncode == 0, result.stderr[-2000:]
    assert total(kafka_bootstrap, target) == PARTITIONS * PER_PARTITION


def test_truncated_object_stops_the_restore_before_producing(
    backed_up, restorer, fresh_topic, fresh_bucket, s3_client, kafka_bootstrap
):
    target = fresh_topic(PARTITIONS)
    key = key_of(backed_up, 2, 3, "data")
    body = get_object(s3_client, fresh_bucket, key)
    s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body[: len(body) // 2])
    restore = restorer(fresh_bucket, backed_up, {**SIDECARS, "topic.rename": f"{backed_up}:{target}"})
    with pytest.raises(BackupIncomplete) as failure:
        restore.run()
    message = str(failure.value)
    assert f"{backed_up}[2] offsets 3..5: truncated: holds {len(body) // 2} bytes" in message and key in message
    assert total(kafka_bootstrap, target) == 0


def test_dry_run_reports_the_same_problem_with_the_same_exit_code(
    backed_up, restore_cli, fresh_topic, fresh_bucket, s3_client
):
    key = key_of(backed_up, 1, 6, "headers")
    s3_client.delete_object(Bucket=fresh_bucket, Key=key)
    result = restore_cli(backed_up, fresh_topic(PARTITIONS), "--dry-run")
    assert result.returncode == BackupIncomplete.exit_code, result.stderr[-2000:]
    assert f"PROBLEM: {backed_up}[1] offsets 6..8: missing" in result.stdout and key in result.stdout
    assert "the restore would fail" in result.stdout and "dry run: nothing was produced" in result.stdout


def test_allow_gaps_restores_the_rest_and_lists_every_skipped_range(
    backed_up, restore_cli, fresh_topic, fresh_bucket, s3_client, kafka_bootstrap
):
    target = fresh_topic(PARTITIONS)
    lost = key_of(backed_up, 1, 3, "data")
    s3_client.delete_object(Bucket=fresh_bucket, Key=lost)
    result = restore_cli(backed_up, target, "--allow-gaps")
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"skipped (--allow-gaps) {backed_up}[1] offsets 3..5: missing" in result.stdout, result.stdout
    assert f"skipped (--allow-gaps): {backed_up}[1] offsets 3..5: missing" in result.stderr  # the log says it too
    restored, original = read_topic(kafka_bootstrap, target), read_topic(kafka_bootstrap, backed_up)
    assert [len(restored[p]) for p in range(PARTITIONS)] == [PER_PARTITION, PER_PARTITION - 3, PER_PARTITION]
    assert [json.loads(r["value"]) for r in restored[1]] == [
        json.loads(r["value"]) for r in original[1][:3] + original[1][6:]
    ]
    assert [r["key"] for r in restored[1]] == [r["key"] for r in original[1][:3] + original[1][6:]]


def test_a_deleted_tail_chunk_with_its_manifest_is_found_by_the_committed_mark(
    backed_up, restorer, fresh_topic, fresh_bucket, s3_client, kafka_bootstrap
):
    for kind in EXTENSIONS:
        s3_client.delete_object(Bucket=fresh_bucket, Key=key_of(backed_up, 0, 6, kind))
    s3_client.delete_object(Bucket=fresh_bucket, Key=manifest_key(backed_up, 0, 6))
    target = fresh_topic(PARTITIONS)
    restore = restorer(fresh_bucket, backed_up, {**SIDECARS, "topic.rename": f"{backed_up}:{target}"})
    with pytest.raises(BackupIncomplete, match=rf"{backed_up}\[0\] offsets 6\.\.: missing: the backup committed"):
        restore.run()
    assert total(kafka_bootstrap, target) == 0


def test_overlapping_objects_stop_the_restore(
    backed_up, restorer, fresh_topic, fresh_bucket, s3_client, kafka_bootstrap
):
    stray = key_of(backed_up, 2, 4, "data")  # starts inside the chunk 3..5: its records would be restored twice
    s3_client.put_object(
        Bucket=fresh_bucket, Key=stray, Body=get_object(s3_client, fresh_bucket, key_of(backed_up, 2, 3, "data"))
    )
    target = fresh_topic(PARTITIONS)
    restore = restorer(fresh_bucket, backed_up, {**SIDECARS, "topic.rename": f"{backed_up}:{target}"})
    with pytest.raises(BackupIncomplete, match=rf"{backed_up}\[2\] offsets 4\.\.5: overlap") as failure:
        restore.run()
    assert stray in str(failure.value)
    assert total(kafka_bootstrap, target) == 0


def test_a_chunk_still_uploading_ends_its_partition_there_and_is_said(
    backed_up, restorer, fresh_topic, fresh_bucket, s3_client, kafka_bootstrap
):
    # As a running backup leaves it: the newest chunk's manifest exists, its data object is not uploaded yet, and the
    # backup has marked only the chunk before it committed.
    s3_client.delete_object(Bucket=fresh_bucket, Key=manifest_key(backed_up, 1, 6, ".tail"))
    s3_client.put_object(Bucket=fresh_bucket, Key=manifest_key(backed_up, 1, 3, ".tail"), Body=b"")
    s3_client.delete_object(Bucket=fresh_bucket, Key=key_of(backed_up, 1, 6, "data"))
    target = fresh_topic(PARTITIONS)
    restore = restorer(fresh_bucket, backed_up, {**SIDECARS, "topic.rename": f"{backed_up}:{target}"})
    plan = restore.plan()
    assert [str(f) for f in plan.findings if f.kind == "in progress"] == [
        f"{backed_up}[1] offsets 6..8: in progress: chunk beyond the backup's committed end, not uploaded yet (a "
        f"running backup?) [{key_of(backed_up, 1, 6, 'data')}]"
    ]
    summary = restore.run(plan)
    assert summary.records == PARTITIONS * PER_PARTITION - 3
    assert [(f.partition, f.first, f.last) for f in summary.unfinished] == [(1, 6, 8)]
    assert [len(rows) for rows in read_topic(kafka_bootstrap, target).values()] == [9, 6, 9]


def test_a_bucket_without_manifests_restores_with_a_continuity_note(
    backed_up, restore_cli, fresh_topic, fresh_bucket, s3_client, kafka_bootstrap
):
    as_another_tools_bucket(s3_client, fresh_bucket)
    target = fresh_topic(PARTITIONS)
    result = restore_cli(backed_up, target, "--dry-run")
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"note: {backed_up}[0] offsets unknown: unverifiable: no manifests" in result.stdout
    assert "continuity cannot be verified" in result.stdout
    result = restore_cli(backed_up, target)
    assert result.returncode == 0 and "continuity cannot be verified" in result.stderr
    assert total(kafka_bootstrap, target) == PARTITIONS * PER_PARTITION
