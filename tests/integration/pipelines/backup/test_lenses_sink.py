"""Issue 15 item 6: a Lenses S3 *sink* configuration backs up into Lenses' layout, envelope and lock objects, and a
Lenses S3 *source* configuration restores it record-exact — with the real Kafka, S3 (SeaweedFS) and Spark.

What Lenses writes is taken from its source (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``), never
from our writer:

- names: ``sink/naming/FileNamer.OffsetFileNamer.fileName`` under ``CloudKeyNamer``'s ``<prefix>/<topic>/
  <partition>/``: ``<last offset %012d>_<smallest timestamp>_<largest timestamp>.json`` (``writer/Writer.commit``
  names the file after ``uncommittedOffset``; ``writer/WriteState.Writing.update`` keeps the smallest timestamp);
- lines: ``sink/transformers/SchemalessEnvelopeTransformer.envelope`` (java.util.HashMaps) written by Jackson
  (``sink/conversion/ToJsonDataConverter``). The orders below are java.util.HashMap's, from each key's
  ``String.hashCode`` spread into 16 buckets (checked on the JVM): ``headers``→1, ``metadata``→2, ``keyIsArray``→13
  (put before ``value``, also 13), ``key``→14; metadata ``partition``→3, ``offset``→4, ``topic``→9,
  ``timestamp``→15; headers ``trace``→2, ``n``→14. A byte[] key is base64 with ``"keyIsArray":true``;
- locks: ``seek/IndexManagerV2`` / ``seek/IndexModel.IndexFile``: ``.indexes/<connector>/.locks/<topic>/
  <partition>.lock`` = ``{"owner":"<uuid>","committedOffset":<last offset>,"pendingState":null}``.
"""

from __future__ import annotations

import base64
import json
import re

import pytest

from kafka_s3.io.kafka.admin import Admin
from tests.support.integration import list_keys
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
LENSES_SOURCE = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
PREFIX = "lenses/out"
FLUSH = 3
T0 = 1_700_000_000_000
# (partition, key bytes, value text or None for a tombstone, headers, timestamp); timestamps out of order in a file
RECORDS = [
    (0, b"\x00\xffk0", "v0", [("trace", b"t0"), ("n", b"7")], T0 + 5),
    (0, b"k1", 'v1 "q" caf\u00e9', [], T0 + 1),
    (0, b"k2", None, [("trace", b"t2")], T0 + 9),
    (0, b"k3", "v3", [("n", b"-12")], T0 + 20),
    (0, b"k4", "v4\n", [("trace", b"t4"), ("n", b"1")], T0 + 21),
    (0, b"k5", "v5", [], T0 + 19),
    (0, b"k6", "v6", [], T0 + 30),
    (1, b"p0", "w0", [("trace", b"x")], T0 + 100),
    (1, b"p1", "w1", [], T0 + 101),
]


def _line(topic: str, partition: int, offset: int, record) -> bytes:
    _, key, value, headers, timestamp = record
    header_json = {"trace": None, "n": None}
    for name, raw in headers:
        header_json[name] = raw.decode() if name == "trace" else int(raw)  # SimpleHeaderConverter: "7" is a number
    ordered = [(k, v) for k, v in header_json.items() if any(h == k for h, _ in headers)]
    text = "{" + ",".join(f'"{k}":{json.dumps(v, ensure_ascii=False)}' for k, v in ordered) + "}"
    metadata = f'"partition":{partition},"offset":{offset},"topic":"{topic}","timestamp":{timestamp}'
    value_json = "null" if value is None else json.dumps(value, ensure_ascii=False)
    key_json = '"' + base64.b64encode(key).decode() + '"'
    line = f'{{"headers":{text},"metadata":{{{metadata}}},"keyIsArray":true,"value":{value_json},"key":{key_json}}}'
    return line.encode() + b"\n"


def _expected_objects(topic: str) -> dict[str, bytes]:
    objects = {}
    for partition in (0, 1):
        records = [r for r in RECORDS if r[0] == partition]
        for first in range(0, len(records), FLUSH):
            group = records[first : first + FLUSH]
            offsets = range(first, first + len(group))
            stamps = [r[4] for r in group]
            name = f"{PREFIX}/{topic}/{partition}/{offsets[-1]:012d}_{min(stamps)}_{max(stamps)}.json"
            objects[name] = b"".join(_line(topic, partition, o, r) for o, r in zip(offsets, group, strict=True))
    return objects


def test_lenses_sink_config_backs_up_lenses_bytes_and_a_lenses_source_restores_them(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic, target = fresh_topic(2), fresh_topic(2)
    produce(
        topic,
        [
            {"partition": p, "key": k, "value": None if v is None else v.encode(), "headers": h, "timestamp": ts}
            for p, k, v, h, ts in RECORDS
        ],
    )
    sink = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:{PREFIX} SELECT * FROM {topic} STOREAS `JSON` "
        f"PROPERTIES('store.envelope'=true, 'flush.count'={FLUSH})",
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }

    summary = backup(fresh_bucket, topic, sink)

    assert summary.records == len(RECORDS)
    expected = _expected_objects(topic)
    keys = [k for k in list_keys(s3_client, fresh_bucket, PREFIX + "/") if "/_kafka-s3/" not in k]
    assert sorted(keys) == sorted(expected)
    for key, body in expected.items():
        assert s3_client.get_object(Bucket=fresh_bucket, Key=key)["Body"].read() == body, key
    connector = f"it-{fresh_bucket}"  # the configuration's name
    for partition, last in ((0, 6), (1, 1)):
        lock = f".indexes/{connector}/.locks/{topic}/{partition}.lock"
        body = s3_client.get_object(Bucket=fresh_bucket, Key=lock)["Body"].read()
        assert re.fullmatch(rb'\{"owner":"[0-9a-f-]{36}","committedOffset":%d,"pendingState":null\}' % last, body)

    # A crash between a chunk's manifest and its object, and the group's offsets lost: the re-run resumes from the
    # bucket's manifests and writes the missing object again under the same name, with the same bytes.
    missing = sorted(expected)[1]
    s3_client.delete_object(Bucket=fresh_bucket, Key=missing)
    Admin({"bootstrap.servers": kafka_bootstrap}).delete_group(f"connect-{connector}")
    backup(fresh_bucket, topic, sink)
    keys = [k for k in list_keys(s3_client, fresh_bucket, PREFIX + "/") if "/_kafka-s3/" not in k]
    assert sorted(keys) == sorted(expected)
    assert s3_client.get_object(Bucket=fresh_bucket, Key=missing)["Body"].read() == expected[missing]

    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:{PREFIX} STOREAS `JSON` "
        "PROPERTIES('store.envelope'=true)",
    }
    restored_summary = restorer(fresh_bucket, topic, source).run()

    assert restored_summary.records == len(RECORDS)
    _assert_restored(read_topic(kafka_bootstrap, target))

    # The sink configuration itself restores the bucket too (its layout detected under the prefix).
    again = fresh_topic(2)
    restore = restorer(fresh_bucket, topic, {**sink, "topic.rename": f"{topic}:{again}"})
    assert "Lenses" in restore.plan().layout
    assert restore.run().records == len(RECORDS)
    _assert_restored(read_topic(kafka_bootstrap, again))


def _assert_restored(restored) -> None:
    for partition in (0, 1):
        want = [r for r in RECORDS if r[0] == partition]
        got = restored[partition]
        assert [(r["key"], r["value"], list(r["headers"]), r["timestamp"]) for r in got] == [
            (k, None if v is None else v.encode(), [(n, raw) for n, raw in _lenses_header_order(h)], ts)
            for _, k, v, h, ts in want
        ]


def _lenses_header_order(headers):
    """Headers come back in the file's order: java.util.HashMap's (``trace`` before ``n``)."""
    return sorted(headers, key=lambda h: {"trace": 0, "n": 1}[h[0]])
