"""Issue 18 item 5, issue 28 item 1: a point lookup plans one Spark partition and reads only the objects whose offset
spans hold the offsets asked for, and returns exactly the rows a full scan would — bounded by Spark's Kafka-source
options (per DataFrame, right for every query on it), or by pushed filters where Spark keeps a read plan per query
(the planner is exercised directly here: Spark 4 is not such a Spark)."""

from __future__ import annotations

import re

import pytest
from pyspark.sql.datasource import EqualTo, In

from kafka_s3.spark.backup_source import BackupDataSource, PushdownReader
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
    reader = PushdownReader(raw)  # planned as Spark plans it where it pushes filters
    assert list(reader.pushFilters([EqualTo(("partition",), 1), In(("offset",), WANTED)])) == []
    planned = reader.partitions()
    assert [(p.topic, p.partition, [o.start for o in p.objects]) for p in planned] == [(topic, 1, [700])]

    everything = BackupDataSource(raw).reader(None).partitions()
    assert [len(p.objects) for p in everything] == [PER_PARTITION // FLUSH] * 2


def test_point_lookup_returns_exactly_the_rows_and_never_reads_other_objects(backed_up, spark, s3_client, fresh_bucket):
    topic, raw, original = backed_up

    def bounded():  # the lookup's offsets as Spark's Kafka-source options: one DataFrame answers every query
        return (
            spark.read.format("kafka-s3")
            .options(**raw)
            .option("assign", f'{{"{topic}":[1]}}')
            .option("startingOffsets", f'{{"{topic}":{{"1":{WANTED[0]}}}}}')
            .option("endingOffsets", f'{{"{topic}":{{"1":{WANTED[-1] + 1}}}}}')
            .load()
        )

    in_list = ", ".join(map(str, WANTED))
    lookup = f"topic = '{topic}' AND partition = 1 AND offset IN ({in_list})"
    expected = [
        (topic, 1, r["offset"], r["key"], r["value"], r["timestamp"]) for r in original[1] if r["offset"] in WANTED
    ]
    assert len(expected) == len(WANTED)
    df = bounded()
    assert rows(df.where(lookup)) == expected
    assert rows(df) == expected and df.count() == len(WANTED)
    assert df.rdd.getNumPartitions() == 1

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
    pushed = spark.read.format("kafka-s3").options(**raw).option("pushdown", "true").load()
    for condition, keep in queries.items():  # one DataFrame for every query: right whatever Spark pushes
        assert rows(pushed.where(condition)) == [r for r in full if keep(r)], condition

    # Spoil an object no lookup needs: the lookup still succeeds (it never reads it), a full scan fails on it.
    doomed = next(
        o.key
        for p in BackupDataSource(raw).reader(None).partitions()
        if p.partition == 0
        for o in p.objects
        if o.start == 0
    )
    replace_object(s3_client, fresh_bucket, doomed, same_size_garbage(get_object(s3_client, fresh_bucket, doomed)))
    assert rows(bounded()) == expected
    with pytest.raises(Exception, match=re.escape(doomed.rsplit("/", 1)[1])):
        pushed.count()


def test_without_pushdown_a_dataframe_serves_every_query(backed_up, spark):
    """Nothing is pushed on Spark 4, so one DataFrame answers a lookup and then a full count exactly (Spark 4 would
    answer the count with the lookup's plan: the read plan of a pushed query is kept on the DataFrame's relation and
    reused by a later query that pushes no filter)."""
    topic, raw, _ = backed_up
    df = spark.read.format("kafka-s3").options(**raw).load()
    assert df.where(f"partition = 1 AND offset IN ({', '.join(map(str, WANTED))})").count() == len(WANTED)
    assert df.count() == 2 * PER_PARTITION


def test_a_pushed_down_offset_range_of_a_plain_json_backup_gives_the_full_scans_rows(
    backup, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, spark
):
    """Derived offsets (JSON, no envelope): an offset range, pushed down or given as options, gives the rows a full
    scan gives."""
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
    reader = PushdownReader(raw)
    reader.pushFilters([EqualTo(("offset",), 333)])
    assert [[o.start for o in p.objects] for p in reader.partitions()] == [[300]]
    full = [
        (r.offset, r.value) for r in spark.read.format("kafka-s3").options(**raw).load().orderBy("offset").collect()
    ]
    df = (
        spark.read.format("kafka-s3")
        .options(**raw)
        .option("startingOffsets", f'{{"{topic}":{{"0":290}}}}')
        .option("endingOffsets", f'{{"{topic}":{{"0":311}}}}')
        .load()
    )
    got = [(r.offset, r.value) for r in df.orderBy("offset").collect()]
    assert got == [r for r in full if 290 <= r[0] <= 310] and len(got) == 21
