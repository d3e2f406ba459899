"""The operator's view and the command line against the real services: ``kafka-s3 status`` (table and --json), the
backup's one log line per committed object, ``config validate``, missing buckets and ``bucket create``, and an
unreachable broker. The CLI runs as ``python -m kafka_s3.cli`` subprocesses (none of these start Spark)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import subprocess
import sys
import uuid

import pytest
from botocore.exceptions import ClientError

from kafka_s3.pipelines.backup.driver import Backup
from tests.support.backup import cli, data_keys, write_properties

pytestmark = pytest.mark.integration

COMMITTED = re.compile(r"committed (s3://\S+) records=(\d+) offsets=(\d+)\.\.(\d+) bytes=(\d+)$")


def _popen(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "kafka_s3.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )


def _finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_status_and_one_log_line_per_committed_object(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, tmp_path, caplog
):
    topic = fresh_topic(2)
    produce(
        topic,
        [{"partition": 0, "value": f'{{"i":{i}}}'.encode()} for i in range(5)]
        + [{"partition": 1, "value": f'{{"i":{i}}}'.encode()} for i in range(3)],
    )
    raw, config = make_config(fresh_bucket, topic, flush__size="2")
    started = dt.datetime.now(dt.UTC).replace(microsecond=0)

    caplog.set_level(logging.INFO, logger="kafka_s3.backup")
    summary = Backup(config, engine=engine).run_once()

    # One log line per committed data object, with its records, offsets and size.
    logged = {}
    for record in caplog.records:
        match = COMMITTED.search(record.getMessage())
        if match:
            url, records, first, last, size = match.groups()
            assert url not in logged, f"logged twice: {url}"
            logged[url] = (int(records), int(first), int(last), int(size))
    keys = data_keys(s3_client, fresh_bucket, topic)
    assert sorted(logged) == [f"s3://{fresh_bucket}/{k}" for k in keys]
    assert len(keys) == summary.objects == 5
    for key in keys:
        records, first, last, size = logged[f"s3://{fresh_bucket}/{key}"]
        start = int(key.rsplit("+", 1)[1].split(".")[0])
        assert (first, records) == (start, last - first + 1)
        assert size == s3_client.head_object(Bucket=fresh_bucket, Key=key)["ContentLength"]
    assert sum(v[0] for v in logged.values()) == 8

    # Two more records on partition 0: lag 2 there.
    produce(topic, [{"partition": 0, "value": b'{"i":5}'}, {"partition": 0, "value": b'{"i":6}'}])
    path = write_properties(tmp_path / "backup.properties", raw)
    table_proc, json_proc = _popen("status", "--config", str(path)), _popen("status", "--config", str(path), "--json")
    code, table, err = _finish(table_proc)
    assert code == 0, err
    code, out, err = _finish(json_proc)
    assert code == 0, err

    last_objects = {
        0: f"topics/{topic}/partition=0/{topic}+0+0000000004.json",
        1: f"topics/{topic}/partition=1/{topic}+1+0000000002.json",
    }
    expected = {0: (5, 7, 2), 1: (3, 3, 0)}  # committed, end, lag
    rows = {row["partition"]: row for row in json.loads(out)}
    assert sorted(rows) == [0, 1]
    for p, (committed, end, lag) in expected.items():
        row = rows[p]
        assert (row["topic"], row["committed"], row["end"], row["lag"]) == (topic, committed, end, lag)
        assert row["last_object"] == last_objects[p]
        at = dt.datetime.fromisoformat(row["last_commit"])
        assert started <= at <= dt.datetime.now(dt.UTC)
        assert row["group"] == f"connect-{raw['name']}"

    # The table shows the same, one row per partition.
    for p, (committed, end, lag) in expected.items():
        line = next(line for line in table.splitlines() if last_objects[p] in line)
        cells = [c.strip() for c in re.split(r"[│|┃]", line) if c.strip()]
        assert cells[:5] == [topic, str(p), str(committed), str(end), str(lag)], cells
        assert cells[5] == last_objects[p]
        assert cells[6] == rows[p]["last_commit"]


QUICKSTART = """\
name=s3-sink
connector.class=io.confluent.connect.s3.S3SinkConnector
tasks.max=1
topics=s3_topic
s3.region=us-west-2
s3.bucket.name=confluent-kafka-connect-s3-testing
s3.part.size=5242880
flush.size=3
storage.class=io.confluent.connect.s3.storage.S3Storage
format.class=io.confluent.connect.s3.format.avro.AvroFormat
schema.generator.class=io.confluent.connect.storage.hive.schema.DefaultSchemaGenerator
partitioner.class=io.confluent.connect.storage.partitioner.DefaultPartitioner
schema.compatibility=NONE
confluent.license=
confluent.topic.bootstrap.servers=localhost:9092
confluent.topic.replication.factor=1
"""


def test_config_validate(tmp_path):
    path = tmp_path / "quickstart-s3.properties"
    path.write_text(QUICKSTART)
    good = _popen("config", "validate", "--config", str(path))
    bad_number = _popen("config", "validate", "--config", str(path), "--set", "flush.size=abc")
    bad_format = _popen("config", "validate", "--config", str(path), "--set", "format.class=com.example.NoFormat")

    code, out, err = _finish(good)
    assert code == 0, err
    assert "valid" in out
    assert any("confluent.license" in line and "WARNING" in line for line in err.splitlines()), err

    for proc, key, value in ((bad_number, "flush.size", "abc"), (bad_format, "format.class", "com.example.NoFormat")):
        code, out, err = _finish(proc)
        assert code != 0
        errors = [line for line in _lines(err) if "WARNING" not in line]
        assert len(errors) == 1, err  # one line, no traceback
        assert errors[0].startswith("kafka-s3: error:") and key in errors[0] and value in errors[0], errors


def test_missing_bucket_is_an_error_and_bucket_create_makes_it(
    engine, make_config, fresh_topic, produce, s3_client, remove_bucket, tmp_path
):
    topic = fresh_topic(1)
    produce(topic, [{"value": b'{"i":1}'}])
    bucket = "t-" + uuid.uuid4().hex[:16]
    raw = make_config("placeholder", topic)[0]
    raw["s3.bucket.name"] = bucket
    path = write_properties(tmp_path / "backup.properties", raw)

    result = cli("backup", "--once", "--no-progress", "--config", str(path))
    assert result.returncode != 0
    assert _lines(result.stderr)[-1].startswith("kafka-s3: error:") and bucket in _lines(result.stderr)[-1]
    assert "does not exist" in result.stderr and "bucket create" in result.stderr
    with pytest.raises(ClientError):  # never created implicitly
        s3_client.head_bucket(Bucket=bucket)

    try:
        result = cli("bucket", "create", bucket, "--config", str(path))
        assert result.returncode == 0, result.stderr
        assert bucket in result.stdout
        s3_client.head_bucket(Bucket=bucket)
        # and the backup now runs into it
        _, config = make_config(bucket, topic)
        assert Backup(config, engine=engine).run_once().objects == 1
        assert data_keys(s3_client, bucket, topic) == [f"topics/{topic}/partition=0/{topic}+0+0000000000.json"]
    finally:
        remove_bucket(bucket)


def test_unreachable_broker_is_one_clear_error(make_config, fresh_bucket, tmp_path):
    raw = make_config(fresh_bucket, "some_topic")[0]
    raw["bootstrap.servers"] = "127.0.0.1:1"
    path = write_properties(tmp_path / "backup.properties", raw)
    procs = [
        _popen("backup", "--once", "--no-progress", "--config", str(path)),
        _popen("status", "--config", str(path)),
    ]
    for proc in procs:
        code, _, err = _finish(proc, timeout=240)
        assert code != 0
        lines = _lines(err)
        assert len(lines) <= 3, err[-3000:]  # no flood of client-library lines
        assert lines[-1].startswith("kafka-s3: error:") and "127.0.0.1:1" in lines[-1], lines
        assert "Traceback" not in err
