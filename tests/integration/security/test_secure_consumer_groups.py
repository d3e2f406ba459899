"""Issue 13 item 3, consumer groups over SASL_SSL with least-privilege ACLs: the backup's group snapshots, ``restore
--consumer-groups`` (issue 17's offset translation) and the ``groups`` command. What each needs:

- snapshots (backup): DESCRIBE on the groups to record (listing groups shows only those; DESCRIBE on the cluster
  lists them all). Without it the backup says so once, naming the ACL, instead of silently recording nothing;
- translation (restore): READ on the offset-map topic (the restore's own map of source to target offsets), DESCRIBE
  on the groups (are members active?) and READ on them (the commit). A missing right is an error naming principal,
  operation and resource, and no group is committed;
- ``groups``: DESCRIBE on the target topics and READ on the offset-map topic; no group right needed.
"""

from __future__ import annotations

import json
import logging
import time
import uuid

import pytest

from kafka_s3.core.errors import KafkaAuthorizationError, KafkaError
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.restore.driver import Restore
from tests.support.security import (
    OFFSET_MAP_TOPIC,
    ROUTER,
    grant_backup,
    grant_restore,
    kafka_records,
    props,
    run_cli,
    write_properties,
)

pytestmark = [pytest.mark.integration, pytest.mark.secure_kafka]

PARTITIONS, PER_PARTITION, AT = 2, 10, 4


def next_values(settings: dict, topic: str, group: str) -> dict[int, dict | None]:
    """What a consumer of ``group`` subscribing to ``topic`` reads first per partition (``None``: nothing; a group
    without a committed offset reads nothing: auto.offset.reset=latest)."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            **settings,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "latest",
            "isolation.level": "read_committed",
        }
    )
    seen: dict[int, dict | None] = {}
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(seen) < PARTITIONS and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=100, timeout=0.5):
                if m.error() is None and m.partition() not in seen:
                    seen[m.partition()] = json.loads(m.value())
    finally:
        consumer.close()
    return {p: seen.get(p) for p in range(PARTITIONS)}


def snapshot_warnings(caplog) -> list[str]:
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    return [m for m in messages if "consumer-group" in m]


@pytest.fixture
def backed_up(engine, secure_kafka, principal, secure_topic, secure_produce, secure_config, fresh_bucket):
    """A source topic (2 x 10 records), groups ``app-<id>-a`` and ``app-<id>-b`` committed at 4 on it, backed up by a
    principal allowed DESCRIBE on those two groups: ``(topic, groups, target)``; the target (``<topic>-copy``) exists,
    empty."""
    topic = secure_topic(PARTITIONS)
    secure_produce(topic, kafka_records(PARTITIONS, PER_PARTITION))
    app = f"app-{uuid.uuid4().hex[:8]}"
    groups = [f"{app}-a", f"{app}-b"]
    admin = Admin(secure_kafka.admin_settings)
    for group in groups:
        admin.commit_group_offsets(group, {(topic, p): AT for p in range(PARTITIONS)})
    who = principal("backup")
    _, sink = secure_config(fresh_bucket, topic, who)
    grant_backup(secure_kafka, who, topic, f"connect-{sink['name']}")
    for group in groups:
        secure_kafka.allow(who.user, "GROUP", group, ["DESCRIBE"])
    assert Backup(sink, engine=engine).run_once().records == PARTITIONS * PER_PARTITION
    target = f"{topic}-copy"
    admin.create_topic(target, PARTITIONS)
    return topic, groups, target


def restore_as(secure_kafka, principal, secure_config, fresh_bucket, topic: str, target: str, engine, role="restore"):
    """A restore principal with the restore's ACLs (grant_restore) and its restore, run: ``(who, restore)``."""
    who = principal(role)
    _, source = secure_config(fresh_bucket, topic, who, source=True, **props(ROUTER))
    grant_restore(secure_kafka, who, target, source["name"])
    restore = Restore(source, engine)
    assert restore.run().records == PARTITIONS * PER_PARTITION
    return who, restore


def committed(secure_kafka, target: str, groups) -> dict:
    admin = Admin(secure_kafka.admin_settings)
    return {g: admin.group_offsets(g, [(target, p) for p in range(PARTITIONS)]) for g in groups}


def nothing_committed(secure_kafka, target: str, groups) -> bool:
    return all(v is None for offsets in committed(secure_kafka, target, groups).values() for v in offsets.values())


def test_restore_consumer_groups_over_sasl_ssl_with_least_privilege(
    engine, secure_kafka, principal, secure_config, fresh_bucket, backed_up
):
    topic, groups, target = backed_up
    who, restore = restore_as(secure_kafka, principal, secure_config, fresh_bucket, topic, target, engine)
    # translation's own rights: READ on the offset map, READ (includes DESCRIBE) on the groups it commits
    secure_kafka.allow(who.user, "TOPIC", OFFSET_MAP_TOPIC, ["READ"])
    for group in groups:
        secure_kafka.allow(who.user, "GROUP", group, ["READ"])
    plan = restore.translate_groups(f"{groups[0][:-2]}.*")
    assert plan.committed
    translated = sorted(
        (t.group, t.source_partition, t.source_offset, t.target_offset, t.how) for t in plan.translations
    )
    assert translated == [(g, p, AT, AT, "record") for g in groups for p in range(PARTITIONS)]
    for group in groups:
        resumed = next_values(secure_kafka.admin_settings, target, group)
        assert resumed == {p: {"p": p, "i": AT} for p in range(PARTITIONS)}


def test_translation_without_offset_map_read_names_the_acl_and_commits_nothing(
    engine, secure_kafka, principal, secure_config, fresh_bucket, backed_up
):
    topic, groups, target = backed_up
    who, restore = restore_as(secure_kafka, principal, secure_config, fresh_bucket, topic, target, engine)
    for group in groups:
        secure_kafka.allow(who.user, "GROUP", group, ["READ"])
    with pytest.raises(KafkaAuthorizationError) as caught:
        restore.translate_groups(".*")
    assert f"User:{who.user} lacks READ on topic '{OFFSET_MAP_TOPIC}'" in str(caught.value), caught.value
    assert nothing_committed(secure_kafka, target, groups)


def test_translation_without_describe_on_a_group_names_the_acl_and_commits_nothing(
    engine, secure_kafka, principal, secure_config, fresh_bucket, backed_up
):
    topic, groups, target = backed_up
    who, restore = restore_as(secure_kafka, principal, secure_config, fresh_bucket, topic, target, engine)
    secure_kafka.allow(who.user, "TOPIC", OFFSET_MAP_TOPIC, ["READ"])
    secure_kafka.allow(who.user, "GROUP", groups[0], ["READ"])  # nothing on groups[1]
    with pytest.raises(KafkaAuthorizationError) as caught:
        restore.translate_groups(".*")
    text = str(caught.value)
    assert f"User:{who.user} lacks DESCRIBE on group '{groups[1]}'" in text, text
    assert groups[0] + "'" not in text, text
    assert nothing_committed(secure_kafka, target, groups)


def test_translation_without_read_on_a_group_names_the_acl_and_commits_nothing(
    engine, secure_kafka, principal, secure_config, fresh_bucket, backed_up
):
    topic, groups, target = backed_up
    who, restore = restore_as(secure_kafka, principal, secure_config, fresh_bucket, topic, target, engine)
    secure_kafka.allow(who.user, "TOPIC", OFFSET_MAP_TOPIC, ["READ"])
    secure_kafka.allow(who.user, "GROUP", groups[0], ["READ"])
    secure_kafka.allow(who.user, "GROUP", groups[1], ["DESCRIBE"])  # may look, may not commit
    with pytest.raises(KafkaAuthorizationError) as caught:
        restore.translate_groups(".*")
    text = str(caught.value)
    assert f"User:{who.user} lacks READ on group '{groups[1]}'" in text, text
    assert "no group offsets were committed" in text, text
    assert nothing_committed(secure_kafka, target, groups)  # not even groups[0], which it may commit


def test_groups_command_over_sasl_ssl_needs_no_group_right(
    secure_kafka, principal, secure_config, fresh_bucket, backed_up, engine, tmp_path
):
    topic, groups, target = backed_up
    restore_as(secure_kafka, principal, secure_config, fresh_bucket, topic, target, engine)
    # an operator looking before translating: DESCRIBE on the target, READ on the offset map, nothing on groups
    who = principal("operator")
    raw, _ = secure_config(fresh_bucket, topic, who, source=True, **props(ROUTER))
    secure_kafka.allow(who.user, "TOPIC", target, ["DESCRIBE"])
    props_file = str(write_properties(tmp_path / "restore.properties", raw))

    refused = run_cli(["groups", "-c", props_file])  # not even the offset map yet: an error naming it
    assert refused.returncode == KafkaError.exit_code, refused.stderr[-3000:]
    assert f"User:{who.user} lacks DESCRIBE on topic '{OFFSET_MAP_TOPIC}'" in refused.stderr, refused.stderr[-3000:]

    secure_kafka.allow(who.user, "TOPIC", OFFSET_MAP_TOPIC, ["READ"])
    listed = run_cli(["groups", "-c", props_file])
    assert listed.returncode == 0, listed.stderr[-3000:]
    for group in groups:
        assert f"group {group}: [0] {AT}, [1] {AT}" in listed.stdout, listed.stdout
        assert f"group {group}: {topic}[1] {AT} -> {target}[1] {AT}" in listed.stdout, listed.stdout
        # what restore --consumer-groups would lack, said before it is run
        refusal = f"group {group}: restore --consumer-groups would be refused: User:{who.user} lacks DESCRIBE on group"
        assert refusal in listed.stdout, listed.stdout
    assert nothing_committed(secure_kafka, target, groups)


def test_group_snapshots_without_describe_on_groups_warn_naming_the_acl(
    engine, secure_kafka, principal, secure_topic, secure_produce, secure_config, fresh_bucket, s3_client, caplog
):
    topic = secure_topic(PARTITIONS)
    secure_produce(topic, kafka_records(PARTITIONS, PER_PARTITION))
    group = f"app-{uuid.uuid4().hex[:8]}"
    Admin(secure_kafka.admin_settings).commit_group_offsets(group, {(topic, p): AT for p in range(PARTITIONS)})
    who = principal("backup")
    _, sink = secure_config(fresh_bucket, topic, who)
    grant_backup(secure_kafka, who, topic, f"connect-{sink['name']}")  # the backup's rights, none on other groups
    caplog.set_level(logging.INFO, logger="kafka_s3")
    backup = Backup(sink, engine=engine)
    assert backup.run_once().records == PARTITIONS * PER_PARTITION
    backup.snapshot_groups()  # a second cycle: still said once
    warned = snapshot_warnings(caplog)
    assert len(warned) == 1, warned
    assert f"User:{who.user} lacks DESCRIBE on cluster 'kafka-cluster'" in warned[0], warned[0]
    assert "DESCRIBE on the consumer groups to record" in warned[0], warned[0]
    listed = s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix="topics/_kafka-s3/").get("Contents", [])
    assert not [o["Key"] for o in listed if "/consumer-groups/" in o["Key"]]


def test_group_snapshots_listing_all_groups_but_refused_one_warn_naming_it(
    engine, secure_kafka, principal, secure_topic, secure_produce, secure_config, fresh_bucket, s3_client, caplog
):
    topic = secure_topic(PARTITIONS)
    secure_produce(topic, kafka_records(PARTITIONS, PER_PARTITION))
    app = f"app-{uuid.uuid4().hex[:8]}"
    admin = Admin(secure_kafka.admin_settings)
    for suffix in ("a", "b"):
        admin.commit_group_offsets(f"{app}-{suffix}", {(topic, p): AT for p in range(PARTITIONS)})
    who = principal("backup")
    _, sink = secure_config(fresh_bucket, topic, who, backup__consumer__groups__regex=f"{app}-.*")
    grant_backup(secure_kafka, who, topic, f"connect-{sink['name']}")
    secure_kafka.allow(who.user, "CLUSTER", "kafka-cluster", ["DESCRIBE"])  # lists every group...
    secure_kafka.allow(who.user, "GROUP", f"{app}-a", ["DESCRIBE"])  # ...but may read the offsets of one
    caplog.set_level(logging.INFO, logger="kafka_s3")
    backup = Backup(sink, engine=engine)
    assert backup.run_once().records == PARTITIONS * PER_PARTITION
    backup.snapshot_groups()
    warned = snapshot_warnings(caplog)
    assert len(warned) == 1, warned
    assert f"User:{who.user} lacks DESCRIBE on group '{app}-b'" in warned[0], warned[0]
    keys = [
        o["Key"]
        for o in s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix="topics/_kafka-s3/").get("Contents", [])
        if "/consumer-groups/" in o["Key"]
    ]
    assert len(keys) == 1, keys  # the group it may describe is recorded
    from kafka_s3.core.groups import GroupSnapshot

    snapshot = GroupSnapshot.from_bytes(s3_client.get_object(Bucket=fresh_bucket, Key=keys[0])["Body"].read())
    assert snapshot.groups == {f"{app}-a": dict.fromkeys(range(PARTITIONS), AT)}
