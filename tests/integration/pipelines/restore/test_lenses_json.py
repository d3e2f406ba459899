"""Issue 15 item 7: buckets written by Lenses' S3 sink restore through a Lenses S3 *source* configuration
(``connect.s3.kcql=INSERT INTO topic SELECT * FROM bucket:prefix STOREAS JSON [PROPERTIES('store.envelope'=true)]``)
with the real S3, Kafka and Spark.

The bucket is built here from Lenses' source code (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``),
never by our writer:

- names: LS ``sink/naming/FileNamer.scala`` / ``CloudKeyNamer`` (``<prefix>/<topic>/<partition>/<offset %012d>_<minTs>
  _<maxTs>.json``), the offset being the **last** record's (``writer/Writer.commit`` names the file after
  ``uncommittedOffset``);
- envelope lines: LS ``sink/transformers/SchemalessEnvelopeTransformer`` builds java.util.HashMaps (key order
  ``headers, metadata, value, key``; metadata ``partition, offset, topic, timestamp``, the timestamp left out when
  the record has none; byte[] as base64 with ``keyIsArray``/``valueIsArray``), written by Jackson
  (``conversion/ToJsonDataConverter``), one compact object per line;
- the exactly-once lock object: LS ``seek/IndexManagerV2`` / ``IndexModel.IndexFile``
  (``.indexes/<connector>/.locks/<topic>/<partition>.lock`` at the bucket root).

What the restore produces follows LS ``formats/reader/converters/SchemalessEnvelopeConverter.convert``: string
key/value as text, objects as compact JSON, base64 arrays decoded, number/boolean headers as their text (Connect's
SimpleHeaderConverter), partition and timestamp from the metadata; without the envelope LS ``TextConverter`` makes
each line a string value.
"""

from __future__ import annotations

import base64
import json
import time

import pytest

from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

LENSES_SOURCE = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
PREFIX = "lenses/backup"

# (partition, offset, key, value, headers, timestamp) as the sink saw them; bytes stand for byte[] (Lenses base64s)
RECORDS = [
    (0, 0, "k1", {"item": "apple", "id": 1, "sku": "A1"}, {"trace": "t1", "tag": "b"}, 1577849400000),
    (0, 1, None, "plain text", {}, 1577849401000),
    (0, 2, "k2", None, {"n": 7, "ratio": 1.5, "ok": True}, 1577849402000),  # a tombstone
    (0, 3, b"\x00\xffkey", b"\x01\x02value", {"bin": "x"}, None),  # byte[] key and value, no timestamp
    (0, 4, "k\u00e9", {"nested": [1, {"a": "t\u00e9"}]}, {"trace": "t\u00e9"}, 1577849404000),
    (1, 0, "p1", {"item": "pear"}, {}, 1577849500000),
]
FILES = {0: [[0, 1, 2], [3, 4]], 1: [[0]]}  # flush.count=3 on partition 0


def envelope_line(topic: str, record) -> bytes:
    partition, offset, key, value, headers, timestamp = record
    metadata = {"partition": partition, "offset": offset, "topic": topic}
    if timestamp is not None:
        metadata["timestamp"] = timestamp
    line = {"headers": headers, "metadata": metadata}
    line["value"] = base64.b64encode(value).decode() if isinstance(value, bytes) else value
    line["key"] = base64.b64encode(key).decode() if isinstance(key, bytes) else key
    if isinstance(key, bytes):
        line["keyIsArray"] = True
    if isinstance(value, bytes):
        line["valueIsArray"] = True
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def plain_line(record) -> bytes:
    return json.dumps(record[3], separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def lenses_objects(topic: str, envelope: bool) -> dict[str, bytes]:
    objects = {}
    by_offset = {(r[0], r[1]): r for r in RECORDS}
    for partition, files in FILES.items():
        for offsets in files:
            records = [by_offset[(partition, o)] for o in offsets]
            if not envelope:
                records = [r for r in records if r[3] is not None and not isinstance(r[3], bytes)]
            stamps = [r[5] if r[5] is not None else -1 for r in records]
            name = f"{PREFIX}/{topic}/{partition}/{offsets[-1]:012d}_{min(stamps)}_{max(stamps)}.json"
            objects[name] = b"".join(envelope_line(topic, r) if envelope else plain_line(r) for r in records)
    lock = {"owner": "4f7c0f0e-1d2b-4b8e-9a55-7d0e6f1b2c3d", "committedOffset": 4, "pendingState": None}
    objects[f".indexes/lenses-sink/.locks/{topic}/0.lock"] = json.dumps(lock, separators=(",", ":")).encode()
    return objects


def _bytes(x) -> bytes | None:
    if x is None:
        return None
    if isinstance(x, bytes):
        return x
    if isinstance(x, str):
        return x.encode()
    return json.dumps(x, separators=(",", ":"), ensure_ascii=False).encode()


def _kcql(target: str, bucket: str, envelope: bool) -> str:
    properties = " PROPERTIES('store.envelope'=true)" if envelope else ""
    return f"INSERT INTO {target} SELECT * FROM {bucket}:{PREFIX} STOREAS `JSON`{properties}"


def test_lenses_envelope_bucket_restores_record_exact(restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap):
    source, target = f"orders-{fresh_topic(1)}", fresh_topic(2)
    for key, body in lenses_objects(source, envelope=True).items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    started = int(time.time() * 1000)

    properties = {"connector.class": LENSES_SOURCE, "connect.s3.kcql": _kcql(target, fresh_bucket, True)}
    summary = restorer(fresh_bucket, source, properties).run()

    assert summary.records == len(RECORDS)
    restored = read_topic(kafka_bootstrap, target)
    for partition in (0, 1):
        expected = [r for r in RECORDS if r[0] == partition]
        got = restored[partition]
        assert [(r["key"], r["value"]) for r in got] == [(_bytes(r[2]), _bytes(r[3])) for r in expected]
        assert [list(r["headers"]) for r in got] == [
            [(k, v.encode() if isinstance(v, str) else json.dumps(v).encode()) for k, v in r[4].items()]
            for r in expected
        ]
        for record, want in zip(got, expected, strict=True):
            if want[5] is None:  # no timestamp in the envelope: the time of the restore, as Lenses' source does
                assert record["timestamp"] >= started
            else:
                assert record["timestamp"] == want[5]


def test_lenses_plain_bucket_restores_values(restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap):
    source, target = f"orders-{fresh_topic(1)}", fresh_topic(2)
    objects = lenses_objects(source, envelope=False)
    for key, body in objects.items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)

    properties = {"connector.class": LENSES_SOURCE, "connect.s3.kcql": _kcql(target, fresh_bucket, False)}
    summary = restorer(fresh_bucket, source, properties).run()

    plain = [r for r in RECORDS if r[3] is not None and not isinstance(r[3], bytes)]
    assert summary.records == len(plain)
    restored = read_topic(kafka_bootstrap, target)
    for partition in (0, 1):
        expected = [plain_line(r).rstrip(b"\n") for r in plain if r[0] == partition]
        assert [(r["key"], r["value"], list(r["headers"])) for r in restored[partition]] == [
            (None, v, []) for v in expected
        ]


def test_lenses_partitionby_bucket_restores_in_offset_order(
    restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    """``PARTITIONBY region``: LS ``CloudKeyNamer`` names ``<prefix>/region=<v>/<topic>(<partition>_<last offset
    %012d>).json``; one Kafka partition's records spread over both directories and are merged back by offset."""
    source, target = f"orders-{fresh_topic(1)}", fresh_topic(1)
    regions = ["eu", "us", "us", "eu", "eu", "us"]
    records = [(0, o, f"k{o}", {"region": r, "n": o}, {}, 1700000000000 + o) for o, r in enumerate(regions)]
    files = {"eu": [[0], [3, 4]], "us": [[1, 2], [5]]}  # flush.count=2 per directory writer
    for region, groups in files.items():
        for offsets in groups:
            key = f"{PREFIX}/region={region}/{source}(0_{offsets[-1]:012d}).json"
            body = b"".join(envelope_line(source, records[o]) for o in offsets)
            s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)

    properties = {"connector.class": LENSES_SOURCE, "connect.s3.kcql": _kcql(target, fresh_bucket, True)}
    summary = restorer(fresh_bucket, source, properties).run()

    assert summary.records == len(records)
    restored = read_topic(kafka_bootstrap, target)[0]
    assert [(r["key"], r["value"], r["timestamp"]) for r in restored] == [
        (_bytes(r[2]), _bytes(r[3]), r[5]) for r in records
    ]
