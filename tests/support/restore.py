"""Plain helpers of the restore integration tests: reading topics back, progress, corrupting objects."""

from __future__ import annotations

import json
import time

from confluent_kafka import Producer

from kafka_s3.io.kafka.admin import Admin
from tests.support.integration import run_cli as run_cli  # re-exported: the restore tests import them from here
from tests.support.integration import stable_end_offsets
from tests.support.integration import write_properties as write_properties

SCHEMA = {
    "type": "struct",
    "name": "rec",
    "optional": False,
    "fields": [{"field": "n", "type": "int32", "optional": False}, {"field": "s", "type": "string", "optional": False}],
}


def plain_value(n: int, with_schema: bool = False) -> bytes:
    payload = {"n": n, "s": f"value-{n}"}
    return json.dumps({"schema": SCHEMA, "payload": payload} if with_schema else payload).encode()


def records(
    partitions: int,
    per_partition: int,
    with_schema: bool = False,
    base_ts: int = 1_700_000_000_000,
    step_ms: int = 1000,
) -> list[dict]:
    """Records with keys, repeated header keys and explicit timestamps; values are JSON objects ``{"n", "s"}``
    (with a Connect schema when ``with_schema``), ``n`` unique across partitions."""
    out = []
    for p in range(partitions):
        for i in range(per_partition):
            n = p * 1000 + i
            out.append(
                {
                    "partition": p,
                    "key": f"k{n}".encode(),
                    "value": plain_value(n, with_schema),
                    "headers": [("h", b"1"), ("h", f"{n}".encode())],
                    "timestamp": base_ts + i * step_ms,
                }
            )
    return out


def produce_records(bootstrap: str, topic: str, rows: list[dict]) -> None:
    """Produce :func:`records`' rows into ``topic`` as they are: partition, key, headers and timestamp kept."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for row in rows:
        producer.produce(
            topic, row["value"], row["key"], row["partition"], headers=row["headers"], timestamp=row["timestamp"]
        )
    producer.flush()


def partitions_of(bootstrap: str, topic: str) -> int:
    return Admin({"bootstrap.servers": bootstrap}).topics()[topic]


def read_topic(bootstrap: str, topic: str, isolation_level: str = "read_committed") -> dict[int, list[dict]]:
    """Every partition's records under ``isolation_level``, as dicts (key, value, headers as (key, value) tuples,
    timestamp in ms, offset); one consumer for every partition, stopping at the end offsets read first."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    admin = Admin({"bootstrap.servers": bootstrap})
    count = admin.topics()[topic]
    tps = [(topic, p) for p in range(count)]
    ends = stable_end_offsets(bootstrap, tps) if isolation_level == "read_committed" else admin.end_offsets(tps, False)
    out: dict[int, list[dict]] = {p: [] for p in range(count)}
    pending = {p for p in range(count) if ends[(topic, p)] > 0}
    if not pending:
        return out
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "restore-tests",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": isolation_level,
            "receive.message.max.bytes": 2147483647,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(pending)])
        deadline = time.monotonic() + 60
        while pending:
            assert time.monotonic() < deadline, f"{topic}: could not read up to the end offsets {ends}"
            for m in consumer.consume(num_messages=10000, timeout=0.2):
                p = m.partition()
                if m.error() is not None:
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    if m.offset() >= ends[(topic, p)]:
                        pending.discard(p)
                    continue
                if m.offset() >= ends[(topic, p)]:
                    pending.discard(p)
                    continue
                out[p].append(
                    {
                        "offset": m.offset(),
                        "key": m.key(),
                        "value": m.value(),
                        "headers": list(m.headers() or []),
                        "timestamp": m.timestamp()[1],
                    }
                )
                if m.offset() + 1 >= ends[(topic, p)]:
                    pending.discard(p)
    finally:
        consumer.close()
    return out


def values_of(bootstrap: str, topic: str, isolation_level: str = "read_committed") -> dict[int, list[bytes]]:
    return {p: [r["value"] for r in rows] for p, rows in read_topic(bootstrap, topic, isolation_level).items()}


def fidelity(rows: list[dict]) -> list[tuple]:
    """What an exact (envelope) restore keeps: key, value, headers in order, timestamp."""
    return [(r["key"], r["value"], r["headers"], r["timestamp"]) for r in rows]


def end_offsets(bootstrap: str, topic: str, read_committed: bool = False) -> dict[int, int]:
    admin = Admin({"bootstrap.servers": bootstrap})
    tps = [(topic, p) for p in range(admin.topics()[topic])]
    return {p: o for (_, p), o in admin.end_offsets(tps, read_committed=read_committed).items()}


def restore_progress(bootstrap: str, config, source_topic: str, target_topic: str) -> dict[int, int | None]:
    """The restore's committed progress (next source offset) per target partition. Read uncommitted: progress sent
    in a transaction a killed run left open is not shown, and the read does not wait (past its timeout) for Kafka to
    abort that transaction."""
    admin = Admin({"bootstrap.servers": bootstrap, "isolation.level": "read_uncommitted"})
    tps = [(target_topic, p) for p in range(admin.topics()[target_topic])]
    group = f"kafka-s3-restore-{config['name']}-{source_topic}"
    return {p: o for (_, p), o in admin.group_offsets(group, tps).items()}


def get_object(s3_client, bucket: str, key: str) -> bytes:
    return s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()


def replace_object(s3_client, bucket: str, key: str, body: bytes) -> None:
    """Put other bytes under an existing key (a corrupted or truncated backup object)."""
    s3_client.delete_object(Bucket=bucket, Key=key)
    s3_client.put_object(Bucket=bucket, Key=key, Body=body)


def same_size_garbage(good: bytes) -> bytes:
    """Bytes that do not decode but have the good object's size: the manifest's size check passes, decoding fails
    (what a restore meets mid-way when an object was damaged in place)."""
    return (b"garbage" * (len(good) // 7 + 1))[: len(good)]


def as_another_tools_bucket(s3_client, bucket: str) -> None:
    """Make a kafka-s3 bucket look as another tool (Confluent's sink) leaves it: no chunk manifests or marks, no
    kafka-s3 metadata on its objects, and no backup consumer group (``make_config``'s name) saying what it committed.
    It is then checked only as far as object names allow (so a damaged object is met while restoring, not refused
    up front)."""
    import os

    from kafka_s3.core.errors import KafkaError

    try:
        Admin({"bootstrap.servers": os.environ["KAFKA_BOOTSTRAP_SERVERS"]}).delete_group(f"connect-it-{bucket}")
    except KafkaError as exc:
        assert "does not exist" in str(exc) or "not found" in str(exc).lower(), exc
    pages = s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    for key in [item["Key"] for page in pages for item in page.get("Contents", [])]:
        if key.startswith("topics/_kafka-s3/"):
            s3_client.delete_object(Bucket=bucket, Key=key)
        else:
            body = s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()
            s3_client.delete_object(Bucket=bucket, Key=key)
            s3_client.put_object(Bucket=bucket, Key=key, Body=body)


def recreate_empty(bootstrap: str, topic: str, partitions: int) -> None:
    """Delete the topic and create it again, empty (the disaster a restore repairs)."""
    admin = Admin({"bootstrap.servers": bootstrap})
    admin.delete_topic(topic)
    deadline = time.monotonic() + 60
    while True:  # deletion is asynchronous on Apache Kafka
        try:
            if topic not in admin.topics():
                admin.create_topic(topic, partitions, config={"retention.ms": "-1"})
                return
        except Exception:
            if time.monotonic() > deadline:
                raise
        time.sleep(0.5)
