"""A backup never mixes another log into the one it backed up (issue 26, finding 3).

The source topic deleted and re-created (or a topic of the same name on another cluster) is not the log the bucket
holds, even where its offsets reach further: the backup refuses it, naming topic, partition and offset, and leaves
the bucket as it was — never a chunk of old and new records, never an object of the old backup deleted or rewritten.
Brokers with topic ids (Apache Kafka) are caught by the id the manifests record; without them (noida-db) by the
checksums of the records at the stored chunks' boundaries.
"""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.errors import KafkaS3Error, PlanError
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.pipelines.backup.driver import Backup, group_id
from tests.support.backup import recreate_topic

pytestmark = pytest.mark.integration


def numbered(start: int, count: int, tag: str) -> list[dict]:
    return [
        {
            "key": f"k{i}".encode(),
            "value": json.dumps({"n": i, "log": tag}).encode(),
            "timestamp": 1_700_000_000_000 + i,
        }
        for i in range(start, start + count)
    ]


def bucket_state(s3_client, bucket: str) -> dict[str, str]:
    out = {}
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        out.update({o["Key"]: o["ETag"] for o in page.get("Contents", [])})
    return out


@pytest.mark.parametrize("group", ["kept", "deleted"])
def test_a_recreated_source_with_a_longer_log_is_refused_and_the_bucket_left_as_it_was(
    fresh_topic, fresh_bucket, make_config, engine, produce, kafka_bootstrap, s3_client, group
):
    topic = fresh_topic(1)
    produce(topic, numbered(0, 500, "old"))
    _, config = make_config(fresh_bucket, topic, flush__size=100, store__envelope="true")
    assert Backup(config, engine).run_once().records == 500
    before = bucket_state(s3_client, fresh_bucket)

    recreate_topic(kafka_bootstrap, topic, 1)
    produce(topic, numbered(0, 1000, "new"))  # a longer log: every stored offset exists in it
    if group == "deleted":  # as Apache Kafka does with a deleted topic's offsets
        admin = Admin({"bootstrap.servers": kafka_bootstrap})
        if admin.group_offsets(group_id(config), [(topic, 0)])[(topic, 0)] is not None:
            admin.delete_group(group_id(config))
    with pytest.raises(PlanError, match=rf"{topic}\[0\].*offset \d+.*not the log") as refused:
        Backup(config, engine).run_once()
    assert "topics.dir" in str(refused.value)  # the way out: another prefix
    assert bucket_state(s3_client, fresh_bucket) == before


def test_a_following_backup_stops_when_its_source_is_recreated_between_cycles(
    fresh_topic, fresh_bucket, make_config, engine, produce, kafka_bootstrap, s3_client
):
    topic = fresh_topic(1)
    produce(topic, numbered(0, 300, "old"))
    _, config = make_config(fresh_bucket, topic, flush__size=100, store__envelope="true")
    backup = Backup(config, engine)
    assert backup.run_once().records == 300  # the same Backup goes on, as a following backup's cycles do
    before = bucket_state(s3_client, fresh_bucket)
    recreate_topic(kafka_bootstrap, topic, 1)
    produce(topic, numbered(0, 600, "new"))
    with pytest.raises(KafkaS3Error, match=rf"{topic}\[0\].*not the log"):
        backup.run_once()
    assert bucket_state(s3_client, fresh_bucket) == before
