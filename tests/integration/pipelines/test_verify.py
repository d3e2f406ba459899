"""Issue 14 part C: ``kafka-s3 verify`` checks coverage, overlaps, sizes and sidecars from the listing and the
manifests; ``--deep`` decodes every record in Spark tasks. Exit 0 when whole, non-zero with problems; ``--json`` for
machines; another tool's bucket is checked as far as names allow. ``restore --deep`` runs the deep check
before producing anything."""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.errors import BackupIncomplete
from kafka_s3.pipelines.read.options import RestoreOptions
from tests.support.restore import (
    as_another_tools_bucket,
    get_object,
    read_topic,
    records,
    run_cli,
    same_size_garbage,
    write_properties,
)

pytestmark = pytest.mark.integration

PARTITIONS = 3
PLAIN = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}


@pytest.fixture
def backed_up(backup, fresh_bucket, fresh_topic, produce):
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, 9))
    backup(fresh_bucket, topic, PLAIN)
    return topic


@pytest.fixture
def verify_cli(make_config, fresh_bucket, tmp_path):
    def run(topic: str, *flags: str):
        raw, _ = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in PLAIN.items()})
        return run_cli(["verify", "--config", str(write_properties(tmp_path / "backup.properties", raw)), *flags])

    return run


def key_of(topic: str, partition: int, start: int) -> str:
    return f"topics/{topic}/partition={partition}/{topic}+{partition}+{start:010d}.json"


def test_verify_a_whole_backup(backed_up, verify_cli):
    result = verify_cli(backed_up)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "the backup is whole" in result.stdout
    doc = json.loads(verify_cli(backed_up, "--json").stdout)
    assert doc["clean"] is True
    assert [
        (p["partition"], p["objects"], p["records"], p["first_offset"], p["last_offset"]) for p in doc["partitions"]
    ] == [(p, 3, 9, 0, 8) for p in range(PARTITIONS)]


def test_verify_names_a_deleted_object(backed_up, verify_cli, fresh_bucket, s3_client):
    lost = key_of(backed_up, 2, 6)  # the last object of a partition
    s3_client.delete_object(Bucket=fresh_bucket, Key=lost)
    result = verify_cli(backed_up)
    assert result.returncode == BackupIncomplete.exit_code
    assert f"PROBLEM: {backed_up}[2] offsets 6..8: missing: object(s) missing [{lost}]" in result.stdout
    doc = json.loads(verify_cli(backed_up, "--json").stdout)
    assert doc["clean"] is False
    [problem] = [f for p in doc["partitions"] for f in p["problems"]]
    assert (problem["kind"], problem["first"], problem["last"], problem["keys"]) == ("missing", 6, 8, [lost])


def test_verify_deep_finds_an_object_that_does_not_decode(
    backed_up, verify_cli, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    damaged = key_of(backed_up, 1, 3)
    s3_client.put_object(
        Bucket=fresh_bucket, Key=damaged, Body=same_size_garbage(get_object(s3_client, fresh_bucket, damaged))
    )
    assert verify_cli(backed_up).returncode == 0  # same size: the listing cannot tell
    result = verify_cli(backed_up, "--deep")
    assert result.returncode == BackupIncomplete.exit_code, result.stderr[-2000:]
    assert f"PROBLEM: {backed_up}[1] offsets 3..: undecodable" in result.stdout and damaged in result.stdout

    target = fresh_topic(PARTITIONS)
    restore = restorer(
        fresh_bucket, backed_up, {**PLAIN, "topic.rename": f"{backed_up}:{target}"}, RestoreOptions(verify_deep=True)
    )
    with pytest.raises(BackupIncomplete, match="undecodable"):
        restore.run()
    assert sum(len(rows) for rows in read_topic(kafka_bootstrap, target).values()) == 0  # before producing anything


def test_verify_another_tools_bucket_as_far_as_names_tell(backed_up, verify_cli, fresh_bucket, s3_client):
    as_another_tools_bucket(s3_client, fresh_bucket)
    result = verify_cli(backed_up)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "continuity cannot be verified" in result.stdout and "the backup is whole" not in result.stdout
    assert "no problem found" in result.stdout and "a missing newest object" in result.stdout.replace("\n", " ")
