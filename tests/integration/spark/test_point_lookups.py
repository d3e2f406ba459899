"""Issue 18 item 5: ``spark.read.format("kafka-s3").option("pushdown", "true")`` pushes filters on topic, partition,
offset and timestamp down to planning: a point lookup plans one Spark partition and reads only the objects whose
offset spans hold the offsets asked for, and returns exactly the rows a full scan would."""

from __future__ import annotations

import re

import pytest
from pyspark.sql.datasource import EqualTo, In

from kafka_s3.spark.backup_source import BackupDataSource
from tests.support.restore import get_object, read_topic, records, replace_object, same_size_garbage

pytestmark = pytest.mark.integration

PER_PARTITION = 1500
FLUSH = 100  # 15 objects per partition
ENVELOPE = {"format.class": "parquet", "store.envelope": "true", "flush.size": str(FLUSH)}
WANTED = tuple(range(700, 710))


def options(make_config, bucket, topic, properties) -> dict[str, str]:
    raw, _ = make_config(bucket, topic, **{k.replace(".", "__"): v for k, v in properties.items()})
    return raw


def rows(df) -> list[tuple]:
    picked = df.selectExpr("topic", "partition", "offset", "key", "value", "unix_millis(timestamp) AS ms")
    return [tuple(r) for r in picked.orderBy("topic", "partition", "offset").collect()]


@pytest.fixture
def backed_up(backup, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap):
    topic = fresh_topic(2)
    produce(topic, records(2, PER_PARTITION))
    backup(fresh_bucket, topic, ENVELOPE)
    return topic, options(make_config, fresh_bucket, topic, ENVELOPE), read_topic(kafka_bootstrap, topic)


def test_point_lookup_plans_only_the_covering_object(backed_up):
    topic, raw, _ = backed_up
    reader = BackupDataSource({**raw, "pushdown": "true"}).reader(None)  # the reader Spark builds, planned as it does
    assert list(reader.pushFilters([EqualTo(("partition",), 1), In(("offset",), WANTED)])) == []
    planned = reader.partitions()
    assert [(p.topic, p.partition, [o.start for o in p.objects]) for p in planned] == [(topic, 1, [700])]

    everything = BackupDataSource(raw).reader(None).partitions()
    assert [len(p.objects) for p in everything] == [PER_PARTITION // FLUSH] * 2


def test_point_lookup_returns_exactly_the_rows_and_never_reads_other_objects(backed_up, spark, s3_client, fresh_bucket):
    topic, raw, original = backed_up

    def pushed():  # a DataFrame per query (see test_without_pushdown_a_dataframe_serves_every_query)
        return spark.read.format("kafka-s3").options(**raw).option("pushdown", "true").load()

    in_list = ", ".join(map(str, WANTED))
    lookup = f"topic = '{topic}' AND partition = 1 AND offset IN ({in_list})"
    expected = [
        (topic, 1, r["offset"], r["key"], r["value"], r["timestamp"]) for r in original[1] if r["offset"] in WANTED
    ]
    assert len(expected) == len(WANTED)
    assert rows(pushed().where(lookup)) == expected
    assert pushed().where(lookup).rdd.getNumPartitions() == 1

    # Ranges, negations and times: the same rows as the full scan filtered by Spark alone.
    full = rows(spark.read.format("kafka-s3").options(**raw).load())
    assert len(full) == 2 * PER_PARTITION
    cutoff = original[0][1234]["timestamp"]
    queries = {
        "partition = 0 AND offset >= 95 AND offset < 105": lambda r: r[1] == 0 and 95 <= r[2] < 105,
        "partition <> 0 AND offset > 1490": lambda r: r[1] != 0 and r[2] > 1490,
        f"timestamp >= timestamp_millis({cutoff}) AND timestamp < timestamp_millis({cutoff + 3000})": (
            lambda r: cutoff <= r[5] < cutoff + 3000
        ),
        "topic = 'elsewhere' OR offset = 3": lambda r: r[2] == 3,  # not pushed (OR): Spark filters
    }
    for condition, keep in queries.items():
        assert rows(pushed().where(condition)) == [r for r in full if keep(r)], condition

    # Spoil an object no lookup needs: the lookup still succeeds (it never reads it), a full scan fails on it.
    doomed = next(
        o.key
        for p in BackupDataSource(raw).reader(None).partitions()
        if p.partition == 0
        for o in p.objects
        if o.start == 0
    )
    replace_object(s3_client, fresh_bucket, doomed, same_size_garbage(get_object(s3_client, fresh_bucket, doomed)))
    assert rows(pushed().where(lookup)) == expected
    with pytest.raises(Exception, match=re.escape(doomed.rsplit("/", 1)[1])):
        pushed().count()


def test_without_pushdown_a_dataframe_serves_every_query(backed_up, spark):
    """The default: nothing is pushed, so one DataFrame answers a lookup and then a full count exactly. (With
    pushdown on, Spark 4.3 would answer the count with the lookup's plan: the read plan of a pushed query is kept on
    the DataFrame's relation and reused by a later query that pushes no filter.)"""
    topic, raw, _ = backed_up
    df = spark.read.format("kafka-s3").options(**raw).load()
    assert df.where(f"partition = 1 AND offset IN ({', '.join(map(str, WANTED))})").count() == len(WANTED)
    assert df.count() == 2 * PER_PARTITION


def test_a_pushed_down_offset_range_of_a_plain_json_backup_gives_the_full_scans_rows(
    backup, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, spark
):
    """Derived offsets (JSON, no envelope): a pushed-down range gives the rows a full scan gives."""
    topic = fresh_topic(1)
    produce(topic, records(1, 600))
    properties = {
        "format.class": "json",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "flush.size": "50",
    }
    backup(fresh_bucket, topic, properties)
    raw = options(make_config, fresh_bucket, topic, properties)
    reader = BackupDataSource({**raw, "pushdown": "true"}).reader(None)
    reader.pushFilters([EqualTo(("offset",), 333)])
    assert [[o.start for o in p.objects] for p in reader.partitions()] == [[300]]
    full = [
        (r.offset, r.value) for r in spark.read.format("kafka-s3").options(**raw).load().orderBy("offset").collect()
    ]
    df = spark.read.format("kafka-s3").options(**raw).option("pushdown", "true").load()
    got = [(r.offset, r.value) for r in df.where("offset BETWEEN 290 AND 310").orderBy("offset").collect()]
    assert got == [r for r in full if 290 <= r[0] <= 310] and len(got) == 21
