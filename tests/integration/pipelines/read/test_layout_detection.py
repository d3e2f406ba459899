"""Issue 15 item 10: restore, verify and read detect whose layout the configured prefix holds, say it, and refuse a
prefix that mixes layouts; ``restore.layout`` overrides the detection. Real S3, Kafka and Spark.

The objects are built from the peers' source, never by our writer: Confluent's names per CS
``TopicPartitionWriter.fileKeyToCommit`` and CS ``format/json/JsonRecordWriterProvider`` (StringConverter values,
one JSON value per line); DeviantArt's names per DA ``BlockGZIPFileWriter.getDataFileName`` and
``S3Writer.getChunkFileKey``/``updateCursorFile``; Lenses' per LS ``sink/naming/FileNamer.scala``.
"""

from __future__ import annotations

import dataclasses
import gzip
import json

import pytest

from kafka_s3.core.errors import LayoutError
from kafka_s3.core.layouts import detection
from kafka_s3.pipelines.read.lookup import read_records
from kafka_s3.pipelines.verify import verify
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

VALUES = ["v0", "v1", "v2", "v3", "v4"]
STRING_JSON = {
    "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
}


def put_confluent(s3_client, bucket: str, topic: str) -> None:
    for start, values in ((0, VALUES[:3]), (3, VALUES[3:])):
        body = b"".join(json.dumps(v).encode() + b"\n" for v in values)
        s3_client.put_object(Bucket=bucket, Key=f"topics/{topic}/partition=0/{topic}+0+{start:010d}.json", Body=body)


def put_deviantart(s3_client, bucket: str, topic: str) -> None:
    body = gzip.compress(b"d0\nd1\n")
    index = b'{"chunks":[{"byte_length_uncompressed":6,"num_records":2,"byte_length":%d,"byte_offset":0,' % len(body)
    index += b'"first_record_offset":0}]}'
    data_key = f"topics/2017-02-01/{topic}-00000-000000000000.gz"
    s3_client.put_object(Bucket=bucket, Key=data_key, Body=body)
    s3_client.put_object(Bucket=bucket, Key=data_key + ".index.json", Body=index)
    s3_client.put_object(Bucket=bucket, Key=f"topics/last_chunk_index.{topic}-00000.txt", Body=data_key.encode())


def test_a_confluent_prefix_is_detected_said_in_the_plan_and_restored(
    restorer, make_config, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source, target = f"confluent-{fresh_topic(1)}", fresh_topic(1)
    put_confluent(s3_client, fresh_bucket, source)
    restore = restorer(fresh_bucket, source, {**STRING_JSON, "topic.rename": f"{source}:{target}"})

    plan = restore.plan()
    summary = restore.run()

    assert plan.layout.startswith("layout: Confluent's S3 sink, detected under ")
    assert f"topics/{source}/partition=0/{source}+0+0000000000.json" in plan.layout
    assert summary.layout == plan.layout
    assert [r["value"] for r in read_topic(kafka_bootstrap, target)[0]] == [v.encode() for v in VALUES]
    _, config = make_config(
        fresh_bucket, source, source=True, **{k.replace(".", "__"): v for k, v in STRING_JSON.items()}
    )
    assert verify(config, None).layout == plan.layout
    assert [r["value"] for r in read_records(config, 0, 3, 2)] == [b"v3", b"v4"]


def test_a_prefix_mixing_confluent_and_deviantart_objects_is_refused(
    restorer, make_config, fresh_bucket, fresh_topic, s3_client
):
    topic = f"mixed-{fresh_topic(1)}"
    put_confluent(s3_client, fresh_bucket, topic)
    put_deviantart(s3_client, fresh_bucket, topic)

    with pytest.raises(LayoutError) as caught:
        restorer(fresh_bucket, topic, STRING_JSON).plan()
    message = str(caught.value)
    assert "mixes the objects of several tools" in message
    assert "Confluent's S3 sink" in message and f"topics/2017-02-01/{topic}-00000-000000000000.gz" in message
    _, config = make_config(
        fresh_bucket, topic, source=True, **{k.replace(".", "__"): v for k, v in STRING_JSON.items()}
    )
    with pytest.raises(LayoutError, match="mixes the objects of several tools"):
        verify(config, None)


def test_restore_layout_overrides_the_detection(restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap):
    source, target = f"override-{fresh_topic(1)}", fresh_topic(1)
    put_confluent(s3_client, fresh_bucket, source)
    put_deviantart(s3_client, fresh_bucket, source)  # would be a mix; restore.layout says which to read
    properties = {**STRING_JSON, "topic.rename": f"{source}:{target}", "restore.layout": "confluent"}

    restore = restorer(fresh_bucket, source, properties)
    plan = restore.plan()
    restore.run()

    assert plan.layout == "layout: Confluent's S3 sink (restore.layout=confluent)"
    assert [r["value"] for r in read_topic(kafka_bootstrap, target)[0]] == [v.encode() for v in VALUES]


def test_a_peer_layout_without_its_reader_is_refused_by_name(
    restorer, fresh_bucket, fresh_topic, s3_client, monkeypatch
):
    """Lenses' reader is issue 15 part B's plugin: a version without it says so rather than finding nothing."""
    absent = dataclasses.replace(detection.LAYOUTS["lenses"], reader="kafka_s3.core.layouts.not_here:Nothing")
    monkeypatch.setitem(detection.LAYOUTS, "lenses", absent)
    topic = f"lenses-{fresh_topic(1)}"
    key = f"topics/{topic}/0/000000000002_1577849400000_1577849400002.json"
    s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=b'"a"\n"b"\n"c"\n')

    with pytest.raises(LayoutError, match="^Lenses layout: not readable by this version"):
        restorer(fresh_bucket, topic, STRING_JSON).plan()
