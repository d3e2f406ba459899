"""Issue 15 item 3 (A3/A5): ``behavior.on.null.values=write`` as Confluent's S3 sink does it, both ways.

Confluent (CS = confluentinc/kafka-connect-storage-cloud, ``kafka-connect-s3/src/main/java/io/confluent/connect/s3/``):

- ``S3SinkTask`` wraps the partitioner in ``util/TombstoneSupportedPartitioner``: ``encodePartition`` gives
  ``tombstone.encoded.partition`` (default ``tombstone``) for a null value, so a tombstone lands in
  ``topics/<topic>/tombstone/<topic>+<p>+<first offset %010d>``; ``generatePartitionedPath`` is the wrapped one's.
- ``format/KeyValueHeaderRecordWriterProvider.getRecordWriter``: no value writer when the file name contains the
  tombstone partition (only ``.keys.<ext>`` and ``.headers.<ext>`` are written); ``write`` throws "Key Writer must be
  configured when writing tombstone records is enabled" without ``store.kafka.keys=true``.
- ``TopicPartitionWriter``: ``flush.size`` counts every record of the Kafka partition across encoded partitions, and
  at the limit every open file commits, each named by its own first offset (``rotateOnSize``, ``commitFiles``).

Our backup writes exactly those names, and a restore of such a bucket (ours, or one built here from Confluent's
source) gives the tombstones back at their offsets with their keys and headers.
"""

from __future__ import annotations

import io
import json

import fastavro
import pytest

from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

STRING = "org.apache.kafka.connect.storage.StringConverter"
PROPS = {
    "format.class": "json",
    "value.converter": STRING,
    "key.converter": STRING,
    "store.kafka.keys": "true",
    "store.kafka.headers": "true",
    "behavior.on.null.values": "write",
    "flush.size": "3",
}
HEADERS_SCHEMA = {  # CS format/RecordViews.HeadersRecordView through SR AvroData.fromConnectSchema
    "type": "array",
    "items": {
        "type": "record",
        "name": "ConnectDefault",
        "namespace": "io.confluent.connect.avro",
        "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": "string"}],
    },
}


def _records(tombstones: set[int], count: int) -> list[tuple[str, str | None, list[tuple[str, str]]]]:
    # Confluent writes no record without a key or headers (DataException in KeyValueHeaderRecordWriterProvider.write)
    return [(f"k{i % 3}", None if i in tombstones else f"v{i}", [("tag", f"t{i}"), ("tag", "x")]) for i in range(count)]


def _restored(kafka_bootstrap: str, topic: str) -> list[tuple]:
    return [(r["key"], r["value"], list(r["headers"])) for r in read_topic(kafka_bootstrap, topic)[0]]


def _expected(records) -> list[tuple]:
    return [(k.encode(), None if v is None else v.encode(), [(hk, hv.encode()) for hk, hv in h]) for k, v, h in records]


def test_write_mode_backs_tombstones_up_in_the_tombstone_directory_and_restores_them(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    source, target = fresh_topic(1), fresh_topic(1)
    records = _records({3, 6, 7}, 9)
    produce(source, [{"key": k, "value": v, "headers": h} for k, v, h in records])

    backup(fresh_bucket, source, PROPS)

    keys = sorted(
        o["Key"]
        for o in s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix=f"topics/{source}/").get("Contents", [])
        if "/partition-count/" not in o["Key"]
    )
    d, t = f"topics/{source}/partition=0/{source}+0+", f"topics/{source}/tombstone/{source}+0+"
    # flush.size=3 counts tombstones too: offsets 0-2 | 3-5 | 6-8; every open file commits, named by its first offset
    assert keys == sorted(
        [f"{d}{o:010d}{ext}" for o in (0, 4, 8) for ext in (".json", ".keys.avro", ".headers.avro")]
        + [f"{t}{o:010d}{ext}" for o in (3, 6) for ext in (".keys.avro", ".headers.avro")]
    )
    lines = s3_client.get_object(Bucket=fresh_bucket, Key=f"{d}{4:010d}.json")["Body"].read().splitlines()
    assert lines == [b'"v4"', b'"v5"']
    tomb_keys = fastavro.reader(
        io.BytesIO(s3_client.get_object(Bucket=fresh_bucket, Key=f"{t}{6:010d}.keys.avro")["Body"].read())
    )
    assert list(tomb_keys) == ["k0", "k1"]

    summary = restorer(fresh_bucket, source, {**PROPS, "topic.rename": f"{source}:{target}"}).run()

    assert summary.records == 9
    assert _restored(kafka_bootstrap, target) == _expected(records)


def _avro(schema, datums) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, schema, datums, codec="null")  # CS AvroRecordWriterProvider: avro.codec always set
    return out.getvalue()


def confluent_objects(topic: str, records, files) -> dict[str, bytes]:
    """``files``: (directory, first offset, offsets) per file, as TopicPartitionWriter cuts them."""
    objects = {}
    for directory, start, offsets in files:
        base = f"topics/{topic}/{directory}/{topic}+0+{start:010d}"
        chosen = [records[o] for o in offsets]
        if directory != "tombstone":  # KeyValueHeaderRecordWriterProvider: no value writer in the tombstone path
            lines = [json.dumps(v).encode() + b"\n" for _, v, _ in chosen]  # JsonRecordWriterProvider, one per line
            objects[base + ".json"] = b"".join(lines)
        objects[base + ".keys.avro"] = _avro(["null", "string"], [k for k, _, _ in chosen])
        objects[base + ".headers.avro"] = _avro(
            HEADERS_SCHEMA, [[{"key": hk, "value": hv} for hk, hv in h] for _, _, h in chosen]
        )
    return objects


def test_confluent_made_tombstone_objects_restore_at_their_offsets(
    restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source, target = f"confluent-{fresh_topic(1)}", fresh_topic(1)
    records = _records({2, 5, 6, 7}, 9)
    # flush.size=4 with the default partitioner: offsets 0-3 | 4-7 | 8 (what each file holds follows from the names
    # and counts: after offset 4 the values file is full, so 6 and 7 are the tombstone file's)
    files = [
        ("partition=0", 0, [0, 1, 3]),
        ("tombstone", 2, [2]),
        ("partition=0", 4, [4]),
        ("tombstone", 5, [5, 6, 7]),
        ("partition=0", 8, [8]),
    ]
    for key, body in confluent_objects(source, records, files).items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    properties = {
        "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
        "value.converter": STRING,
        "key.converter": STRING,
        "store.kafka.keys": "true",
        "store.kafka.headers": "true",
        "topic.rename": f"{source}:{target}",
    }

    summary = restorer(fresh_bucket, source, properties).run()

    assert summary.records == 9
    assert _restored(kafka_bootstrap, target) == _expected(records)


def test_dataframe_reader_gives_tombstones_at_their_offsets(
    spark, backup, make_config, fresh_bucket, fresh_topic, produce
):
    topic = fresh_topic(1)
    records = _records({1, 2, 5}, 7)
    produce(topic, [{"key": k, "value": v, "headers": h} for k, v, h in records])
    backup(fresh_bucket, topic, PROPS)
    raw, _ = make_config(fresh_bucket, topic, source=True, **{k.replace(".", "__"): v for k, v in PROPS.items()})

    df = spark.read.format("kafka-s3").options(**raw).load()
    got = [(r.offset, r.key, r.value) for r in df.orderBy("offset").collect()]

    assert got == [(o, k.encode(), None if v is None else v.encode()) for o, (k, v, _) in enumerate(records)]


def test_verify_deep_finds_a_write_mode_bucket_whole(engine, backup, make_config, fresh_bucket, fresh_topic, produce):
    from kafka_s3.pipelines.verify import verify

    topic = fresh_topic(1)
    records = _records({0, 4, 5}, 8)
    produce(topic, [{"key": k, "value": v, "headers": h} for k, v, h in records])
    backup(fresh_bucket, topic, PROPS)
    _, config = make_config(fresh_bucket, topic, source=True, **{k.replace(".", "__"): v for k, v in PROPS.items()})

    report = verify(config, engine, deep=True)

    assert report.problems == []
    assert report.checks[(topic, 0)].records == 8
