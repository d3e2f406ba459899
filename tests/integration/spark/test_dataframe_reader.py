"""``spark.read.format("kafka-s3")``: a backup as a DataFrame with the columns of Spark's Kafka source, one Spark
partition per backed-up topic-partition, in offset order; filters and aggregations work as on any DataFrame."""

from __future__ import annotations

import pytest

from tests.support.restore import read_topic, records, write_properties

pytestmark = pytest.mark.integration

COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
SIZES = {0: 5, 1: 7, 2: 9}


def produce_uneven(produce, topic):
    sent = [r for r in records(3, 9) if int(r["key"][1:]) % 1000 < SIZES[r["partition"]]]
    produce(topic, sent)


def rows_of(df, topic_filter: str = "true") -> list[tuple]:
    """(partition, offset, key, value, headers, timestamp ms) of every row, in order."""
    picked = df.where(topic_filter).selectExpr(
        "partition", "offset", "key", "value", "headers", "unix_millis(timestamp) AS ms", "timestampType"
    )
    return [
        (r.partition, r.offset, r.key, r.value, [(h.key, h.value) for h in r.headers or []], r.ms, r.timestampType)
        for r in picked.orderBy("partition", "offset").collect()
    ]


def test_envelope_backup_as_a_dataframe(
    spark, backup, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    topic = fresh_topic(3)
    produce_uneven(produce, topic)
    properties = {"format.class": "parquet", "store.envelope": "true"}
    backup(fresh_bucket, topic, properties)
    raw, _ = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in properties.items()})

    df = spark.read.format("kafka-s3").options(**raw).load()
    assert df.rdd.getNumPartitions() == 3  # one per backed-up topic-partition
    df = df.cache()  # several queries below: read the backup once
    assert df.columns == COLUMNS
    assert dict(df.dtypes) == {
        "key": "binary",
        "value": "binary",
        "topic": "string",
        "partition": "int",
        "offset": "bigint",
        "timestamp": "timestamp",
        "timestampType": "int",
        "headers": "array<struct<key:string,value:binary>>",
    }
    assert {r.partition: r["count"] for r in df.groupBy("partition").count().collect()} == SIZES
    assert df.where(f"topic <> '{topic}'").count() == 0

    original = read_topic(kafka_bootstrap, topic)
    expected = [
        (p, r["offset"], r["key"], r["value"], r["headers"], r["timestamp"], 0)
        for p, rows in original.items()
        for r in rows
    ]
    assert rows_of(df) == expected
    # Filters on the Kafka columns, as with spark.read.format("kafka").
    assert [(p, o) for p, o, *_ in rows_of(df, "partition = 1 AND offset >= 3 AND offset < 6")] == [
        (1, 3),
        (1, 4),
        (1, 5),
    ]
    cutoff = original[2][4]["timestamp"]
    assert df.where(f"partition = 2 AND unix_millis(timestamp) >= {cutoff}").count() == SIZES[2] - 4
    assert df.where("array_contains(transform(headers, h -> h.key), 'h')").count() == sum(SIZES.values())


def test_plain_backup_from_a_configuration_file_with_a_topic_filter(
    spark, backup, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, tmp_path
):
    wanted, other = fresh_topic(3), fresh_topic(1)
    produce_uneven(produce, wanted)
    produce(other, records(1, 4))
    properties = {
        "format.class": "json",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "store.kafka.keys": "true",
        "keys.format.class": "json",
    }
    backup(fresh_bucket, [wanted, other], properties)
    raw, _ = make_config(fresh_bucket, [wanted, other], **{k.replace(".", "__"): v for k, v in properties.items()})
    config = write_properties(tmp_path / "backup.properties", raw)

    everything = spark.read.format("kafka-s3").option("config", str(config)).load()
    assert {(r.topic, r["count"]) for r in everything.groupBy("topic").count().collect()} == {
        (wanted, sum(SIZES.values())),
        (other, 4),
    }

    df = spark.read.format("kafka-s3").option("config", str(config)).option("topics", wanted).load()
    assert {r.partition: r["count"] for r in df.groupBy("partition").count().collect()} == SIZES
    import json

    original = read_topic(kafka_bootstrap, wanted)
    got = rows_of(df)
    # Plain objects keep values (re-rendered JSON) and keys (sidecars); offsets come from the object names; record
    # timestamps and headers are not stored.
    assert [(p, o, k) for p, o, k, *_ in got] == [
        (p, r["offset"], r["key"]) for p, rows in original.items() for r in rows
    ]
    assert [json.loads(v) for _, _, _, v, *_ in got] == [
        json.loads(r["value"]) for rows in original.values() for r in rows
    ]
    assert {(ts, tt) for *_, ts, tt in got} == {(None, -1)}
