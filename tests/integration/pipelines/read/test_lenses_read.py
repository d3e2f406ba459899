"""Issue 15 (B, D10): the DataFrame reader (``spark.read.format("kafka-s3")``) and ``kafka-s3 read`` on a bucket
written by Lenses' S3 sink, configured by a Lenses source configuration, give the records Lenses' source gives.

The bucket is the one ``tests.integration.pipelines.restore.test_lenses_json`` builds from Lenses' source code (LS
``sink/naming/FileNamer``, ``sink/transformers/SchemalessEnvelopeTransformer``, ``conversion/ToJsonDataConverter``,
``seek/IndexManagerV2``):
names hold each object's last offset, envelope lines carry key, value, headers and metadata.
"""

from __future__ import annotations

import json

import pytest

from tests.integration.pipelines.restore.test_lenses_json import (
    LENSES_SOURCE,
    RECORDS,
    _bytes,
    _kcql,
    lenses_objects,
)
from tests.support.restore import run_cli, write_properties

pytestmark = pytest.mark.integration


@pytest.fixture
def lenses_bucket(make_config, fresh_bucket, fresh_topic, s3_client):
    """(topic, raw source properties) of a Lenses envelope bucket."""
    source = f"orders-{fresh_topic(1)}"
    for key, body in lenses_objects(source, envelope=True).items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    raw, _ = make_config(
        fresh_bucket,
        source,
        source=True,
        connector__class=LENSES_SOURCE,
        connect__s3__kcql=_kcql("restored", fresh_bucket, True),
    )
    return source, raw


def test_dataframe_reader_on_a_lenses_bucket_gives_the_envelope_records(spark, lenses_bucket):
    topic, raw = lenses_bucket

    df = spark.read.format("kafka-s3").options(**raw).load()
    rows = df.selectExpr("topic", "partition", "offset", "key", "value", "headers", "unix_millis(timestamp) AS ms")
    got = [
        (r.topic, r.partition, r.offset, r.key, r.value, [h.key for h in r.headers or []], r.ms)
        for r in rows.orderBy("partition", "offset").collect()
    ]

    assert got == [
        (topic, p, o, _bytes(k), _bytes(v), list(h), ts) for p, o, k, v, h, ts in sorted(RECORDS, key=lambda r: r[:2])
    ]


def test_kafka_s3_read_on_a_lenses_bucket_prints_its_records(lenses_bucket, tmp_path):
    topic, raw = lenses_bucket
    path = write_properties(tmp_path / "lenses-source.properties", raw)

    result = run_cli(["read", "--config", str(path), "--offset", "0:0", "--count", "5", "--json"], timeout=180)

    assert result.returncode == 0, result.stderr[-3000:]
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    expected = [r for r in RECORDS if r[0] == 0]
    assert [(d["topic"], d["partition"], d["offset"]) for d in docs] == [(topic, 0, r[1]) for r in expected]
    assert [d["timestamp"] for d in docs] == [r[5] for r in expected]
    assert docs[0]["key"] == "k1" and json.loads(docs[0]["value"]) == RECORDS[0][3]


def test_dataframe_reader_on_a_lenses_avro_envelope_bucket_gives_its_records_headers_and_timestamps(
    spark, make_config, fresh_bucket, fresh_topic, s3_client
):
    from tests.integration.pipelines.restore.test_lenses_avro_parquet import RECORDS as AVRO_RECORDS
    from tests.integration.pipelines.restore.test_lenses_avro_parquet import _kcql as avro_kcql
    from tests.integration.pipelines.restore.test_lenses_avro_parquet import lenses_objects as avro_objects

    topic = f"orders-{fresh_topic(1)}"
    for key, body in avro_objects(topic, "avro", True).items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    raw, _ = make_config(
        fresh_bucket,
        topic,
        source=True,
        connector__class=LENSES_SOURCE,
        connect__s3__kcql=avro_kcql("restored", fresh_bucket, "avro", True),
    )

    df = spark.read.format("kafka-s3").options(**raw).load()
    rows = df.selectExpr("partition", "offset", "key", "value", "headers", "unix_millis(timestamp) AS ms")
    got = [
        (r.partition, r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers], r.ms)
        for r in rows.orderBy("partition", "offset").collect()
    ]

    assert got == [
        (p, o, k.encode(), v.encode(), [(n, h[n].encode()) for n in sorted(h)], ts)
        for p, o, k, v, h, ts in AVRO_RECORDS
    ]
