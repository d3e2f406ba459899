"""Issue 17 items 2 and 5: the backup records each topic's partition count and own configs, with history; a restore
with ``restore.topic.configs=true`` creates targets with them (``topic.creation.default.*`` winning), and an existing
target whose cleanup.policy differs from the source's gets a warning in the plan."""

from __future__ import annotations

import logging
import uuid

import pytest

from kafka_s3.core.topic_config import TopicConfig
from kafka_s3.io.kafka.admin import Admin
from tests.support.restore import records

pytestmark = pytest.mark.integration

ENVELOPE = {"format.class": "avro", "store.envelope": "true"}
SOURCE_CONFIGS = {
    "cleanup.policy": "compact",
    "retention.ms": "-1",
    "max.message.bytes": "2000000",
    "segment.ms": "3600000",
}


@pytest.fixture
def admin(kafka_bootstrap) -> Admin:
    return Admin({"bootstrap.servers": kafka_bootstrap})


@pytest.fixture
def source(admin, produce) -> str:
    topic = f"cfg-{uuid.uuid4().hex[:10]}"
    admin.create_topic(topic, 3, config=SOURCE_CONFIGS)
    produce(topic, records(2, 5))  # partition 2 stays empty
    return topic


def config_keys(s3_client, bucket: str, topic: str) -> list[str]:
    prefix = f"topics/_kafka-s3/avro/{topic}/topic-config/"
    return [o["Key"] for o in s3_client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]


def test_topic_configs_are_recorded_with_history(source, admin, backup, fresh_bucket, s3_client, produce):
    backup(fresh_bucket, source, ENVELOPE)
    backup(fresh_bucket, source, ENVELOPE)  # nothing changed: no new record
    keys = config_keys(s3_client, fresh_bucket, source)
    assert len(keys) == 1 and keys[0].endswith(".topicconfig"), keys
    first = TopicConfig.from_bytes(s3_client.get_object(Bucket=fresh_bucket, Key=keys[0])["Body"].read())
    assert (first.partitions, first.configs) == (3, SOURCE_CONFIGS)

    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(
        ResourceType.TOPIC,
        source,
        incremental_configs=[ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)],
    )
    admin.client.incremental_alter_configs([resource])[resource].result(30)
    backup(fresh_bucket, source, ENVELOPE)
    keys = config_keys(s3_client, fresh_bucket, source)
    assert len(keys) == 2, keys  # history: the old record stays
    latest = TopicConfig.from_bytes(s3_client.get_object(Bucket=fresh_bucket, Key=keys[-1])["Body"].read())
    assert latest.configs == {**SOURCE_CONFIGS, "retention.ms": "86400000"}


def test_created_target_gets_the_recorded_configs_and_creation_defaults_win(
    source, admin, backup, restorer, fresh_bucket
):
    backup(fresh_bucket, source, ENVELOPE)
    target = f"cfg-restored-{uuid.uuid4().hex[:8]}"
    properties = {
        **ENVELOPE,
        "topic.rename": f"{source}:{target}",
        "topic.creation.enable": "true",
        "restore.topic.configs": "true",
        "topic.creation.default.segment.ms": "7200000",
    }
    assert restorer(fresh_bucket, source, properties).run().records == 10
    assert admin.topics()[target] == 3
    got = admin.topic_configs([target])[target]
    assert got == {**SOURCE_CONFIGS, "segment.ms": "7200000"}


def test_without_restore_topic_configs_a_created_target_gets_only_the_creation_defaults(
    source, admin, backup, restorer, fresh_bucket
):
    backup(fresh_bucket, source, ENVELOPE)
    target = f"cfg-plain-{uuid.uuid4().hex[:8]}"
    properties = {
        **ENVELOPE,
        "topic.rename": f"{source}:{target}",
        "topic.creation.enable": "true",
        "topic.creation.default.retention.ms": "-1",
    }
    restorer(fresh_bucket, source, properties).run()
    assert admin.topic_configs([target])[target] == {"retention.ms": "-1"}


def test_existing_target_with_another_cleanup_policy_is_warned_in_the_plan(
    source, backup, restorer, fresh_bucket, fresh_topic, caplog
):
    from kafka_s3.cli.render import describe_plan

    backup(fresh_bucket, source, ENVELOPE)
    target = fresh_topic(3)  # cleanup.policy=delete
    restore = restorer(fresh_bucket, source, {**ENVELOPE, "topic.rename": f"{source}:{target}"})
    plan_set = restore.plan()
    with caplog.at_level(logging.WARNING):
        restore.check_targets(plan_set, create=False)
    report = describe_plan(plan_set)
    assert f"warning: target topic {target!r} has cleanup.policy=delete" in report, report
    assert "cleanup.policy=compact" in report and "cleanup.policy=compact" in caplog.text
