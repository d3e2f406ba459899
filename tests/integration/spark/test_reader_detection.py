"""Issue 28 item 1: the reader finds a backup's format, compression and envelope in the bucket, so
``spark.read.format("kafka-s3").load("s3://bucket/topics")`` needs no configuration file, ``kafka-s3 read`` needs
only the store, and a setting that contradicts what the bucket holds is an error on the driver naming the object.

One topic of 100 records is backed up three times into one bucket, one format per ``topics.dir``."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from confluent_kafka import Producer

from kafka_s3.core.config.sink import SINK
from tests.conftest import _remove_bucket
from tests.support.integration import run_cli, write_properties
from tests.support.restore import records

pytestmark = pytest.mark.integration

RECORDS = 100
#: topics.dir -> how it was written
WRITTEN = {
    "parquet-envelope": {"format.class": "parquet", "store.envelope": "true"},
    "json-gzip": {"format.class": "json", "s3.compression.type": "gzip"},
    "avro": {"format.class": "avro"},
}


@pytest.fixture(scope="module")
def backups(engine, s3_client, s3_env, kafka_bootstrap):
    """(the store's settings, the bucket, the topic, the values produced in offset order)."""
    from kafka_s3.io.kafka.admin import Admin
    from kafka_s3.pipelines.backup.driver import Backup

    topic = f"t-{uuid.uuid4().hex[:10]}"
    Admin({"bootstrap.servers": kafka_bootstrap}).create_topic(topic, 1, config={"retention.ms": "-1"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    sent = records(1, RECORDS)
    for r in sent:
        producer.produce(topic, r["value"], r["key"], 0, headers=r["headers"], timestamp=r["timestamp"])
    producer.flush()
    bucket = "t-" + uuid.uuid4().hex[:16]
    s3_client.create_bucket(Bucket=bucket)
    store = {
        "s3.bucket.name": bucket,
        "store.url": s3_env["endpoint_url"],
        "s3.region": s3_env["region"],
        "aws.access.key.id": s3_env["access_key"],
        "aws.secret.access.key": s3_env["secret_key"],
    }
    for prefix, written in WRITTEN.items():
        sink = {"name": f"it-{bucket}-{prefix}", "topics": topic, "topics.dir": prefix, "flush.size": "40"}
        Backup(SINK.parse({**store, **sink, **written, "bootstrap.servers": kafka_bootstrap}), engine=engine).run_once()
    yield store, bucket, topic, [r["value"] for r in sent]
    _remove_bucket(s3_client, bucket)


@pytest.mark.issue(28, item=1)
def test_a_backup_loads_from_its_path_alone_in_every_format(spark, backups):
    """No configuration file, no format.class, no store.envelope: the path (and the AWS environment) is enough."""
    _, bucket, topic, values = backups
    for prefix in WRITTEN:
        df = spark.read.format("kafka-s3").load(f"s3://{bucket}/{prefix}")
        rows = df.select("topic", "offset", "value").orderBy("offset").collect()
        assert [(r.topic, r.offset, bytes(r.value)) for r in rows] == [
            (topic, offset, value) for offset, value in enumerate(values)
        ], prefix


@pytest.mark.issue(28, item=1)
def test_a_setting_that_contradicts_the_bucket_is_an_error_on_the_driver_naming_the_object(spark, backups):
    _, bucket, topic, _ = backups
    path = f"s3://{bucket}/parquet-envelope"
    data_object = rf"parquet-envelope/{topic}/partition=0/{topic}\+0\+0+\.snappy\.parquet"

    def error_of(**options: str) -> str:
        with pytest.raises(Exception) as raised:
            spark.read.format("kafka-s3").options(**options).load(path).count()
        text = str(raised.value)
        assert "Task" not in text and "stage" not in text, text  # planning failed on the driver, no task ran
        return text

    wrong_format = error_of(**{"format.class": "json"})
    assert "format.class=json" in wrong_format and "Parquet" in wrong_format
    assert len(re.findall(data_object, wrong_format)) == 1, wrong_format
    wrong_envelope = error_of(**{"format.class": "parquet", "store.envelope": "false"})
    assert "store.envelope=false" in wrong_envelope and "whole records" in wrong_envelope
    assert len(re.findall(data_object, wrong_envelope)) == 1, wrong_envelope


@pytest.mark.issue(28, item=1)
def test_read_and_verify_need_only_the_store_settings(backups, tmp_path):
    """The CLI's read path finds the format too: a file naming only the bucket and the store reads and verifies."""
    store, _, topic, values = backups
    path = write_properties(tmp_path / "minimal.properties", {**store, "topics.dir": "json-gzip"})
    read = run_cli(["read", "-c", str(path), "-t", topic, "-o", "-2", "--json"])
    assert read.returncode == 0, read.stderr
    printed = [json.loads(line) for line in read.stdout.splitlines()]
    assert [r["offset"] for r in printed] == [RECORDS - 2, RECORDS - 1], read.stdout
    verify = run_cli(["verify", "-c", str(path)])
    assert verify.returncode == 0, verify.stdout + verify.stderr
