"""kill -9 the backup at random moments, restart it to completion: the bucket equals a clean run's, byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from confluent_kafka import Producer

from kafka_s3.core.config.source import SOURCE
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.read.discovery import discover
from kafka_s3.pipelines.read.layouts import detected
from kafka_s3.pipelines.read.plugins import ReadPlugins
from kafka_s3.pipelines.read.reader import read_partition
from tests.chaos.chaos_helpers import bucket_contents, cli

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

PARTITIONS = 3
PER_PARTITION = 3000
BASE_TS = 1_700_000_000_000  # record i has timestamp BASE_TS + i seconds: ~2.5 hours, several hour directories

TIME_BASED = {
    "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
    "path.format": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH",
    "partition.duration.ms": "3600000",
    "locale": "en",
    "timezone": "UTC",
    "rotate.interval.ms": "600000",  # record-time rotation too
}
JSON_VALUES = {
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
# Exactly-once holds for every partitioner whose directories depend only on the records: each trial crashes one.
VARIANTS = {
    "default": {},
    "field": {
        **JSON_VALUES,
        "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner",
        "partition.field.name": "region",
    },
    "time-record": {**TIME_BASED, "timestamp.extractor": "Record"},
    "time-recordfield": {**JSON_VALUES, **TIME_BASED, "timestamp.extractor": "RecordField", "timestamp.field": "ts"},
    # Lenses' layout (a Lenses sink configuration): an object's name holds its last offset and time span, known only
    # when it closes, so its bytes are staged until its chunk commits (set up in _write_config: it names the bucket)
    "lenses": {},
}
LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"


def _write_config(
    path: Path, name: str, topic: str, bucket: str, s3_env, bootstrap: str, variant: str = "default"
) -> None:
    settings = {
        "name": name,
        "connector.class": "io.confluent.connect.s3.S3SinkConnector",
        "topics": topic,
        "flush.size": "200",
        "max.records.per.partition.per.cycle": "1000",  # several cycles: crashes land between offset commits too
        "s3.bucket.name": bucket,
        "store.url": s3_env["endpoint_url"],
        "s3.region": s3_env["region"],
        "bootstrap.servers": bootstrap,
        "format.class": "io.confluent.connect.s3.format.avro.AvroFormat",
        "avro.codec": "deflate",
        "store.envelope": "true",
        "store.kafka.keys": "false",
        **VARIANTS[variant],
    }
    if variant == "lenses":
        for key in ("topics", "flush.size", "format.class", "avro.codec", "store.envelope", "store.kafka.keys"):
            del settings[key]
        settings |= {
            "connector.class": LENSES_SINK,
            "connect.s3.kcql": f"INSERT INTO {bucket}:topics SELECT * FROM {topic} STOREAS `JSON` "
            "PROPERTIES('store.envelope'=true, 'flush.count'=200)",
            "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        }
    path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))


def _records_in_bucket(config_path: Path) -> list[tuple[int, int]]:
    from kafka_s3.core.config.loader import load

    config = load(SOURCE, config_path)
    store = StoreSpec.from_config(config).open()
    config, _ = detected(config, store)  # the layout the bucket holds (Lenses' for the lenses variant)
    plugins = ReadPlugins.from_config(config)
    seen = []
    for (_topic, partition), part in discover(store, plugins).items():
        for batch in read_partition(store, plugins, part):
            seen.extend((partition, o) for o in batch.column("offset").to_pylist())
    return seen


def _without_marks(contents: dict[str, bytes]) -> tuple[dict[str, bytes], dict[str, str]]:
    """The bucket without its committed-end marks (``.tail``: which chunks get one depends on where cycles ended)
    and without the cluster-state records named by the time they were taken (topic configs, consumer-group
    snapshots, schemas: issue 17), and each partition's newest mark (its committed end, which must not depend on
    crashes)."""
    kept, newest = {}, {}
    for key, body in contents.items():
        # Lenses' lock objects are named by the connector (each run's own name): checked on their own
        if key.endswith((".topicconfig", ".offsets", ".schemas")) or key.startswith(".indexes/"):
            continue
        if key.endswith(".tail"):
            directory, name = key.rsplit("/", 1)
            newest[directory] = max(newest.get(directory, ""), name)
        else:
            kept[key] = body
    return kept, newest


def test_backup_survives_kill_9(
    chaos_trials, chaos_random, kafka_bootstrap, fresh_topic, s3_env, s3_client, fresh_bucket, new_bucket, tmp_path
):
    topic = fresh_topic(PARTITIONS, prefix="crash")
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5, "queue.buffering.max.messages": 100000})
    for i in range(PER_PARTITION * PARTITIONS):
        ts = BASE_TS + i * 1000
        value = json.dumps({"region": f"r{i % 4}", "ts": ts, "pad": os.urandom(32).hex(), "i": i}).encode()
        producer.produce(
            topic,
            key=f"k{i}".encode(),
            value=value,
            partition=i % PARTITIONS,
            timestamp=ts,
            headers=[("n", str(i).encode())],
        )
        if i % 5000 == 0:
            producer.poll(0)
    producer.flush()
    env = dict(os.environ)
    log = tmp_path / "runs.log"
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    ends = admin.end_offsets([(topic, p) for p in range(PARTITIONS)])

    cleans = {}  # variant -> (its clean run, the bucket it made)
    clean_marks = {}  # variant -> the clean bucket, committed-end marks included

    def has_data(bucket: str) -> bool:  # a data object landed (the bookkeeping objects come first)
        return s3_client.list_objects_v2(Bucket=bucket, Prefix=f"topics/{topic}/", MaxKeys=1).get("KeyCount", 0) > 0

    def clean_run(variant: str):
        if variant not in cleans:
            bucket = new_bucket(f"{fresh_bucket}-clean-{variant}")
            config = tmp_path / f"clean-{variant}.properties"
            _write_config(config, f"clean-{variant}-{fresh_bucket}", topic, bucket, s3_env, kafka_bootstrap, variant)
            run = cli(
                ["backup", "--once", "--no-progress", "-c", str(config)], env, log, probe=lambda: has_data(bucket)
            )
            assert run.returncode == 0, run.output
            assert run.work_started is not None
            offsets = _records_in_bucket(config)
            assert len(offsets) == len(set(offsets)) == PER_PARTITION * PARTITIONS  # every record exactly once
            contents = bucket_contents(s3_client, bucket)
            clean_marks[variant] = contents
            cleans[variant] = (run, _without_marks(contents)[0])
        return cleans[variant]

    kills = 0
    for trial in range(chaos_trials):
        variant = list(VARIANTS)[trial % len(VARIANTS)]
        clean, expected = clean_run(variant)
        bucket = new_bucket(f"{fresh_bucket}-{trial}")
        config = tmp_path / f"trial{trial}.properties"
        _write_config(config, f"trial-{trial}-{fresh_bucket}", topic, bucket, s3_env, kafka_bootstrap, variant)
        plan = clean.kill_plan(chaos_random, trial)
        crashed = cli(
            ["backup", "--once", "--no-progress", "-c", str(config)],
            env,
            log,
            kill_group=trial % 3 != 2,
            probe=lambda bucket=bucket: has_data(bucket),
            **plan,
        )
        moment = f"{variant}: {plan} (work seen at {crashed.work_started})"
        kills += crashed.killed
        finished = cli(["backup", "--once", "--no-progress", "-c", str(config)], env, log)
        assert finished.returncode == 0, f"trial {trial} (killed: {moment}): {finished.output}"
        got, marks = _without_marks(bucket_contents(s3_client, bucket))
        assert sorted(got) == sorted(expected), f"trial {trial}: keys differ (killed: {moment})"
        assert marks == _without_marks(clean_marks[variant])[1], f"trial {trial}: committed ends differ ({moment})"
        assert all(got[k] == expected[k] for k in expected), f"trial {trial}: bytes differ (killed: {moment})"
        committed = admin.group_offsets(f"connect-trial-{trial}-{fresh_bucket}", list(ends))
        assert committed == ends, f"trial {trial}: group offsets {committed} != {ends}"
        if variant == "lenses":  # each partition's lock holds its last offset, as Lenses' own after a full run
            for (_, partition), end in ends.items():
                key = f".indexes/trial-{trial}-{fresh_bucket}/.locks/{topic}/{partition}.lock"
                lock = json.loads(s3_client.get_object(Bucket=bucket, Key=key)["Body"].read())
                assert lock["committedOffset"] == end - 1, f"trial {trial}: {key} {lock} ({moment})"
        print(f"trial {trial}: killed={crashed.killed} {moment}, restart took {finished.seconds:.1f}s")
    assert kills >= max(1, chaos_trials // 2), "most trials must actually kill a running backup"


def test_backup_resumes_from_the_bucket_when_group_offsets_are_lost(
    kafka_bootstrap, fresh_topic, s3_env, s3_client, fresh_bucket, tmp_path
):
    topic = fresh_topic(1, prefix="lost")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(1000):
        producer.produce(topic, value=f"v{i}".encode())
    producer.flush()
    env = dict(os.environ)
    log = tmp_path / "runs.log"
    config = tmp_path / "lost.properties"
    _write_config(config, f"lost-{fresh_bucket}", topic, fresh_bucket, s3_env, kafka_bootstrap)
    assert cli(["backup", "--once", "--no-progress", "-c", str(config)], env, log).returncode == 0
    before = bucket_contents(s3_client, fresh_bucket)

    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    admin.delete_group(f"connect-lost-{fresh_bucket}")
    assert admin.group_offsets(f"connect-lost-{fresh_bucket}", [(topic, 0)]) == {(topic, 0): None}
    for i in range(1000, 1500):
        producer.produce(topic, value=f"v{i}".encode())
    producer.flush()

    run = cli(["backup", "--once", "--no-progress", "-c", str(config)], env, log)
    assert run.returncode == 0, run.output
    assert "resuming from the bucket's last chunk" in run.output
    after = bucket_contents(s3_client, fresh_bucket)
    assert all(after[k] == v for k, v in before.items())  # nothing existing was rewritten
    offsets = sorted(o for _, o in _records_in_bucket(config))
    assert offsets == list(range(1500))  # nothing missing, nothing twice
    assert admin.group_offsets(f"connect-lost-{fresh_bucket}", [(topic, 0)]) == {(topic, 0): 1500}
