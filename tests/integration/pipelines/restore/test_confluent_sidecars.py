"""Issue 15 item 1: a bucket written by Confluent's S3 sink with ``store.kafka.keys`` and ``store.kafka.headers``
restores record-exact (key, value, headers in order, repeated keys kept) through the real S3, Kafka and Spark.

The bucket is built here from the peers' source code, never by our writer:

- names: CS ``TopicPartitionWriter.fileKeyToCommit`` (``topics/<topic>/partition=<p>/<topic>+<p>+<offset %010d>``),
  sidecars per CS ``format/KeyValueHeaderRecordWriterProvider.getRecordWriter`` + ``util/Utils.getAdjustedFilename``
  (``.keys.<ext>``, ``.headers.<ext>``);
- Avro: CS ``format/avro/AvroRecordWriterProvider`` (metadata ``avro.schema`` + ``avro.codec``, codec null, random
  sync marker), StringConverter values/keys as SR ``AvroData`` gives them (``["null","string"]``), headers as CS
  ``format/RecordViews.HeadersRecordView`` through ``AvroData.fromConnectSchema`` (array of
  ``io.confluent.connect.avro.ConnectDefault {key: string, value: string}``);
- JSON: CS ``format/json/JsonRecordWriterProvider`` with JsonConverter (``schemas.enable=false``): one value per line,
  headers enveloped as ``{"headers":[{"key":…,"value":…}]}``.
"""

from __future__ import annotations

import io
import json

import fastavro
import pytest

from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

HEADERS_SCHEMA = {
    "type": "array",
    "items": {
        "type": "record",
        "name": "ConnectDefault",
        "namespace": "io.confluent.connect.avro",
        "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": "string"}],
    },
}
RECORDS = [  # (key, value, headers): Confluent writes no record without a key or headers (DataException)
    ("k0", "v0", [("tag", "a"), ("tag", "b")]),
    ("k1", "v1", [("trace", "t\u00e9")]),
    ("k2", "v2", [("n", "7"), ("tag", "c")]),
    ("k3", "v3", [("tag", "d")]),
    ("k4", "v4", [("tag", "e"), ("trace", "t2"), ("tag", "f")]),
]
FILES = [(0, RECORDS[:3]), (3, RECORDS[3:])]  # flush.size=3: files start at offsets 0 and 3


def _avro(schema, datums) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, schema, datums, codec="null")
    return out.getvalue()


def _json(lines) -> bytes:
    return b"".join(json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for line in lines)


def confluent_objects(topic: str, fmt: str) -> dict[str, bytes]:
    objects = {}
    for start, records in FILES:
        base = f"topics/{topic}/partition=0/{topic}+0+{start:010d}"
        keys, values = [r[0] for r in records], [r[1] for r in records]
        headers = [[{"key": k, "value": v} for k, v in r[2]] for r in records]
        if fmt == "avro":
            objects[base + ".avro"] = _avro(["null", "string"], values)
            objects[base + ".keys.avro"] = _avro(["null", "string"], keys)
            objects[base + ".headers.avro"] = _avro(HEADERS_SCHEMA, headers)
        else:
            objects[base + ".json"] = _json(values)
            objects[base + ".keys.json"] = _json(keys)
            objects[base + ".headers.json"] = _json({"headers": h} for h in headers)
    return objects


@pytest.mark.parametrize("fmt", ["avro", "json"])
def test_confluent_written_keys_and_headers_restore_record_exact(
    fmt, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source, target = f"confluent-{fresh_topic(1)}", fresh_topic(1)
    for key, body in confluent_objects(source, fmt).items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    properties = {
        "format.class": f"io.confluent.connect.s3.format.{fmt}.{fmt.capitalize()}Format",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "store.kafka.keys": "true",
        "store.kafka.headers": "true",
        "keys.format.class": f"io.confluent.connect.s3.format.{fmt}.{fmt.capitalize()}Format",
        "headers.format.class": f"io.confluent.connect.s3.format.{fmt}.{fmt.capitalize()}Format",
        "topic.rename": f"{source}:{target}",
    }

    summary = restorer(fresh_bucket, source, properties).run()

    assert summary.records == len(RECORDS)
    restored = read_topic(kafka_bootstrap, target)[0]
    assert [(r["key"], r["value"], list(r["headers"])) for r in restored] == [
        (k.encode(), v.encode(), [(hk, hv.encode()) for hk, hv in h]) for k, v, h in RECORDS
    ]
