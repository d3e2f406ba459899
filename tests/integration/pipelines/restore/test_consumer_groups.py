"""Issue 17 items 1 and 4: the backup records the consumer groups' committed offsets; ``restore --consumer-groups``
commits them on the target at the offsets their source offsets translate to, so each group's consumers read next
exactly the record they would have read on the source.

Real broker, real S3, real Spark. The target's offsets differ from the source's on purpose: the target already holds
records, the restore is exactly-once with small transactions (a marker per transaction), the source has gaps.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from kafka_s3.core.errors import KafkaError, PlanError
from kafka_s3.core.groups import GroupSnapshot
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.pipelines.read.options import RestoreOptions, parse_offsets
from tests.support.restore import end_offsets, records

pytestmark = pytest.mark.integration

ENVELOPE = {"format.class": "avro", "store.envelope": "true", "flush.size": "100"}
PARTITIONS, PER_PARTITION, AT = 3, 1000, 500


def value_number(value: bytes) -> int:
    return int(json.loads(value)["n"])


def next_records(bootstrap: str, topic: str, group: str, partitions: int) -> dict[int, int | None]:
    """What a consumer of ``group`` subscribing to ``topic`` reads first on each partition (``n`` of the value);
    ``None`` where nothing comes (the group is at the end). auto.offset.reset=latest: a group without a committed
    offset would read nothing."""
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
    seen: dict[int, int | None] = {}
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 40
        while len(seen) < partitions and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=100, timeout=0.5):
                if m.error() is None and m.partition() not in seen:
                    seen[m.partition()] = value_number(m.value())
    finally:
        consumer.close()
    return {p: seen.get(p) for p in range(partitions)}


@pytest.fixture
def group() -> str:
    return f"app-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def source(fresh_topic, produce, kafka_bootstrap, group):
    """3 partitions of 1,000 records, the group committed at 500 on each."""
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))
    Admin({"bootstrap.servers": kafka_bootstrap}).commit_group_offsets(
        group, {(topic, p): AT for p in range(PARTITIONS)}
    )
    return topic


@pytest.fixture
def target(fresh_topic, produce):
    """The target already holds 37 records in partition 0 (so offsets shift there)."""
    name = fresh_topic(PARTITIONS)
    produce(name, [{"partition": 0, "value": json.dumps({"n": -1 - i}).encode()} for i in range(37)])
    return name


APPEND = RestoreOptions(append=True)  # the target holds records of its own (the target fixture)


def restore_properties(source: str, target: str, **more) -> dict:
    return {**ENVELOPE, "topic.rename": f"{source}:{target}", "restore.transaction.records": "90", **more}


def test_group_resumes_at_source_record_500_after_an_exactly_once_restore(
    source, target, group, backup, restorer, fresh_bucket, kafka_bootstrap, s3_client
):
    backup(fresh_bucket, source, ENVELOPE)
    # The snapshot is a metadata object, never named like data.
    keys = [
        o["Key"]
        for o in s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix="topics/_kafka-s3/")["Contents"]
        if "/consumer-groups/" in o["Key"]
    ]
    assert len(keys) == 1 and keys[0].endswith(".offsets"), keys
    snapshot = GroupSnapshot.from_bytes(s3_client.get_object(Bucket=fresh_bucket, Key=keys[0])["Body"].read())
    assert snapshot.groups[group] == dict.fromkeys(range(PARTITIONS), AT)

    restore = restorer(fresh_bucket, source, restore_properties(source, target), APPEND)
    assert restore.exactly_once()
    assert restore.run().records == PARTITIONS * PER_PARTITION
    plan = restore.translate_groups()
    mine = sorted((t.source_partition, t.source_offset, t.target_offset) for t in plan.translations if t.group == group)
    # partition 0: 37 foreign records, then a marker after every 90 records (5 transactions before record 500)
    assert mine[0][2] != AT and [m[:2] for m in mine] == [(p, AT) for p in range(PARTITIONS)]
    assert next_records(kafka_bootstrap, target, group, PARTITIONS) == {p: p * 1000 + AT for p in range(PARTITIONS)}


def test_a_second_backup_without_group_changes_writes_no_new_snapshot(
    source, group, backup, fresh_bucket, s3_client, produce, kafka_bootstrap
):
    backup(fresh_bucket, source, ENVELOPE)
    produce(source, records(1, 5))
    backup(fresh_bucket, source, ENVELOPE)
    prefix = "topics/_kafka-s3/avro/" + source + "/consumer-groups/"
    assert len(s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix=prefix)["Contents"]) == 1
    Admin({"bootstrap.servers": kafka_bootstrap}).commit_group_offsets(group, {(source, 0): 700})
    backup(fresh_bucket, source, ENVELOPE)
    assert len(s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix=prefix)["Contents"]) == 2  # history kept


def test_disabled_or_unmatched_groups_are_not_recorded(source, backup, fresh_bucket, s3_client):
    backup(fresh_bucket, source, {**ENVELOPE, "backup.consumer.groups.regex": "nothing-matches"})
    listed = s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix="topics/_kafka-s3/")["Contents"]
    assert not [o["Key"] for o in listed if "/consumer-groups/" in o["Key"]]
    backup(fresh_bucket, source, {**ENVELOPE, "backup.consumer.groups.enable": "false", "name": "other"})
    listed = s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix="topics/_kafka-s3/")["Contents"]
    assert not [o["Key"] for o in listed if "/consumer-groups/" in o["Key"]]


def test_point_in_time_bound_before_the_group_offset_puts_the_group_at_the_target_end(
    source, target, group, backup, restorer, fresh_bucket, kafka_bootstrap
):
    backup(fresh_bucket, source, ENVELOPE)
    until = RestoreOptions(until_offsets=parse_offsets("0:300,1:300,2:300", "--until-offset"), append=True)
    restore = restorer(fresh_bucket, source, restore_properties(source, target), until)
    assert restore.run().records == PARTITIONS * 300
    plan = restore.translate_groups(group)
    ends = end_offsets(kafka_bootstrap, target, read_committed=True)
    assert {t.target_partition: (t.target_offset, t.how) for t in plan.translations} == {
        p: (ends[p], "after") for p in range(PARTITIONS)
    }
    committed = Admin({"bootstrap.servers": kafka_bootstrap}).group_offsets(
        group, [(target, p) for p in range(PARTITIONS)]
    )
    assert committed == {(target, p): ends[p] for p in range(PARTITIONS)}


def test_a_group_with_active_members_on_the_target_is_refused(
    source, target, group, backup, restorer, fresh_bucket, kafka_bootstrap
):
    from confluent_kafka import Consumer

    backup(fresh_bucket, source, ENVELOPE)
    restore = restorer(fresh_bucket, source, restore_properties(source, target), APPEND)
    restore.run()
    member = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group, "auto.offset.reset": "latest"})
    try:
        member.subscribe([target])
        deadline = time.monotonic() + 30
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.2)
        with pytest.raises(PlanError, match=f"group {group} has 1 active member"):
            restore.translate_groups(group)
    finally:
        member.close()
    committed = Admin({"bootstrap.servers": kafka_bootstrap}).group_offsets(group, [(target, 0)])
    assert committed == {(target, 0): None}


def produce_with_gaps(bootstrap: str, topic: str, partitions: int) -> None:
    """Per partition: 300 committed records (offsets 0..299, marker 300), 100 aborted ones (301..400, marker 401),
    300 committed ones (402..701, marker 702): a read_committed backup holds offsets with two holes."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"gaps-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    for first, count, commit in ((0, 300, True), (10_000, 100, False), (300, 300, True)):
        producer.begin_transaction()
        for p in range(partitions):
            for i in range(first, first + count):
                producer.produce(topic, json.dumps({"n": p * 1000 + i}).encode(), f"k{i}".encode(), partition=p)
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def test_source_with_gaps_group_in_an_aborted_range_resumes_at_the_next_restored_record(
    fresh_topic, target, group, backup, restorer, fresh_bucket, kafka_bootstrap
):
    source = fresh_topic(PARTITIONS)
    produce_with_gaps(kafka_bootstrap, source, PARTITIONS)
    assert end_offsets(kafka_bootstrap, source) == dict.fromkeys(range(PARTITIONS), 703)
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    # group: inside the aborted records; group-b: on the marker after the first transaction; group-c: a record
    admin.commit_group_offsets(group, {(source, p): 350 for p in range(PARTITIONS)})
    admin.commit_group_offsets(f"{group}-b", {(source, p): 300 for p in range(PARTITIONS)})
    admin.commit_group_offsets(f"{group}-c", {(source, p): 450 for p in range(PARTITIONS)})
    backup(fresh_bucket, source, ENVELOPE)
    restore = restorer(fresh_bucket, source, restore_properties(source, target), APPEND)
    assert restore.run().records == PARTITIONS * 600
    restore.translate_groups(f"{group}.*")
    # source offset 402 holds the 301st committed record (n = p*1000 + 300); 450 holds n = p*1000 + 348
    assert next_records(kafka_bootstrap, target, group, PARTITIONS) == {p: p * 1000 + 300 for p in range(PARTITIONS)}
    assert next_records(kafka_bootstrap, target, f"{group}-b", PARTITIONS) == {
        p: p * 1000 + 300 for p in range(PARTITIONS)
    }
    assert next_records(kafka_bootstrap, target, f"{group}-c", PARTITIONS) == {
        p: p * 1000 + 348 for p in range(PARTITIONS)
    }


def open_transaction_on(bootstrap: str, topic: str):
    """A producer whose transaction on ``topic``[0] stays open: a read_committed reader cannot pass it, as after a
    restore stopped inside a transaction (until Kafka aborts it at its transaction.timeout.ms)."""
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"open-{uuid.uuid4().hex[:8]}",
            "transaction.timeout.ms": 120_000,
        }
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"{}", partition=0)
    producer.flush(30)
    return producer


def test_a_transaction_open_on_the_offset_map_topic_is_waited_for_not_read_as_an_empty_map(
    source, target, group, backup, restorer, fresh_bucket, fresh_topic, kafka_bootstrap
):
    """Another restore's transaction open on the offset map topic, begun before this restore wrote its maps: reading
    only up to the last stable offset found no map and put the group at the target's end, silently skipping the 500
    records after its position. The translation waits for the transaction to end and reads the maps."""
    import threading

    map_topic = fresh_topic(1)
    backup(fresh_bucket, source, ENVELOPE)
    foreign = open_transaction_on(kafka_bootstrap, map_topic)
    restore = restorer(
        fresh_bucket, source, restore_properties(source, target, **{"restore.offset.map.topic": map_topic}), APPEND
    )
    assert restore.run().records == PARTITIONS * PER_PARTITION
    ended = threading.Timer(3.0, foreign.abort_transaction, args=(30,))
    ended.start()
    try:
        plan = restore.translate_groups(group)
    finally:
        ended.join()
    assert {t.target_partition: t.how for t in plan.translations} == dict.fromkeys(range(PARTITIONS), "record")
    assert next_records(kafka_bootstrap, target, group, PARTITIONS) == {p: p * 1000 + AT for p in range(PARTITIONS)}


def test_an_offset_map_held_back_past_the_wait_is_an_error_naming_topic_and_offset(
    source, target, group, backup, restorer, fresh_bucket, fresh_topic, kafka_bootstrap
):
    from kafka_s3.io.kafka.offset_map import read_offset_maps

    map_topic = fresh_topic(1)
    backup(fresh_bucket, source, ENVELOPE)
    foreign = open_transaction_on(kafka_bootstrap, map_topic)
    try:
        restore = restorer(
            fresh_bucket, source, restore_properties(source, target, **{"restore.offset.map.topic": map_topic}), APPEND
        )
        restore.run()
        end = Admin({"bootstrap.servers": kafka_bootstrap}).end_offsets([(map_topic, 0)], read_committed=False)
        with pytest.raises(KafkaError, match=rf"offset map {map_topic}\[0\].* offset 0 .*transaction"):
            read_offset_maps({"bootstrap.servers": kafka_bootstrap}, map_topic, end[(map_topic, 0)], "x", {}, wait=3.0)
    finally:
        foreign.abort_transaction(30)


def test_groups_restored_into_the_recreated_source_topic_without_rename_resume_where_they_were(
    source, group, backup, restorer, fresh_bucket, kafka_bootstrap
):
    from tests.support.restore import recreate_empty

    backup(fresh_bucket, source, ENVELOPE)
    recreate_empty(kafka_bootstrap, source, PARTITIONS)  # the disaster: the topic and its records are gone
    try:
        Admin({"bootstrap.servers": kafka_bootstrap}).delete_group(group)  # and the group's offsets with it
    except KafkaError as exc:  # Apache Kafka deleted them with the topic, and the empty group with them
        assert "does not exist" in str(exc)
    restore = restorer(fresh_bucket, source, {**ENVELOPE, "restore.transaction.records": "90"})
    assert restore.run().records == PARTITIONS * PER_PARTITION
    plan = restore.translate_groups(group)
    assert {(t.source_topic, t.target_topic) for t in plan.translations} == {(source, source)}
    assert next_records(kafka_bootstrap, source, group, PARTITIONS) == {p: p * 1000 + AT for p in range(PARTITIONS)}


def test_kill_9_mid_restore_then_resume_and_consumer_groups_from_the_cli(
    fresh_topic, target, group, backup, make_config, fresh_bucket, kafka_bootstrap, produce, tmp_path
):
    import os
    import signal
    import subprocess
    import sys

    from tests.support.restore import read_topic, restore_progress, run_cli, write_properties

    per_partition, late = 20_000, 15_000
    source = fresh_topic(PARTITIONS)
    produce(source, records(PARTITIONS, per_partition))
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    admin.commit_group_offsets(group, {(source, p): AT for p in range(PARTITIONS)})
    admin.commit_group_offsets(f"{group}-late", {(source, p): late for p in range(PARTITIONS)})
    backup(fresh_bucket, source, {**ENVELOPE, "flush.size": "2000"})

    raw, config = make_config(
        fresh_bucket,
        source,
        source=True,
        **{
            k.replace(".", "__"): v
            for k, v in restore_properties(source, target, **{"restore.transaction.records": "500"}).items()
        },
    )
    props = str(write_properties(tmp_path / "restore.properties", raw))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafka_s3.cli", "restore", "--no-progress", "--append", "-c", props],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while not any(v for v in restore_progress(kafka_bootstrap, config, source, target).values()):
            assert proc.poll() is None, "the restore ended before it could be killed"
            assert time.monotonic() < deadline, "the restore never committed progress"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)  # kill -9: the driver, its JVM and its Python workers
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    at_kill = restore_progress(kafka_bootstrap, config, source, target)
    assert any(v is None or v < per_partition for v in at_kill.values()), at_kill  # killed mid-restore

    resumed = run_cli(
        ["restore", "--no-progress", "--append", "-c", props, "--consumer-groups", f"{group}.*"], timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    for p in range(PARTITIONS):
        assert f"group {group}: {source}[{p}] {AT} -> {target}[{p}] " in resumed.stdout, resumed.stdout
    counts = {p: len(rows) for p, rows in read_topic(kafka_bootstrap, target).items()}
    assert counts == {0: 37 + per_partition, 1: per_partition, 2: per_partition}  # exactly once across the kill
    assert next_records(kafka_bootstrap, target, group, PARTITIONS) == {p: p * 1000 + AT for p in range(PARTITIONS)}
    assert next_records(kafka_bootstrap, target, f"{group}-late", PARTITIONS) == {
        p: p * 1000 + late for p in range(PARTITIONS)
    }

    planned = run_cli(["restore", "--dry-run", "-c", props, "--consumer-groups", group])
    assert planned.returncode == 0, planned.stderr[-4000:]
    assert f"group {group}: {source}[1] {AT} -> {target}[1] " in planned.stdout, planned.stdout
    assert f"{group}-late" not in planned.stdout


def test_groups_command_lists_snapshots_groups_and_translations(
    source, target, group, backup, restorer, make_config, fresh_bucket, kafka_bootstrap, tmp_path
):
    from tests.support.restore import run_cli, write_properties

    backup(fresh_bucket, source, ENVELOPE)
    properties = restore_properties(source, target)
    restorer(fresh_bucket, source, properties, APPEND).run()
    raw, _ = make_config(fresh_bucket, source, source=True, **{k.replace(".", "__"): v for k, v in properties.items()})
    props = str(write_properties(tmp_path / "restore.properties", raw))
    listed = run_cli(["groups", "-c", props, "--consumer-groups", group])
    assert listed.returncode == 0, listed.stderr[-4000:]
    assert f"{source}: 1 consumer-group snapshot(s)" in listed.stdout, listed.stdout
    assert f"group {group}: [0] {AT}, [1] {AT}, [2] {AT}" in listed.stdout, listed.stdout
    assert f"group {group}: {source}[2] {AT} -> {target}[2] " in listed.stdout, listed.stdout
    as_json = json.loads(run_cli(["groups", "-c", props, "--consumer-groups", group, "--json"]).stdout)
    assert as_json["topics"][source]["groups"][group] == {str(p): AT for p in range(PARTITIONS)}
    assert {t["target_partition"]: t["how"] for t in as_json["translations"]} == dict.fromkeys(
        range(PARTITIONS), "record"
    )


def test_compacted_source_groups_resume_at_the_first_surviving_record(
    admin_compacted_source, target, group, backup, restorer, fresh_bucket, kafka_bootstrap
):
    source, surviving = admin_compacted_source
    for rows in surviving.values():  # gaps: offsets compacted away, the last record still there
        assert len(rows) < PER_PARTITION and rows[-1]["offset"] == PER_PARTITION - 1
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    at = {"": 300, "-b": 650}  # 300: among the compacted-away records; 650: unique keys
    for suffix, offset in at.items():
        admin.commit_group_offsets(f"{group}{suffix}", {(source, p): offset for p in range(PARTITIONS)})
    backup(fresh_bucket, source, ENVELOPE)
    from tests.support.restore import read_topic

    assert read_topic(kafka_bootstrap, source) == surviving  # compaction did not move on while backing up
    restore = restorer(fresh_bucket, source, restore_properties(source, target), APPEND)
    assert restore.run().records == sum(len(rows) for rows in surviving.values())
    restore.translate_groups(f"{group}.*")
    for suffix, offset in at.items():
        expected = {p: value_number(next(r for r in surviving[p] if r["offset"] >= offset)["value"]) for p in surviving}
        assert next_records(kafka_bootstrap, target, f"{group}{suffix}", PARTITIONS) == expected


@pytest.fixture
def admin_compacted_source(kafka_bootstrap, produce):
    """A compacted topic whose first 600 records per partition share 10 keys (most are compacted away, leaving gaps)
    and whose last 400 have unique keys; returned once compaction has settled, with what survived."""
    from tests.support.restore import read_topic

    topic = f"compacted-{uuid.uuid4().hex[:10]}"
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    admin.create_topic(
        topic,
        PARTITIONS,
        config={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "segment.bytes": "20000",
            "min.cleanable.dirty.ratio": "0.001",
            "delete.retention.ms": "100",
        },
    )
    rows = [
        {
            "partition": p,
            "key": (f"k{i % 10}" if i < 600 else f"u{i}").encode(),
            "value": json.dumps({"n": p * 1000 + i, "pad": "x" * 40}).encode(),
        }
        for p in range(PARTITIONS)
        for i in range(PER_PARTITION)
    ]
    for start in range(0, len(rows), 250):  # in steps, so that segments roll between them
        produce(topic, rows[start : start + 250])
        time.sleep(0.2)
    deadline = time.monotonic() + 120
    previous = None
    while True:
        current = read_topic(kafka_bootstrap, topic)
        compacted = all(len(current[p]) < PER_PARTITION for p in range(PARTITIONS))
        if compacted and current == previous:
            return topic, current
        assert time.monotonic() < deadline, "the broker did not compact the topic"
        previous = current
        time.sleep(5)


def test_point_in_time_restore_uses_the_snapshot_of_its_time(
    fresh_topic, target, group, backup, restorer, fresh_bucket, kafka_bootstrap, produce, s3_client
):
    source = fresh_topic(PARTITIONS)
    produce(source, records(PARTITIONS, PER_PARTITION, base_ts=int(time.time() * 1000) - 60_000, step_ms=1))
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    admin.commit_group_offsets(group, {(source, p): 200 for p in range(PARTITIONS)})
    backup(fresh_bucket, source, ENVELOPE)  # snapshot 1: the group at 200
    time.sleep(0.05)
    admin.commit_group_offsets(group, {(source, p): AT for p in range(PARTITIONS)})
    backup(fresh_bucket, source, ENVELOPE)  # snapshot 2: the group at 500
    prefix = f"topics/_kafka-s3/avro/{source}/consumer-groups/"
    keys = sorted(o["Key"] for o in s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix=prefix)["Contents"])
    assert len(keys) == 2, keys
    second = int(keys[1].rsplit("/", 1)[-1].split(".")[0])

    until = RestoreOptions(until_timestamp=second - 1, append=True)  # every record is older: all restored
    restore = restorer(fresh_bucket, source, restore_properties(source, target), until)
    assert restore.run().records == PARTITIONS * PER_PARTITION
    plan = restore.translate_groups(group)
    assert {t.source_offset for t in plan.translations} == {200}
    assert next_records(kafka_bootstrap, target, group, PARTITIONS) == {p: p * 1000 + 200 for p in range(PARTITIONS)}
