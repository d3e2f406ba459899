"""Issue 28 item 5: which consumer groups are kafka-s3's own (never an application's to snapshot or translate)."""

from __future__ import annotations

import json

import pytest

from kafka_s3.io.kafka.groups import backup_commit, kafka_s3_group
from kafka_s3.pipelines.backup.cycle import PartitionState


@pytest.mark.issue(28, item=5)
def test_a_backups_group_is_told_by_what_it_commits_whatever_its_name():
    """A backup commits its offsets with the chunk and the store (``PartitionState.commit_metadata``); its group is
    ``connect-<name>`` or any ``group.id``."""
    state = PartitionState(next_offset=6)
    state.last_chunk, state.last_object = 3, "topics/t/partition=0/t+0+0000000003.json"
    metadata = state.commit_metadata("s3://bucket", "topic-id")
    assert backup_commit(metadata)
    assert kafka_s3_group("orders-archiver", ["", metadata])
    assert kafka_s3_group("kafka-s3-restore-orders-0", [""])  # a restore's progress group, by its name


@pytest.mark.issue(28, item=5)
@pytest.mark.parametrize(
    "metadata",
    ["", "consumer-1", "{", json.dumps(["chunk", "store"]), json.dumps({"at": 1_795_904_289_796})],
)
def test_an_applications_group_is_not_kafka_s3s(metadata):
    assert not backup_commit(metadata)
    assert not kafka_s3_group("connect-orders-sink", [metadata])  # a Kafka Connect sink's group commits none
