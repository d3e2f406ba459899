"""behavior.on.null.values against the real services: fail (a clear error naming topic, partition and offset, nothing
committed past the last full chunk), ignore (tombstones skipped) and write (keys
sidecars in the tombstone directory, as Confluent)."""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.errors import BackupFailed
from kafka_s3.pipelines.backup.driver import Backup, group_id
from tests.support.backup import data_keys, get, group_offsets, json_lines

pytestmark = pytest.mark.integration

JSON = {"value.converter": "json", "value.converter.schemas.enable": "false", "format.class": "json"}


def _config(make_config, bucket, topic, **properties):
    props = {**JSON, "flush.size": "2", **properties}
    return make_config(bucket, topic, **{k.replace(".", "__"): v for k, v in props.items()})[1]


def _value(i: int) -> bytes:
    return json.dumps({"n": i}).encode()


def test_fail_names_the_record_and_commits_only_full_chunks_before_it(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic = fresh_topic(2)
    # partition 0: a tombstone at offset 5; partition 1 is clean.
    produce(
        topic,
        [{"partition": 0, "value": None if i == 5 else _value(i)} for i in range(8)]
        + [{"partition": 1, "value": _value(i)} for i in range(4)],
    )
    config = _config(make_config, fresh_bucket, topic, **{"behavior.on.null.values": "fail"})

    with pytest.raises(BackupFailed) as failure:
        Backup(config, engine=engine).run_once()

    message = str(failure.value)
    assert f"{topic}[0]" in message and "offset 5" in message and "behavior.on.null.values" in message
    assert f"{topic}[1]" not in message
    d = f"topics/{topic}"
    # Chunks 0-1 and 2-3 are complete before the tombstone; 4.. never commits.
    assert data_keys(s3_client, fresh_bucket, topic) == [
        f"{d}/partition=0/{topic}+0+0000000000.json",
        f"{d}/partition=0/{topic}+0+0000000002.json",
        f"{d}/partition=1/{topic}+1+0000000000.json",
        f"{d}/partition=1/{topic}+1+0000000002.json",
    ]
    assert json_lines(get(s3_client, fresh_bucket, f"{d}/partition=0/{topic}+0+0000000002.json")) == [
        {"n": 2},
        {"n": 3},
    ]
    assert group_offsets(kafka_bootstrap, group_id(config), topic, 2) == {0: 4, 1: 4}

    # A re-run fails the same way at the same record and writes nothing new.
    with pytest.raises(BackupFailed, match="offset 5"):
        Backup(config, engine=engine).run_once()
    assert len(data_keys(s3_client, fresh_bucket, topic)) == 4
    assert group_offsets(kafka_bootstrap, group_id(config), topic, 2) == {0: 4, 1: 4}


def test_ignore_skips_tombstones(engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap):
    topic = fresh_topic(1)
    nulls = {1, 4, 7}
    produce(topic, [{"value": None if i in nulls else _value(i)} for i in range(8)])
    config = _config(make_config, fresh_bucket, topic, **{"behavior.on.null.values": "ignore"})

    summary = Backup(config, engine=engine).run_once()

    d = f"topics/{topic}/partition=0"
    # flush.size counts the records written: 0,2 | 3,5 | 6 (the trailing tombstone 7 is skipped)
    expected = {
        f"{d}/{topic}+0+0000000000.json": [0, 2],
        f"{d}/{topic}+0+0000000003.json": [3, 5],
        f"{d}/{topic}+0+0000000006.json": [6],
    }
    assert data_keys(s3_client, fresh_bucket, topic) == sorted(expected)
    for key, ns in expected.items():
        assert json_lines(get(s3_client, fresh_bucket, key)) == [{"n": n} for n in ns]
    assert summary.records == 5
    assert group_offsets(kafka_bootstrap, group_id(config), topic, 1) == {0: 8}


def test_write_keeps_tombstones_as_confluent_does_keys_and_headers_in_the_tombstone_directory(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    """CS ``util/TombstoneSupportedPartitioner`` + ``format/KeyValueHeaderRecordWriterProvider``: no value object for
    tombstones, only their keys sidecar (store.kafka.keys=true is required), in ``tombstone/``."""
    topic = fresh_topic(1)
    nulls = {1, 4}
    produce(topic, [{"key": b"k", "value": None if i in nulls else _value(i)} for i in range(6)])
    props = {"behavior.on.null.values": "write", "store.kafka.keys": "true", "key.converter": "string"}
    config = _config(make_config, fresh_bucket, topic, **props)

    summary = Backup(config, engine=engine).run_once()

    d, t = f"topics/{topic}/partition=0", f"topics/{topic}/tombstone"
    expected = {
        f"{d}/{topic}+0+0000000000.json": [{"n": 0}],
        f"{d}/{topic}+0+0000000002.json": [{"n": 2}, {"n": 3}],
        f"{d}/{topic}+0+0000000005.json": [{"n": 5}],
    }
    keys = [k[: -len(".json")] + ".keys.avro" for k in expected]
    tombstones = [f"{t}/{topic}+0+0000000001.keys.avro", f"{t}/{topic}+0+0000000004.keys.avro"]
    assert data_keys(s3_client, fresh_bucket, topic) == sorted([*expected, *keys, *tombstones])
    for key, rows in expected.items():
        assert json_lines(get(s3_client, fresh_bucket, key)) == rows
    assert summary.records == 6
    assert group_offsets(kafka_bootstrap, group_id(config), topic, 1) == {0: 6}


def test_write_without_store_kafka_keys_is_refused(engine, make_config, fresh_bucket, fresh_topic):
    from kafka_s3.core.errors import ConfigError

    config = _config(make_config, fresh_bucket, fresh_topic(1), **{"behavior.on.null.values": "write"})
    with pytest.raises(ConfigError, match="store.kafka.keys=true") as refused:
        Backup(config, engine=engine)
    assert refused.value.key == "behavior.on.null.values"
