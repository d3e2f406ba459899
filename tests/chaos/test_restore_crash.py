"""kill -9 the restore at random moments, run it again: the target topic equals a clean restore, no duplicates."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafka_s3.core.records import to_dicts
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.reader import read_range
from tests.chaos.chaos_helpers import cli

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

PARTITIONS = 3
PER_PARTITION = 6000


def _config(path: Path, topic: str, bucket: str, s3_env, bootstrap: str, target: str | None = None) -> None:
    lines = [
        "name=restore-crash",
        f"topics={topic}",
        "flush.size=500",
        f"s3.bucket.name={bucket}",
        f"store.url={s3_env['endpoint_url']}",
        f"s3.region={s3_env['region']}",
        f"bootstrap.servers={bootstrap}",
        "format.class=parquet",
        "store.envelope=true",
        "restore.transaction.records=700",  # several transactions per partition: crashes land between them
    ]
    if target:
        lines += [
            f"name=restore-{target}",
            f"topic.rename={topic}:{target}",
            "topic.creation.enable=true",
            "topic.creation.default.retention.ms=-1",  # 2017 records: not deleted by the default retention
            "exactly.once.support=required",
        ]
    path.write_text("\n".join(lines) + "\n")


def snapshot(bootstrap: str, topic: str) -> dict[int, list]:
    admin = Admin({"bootstrap.servers": bootstrap})
    tps = [(topic, p) for p in range(PARTITIONS)]
    ends = admin.end_offsets(tps)  # last stable offsets (read_committed)
    # Apache Kafka writes a committed transaction's markers just after commit_transaction returns: until then the
    # last stable offset lags behind the high watermark.
    deadline = time.monotonic() + 10
    while ends != admin.end_offsets(tps, read_committed=False) and time.monotonic() < deadline:
        time.sleep(0.1)
        ends = admin.end_offsets(tps)
    out = {}
    for p in range(PARTITIONS):
        rows = to_dicts(list(read_range({"bootstrap.servers": bootstrap}, topic, p, 0, ends[(topic, p)])))
        out[p] = [(r["key"], r["value"], r["headers"], r["timestamp"]) for r in rows]
    return out


def test_restore_survives_kill_9(
    chaos_trials, chaos_random, kafka_bootstrap, fresh_topic, s3_env, fresh_bucket, tmp_path
):
    topic = fresh_topic(PARTITIONS, prefix="rcrash")
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 100000})
    for i in range(PER_PARTITION * PARTITIONS):
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=os.urandom(32) + f"-{i}".encode(),
            partition=i % PARTITIONS,
            headers=[("n", str(i).encode()), ("n", b"again")],
            timestamp=1_500_000_000_000 + i,
        )
        if i % 5000 == 0:
            producer.poll(0)
    producer.flush()
    env = dict(os.environ)
    log = tmp_path / "runs.log"
    backup_config = tmp_path / "backup.properties"
    _config(backup_config, topic, fresh_bucket, s3_env, kafka_bootstrap)
    assert cli(["backup", "--once", "--no-progress", "-c", str(backup_config)], env, log).returncode == 0

    original = snapshot(kafka_bootstrap, topic)
    clean_config = tmp_path / "clean.properties"
    _config(clean_config, topic, fresh_bucket, s3_env, kafka_bootstrap, target=f"{topic}-clean")
    admin = Admin({"bootstrap.servers": kafka_bootstrap})

    def produced(target: str) -> int:
        topics = admin.topics()
        if target not in topics:
            return 0
        return sum(admin.end_offsets([(target, p) for p in range(topics[target])], read_committed=False).values())

    clean = cli(["restore", "-c", str(clean_config)], env, log, probe=lambda: produced(f"{topic}-clean") > 0)
    assert clean.returncode == 0, clean.output
    assert clean.work_started is not None
    assert snapshot(kafka_bootstrap, f"{topic}-clean") == original

    kills = 0
    for trial in range(chaos_trials):
        target = f"{topic}-t{trial}"
        config = tmp_path / f"trial{trial}.properties"
        _config(config, topic, fresh_bucket, s3_env, kafka_bootstrap, target=target)
        plan = clean.kill_plan(chaos_random, trial)
        crashed = cli(
            ["restore", "-c", str(config)],
            env,
            log,
            kill_group=trial % 3 != 2,
            probe=lambda target=target: produced(target) > 0,
            **plan,
        )
        moment = f"{plan} (work seen at {crashed.work_started})"
        kills += crashed.killed
        partial = produced(target)
        finished = cli(["restore", "-c", str(config)], env, log)
        assert finished.returncode == 0, f"trial {trial} (killed: {moment}): {finished.output}"
        got = snapshot(kafka_bootstrap, target)
        for p in range(PARTITIONS):
            assert len(got[p]) == len(original[p]), f"trial {trial} partition {p}: {len(got[p])} records"
            assert got[p] == original[p], f"trial {trial} partition {p}: records differ (killed: {moment})"
        print(
            f"trial {trial}: killed={crashed.killed} {moment} with {partial} records written "
            f"(committed or not), rerun took {finished.seconds:.1f}s"
        )
    assert kills >= max(1, chaos_trials // 2)
