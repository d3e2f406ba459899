"""A middle chunk lost with its manifest (brief, non-negotiable 4): each chunk manifest names the end of the chunk
the backup committed before it (``follows``), so a whole chunk gone — data object and manifest — is found before
anything is written: ``restore`` exits non-zero naming topic, partition, offsets and the manifest that points at the
lost chunk, with an empty target; ``verify`` names it; ``kafka-s3 read`` and the DataFrame reader refuse. An offset
gap between chunks (transaction markers) is no loss: the chain says which chunk came before, not which offset."""

from __future__ import annotations

import json
import re

import pytest
from confluent_kafka import Producer

from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import BackupIncomplete
from kafka_s3.core.manifest import Manifest
from kafka_s3.pipelines.read.lookup import read_records
from kafka_s3.spark.backup_source import BackupDataSource
from tests.support.restore import get_object, read_topic, records, run_cli, write_properties

pytestmark = pytest.mark.integration

PER_PARTITION = 9
PLAIN = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
    "flush.size": "3",
}


def data_key(topic: str, partition: int, start: int) -> str:
    return f"topics/{topic}/partition={partition}/{topic}+{partition}+{start:010d}.json"


def manifest_key(topic: str, partition: int, start: int) -> str:
    return f"topics/_kafka-s3/json/{topic}/{partition}/{start:020d}.chunk"


def total(bootstrap: str, topic: str) -> int:
    return sum(len(rows) for rows in read_topic(bootstrap, topic).values())


@pytest.fixture
def configs(make_config, fresh_bucket, tmp_path):
    """``configs(topic, **extra)`` → (raw source config, path of its properties file)."""

    def make(topic: str, **extra: str):
        raw, _ = make_config(fresh_bucket, topic, source=True, **{k.replace(".", "__"): v for k, v in PLAIN.items()})
        raw.update(extra)
        return raw, write_properties(tmp_path / f"h14e-{len(extra)}.properties", raw)

    return make


@pytest.mark.issue(14)
def test_a_lost_middle_chunk_and_its_manifest_stop_restore_verify_and_reader(
    backup, produce, fresh_topic, fresh_bucket, s3_client, kafka_bootstrap, configs
):
    topic = fresh_topic(2)
    produce(topic, records(2, PER_PARTITION))
    assert backup(fresh_bucket, topic, PLAIN).records == 2 * PER_PARTITION  # chunks 0..2, 3..5, 6..8 per partition
    pointer = manifest_key(topic, 1, 6)
    assert Manifest.from_bytes(get_object(s3_client, fresh_bucket, pointer)).follows == 5
    s3_client.delete_object(Bucket=fresh_bucket, Key=data_key(topic, 1, 3))
    s3_client.delete_object(Bucket=fresh_bucket, Key=manifest_key(topic, 1, 3))
    expected = f"{topic}[1] offsets 3..5: missing: chunk 6..8 follows a chunk ending at offset 5"

    target = fresh_topic(2)
    _, path = configs(topic, **{"topic.rename": f"{topic}:{target}"})
    result = run_cli(["restore", "--config", str(path), "--no-progress"])
    assert result.returncode == BackupIncomplete.exit_code, result.stderr[-2000:]
    assert expected in result.stderr and pointer in result.stderr and "nothing was produced" in result.stderr
    assert total(kafka_bootstrap, target) == 0

    raw, path = configs(topic)
    result = run_cli(["verify", "--config", str(path)])
    assert result.returncode == BackupIncomplete.exit_code, result.stderr[-2000:]
    assert f"PROBLEM: {expected}" in result.stdout and pointer in result.stdout

    with pytest.raises(BackupIncomplete, match=re.escape(expected)):
        BackupDataSource(raw).reader(None).partitions()
    # kafka-s3 read: a range over the lost chunk is refused; one before it reads.
    with pytest.raises(BackupIncomplete, match=re.escape(expected)):
        read_records(SOURCE.parse(raw), 1, 1, 4, topic)
    assert [r["offset"] for r in read_records(SOURCE.parse(raw), 1, 0, 2, topic)] == [0, 1]
    kept = BackupDataSource({**raw, "allow.gaps": "true"}).reader(None).partitions()
    assert sorted((p.partition, [o.start for o in p.objects]) for p in kept) == [(0, [0, 3, 6]), (1, [0, 6])]

    # The explicit opt-out restores the rest and says what it skipped.
    _, path = configs(topic, **{"topic.rename": f"{topic}:{target}"})
    result = run_cli(["restore", "--config", str(path), "--no-progress", "--allow-gaps"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"skipped (--allow-gaps) {expected}" in result.stdout
    assert [len(rows) for rows in read_topic(kafka_bootstrap, target).values()] == [9, 6]


@pytest.mark.issue(14)
def test_transaction_markers_between_chunks_are_no_false_alarm(
    backup, restorer, fresh_topic, fresh_bucket, s3_client, kafka_bootstrap
):
    topic = fresh_topic(1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "transactional.id": f"chain-{topic}"})
    producer.init_transactions(30)
    for t in range(4):  # offsets 0-2, 4-6, 8-10, 12-14: a commit marker after each transaction
        producer.begin_transaction()
        for i in range(3):
            producer.produce(topic, json.dumps({"n": 3 * t + i}).encode(), partition=0)
        producer.commit_transaction(30)
    backup(fresh_bucket, topic, PLAIN)
    starts = [0, 4, 8, 12]
    chain = [Manifest.from_bytes(get_object(s3_client, fresh_bucket, manifest_key(topic, 0, s))) for s in starts]
    assert [(m.start, m.end, m.follows) for m in chain] == [(0, 2, None), (4, 6, 2), (8, 10, 6), (12, 14, 10)]
    target = fresh_topic(1)
    restore = restorer(fresh_bucket, topic, {**PLAIN, "topic.rename": f"{topic}:{target}"})
    plan = restore.plan()
    assert [f for f in plan.findings if f.blocking] == []
    assert restore.run(plan).records == 12
    assert [json.loads(r["value"])["n"] for r in read_topic(kafka_bootstrap, target)[0]] == list(range(12))
    # The same gaps with the chunk 4..6 lost: the range from the chunk before it is named.
    s3_client.delete_object(Bucket=fresh_bucket, Key=data_key(topic, 0, 4))
    s3_client.delete_object(Bucket=fresh_bucket, Key=manifest_key(topic, 0, 4))
    again = fresh_topic(1)
    with pytest.raises(BackupIncomplete, match=rf"{topic}\[0\] offsets 3\.\.6: missing"):
        restorer(fresh_bucket, topic, {**PLAIN, "topic.rename": f"{topic}:{again}"}).run()
    assert total(kafka_bootstrap, again) == 0
