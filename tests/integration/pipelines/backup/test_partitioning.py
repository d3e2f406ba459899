"""Field and time-based partitioners against the real broker, SeaweedFS and Spark: exact object keys (Confluent's
``topics/<topic>/<encodedPartition>/<topic>+<p>+<offset>.<ext>``) and exactly the expected records in each object."""

from __future__ import annotations

import json

import pytest

from kafka_s3.pipelines.backup.driver import Backup
from tests.support.backup import data_keys, json_objects, utc_ms

pytestmark = pytest.mark.integration

JSON_SCHEMALESS = {"value.converter": "json", "value.converter.schemas.enable": "false"}
JSON_WITH_SCHEMA = {
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true",
}


def _props(**properties) -> dict:
    return {k.replace(".", "__"): v for k, v in properties.items()}


def _struct(payload: dict, schema_fields: list[dict]) -> bytes:
    schema = {"type": "struct", "name": "event", "optional": False, "fields": schema_fields}
    return json.dumps({"schema": schema, "payload": payload}).encode()


def _backup(engine, make_config, bucket, topic, **properties):
    _, config = make_config(bucket, topic, **_props(**properties))
    return Backup(config, engine=engine).run_once()


# ------------------------------------------------------------------------------------------------ field partitioner
def test_field_partitioner_one_field_struct_values(engine, make_config, fresh_bucket, fresh_topic, produce, s3_client):
    topic = fresh_topic(2)
    fields = [
        {"field": "region", "type": "string", "optional": False},
        {"field": "n", "type": "string", "optional": False},
    ]
    regions = {0: ["eu", "us", "eu", "us", "us", "us", "eu", "eu"], 1: ["us", "us", "us", "eu", "eu"]}
    records = [
        {"partition": p, "value": _struct({"region": r, "n": f"{p}-{i}"}, fields)}
        for p, rs in regions.items()
        for i, r in enumerate(rs)
    ]
    produce(topic, records)

    summary = _backup(
        engine,
        make_config,
        fresh_bucket,
        topic,
        **JSON_WITH_SCHEMA,
        **{
            "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner",
            "partition.field.name": "region",
            "flush.size": "4",
        },
    )

    d = f"topics/{topic}"
    expected = {
        f"{d}/region=eu/{topic}+0+0000000000.json": ["0-0", "0-2"],
        f"{d}/region=us/{topic}+0+0000000001.json": ["0-1", "0-3"],
        f"{d}/region=us/{topic}+0+0000000004.json": ["0-4", "0-5"],
        f"{d}/region=eu/{topic}+0+0000000006.json": ["0-6", "0-7"],
        f"{d}/region=us/{topic}+1+0000000000.json": ["1-0", "1-1", "1-2"],
        f"{d}/region=eu/{topic}+1+0000000003.json": ["1-3"],
        f"{d}/region=eu/{topic}+1+0000000004.json": ["1-4"],
    }
    objects = json_objects(s3_client, fresh_bucket, topic)
    assert sorted(objects) == sorted(expected)
    for key, ns in expected.items():
        assert [v["n"] for v in objects[key]] == ns, key
        region = key.split("/region=")[1].split("/")[0]
        assert {v["region"] for v in objects[key]} == {region}
    assert summary.records == 13 and summary.objects == 7


def test_field_partitioner_two_fields(engine, make_config, fresh_bucket, fresh_topic, produce, s3_client):
    topic = fresh_topic(1)
    rows = [("eu", 1), ("eu", 2), ("us", 1), ("eu", 1), ("us", 1)]
    produce(topic, [{"value": json.dumps({"region": r, "kind": k, "n": i}).encode()} for i, (r, k) in enumerate(rows)])

    _backup(
        engine,
        make_config,
        fresh_bucket,
        topic,
        **JSON_SCHEMALESS,
        **{"partitioner.class": "field", "partition.field.name": "region,kind", "flush.size": "3"},
    )

    d = f"topics/{topic}"
    expected = {
        f"{d}/region=eu/kind=1/{topic}+0+0000000000.json": [0],
        f"{d}/region=eu/kind=2/{topic}+0+0000000001.json": [1],
        f"{d}/region=us/kind=1/{topic}+0+0000000002.json": [2],
        f"{d}/region=eu/kind=1/{topic}+0+0000000003.json": [3],
        f"{d}/region=us/kind=1/{topic}+0+0000000004.json": [4],
    }
    objects = json_objects(s3_client, fresh_bucket, topic)
    assert sorted(objects) == sorted(expected)
    for key, ns in expected.items():
        assert [v["n"] for v in objects[key]] == ns, key


@pytest.mark.parametrize("with_schema", [False, True], ids=["schemaless", "struct"])
def test_field_partitioner_nested_field(
    with_schema, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client
):
    topic = fresh_topic(1)
    regions = ["eu", "eu", "ap", "eu"]
    meta_schema = {
        "type": "struct",
        "name": "meta",
        "optional": False,
        "fields": [{"field": "region", "type": "string", "optional": False}],
    }
    fields = [{"field": "meta", **meta_schema}, {"field": "n", "type": "int32", "optional": False}]
    values = []
    for i, r in enumerate(regions):
        payload = {"meta": {"region": r}, "n": i}
        values.append(_struct(payload, fields) if with_schema else json.dumps(payload).encode())
    produce(topic, [{"value": v} for v in values])

    _backup(
        engine,
        make_config,
        fresh_bucket,
        topic,
        **(JSON_WITH_SCHEMA if with_schema else JSON_SCHEMALESS),
        **{"partitioner.class": "field", "partition.field.name": "meta.region", "flush.size": "10"},
    )

    d = f"topics/{topic}"
    expected = {
        f"{d}/meta.region=eu/{topic}+0+0000000000.json": [0, 1, 3],
        f"{d}/meta.region=ap/{topic}+0+0000000002.json": [2],
    }
    objects = json_objects(s3_client, fresh_bucket, topic)
    assert sorted(objects) == sorted(expected)
    for key, ns in expected.items():
        assert [v["n"] for v in objects[key]] == ns, key
        assert all(v["meta"]["region"] == key.split("meta.region=")[1].split("/")[0] for v in objects[key])


# ------------------------------------------------------------------------------------------------ time partitioners
# Record times (UTC): 07:30, 08:59:59.999, 09:00 on 2015-04-02 and 01:15 on 2015-04-03.
# In America/Los_Angeles (PDT, UTC-7) the same instants are 00:30, 01:59:59.999, 02:00 and 18:15 on 2015-04-02.
TIMES = [
    utc_ms(2015, 4, 2, 7, 30),
    utc_ms(2015, 4, 2, 8, 59, 59, 999_000),
    utc_ms(2015, 4, 2, 9),
    utc_ms(2015, 4, 3, 1, 15),
]
LA = "America/Los_Angeles"
BI_HOURLY = {
    "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
    "partition.duration.ms": "7200000",
    "path.format": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH/",
    "locale": "en-US",
}
DAILY = {"partitioner.class": "io.confluent.connect.storage.partitioner.DailyPartitioner", "locale": "en-US"}
HOURLY = {"partitioner.class": "io.confluent.connect.storage.partitioner.HourlyPartitioner", "locale": "en-US"}

# (partitioner settings, timezone) -> {directory below the topic: offsets in the object starting at the first one}
# flush.size=3: offsets 0..2 form the first chunk, offset 3 the second.
TIME_CASES = {
    "time-based-UTC": (
        BI_HOURLY,
        "UTC",
        {
            "year=2015/month=04/day=02/hour=06": [[0]],
            "year=2015/month=04/day=02/hour=08": [[1, 2]],
            "year=2015/month=04/day=03/hour=00": [[3]],
        },
    ),
    "time-based-LA": (
        BI_HOURLY,
        LA,
        {
            "year=2015/month=04/day=02/hour=00": [[0, 1]],  # 01:59 local floors to the bi-hourly 00:00
            "year=2015/month=04/day=02/hour=02": [[2]],
            "year=2015/month=04/day=02/hour=18": [[3]],
        },
    ),
    "daily-UTC": (
        DAILY,
        "UTC",
        {
            "year=2015/month=04/day=02": [[0, 1, 2]],
            "year=2015/month=04/day=03": [[3]],
        },
    ),
    "daily-LA": (
        DAILY,
        LA,
        {
            "year=2015/month=04/day=02": [[0, 1, 2], [3]],  # still April 2nd locally: a second object of the same day
        },
    ),
    "hourly-UTC": (
        HOURLY,
        "UTC",
        {
            "year=2015/month=04/day=02/hour=07": [[0]],
            "year=2015/month=04/day=02/hour=08": [[1]],
            "year=2015/month=04/day=02/hour=09": [[2]],
            "year=2015/month=04/day=03/hour=01": [[3]],
        },
    ),
    "hourly-LA": (
        HOURLY,
        LA,
        {
            "year=2015/month=04/day=02/hour=00": [[0]],
            "year=2015/month=04/day=02/hour=01": [[1]],
            "year=2015/month=04/day=02/hour=02": [[2]],
            "year=2015/month=04/day=02/hour=18": [[3]],
        },
    ),
}


def _expected_objects(topic: str, layout: dict[str, list[list[int]]]) -> dict[str, list[int]]:
    return {
        f"topics/{topic}/{directory}/{topic}+0+{offsets[0]:010d}.json": offsets
        for directory, groups in layout.items()
        for offsets in groups
    }


@pytest.mark.parametrize("extractor", ["Record", "RecordField"])
@pytest.mark.parametrize("case", list(TIME_CASES))
def test_time_based_partitioners(case, extractor, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client):
    settings, timezone, layout = TIME_CASES[case]
    topic = fresh_topic(1)
    records = []
    for n, t in enumerate(TIMES):
        if extractor == "Record":
            records.append({"value": json.dumps({"n": n}).encode(), "timestamp": t})
        else:
            # The field decides; the Kafka timestamp is years away. One time is an ISO-8601 string.
            ts = "2015-04-02T09:00:00.000Z" if t == utc_ms(2015, 4, 2, 9) else t
            records.append(
                {"value": json.dumps({"n": n, "event": {"at": ts}}).encode(), "timestamp": utc_ms(2021, 6, 1) + n}
            )
    produce(topic, records)
    properties = {
        **settings,
        **JSON_SCHEMALESS,
        "timezone": timezone,
        "flush.size": "3",
        "timestamp.extractor": extractor,
    }
    if extractor == "RecordField":
        properties["timestamp.field"] = "event.at"

    summary = _backup(engine, make_config, fresh_bucket, topic, **properties)

    expected = _expected_objects(topic, layout)
    objects = json_objects(s3_client, fresh_bucket, topic)
    assert sorted(objects) == sorted(expected)
    for key, offsets in expected.items():
        assert [v["n"] for v in objects[key]] == offsets, key
    assert summary.records == 4
    assert data_keys(s3_client, fresh_bucket, topic) == sorted(expected)


# ------------------------------------------------------------------------------------------------ custom partitioner
CUSTOM_PARTITIONER = '''
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.partitioners.base import Partitioner


class ByKeyInitial(Partitioner):
    """Directory ``initial=<first letter of the key>``."""

    def encode(self, records, values, now_ms):
        return pc.binary_join_element_wise(
            pa.scalar("initial="), pc.utf8_slice_codeunits(records.column("key").cast(pa.string()), 0, 1), "")
'''


def test_a_custom_partitioner_by_dotted_path(
    spark, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, tmp_path, monkeypatch
):
    module = f"custom_partitioner_{fresh_bucket.replace('-', '_')}"
    path = tmp_path / f"{module}.py"
    path.write_text(CUSTOM_PARTITIONER)
    monkeypatch.syspath_prepend(str(tmp_path))  # the driver validates the configuration
    spark.sparkContext.addPyFile(str(path))  # executors get it as a user would ship it (--py-files)
    topic = fresh_topic(1)
    produce(
        topic, [{"key": k.encode(), "value": b'{"n":%d}' % i} for i, k in enumerate(["apple", "banana", "avocado"])]
    )

    summary = _backup(
        engine,
        make_config,
        fresh_bucket,
        topic,
        **JSON_SCHEMALESS,
        **{"partitioner.class": f"{module}.ByKeyInitial", "flush.size": "10"},
    )

    objects = json_objects(s3_client, fresh_bucket, topic)
    assert objects == {
        f"topics/{topic}/initial=a/{topic}+0+0000000000.json": [{"n": 0}, {"n": 2}],
        f"topics/{topic}/initial=b/{topic}+0+0000000001.json": [{"n": 1}],
    }
    assert summary.records == 3
