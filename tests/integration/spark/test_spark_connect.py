"""Issue 18 item 4: the same jobs through a long-running Spark Connect server (``--remote sc://host:port``).

The server is pyspark's own, started by the dev services' code (``start_spark_connect``) on a free port; Kafka and
S3 are the suite's real services. A backup and a restore through the command line are record-exact, and both data
sources (``kafka-s3``, ``kafka-s3-topic``) read over Connect, registered on the Connect session."""

from __future__ import annotations

import time

import pytest

from kafka_s3.core.errors import ConfigError
from kafka_s3.io.kafka.admin import Admin
from tests.support.integration import free_port_pair, run_cli, stable_end_offsets, write_properties

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def connect_url(services, tmp_path_factory):
    """A Spark Connect server of this module's own (its Python workers run this interpreter)."""
    import os

    from tools import services as dev

    directory = tmp_path_factory.mktemp("spark-connect")
    saved = os.environ.get("KAFKA_S3_CONNECT_SESSIONS")
    os.environ["KAFKA_S3_CONNECT_SESSIONS"] = str(directory / "sessions.json")  # not the user's ~/.cache
    url = dev.start_spark_connect(free_port_pair(), directory)
    yield url
    dev.stop_spark_connect(directory)
    if saved is None:
        os.environ.pop("KAFKA_S3_CONNECT_SESSIONS", None)
    else:
        os.environ["KAFKA_S3_CONNECT_SESSIONS"] = saved


def sent_records(partitions: int = 2, per_partition: int = 5) -> list[dict]:
    return [
        {
            "partition": p,
            "key": None if i == 2 else f"k{p}-{i}".encode(),
            "value": f'{{"p":{p},"i":{i}}}'.encode(),
            "headers": [("h", b"1"), ("h", f"{p}-{i}".encode())],
            "timestamp": 1_700_000_000_000 + p * 100 + i,
        }
        for p in range(partitions)
        for i in range(per_partition)
    ]


def read_back(bootstrap: str, topic: str) -> dict[int, list[tuple]]:
    """(offset, key, value, headers, timestamp) of every record of ``topic``, per partition (read_committed)."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    count = Admin({"bootstrap.servers": bootstrap}).topics()[topic]
    ends = stable_end_offsets(bootstrap, [(topic, p) for p in range(count)])
    out: dict[int, list[tuple]] = {p: [] for p in range(count)}
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "item4",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    pending = {p for p in range(count) if ends[(topic, p)] > 0}  # ends count transaction markers too
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(count)])
        deadline = time.monotonic() + 60
        while pending:
            assert time.monotonic() < deadline, f"{topic}: could not read up to {ends}"
            for m in consumer.consume(num_messages=1000, timeout=0.2):
                if m.error() is not None:
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    if m.offset() >= ends[(topic, m.partition())]:
                        pending.discard(m.partition())
                    continue
                out[m.partition()].append((m.offset(), m.key(), m.value(), list(m.headers() or []), m.timestamp()[1]))
    finally:
        consumer.close()
    return out


def expected_rows(records: list[dict], partitions: int) -> dict[int, list[tuple]]:
    out: dict[int, list[tuple]] = {p: [] for p in range(partitions)}
    for r in records:
        rows = out[r["partition"]]
        rows.append((len(rows), r["key"], r["value"], r["headers"], r["timestamp"]))
    return out


def test_backup_and_restore_through_spark_connect_are_record_exact(
    connect_url, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, tmp_path
):
    topic = fresh_topic(2)
    records = sent_records()
    produce(topic, records)
    target = f"{topic}-restored"
    exact = {"format__class": "parquet", "store__envelope": "true"}

    raw, _ = make_config(fresh_bucket, topic, **exact)
    backup = run_cli(
        [
            "backup",
            "--once",
            "--no-progress",
            "--remote",
            connect_url,
            "--config",
            str(write_properties(tmp_path / "b.properties", raw)),
        ]
    )
    assert backup.returncode == 0, backup.stderr[-3000:]
    assert f"(Spark Connect {connect_url})" in backup.stderr  # the session was a Connect client, no local JVM
    assert "10 records in" in backup.stdout

    raw, _ = make_config(
        fresh_bucket,
        topic,
        source=True,
        topic__rename=f"{topic}:{target}",
        topic__creation__enable="true",
        topic__creation__default__retention__ms="-1",  # the records are from 2023: the default 7 days deletes them
        **exact,
    )
    restore_config = str(write_properties(tmp_path / "r.properties", raw))
    restore = run_cli(["restore", "--no-progress", "--remote", connect_url, "--config", restore_config])
    assert restore.returncode == 0, restore.stderr[-3000:]
    assert read_back(kafka_bootstrap, target) == expected_rows(records, 2)

    # Run again through the same server (its shared session, warm workers): exactly once, nothing produced twice.
    again = run_cli(["restore", "--no-progress", "--remote", connect_url, "--config", restore_config])
    assert again.returncode == 0, again.stderr[-3000:]
    assert read_back(kafka_bootstrap, target) == expected_rows(records, 2)


def test_an_engine_and_both_dataframe_readers_on_a_connect_session_give_the_backed_up_records(
    connect_url, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    from kafka_s3.pipelines.backup.driver import Backup
    from kafka_s3.spark.engine import SparkEngine
    from kafka_s3.spark.session import build_session, is_remote

    topic = fresh_topic(2)
    records = sent_records(2, 4)
    produce(topic, records)
    raw, sink = make_config(fresh_bucket, topic, format__class="parquet", store__envelope="true")

    spark = build_session(remote=connect_url)  # registers both data sources on the Connect session
    try:
        assert is_remote(spark)
        engine = SparkEngine(session=spark)
        summary = Backup(sink, engine=engine).run_once()
        assert summary.records == 8
        assert summary.committed == {(topic, 0): 4, (topic, 1): 4}

        def rows(df) -> dict[int, list[tuple]]:
            picked = df.selectExpr("partition", "offset", "key", "value", "headers", "unix_millis(timestamp) AS ms")
            out: dict[int, list[tuple]] = {0: [], 1: []}
            for r in picked.orderBy("partition", "offset").collect():
                out[r.partition].append((r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers or []], r.ms))
            return out

        expected = expected_rows(records, 2)
        assert rows(spark.read.format("kafka-s3").options(**raw).load()) == expected
        bounded = spark.read.format("kafka-s3").options(**raw).option("from.offset", "1:2").load()
        assert [(r.partition, r.offset) for r in bounded.where("partition = 1").orderBy("offset").collect()] == [
            (1, 2),
            (1, 3),
        ]
        topic_df = (
            spark.read.format("kafka-s3-topic")
            .option("kafka.bootstrap.servers", kafka_bootstrap)
            .option("subscribe", topic)
            .load()
        )
        assert rows(topic_df) == expected
    finally:
        spark.stop()  # this client only: the server and its shared session go on


def test_spark_connect_refusals_name_the_key_or_the_server(connect_url):
    from kafka_s3.spark.session import build_session

    with pytest.raises(ConfigError) as static:
        build_session(remote=connect_url, conf={"spark.executor.memory": "3g"}, data_sources=False)
    assert static.value.key == "spark.executor.memory"
    assert "spark.executor.memory" in str(static.value) and connect_url in str(static.value)

    closed = f"sc://127.0.0.1:{free_port_pair()}"
    started = time.monotonic()
    with pytest.raises(ConfigError) as unreachable:
        build_session(remote=closed, data_sources=False)
    assert closed in str(unreachable.value) and unreachable.value.key == "--remote"
    assert time.monotonic() - started < 15  # not the Connect client's minutes of retries

    result = run_cli(["backup", "--once", "--remote", closed, "--master", "local[1]", "--config", "x.properties"])
    assert result.returncode == 2 and "not allowed with argument" in result.stderr
