"""The ``kafka-s3`` DataFrame reader and ``kafka-s3 read`` check the backup as a restore does (brief, non-negotiable
4): a deleted or truncated data object, or a committed chunk's manifest gone, is an error naming the topic,
partition, offsets and key before any row is read, never rows silently absent. A point lookup that needs none of the
damaged objects still succeeds; ``.option("allow.gaps", "true")`` (a restore's ``--allow-gaps``) reads the rest."""

from __future__ import annotations

import re

import pytest
from pyspark.sql.datasource import EqualTo, In

from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import BackupIncomplete
from kafka_s3.pipelines.read.lookup import read_records
from kafka_s3.spark.backup_source import BackupDataSource, PushdownReader
from tests.support.integration import run_cli, write_properties
from tests.support.restore import get_object, read_topic, records, replace_object

pytestmark = pytest.mark.integration

PER_PARTITION = 9
PROPS = {"format.class": "json", "flush.size": "3"}  # chunks start at offsets 0, 3 and 6 of each partition


def data_key(topic: str, partition: int, start: int) -> str:
    return f"topics/{topic}/partition={partition}/{topic}+{partition}+{start:010d}.json"


def manifest_key(topic: str, partition: int, start: int) -> str:
    return f"topics/_kafka-s3/json/{topic}/{partition}/{start:020d}.chunk"


@pytest.fixture
def backed_up(backup, make_config, fresh_bucket, fresh_topic, produce):
    topic = fresh_topic(2)
    produce(topic, records(2, PER_PARTITION))
    assert backup(fresh_bucket, topic, PROPS).records == 2 * PER_PARTITION
    raw, _ = make_config(fresh_bucket, topic, source=True, **{k.replace(".", "__"): v for k, v in PROPS.items()})
    return topic, raw


def plan(raw: dict[str, str], filters=None, **options: str):
    reader = BackupDataSource({**raw, **options}).reader(None)
    if filters is not None:  # planned by pushed filters, as where Spark keeps read plans per query
        reader = PushdownReader(reader.raw, reader.options)
        assert list(reader.pushFilters(filters)) == []
    return reader.partitions()


@pytest.mark.issue(14)
def test_reader_refuses_a_deleted_data_object(backed_up, s3_client, fresh_bucket, spark):
    topic, raw = backed_up
    key = data_key(topic, 1, 3)
    s3_client.delete_object(Bucket=fresh_bucket, Key=key)
    with pytest.raises(BackupIncomplete) as failure:
        plan(raw)
    text = str(failure.value)
    assert key in text and f"{topic}[1] offsets 3..5: missing" in text
    # Through Spark itself: the full scan fails, it does not return the 15 rows left.
    with pytest.raises(Exception, match=re.escape(key)):
        spark.read.format("kafka-s3").options(**raw).load().collect()
    # A pushed-down lookup that needs the missing object fails naming it; one that does not need it succeeds.
    with pytest.raises(BackupIncomplete, match=re.escape(key)):
        plan(raw, [EqualTo(("partition",), 1), In(("offset",), (4,))], pushdown="true")
    planned = plan(raw, [EqualTo(("partition",), 1), In(("offset",), (7,))], pushdown="true")
    assert [(p.partition, [o.start for o in p.objects]) for p in planned] == [(1, [6])]
    planned = plan(raw, [EqualTo(("partition",), 0)], pushdown="true")
    assert [(p.partition, len(p.objects)) for p in planned] == [(0, 3)]
    # Bounds outside the damage read; bounds over it do not.
    assert [len(p.objects) for p in plan(raw, **{"from.offset": "1:6"})] == [3, 1]
    with pytest.raises(BackupIncomplete):
        plan(raw, **{"until.offset": "1:4"})
    # The opt-out, as a restore's --allow-gaps: the rest is read.
    kept = plan(raw, **{"allow.gaps": "true"})
    assert sorted((p.partition, [o.start for o in p.objects]) for p in kept) == [(0, [0, 3, 6]), (1, [0, 6])]


@pytest.mark.issue(14)
def test_reader_refuses_a_truncated_data_object(backed_up, s3_client, fresh_bucket):
    topic, raw = backed_up
    key = data_key(topic, 0, 6)
    replace_object(s3_client, fresh_bucket, key, get_object(s3_client, fresh_bucket, key)[:-5])
    with pytest.raises(BackupIncomplete, match=rf"{topic}\[0\] offsets 6\.\.8: truncated.*{re.escape(key)}"):
        plan(raw)


@pytest.mark.issue(14)
def test_reader_refuses_a_deleted_committed_manifest(backed_up, s3_client, fresh_bucket):
    topic, raw = backed_up
    # A middle chunk's manifest alone: its object, which no manifest names any more, cannot be verified: refused.
    s3_client.delete_object(Bucket=fresh_bucket, Key=manifest_key(topic, 0, 3))
    with pytest.raises(BackupIncomplete, match=rf"{topic}\[0\] offsets 3\.\.: in no manifest"):
        plan(raw)
    assert sorted((p.partition, [o.start for o in p.objects]) for p in plan(raw, **{"allow.gaps": "true"})) == [
        (0, [0, 6]),
        (1, [0, 3, 6]),
    ]
    # The newest committed chunk's manifest (its .tail mark stays): the partition's end is unknown, an error.
    s3_client.delete_object(Bucket=fresh_bucket, Key=manifest_key(topic, 0, 6))
    with pytest.raises(BackupIncomplete, match=rf"{topic}\[0\] offsets 6\.\.: missing: .*offset 6 but its manifest"):
        plan(raw)
    assert [p.partition for p in plan(raw, [EqualTo(("partition",), 1)], pushdown="true")] == [1]


@pytest.mark.issue(14)
def test_kafka_s3_read_refuses_a_missing_object_in_its_range(backed_up, s3_client, fresh_bucket, make_config):
    topic, raw = backed_up
    key = data_key(topic, 1, 3)
    s3_client.delete_object(Bucket=fresh_bucket, Key=key)
    config = SOURCE.parse(raw)
    with pytest.raises(BackupIncomplete, match=re.escape(key)):
        read_records(config, 1, 4, 2, topic)
    with pytest.raises(BackupIncomplete, match=re.escape(key)):
        read_records(config, 1, 1, 4, topic)  # reads on past offset 2 into the missing object
    assert [r["offset"] for r in read_records(config, 1, 6, 2, topic)] == [6, 7]
    assert [r["offset"] for r in read_records(config, 1, 0, 2, topic)] == [0, 1]


@pytest.mark.issue(14)
def test_bounded_restore_and_read_cli_refuse_a_missing_object_in_their_range(
    backed_up, s3_client, fresh_bucket, fresh_topic, kafka_bootstrap, tmp_path
):
    topic, raw = backed_up
    key = data_key(topic, 1, 3)
    s3_client.delete_object(Bucket=fresh_bucket, Key=key)
    target = fresh_topic(2)
    path = write_properties(tmp_path / "restore.properties", {**raw, "topic.rename": f"{topic}:{target}"})
    bounded = ["--from-offset", "1:3", "--until-offset", "1:6", "--no-progress"]
    result = run_cli(["restore", "--config", str(path), *bounded])
    assert result.returncode == BackupIncomplete.exit_code, result.stderr[-2000:]
    assert f"{topic}[1] offsets 3..5: missing" in result.stderr and key in result.stderr
    assert sum(len(rows) for rows in read_topic(kafka_bootstrap, target).values()) == 0
    result = run_cli(["read", "--config", str(path), "--topics", topic, "--offset", "1:4"])
    assert result.returncode == BackupIncomplete.exit_code, result.stderr[-2000:]
    assert f"{topic}[1] offsets 3..5: missing" in result.stderr and key in result.stderr
