"""``make demo``: the main job end to end on the local services.

Produces a topic with keys, repeated header keys, old timestamps and tombstones; backs it up (``--once``, envelope
Avro, Confluent layout), with a consumer group half-way through the topic; restores it to a renamed topic with
exactly-once (a transaction marker every 5,000 records shifts the offsets); reads both topics back and compares them
record by record; translates the group (``restore --consumer-groups``) and shows a consumer of it resuming at the
record it would have read next on the source; prints a summary. Every run uses fresh names, so it can be repeated.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import uuid
from typing import Any

from rich.console import Console
from rich.table import Table

RECORDS_PER_PARTITION = 20_000
PARTITIONS = 3
GROUP_AT = 12_345  # the demo application's committed offset on every partition


def first_records(bootstrap: str, topic: str, group: str, partitions: int) -> dict[int, tuple[int, Any, Any]]:
    """(offset, key, value) of the first record a consumer of ``group`` reads on each partition of ``topic``."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "latest",
            "isolation.level": "read_committed",
        }
    )
    seen: dict[int, tuple[int, Any, Any]] = {}
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(seen) < partitions and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=100, timeout=0.5):
                partition = m.partition()
                if m.error() is None and partition is not None and partition not in seen:
                    seen[partition] = (m.offset() or 0, m.key(), m.value())
    finally:
        consumer.close()
    return seen


def produce(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    base_ts = 1_600_000_000_000  # 2020: old timestamps survive the restore
    count = 0
    for i in range(RECORDS_PER_PARTITION):
        for p in range(PARTITIONS):
            value = None if i % 997 == 0 else f'{{"order":{i},"partition":{p},"item":"widget-{i % 50}"}}'.encode()
            while True:
                try:
                    producer.produce(
                        topic,
                        value=value,
                        key=f"customer-{i % 100}".encode(),
                        partition=p,
                        headers=[("trace", f"t{i}".encode()), ("trace", b"again"), ("source", b"demo")],
                        timestamp=base_ts + i * 1000,
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            count += 1
        if i % 5000 == 0:
            producer.poll(0)
    producer.flush()
    return count


def read_topic(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple[Any, ...]]]:
    from kafka_s3.core.records import to_dicts
    from kafka_s3.io.kafka.admin import Admin
    from kafka_s3.io.kafka.reader import read_range

    admin = Admin({"bootstrap.servers": bootstrap})
    ends = admin.end_offsets([(topic, p) for p in range(partitions)])
    out = {}
    for p in range(partitions):
        rows = to_dicts(list(read_range({"bootstrap.servers": bootstrap}, topic, p, 0, ends[(topic, p)])))
        out[p] = [(r["key"], r["value"], tuple(r["headers"]), r["timestamp"]) for r in rows]
    return out


def main() -> int:
    from kafka_s3.core import logs
    from kafka_s3.core.config.loader import load
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.core.config.source import SOURCE
    from kafka_s3.core.errors import BucketNotFoundError
    from kafka_s3.io.kafka.admin import Admin
    from kafka_s3.io.stores.spec import StoreSpec
    from kafka_s3.pipelines.backup.driver import Backup
    from kafka_s3.pipelines.restore.driver import Restore
    from kafka_s3.spark.engine import SparkEngine
    from tools.processes import state_dir
    from tools.services import ensure_up

    console = Console()
    logs.setup()
    logging.getLogger("kafka_s3").setLevel(logging.WARNING)
    settings = ensure_up(quiet=True)
    os.environ.update(settings.environ())  # the jobs (and their Spark workers) connect with these
    run = uuid.uuid4().hex[:6]
    topic, target, bucket = f"demo-orders-{run}", f"demo-orders-{run}-restored", "kafka-s3-demo"
    work = state_dir() / "demo" / run
    work.mkdir(parents=True, exist_ok=True)
    config_path = work / "backup.properties"
    config_path.write_text(
        "\n".join(
            [
                "name=demo-backup",
                "connector.class=io.confluent.connect.s3.S3SinkConnector",
                f"topics={topic}",
                "flush.size=5000",
                f"s3.bucket.name={bucket}",
                "format.class=io.confluent.connect.s3.format.avro.AvroFormat",
                "avro.codec=deflate",
                "partitioner.class=io.confluent.connect.storage.partitioner.DefaultPartitioner",
                "store.envelope=true",
                f"topic.rename={topic}:{target}",
                "topic.creation.enable=true",
                "topic.creation.default.retention.ms=-1",  # the data is from 2020: keep it
                "exactly.once.support=required",
                "restore.transaction.records=5000",
            ]
        )
        + "\n"
    )
    console.print(f"[bold]kafka-s3 demo[/bold]  Kafka {settings.kafka_bootstrap}  S3 {settings.s3_endpoint}")
    console.print(f"config: {config_path}")

    timings = {}
    started = time.monotonic()
    admin = Admin({"bootstrap.servers": settings.kafka_bootstrap})
    admin.create_topic(topic, PARTITIONS, config={"retention.ms": "-1"})
    produced = produce(settings.kafka_bootstrap, topic)
    timings["produce"] = time.monotonic() - started
    console.print(f"1. produced {produced} records to {topic} ({PARTITIONS} partitions)")
    group = f"demo-app-{run}"
    admin.commit_group_offsets(group, {(topic, p): GROUP_AT for p in range(PARTITIONS)})
    console.print(f"   consumer group {group} committed at offset {GROUP_AT} on every partition")

    backup_config = load(SINK, config_path)
    store = StoreSpec.from_config(backup_config).open()
    try:
        store.check()
    except BucketNotFoundError:
        store.create_bucket()

    started = time.monotonic()
    engine = SparkEngine(app_name="kafka-s3 demo")
    engine.start()
    timings["spark start"] = time.monotonic() - started
    started = time.monotonic()
    summary = Backup(backup_config, engine).run_once()
    timings["backup"] = time.monotonic() - started
    console.print(
        f"2. backed up {summary.records} records into {summary.objects} objects "
        f"({summary.bytes / 1e6:.1f} MB) in s3://{bucket}/topics/{topic}/"
    )

    started = time.monotonic()
    restore = Restore(load(SOURCE, config_path), engine)
    restore_summary = restore.run()
    timings["restore"] = time.monotonic() - started
    console.print(f"3. restored {restore_summary.records} records into {target} (exactly once)")
    translated = restore.translate_groups(group)
    for line in (t.line() for t in translated.translations):
        console.print(f"   {line}")

    started = time.monotonic()
    original = read_topic(settings.kafka_bootstrap, topic, PARTITIONS)
    restored = read_topic(settings.kafka_bootstrap, target, PARTITIONS)
    timings["verify"] = time.monotonic() - started
    mismatches = sum(original[p] != restored.get(p) for p in range(PARTITIONS))

    table = Table(title="summary")
    for column in ("partition", "records", "tombstones", "restored equal"):
        table.add_column(column)
    for p in range(PARTITIONS):
        table.add_row(
            str(p),
            str(len(original[p])),
            str(sum(1 for r in original[p] if r[1] is None)),
            "yes" if original[p] == restored.get(p) else "[red]NO[/red]",
        )
    console.print(table)
    console.print("timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items()))
    if mismatches:
        console.print(f"[red]verification failed on {mismatches} partition(s)[/red]")
        return 1
    console.print("[green]4. verified: every record restored in order with key, value, headers and timestamp[/green]")
    resumed = first_records(settings.kafka_bootstrap, target, group, PARTITIONS)
    wrong = [p for p in range(PARTITIONS) if p not in resumed or resumed[p][1:] != original[p][GROUP_AT][:2]]
    if wrong:
        console.print(f"[red]group {group} does not resume at source record {GROUP_AT} on partition(s) {wrong}[/red]")
        return 1
    console.print(
        f"[green]5. a consumer of {group} on {target} reads next exactly the source record {GROUP_AT} of every "
        "partition (target offsets " + ", ".join(f"[{p}] {resumed[p][0]}" for p in range(PARTITIONS)) + ")[/green]"
    )
    engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
