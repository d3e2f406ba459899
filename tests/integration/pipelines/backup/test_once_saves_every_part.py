"""``backup --once`` exits non-zero when a part it was asked to save was not saved (the "No silent loss II" issue,
items 5 and 6): the consumer-group snapshot, the topic configurations and the Schema Registry subjects. There is no
next cycle to retry them in, so the exit code is the failing service's (3 object store, 4 Kafka or Schema Registry)
and the message names what was not saved. A following backup keeps retrying them each cycle.

The object store's failures come from the fault proxy in front of the real S3 server; the registry is a closed port.
"""

from __future__ import annotations

import logging
import socket
import threading

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_s3.core.errors import KafkaError, StoreError
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.spark.engine import SparkEngine
from tests.support.backup import cli, data_keys, wait_until, write_properties
from tests.support.faultproxy import FaultProxy

pytestmark = pytest.mark.integration


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def commit_group(bootstrap: str, group: str, topic: str, offset: int) -> None:
    """An application's consumer group with a committed offset on ``topic`` (what the snapshot records)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def test_backup_once_exits_3_when_the_consumer_group_snapshot_cannot_be_saved(
    make_config, fresh_bucket, fresh_topic, produce, s3_client, s3_env, kafka_bootstrap, tmp_path
):
    topic = fresh_topic(1)
    produce(topic, [{"value": f"v{i}".encode()} for i in range(6)])
    commit_group(kafka_bootstrap, f"app-{topic}", topic, 4)
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        # The object store fails just after the records are stored: every write of a group snapshot.
        proxy.fail(503, times=100_000, method="PUT", path=r"/consumer-groups/")
        raw, _ = make_config(fresh_bucket, topic, store__url=proxy.url, s3__retry__backoff__ms="10")
        result = cli("backup", "--once", "--no-progress", "-c", str(write_properties(tmp_path / "b.properties", raw)))
        assert proxy.requests(method="PUT", path=r"/consumer-groups/")
    assert result.returncode == StoreError.exit_code, result.stderr[-3000:]
    error = [line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error:")]
    assert len(error) == 1 and "consumer-group snapshot" in error[0] and "not saved" in error[0], result.stderr[-3000:]
    assert proxy.url in error[0] or "/consumer-groups/" in error[0], error  # the endpoint or the object named
    assert len(data_keys(s3_client, fresh_bucket, topic)) == 2  # the records themselves were backed up


def test_backup_once_exits_3_when_the_topic_configs_cannot_be_recorded(
    make_config, fresh_bucket, fresh_topic, s3_env, tmp_path
):
    topic = fresh_topic(1)  # empty: nothing to back up, no Spark job; the topic's configs are still recorded
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        proxy.fail(503, times=100_000, method="PUT", path=r"/topic-config/")
        raw, _ = make_config(fresh_bucket, topic, store__url=proxy.url, s3__retry__backoff__ms="10")
        result = cli("backup", "--once", "--no-progress", "-c", str(write_properties(tmp_path / "b.properties", raw)))
        assert proxy.requests(method="PUT", path=r"/topic-config/")
    assert result.returncode == StoreError.exit_code, result.stderr[-3000:]
    error = [line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error:")]
    assert len(error) == 1 and "topic configurations" in error[0] and "not saved" in error[0], result.stderr[-3000:]


def test_backup_once_exits_4_naming_the_registry_when_it_refuses_connections(
    make_config, fresh_bucket, fresh_topic, tmp_path
):
    topic = fresh_topic(1)
    url = f"http://127.0.0.1:{closed_port()}"
    raw, _ = make_config(fresh_bucket, topic, schemas__registry__url=url, service__timeout__ms="3000")
    result = cli("backup", "--once", "--no-progress", "-c", str(write_properties(tmp_path / "b.properties", raw)))
    assert result.returncode == KafkaError.exit_code, result.stderr[-3000:]
    error = [line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error:")]
    assert len(error) == 1 and "Schema Registry subjects" in error[0] and url in error[0], result.stderr[-3000:]
    assert "Traceback" not in result.stderr


def test_a_following_backup_retries_the_registry_each_cycle_instead_of_stopping(
    make_config, fresh_bucket, fresh_topic, caplog
):
    topic = fresh_topic(1)  # empty: the cycles run no Spark job
    url = f"http://127.0.0.1:{closed_port()}"
    _, config = make_config(
        fresh_bucket, topic, schemas__registry__url=url, service__timeout__ms="2000", cycle__interval__ms="100"
    )
    backup = Backup(config, engine=SparkEngine())  # never started: no cycle has records to back up
    stop = threading.Event()
    failed: list[BaseException] = []

    def follow() -> None:
        try:
            backup.follow(stop)
        except BaseException as exc:  # the test fails on it below
            failed.append(exc)

    with caplog.at_level(logging.ERROR, logger="kafka_s3.backup"):
        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        try:
            wait_until(
                lambda: sum("Schema Registry subjects" in r.getMessage() for r in caplog.records) >= 2 or failed,
                what="two cycles failing to save the subjects",
            )
        finally:
            stop.set()
            follower.join(60)
    assert not failed and not follower.is_alive()
    assert all("retried next cycle" in r.getMessage() for r in caplog.records if "Schema Registry" in r.getMessage())
