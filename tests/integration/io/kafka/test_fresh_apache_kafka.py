"""Issue 13 item 2: the first backup and restore on an Apache Kafka that has just started.

A fresh cluster answers its first requests with retriable errors (``NOT_COORDINATOR`` while the offsets topic is
created and loaded, ``NOT_LEADER_OR_FOLLOWER`` / ``LEADER_NOT_AVAILABLE`` while a new topic's leader is elected);
every one must be retried, not reported. The test starts its own broker (own state directory and ports) so that
nothing has warmed it up; it needs an Apache Kafka distribution (``KAFKA_S3_KAFKA_HOME`` or ``../shared/kafka``)
and is deselected, loudly, without one (tests/conftest.py).
"""

from __future__ import annotations

import json
import uuid

import pytest

from kafka_s3.core.records import to_dicts
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.reader import read_range
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.restore.driver import Restore
from tests.support.integration import free_port_pair, stable_end_offsets
from tools import services as dev

pytestmark = [pytest.mark.integration, pytest.mark.apache_kafka]


@pytest.fixture
def fresh_apache_kafka(tmp_path):
    directory = tmp_path / "apache-kafka"
    bootstrap = dev.start_apache_kafka(free_port_pair(), directory=directory, home=dev.kafka_home())
    yield bootstrap
    dev.stop_apache_kafka(directory)


def test_first_backup_and_restore_right_after_apache_kafka_starts(
    fresh_apache_kafka, engine, make_config, fresh_bucket
):
    bootstrap = fresh_apache_kafka
    admin = Admin({"bootstrap.servers": bootstrap})
    topic = f"fresh-{uuid.uuid4().hex[:8]}"
    admin.create_topic(topic, 2)
    # Right after creation: the new partitions' leaders may not be elected yet (NOT_LEADER_OR_FOLLOWER).
    assert admin.end_offsets([(topic, 0), (topic, 1)]) == {(topic, 0): 0, (topic, 1): 0}

    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    values = [json.dumps({"i": i}).encode() for i in range(10)]
    for i, value in enumerate(values):
        producer.produce(topic, value=value, key=str(i).encode(), partition=i % 2)
    assert producer.flush(60) == 0
    del producer  # gone before the broker stops (it would log every reconnection attempt)

    # The first backup reads the committed offsets of group connect-<name>: the group coordinator (the offsets
    # topic, created on this first request) answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS at first.
    _, sink = make_config(fresh_bucket, topic, bootstrap__servers=bootstrap)
    summary = Backup(sink, engine=engine).run_once()
    assert summary.records == 10

    target = f"copy-{topic}"
    admin.create_topic(target, 2)
    _, source = make_config(
        fresh_bucket,
        topic,
        source=True,
        bootstrap__servers=bootstrap,
        transforms="Rename",
        transforms__Rename__type="org.apache.kafka.connect.transforms.RegexRouter",
        transforms__Rename__regex=".*",
        transforms__Rename__replacement="copy-$0",
    )
    restored = Restore(source, engine=engine).run()  # exactly once: transactions, on a fresh transaction coordinator
    assert restored.records == 10
    ends = stable_end_offsets(bootstrap, [(target, 0), (target, 1)])
    by_partition = {
        p: [
            r["value"]
            for r in to_dicts(list(read_range({"bootstrap.servers": bootstrap}, target, p, 0, ends[(target, p)])))
        ]
        for p in (0, 1)
    }
    assert by_partition == {0: values[0::2], 1: values[1::2]}
