"""Issue 28 item 1: ``spark.read.format("kafka-s3")`` never answers wrong — every query order on one DataFrame gives
the right rows, Spark's Kafka-source options mean what they mean there, and an option or topic it cannot honour is
an error when the DataFrame is loaded, naming what the backup holds.

One backup serves the module (two topics, 600 + 40 records): each test only loads DataFrames and counts."""

from __future__ import annotations

import json
import os
import uuid

import pytest
from confluent_kafka import Producer

from kafka_s3.core.config.sink import SINK
from tests.conftest import _remove_bucket
from tests.support.restore import records

pytestmark = pytest.mark.integration

PER_PARTITION = 300
ENVELOPE = {"format.class": "parquet", "store.envelope": "true", "flush.size": "50"}  # 6 objects per partition
LOOKUP = "partition = 1 AND offset IN (10, 11, 12)"


@pytest.fixture(scope="module")
def backed_up(engine, s3_client, s3_env, kafka_bootstrap):
    """(options to reach the backup with no topic named, the big topic, the small one)."""
    from kafka_s3.io.kafka.admin import Admin
    from kafka_s3.pipelines.backup.driver import Backup

    big, small = f"t-{uuid.uuid4().hex[:10]}", f"t-{uuid.uuid4().hex[:10]}"
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    admin.create_topic(big, 2, config={"retention.ms": "-1"})
    admin.create_topic(small, 1, config={"retention.ms": "-1"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    for topic, sent in ((big, records(2, PER_PARTITION)), (small, records(1, 40))):
        for r in sent:
            producer.produce(
                topic, r["value"], r["key"], r["partition"], headers=r["headers"], timestamp=r["timestamp"]
            )
    producer.flush()
    bucket = "t-" + uuid.uuid4().hex[:16]
    s3_client.create_bucket(Bucket=bucket)
    store = {
        "s3.bucket.name": bucket,
        "store.url": s3_env["endpoint_url"],
        "s3.region": s3_env["region"],
        "aws.access.key.id": s3_env["access_key"],
        "aws.secret.access.key": s3_env["secret_key"],
    }
    sink = {"name": f"it-{bucket}", "topics": f"{big},{small}", "bootstrap.servers": kafka_bootstrap}
    Backup(SINK.parse({**store, **sink, **ENVELOPE}), engine=engine).run_once()
    yield {**store, **ENVELOPE}, big, small
    _remove_bucket(s3_client, bucket)


def load(spark, options: dict[str, str], **more: str):
    return spark.read.format("kafka-s3").options(**options, **more).load()


@pytest.mark.issue(28, item=1)
def test_every_query_order_on_one_dataframe_is_answered_right(spark, backed_up):
    """With pushdown asked for: a lookup then a count, a count then a lookup, two lookups, and queries Spark hands
    the source no filter for (OR, an aggregation) after a lookup — each gives the rows a fresh DataFrame gives."""
    options, big, _ = backed_up
    whole = 2 * PER_PARTITION + 40
    df = load(spark, options, pushdown="true")
    assert (df.where(LOOKUP).count(), df.count()) == (3, whole)
    df = load(spark, options, pushdown="true")
    assert (df.count(), df.where(LOOKUP).count(), df.count()) == (whole, 3, whole)
    df = load(spark, options, pushdown="true")
    assert (df.where(LOOKUP).count(), df.where("partition = 0 AND offset < 100").count()) == (3, 100 + 40)
    assert df.where(f"offset = 3 OR topic = '{big}'").count() == 2 * PER_PARTITION + 1
    assert df.groupBy("topic", "partition").count().count() == 3


@pytest.mark.issue(28, item=1)
def test_spark_kafka_source_options_select_topics_partitions_offsets_and_times(spark, backed_up):
    options, big, small = backed_up

    def count(**more: str) -> int:
        return load(spark, options, **more).count()

    assert count(subscribe=small) == 40
    assert count(subscribe=f"{small},{big}") == 2 * PER_PARTITION + 40
    assert count(subscribePattern="t-[0-9a-f]+") == 2 * PER_PARTITION + 40
    assert count(assign=json.dumps({big: [1]})) == PER_PARTITION
    starting = {big: {"0": 290, "1": -2}}
    ending = {big: {"0": -1, "1": 5}}
    df = load(spark, options, subscribe=big, startingOffsets=json.dumps(starting), endingOffsets=json.dumps(ending))
    assert sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect()) == [
        *((0, o) for o in range(290, 300)),
        *((1, o) for o in range(5)),
    ]
    base = records(1, 1)[0]["timestamp"]  # record i of each partition was stamped base + i s
    times = {"startingTimestamp": str(base + 100_000), "endingTimestamp": str(base + 110_000)}
    assert count(subscribe=big, **times) == 2 * 10
    by_time = {big: {"0": base + 295_000, "1": base}}
    assert count(subscribe=big, startingOffsetsByTimestamp=json.dumps(by_time)) == 5 + PER_PARTITION
    headers = load(spark, options, subscribe=small, includeHeaders="false", failOnDataLoss="false")
    assert {r.headers for r in headers.select("headers").collect()} == {None}


@pytest.mark.issue(28, item=1)
def test_an_option_the_reader_cannot_honour_is_an_error_when_the_dataframe_is_loaded(spark, backed_up):
    options, big, small = backed_up
    with pytest.raises(Exception, match=r"unknown option 'subscrib'.*did you mean 'subscribe'"):
        load(spark, options, subscrib=small)
    with pytest.raises(Exception, match="subscribe and assign both give the topics to read"):
        load(spark, options, subscribe=small, assign=json.dumps({big: [0]}))
    with pytest.raises(Exception, match=r"startingOffsets must name every partition read.*leaves out .*\[1\]"):
        load(spark, options, subscribe=big, startingOffsets=json.dumps({big: {"0": 3}})).count()


@pytest.mark.issue(28, item=1)
def test_a_topic_the_backup_does_not_hold_is_an_error_naming_the_topics_it_holds(spark, backed_up):
    options, big, small = backed_up
    held = ", ".join(sorted((big, small)))
    for option in ("topics", "subscribe"):
        with pytest.raises(Exception, match=f"{option}: topic nonexistent not in the backup \\(it holds {held}\\)"):
            load(spark, options, **{option: "nonexistent"}).count()
    with pytest.raises(Exception, match=f"assign: {big} partition 7 not in the backup \\({big} holds partitions 0, 1"):
        load(spark, options, assign=json.dumps({big: [0, 7]})).count()
    with pytest.raises(
        Exception, match=f"subscribePattern 'orders.*' matches no topic of the backup \\(it holds {held}"
    ):
        load(spark, options, subscribePattern="orders.*").count()


@pytest.mark.issue(28, item=1)
def test_a_backup_loads_from_its_s3_path_with_the_object_store_from_the_aws_environment(spark, backed_up, s3_env):
    """``load("s3://bucket/topics")``: bucket and topics.dir from the path, endpoint and credentials from the usual
    AWS variables (the services' ones here), no configuration file."""
    options, big, small = backed_up
    assert s3_env["endpoint_url"] == os.environ["AWS_ENDPOINT_URL_S3"]
    df = spark.read.format("kafka-s3").options(**ENVELOPE).load(f"s3://{options['s3.bucket.name']}/topics")
    assert df.count() == 2 * PER_PARTITION + 40
    with pytest.raises(Exception, match=r"path 's3://elsewhere/topics' says s3.bucket.name=elsewhere"):
        spark.read.format("kafka-s3").options(**options).load("s3://elsewhere/topics").count()
