"""Helpers of the security tests: principals' ACLs, configurations, records written and read back."""

from __future__ import annotations

import json

from kafka_s3.core.records import to_dicts
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.reader import read_range
from tests.support.integration import run_cli as run_cli  # re-exported: the security tests import them from here
from tests.support.integration import write_properties as write_properties

JSON = {
    "format__class": "json",
    "value__converter": "org.apache.kafka.connect.json.JsonConverter",
    "value__converter__schemas__enable": "false",
}


def records(partitions: int, per_partition: int) -> list[dict]:
    """Keyed JSON records ``{"n": ...}``, ``n`` unique across partitions."""
    return [
        {"partition": p, "key": f"k{p}-{i}".encode(), "value": json.dumps({"n": p * 1000 + i}).encode()}
        for p in range(partitions)
        for i in range(per_partition)
    ]


def values_of(bootstrap: str, topic: str) -> dict[int, list[dict]]:
    """Every partition's values, decoded from JSON."""
    admin = Admin({"bootstrap.servers": bootstrap})
    count = admin.topics()[topic]
    ends = admin.end_offsets([(topic, p) for p in range(count)])
    out = {}
    for p in range(count):
        rows = to_dicts(list(read_range({"bootstrap.servers": bootstrap}, topic, p, 0, ends[(topic, p)])))
        out[p] = [json.loads(r["value"]) for r in rows]
    return out


# ------------------------------------------------------------------------------------------------ secured Kafka
ROUTER = {
    "transforms": "Copy",
    "transforms.Copy.type": "org.apache.kafka.connect.transforms.RegexRouter",
    "transforms.Copy.regex": "(.*)",
    "transforms.Copy.replacement": "$1-copy",
}
OFFSET_MAP_TOPIC = "kafka-s3-offset-map"
LEASE_TOPIC = "kafka-s3-restore-leases"


def props(properties: dict) -> dict:
    """Dotted property names as the config fixtures take them (``a.b`` → ``a__b``)."""
    return {k.replace(".", "__"): v for k, v in properties.items()}


def kafka_records(partitions: int, per_partition: int) -> list[dict]:
    """Keyed JSON records ``{"p": ..., "i": ...}`` for ``secure_produce``."""
    return [
        {"value": json.dumps({"p": p, "i": i}).encode(), "key": f"k{p}-{i}".encode(), "partition": p}
        for p in range(partitions)
        for i in range(per_partition)
    ]


def grant_backup(secure_kafka, who, topic: str, group: str, topic_ops=("READ", "DESCRIBE"), group_ops=("READ",)):
    """A backup principal's ACLs: ``topic_ops`` on the topic, ``group_ops`` on its group."""
    secure_kafka.allow(who.user, "TOPIC", topic, topic_ops)
    if group_ops:
        secure_kafka.allow(who.user, "GROUP", group, group_ops)


def ensure_offset_map_topic(secure_kafka) -> None:
    """The restores' offset maps (restore.offset.map.topic) and claims on their targets (restore.lease.topic), made
    once by an administrator."""
    from kafka_s3.io.kafka.leases import TOPIC_CONFIG

    admin = Admin(secure_kafka.admin_settings)
    if OFFSET_MAP_TOPIC not in admin.topics():
        admin.create_topic(OFFSET_MAP_TOPIC, 1, config={"retention.ms": "-1"})
    if LEASE_TOPIC not in admin.topics():
        admin.create_topic(LEASE_TOPIC, 1, config=TOPIC_CONFIG)


def grant_restore(secure_kafka, who, target: str, name: str, transactional=True, target_ops=("WRITE", "READ")):
    """A restore principal's ACLs: ``target_ops`` on the target (READ: the restore's progress is committed as its
    group's offsets of the target partitions), READ on its progress groups, WRITE/DESCRIBE on its transactional ids
    (``transactional``) and on the offset-map topic; WRITE, READ and DESCRIBE on the lease topic."""
    secure_kafka.allow(who.user, "TOPIC", target, target_ops)
    secure_kafka.allow(who.user, "GROUP", f"kafka-s3-restore-{name}", ["READ"], prefixed=True)
    if transactional:
        secure_kafka.allow(
            who.user, "TRANSACTIONAL_ID", f"kafka-s3-restore-{name}", ["WRITE", "DESCRIBE"], prefixed=True
        )
    ensure_offset_map_topic(secure_kafka)
    secure_kafka.allow(who.user, "TOPIC", OFFSET_MAP_TOPIC, ["WRITE", "DESCRIBE"])
    secure_kafka.allow(who.user, "TOPIC", LEASE_TOPIC, ["WRITE", "READ", "DESCRIBE"])
