"""Issue 29, item 5 as a user sees it: ``kafka-s3 ls`` lists every backup of a bucket side by side — two kafka-s3
backups under their own ``topics.dir`` (one of them pruned) and one Confluent-written (objects named as Confluent's
S3 sink names them, no manifests) — and ``kafka-s3 info`` tells one in depth, with nothing but S3 access (the AWS
environment). The real command in a subprocess against the real S3; the backups run on the shared Spark session."""

from __future__ import annotations

import json

import pytest

from kafka_s3 import api
from kafka_s3.core.errors import BucketNotFoundError, NoBackupFound
from tests.support.integration import run_cli
from tests.support.restore import records

pytestmark = pytest.mark.integration

PER_PARTITION = 6
BASE = 1_700_000_000_000  # record i of a partition was written at BASE + i s
BACKUP = {"format.class": "json", "store.envelope": "true", "flush.size": "3", "cycle.interval.ms": "0"}
CONFLUENT_VALUES = [b'{"n":0}\n{"n":1}\n', b'{"n":2}\n']


def put_confluent(s3_client, bucket: str, topics_dir: str, topic: str) -> None:
    """Two objects of partition 0 as Confluent's S3 sink names them (JsonFormat, the default partitioner)."""
    for start, body in zip((0, 2), CONFLUENT_VALUES, strict=True):
        key = f"{topics_dir}/{topic}/partition=0/{topic}+0+{start:010d}.json"
        s3_client.put_object(Bucket=bucket, Key=key, Body=body)


@pytest.fixture
def three_backups(fresh_bucket, fresh_topic, produce, backup, make_config, s3_client):
    """One bucket: kafka-s3 backups under ``cluster-a/topics`` (2 partitions, pruned below offset 3) and ``cluster-b``
    (1 partition), and a Confluent-written one under ``legacy``: (topic a, topic b, confluent topic)."""
    topic_a, topic_b = fresh_topic(2), fresh_topic(1)
    produce(topic_a, records(2, PER_PARTITION, base_ts=BASE))
    produce(topic_b, records(1, PER_PARTITION, base_ts=BASE))
    backup(fresh_bucket, topic_a, {**BACKUP, "topics.dir": "cluster-a/topics"})
    backup(fresh_bucket, topic_b, {**BACKUP, "topics.dir": "cluster-b"})
    raw, _ = make_config(
        fresh_bucket, topic_a, topics__dir="cluster-a/topics", **{k.replace(".", "__"): v for k, v in BACKUP.items()}
    )
    api.prune(raw, before=BASE + 3_000, execute=True, force=True)  # the chunk 0..2 of each partition
    confluent = f"orders-{topic_b}"
    put_confluent(s3_client, fresh_bucket, "legacy", confluent)
    return topic_a, topic_b, confluent


@pytest.mark.issue(29, item=5)
def test_ls_lists_three_backups_of_one_bucket_side_by_side_and_info_tells_one_in_depth(three_backups, fresh_bucket):
    topic_a, topic_b, confluent = three_backups

    listed = run_cli(["ls", f"s3://{fresh_bucket}", "--json"], timeout=120)
    assert listed.returncode == 0, listed.stderr[-3000:]
    backups = {b["topics_dir"]: b for b in json.loads(listed.stdout)["backups"]}
    assert sorted(backups) == ["cluster-a/topics", "cluster-b", "legacy"]

    a = backups["cluster-a/topics"]
    assert (a["layout"], a["topics"], a["envelope"]) == ("kafka-s3", [topic_a], True)
    assert a["format"] == "JSON objects (.json)" and a["url"] == f"s3://{fresh_bucket}/cluster-a/topics"
    for partition in a["partitions"]:  # pruned below 3: offsets 3..5, written at BASE + 3 s .. BASE + 5 s
        assert (partition["first_offset"], partition["last_offset"], partition["pruned_start"]) == (3, 5, 3)
        assert (partition["first_time"], partition["last_time"]) == ("2023-11-14T22:13:23Z", "2023-11-14T22:13:25Z")
        assert partition["chunks"] == 1 and partition["objects"] >= 1 and partition["bytes"] > 0
    assert a["objects"] == sum(p["objects"] for p in a["partitions"])

    b = backups["cluster-b"]
    assert (b["layout"], b["topics"]) == ("kafka-s3", [topic_b])
    (only,) = b["partitions"]
    assert (only["first_offset"], only["last_offset"], only["pruned_start"], only["chunks"]) == (0, 5, None, 2)

    legacy = backups["legacy"]
    assert (legacy["layout"], legacy["topics"], legacy["format"]) == ("confluent", [confluent], "JSON objects (.json)")
    (part,) = legacy["partitions"]
    assert (part["first_offset"], part["last_offset"], part["last_object_offset"]) == (0, None, 2)
    assert (part["objects"], part["bytes"]) == (2, sum(len(v) for v in CONFLUENT_VALUES))

    text = run_cli(["ls", f"s3://{fresh_bucket}"], timeout=120)
    assert text.returncode == 0, text.stderr[-3000:]
    out = " ".join(text.stdout.split())
    assert f"s3://{fresh_bucket}/cluster-a/topics layout: kafka-s3's" in out
    assert f"s3://{fresh_bucket}/legacy layout: Confluent's S3 sink" in out
    assert "format: JSON objects (.json), whole records (store.envelope=true)" in out
    assert f"│ {topic_a} │ 0 │ 3 │ 5 │ 2023-11-14T22:13:23Z │ 2023-11-14T22:13:25Z │ 3 │" in out, text.stdout
    assert f"│ {topic_b} │ 0 │ 0 │ 5 │ 2023-11-14T22:13:20Z │ 2023-11-14T22:13:25Z │ - │" in out, text.stdout
    assert f"│ {confluent} │ 0 │ 0 │ ≥ 2 │ - │ - │ - │ 2 │ {part['bytes']} │" in out, text.stdout

    info_tells_one_backup_in_depth(fresh_bucket, topic_a)


def info_tells_one_backup_in_depth(fresh_bucket: str, topic_a: str) -> None:
    """``kafka-s3 info`` on the same bucket (one setup for both: the backups take seconds)."""
    shown = run_cli(["info", f"s3://{fresh_bucket}/cluster-a/topics", "--json"], timeout=120)
    assert shown.returncode == 0, shown.stderr[-3000:]
    doc = json.loads(shown.stdout)
    assert (doc["topics_dir"], doc["topics"]) == ("cluster-a/topics", [topic_a])
    assert doc["compaction"].startswith("no merge in progress; "), doc["compaction"]
    assert doc["unfinished_chunks"] == 0 and doc["last_cycle"] is not None
    assert "topic_configs" in doc["snapshots"][topic_a], doc["snapshots"]

    text = run_cli(["info", f"s3://{fresh_bucket}/cluster-a/topics"], timeout=120)
    assert text.returncode == 0, text.stderr[-3000:]
    out = " ".join(text.stdout.split())
    assert "compaction: no merge in progress; " in out and "unfinished chunks: none (every chunk committed)" in out
    assert f"snapshots of {topic_a}: topic configs: " in out and "last cycle: 20" in out

    several = run_cli(["info", f"s3://{fresh_bucket}"], timeout=120)
    assert several.returncode == 2, several.stderr[-3000:]
    assert f"s3://{fresh_bucket} holds 3 backups: " in several.stderr and "name one" in several.stderr


@pytest.mark.issue(29, item=5)
def test_ls_of_a_missing_bucket_or_one_without_a_backup_says_so(fresh_bucket, s3_client):
    s3_client.put_object(Bucket=fresh_bucket, Key="notes/readme.txt", Body=b"not a backup")
    empty = run_cli(["ls", f"s3://{fresh_bucket}"], timeout=120)
    assert empty.returncode == NoBackupFound.exit_code, empty.stderr[-3000:]
    assert f"s3://{fresh_bucket} holds no backup" in empty.stderr

    missing = run_cli(["ls", f"s3://{fresh_bucket}-absent"], timeout=120)
    assert missing.returncode == BucketNotFoundError.exit_code, missing.stderr[-3000:]
    assert f"{fresh_bucket}-absent" in missing.stderr
