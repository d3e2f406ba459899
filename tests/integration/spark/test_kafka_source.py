"""The Kafka data source and a standalone Spark cluster, against the real broker."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from confluent_kafka import Producer

from tests.support.integration import standalone_cluster

pytestmark = pytest.mark.integration


def _produce(bootstrap, topic, partitions, per_partition):
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(
                topic,
                key=f"k{i}".encode(),
                value=f"v{p}-{i}".encode(),
                partition=p,
                headers=[("h", b"1"), ("h", b"2")],
                timestamp=1_700_000_000_000 + i,
            )
    producer.flush()


def test_kafka_source_reads_ranges_with_spark_kafka_columns(spark, kafka_bootstrap, fresh_topic):
    topic = fresh_topic(3)
    _produce(kafka_bootstrap, topic, 3, 50)
    df = (
        spark.read.format("kafka-s3-topic")
        .option("kafka.bootstrap.servers", kafka_bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps({topic: {"1": 10}}))
        .load()
    )
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    counts = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
    assert counts == {0: 50, 1: 40, 2: 50}
    row = df.where("partition = 2 and offset = 7").collect()[0]
    assert row.key == b"k7" and row.value == b"v2-7" and row.timestampType == 0
    assert [(h.key, h.value) for h in row.headers] == [("h", b"1"), ("h", b"2")]
    assert int(row.timestamp.timestamp() * 1000) == 1_700_000_000_007


@pytest.mark.cluster
def test_standalone_cluster_runs_a_kafka_read_in_its_tasks(kafka_bootstrap, fresh_topic, tmp_path):
    topic = fresh_topic(2)
    _produce(kafka_bootstrap, topic, 2, 100)
    with standalone_cluster() as master_url:
        script = tmp_path / "job.py"
        script.write_text(
            textwrap.dedent(f"""
            import json, os
            from kafka_s3.spark.session import build_session
            spark = build_session({master_url!r}, "cluster smoke test")
            assert spark.sparkContext.master.startswith("spark://")
            df = (spark.read.format("kafka-s3-topic").option("kafka.bootstrap.servers", {kafka_bootstrap!r})
                  .option("subscribe", {topic!r}).load())
            rows = df.groupBy("partition").count().collect()
            executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size()
            print(json.dumps({{"counts": {{r["partition"]: r["count"] for r in rows}}, "executors": executors}}))
            spark.stop()
        """)
        )
        out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["counts"] == {"0": 100, "1": 100}
        assert result["executors"] >= 2  # the driver plus the worker's executor
