"""Issue 15 item 7 (B3): Lenses' Avro and Parquet objects restore through a Lenses source configuration
(``STOREAS AVRO``/``PARQUET``): with the envelope record-exact as far as it carries the fields, without it values.

Built from Lenses' source code (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``), never by our writer:

- the envelope struct: LS ``sink/transformers/EnvelopeWithSchemaTransformer.envelopeSchema``: optional ``key`` and
  ``value`` (left out when the record has no schema for them), ``headers`` a struct with one optional field per
  header name **sorted by name** (``headersSchema``), ``metadata`` ``{timestamp: int64, topic: string, partition:
  int32, offset: int64}`` (``MetadataSchema``: an optional struct, ``.optional()`` following its first field);
- Avro from that Connect schema as Confluent's AvroData converts it (~ facts sheet B3: unnamed structs become
  ``io.confluent.connect.avro.ConnectDefault`` records, optional fields ``["null", T]`` with default null);
- names: LS ``sink/naming/FileNamer`` (``<prefix>/<topic>/<partition>/<last offset %012d>_<minTs>_<maxTs>.avro``;
  ``.parquet`` for Parquet, ``FileExtensionNamer``: Avro and Parquet keep their extension whatever the codec).

What comes back follows Lenses' source (LS ``formats/reader``): string key/value as their text, bytes as they are;
headers in the struct's (name) order; partition and timestamp from the metadata. Without the envelope the object's
records are the values alone (string values as their text).
"""

from __future__ import annotations

import io

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

LENSES_SOURCE = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
PREFIX = "lenses/avro"
# (partition, offset, key, value, headers, timestamp): string key/value (StringConverter on the sink)
RECORDS = [
    (0, 0, "k1", "apple", {"trace": "t1", "tag": "b"}, 1577849400000),
    (0, 1, "k2", "pear", {"tag": "c", "trace": "t2"}, 1577849401000),
    (0, 2, "k\u00e9", "fig", {"tag": "d", "trace": "t3"}, 1577849402000),
    (1, 0, "p1", "plum", {"tag": "e", "trace": "t4"}, 1577849500000),
]
FILES = {0: [[0, 1], [2]], 1: [[0]]}


def optional(avro_type):
    return ["null", avro_type]


def envelope_schema() -> dict:
    headers = {
        "type": "record",
        "name": "ConnectDefault2",
        "namespace": "io.confluent.connect.avro",
        "fields": [{"name": n, "type": optional("string"), "default": None} for n in ("tag", "trace")],  # sorted
    }
    metadata = {
        "type": "record",
        "name": "ConnectDefault3",
        "namespace": "io.confluent.connect.avro",
        "fields": [
            {"name": "timestamp", "type": "long"},
            {"name": "topic", "type": "string"},
            {"name": "partition", "type": "int"},
            {"name": "offset", "type": "long"},
        ],
    }
    return {
        "type": "record",
        "name": "ConnectDefault",
        "namespace": "io.confluent.connect.avro",
        "fields": [
            {"name": "key", "type": optional("string"), "default": None},
            {"name": "value", "type": optional("string"), "default": None},
            {"name": "headers", "type": headers},
            # MetadataSchema's .optional() follows its first .field: the struct is optional (its fields are not)
            {"name": "metadata", "type": optional(metadata), "default": None},
        ],
    }


def envelope(topic, record) -> dict:
    partition, offset, key, value, headers, ts = record
    return {
        "key": key,
        "value": value,
        "headers": dict(sorted(headers.items())),
        "metadata": {"timestamp": ts, "topic": topic, "partition": partition, "offset": offset},
    }


def lenses_objects(topic: str, fmt: str, with_envelope: bool) -> dict[str, bytes]:
    objects = {}
    by = {(r[0], r[1]): r for r in RECORDS}
    for partition, files in FILES.items():
        for offsets in files:
            records = [by[(partition, o)] for o in offsets]
            stamps = [r[5] for r in records]
            name = f"{PREFIX}/{topic}/{partition}/{offsets[-1]:012d}_{min(stamps)}_{max(stamps)}.{fmt}"
            datums = [envelope(topic, r) for r in records] if with_envelope else [r[3] for r in records]
            out = io.BytesIO()
            if fmt == "avro":
                fastavro.writer(out, envelope_schema() if with_envelope else "string", datums)
            else:
                pq.write_table(pa.Table.from_pylist(datums) if with_envelope else pa.table({"value": datums}), out)
            objects[name] = out.getvalue()
    return objects


def _kcql(target: str, bucket: str, fmt: str, with_envelope: bool) -> str:
    properties = " PROPERTIES('store.envelope'=true)" if with_envelope else ""
    return f"INSERT INTO {target} SELECT * FROM {bucket}:{PREFIX} STOREAS `{fmt.upper()}`{properties}"


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_lenses_avro_and_parquet_envelope_buckets_restore_record_exact(
    fmt, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source, target = f"orders-{fresh_topic(1)}", fresh_topic(2)
    for key, body in lenses_objects(source, fmt, True).items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    properties = {"connector.class": LENSES_SOURCE, "connect.s3.kcql": _kcql(target, fresh_bucket, fmt, True)}

    summary = restorer(fresh_bucket, source, properties).run()

    assert summary.records == len(RECORDS)
    restored = read_topic(kafka_bootstrap, target)
    for partition in (0, 1):
        expected = [r for r in RECORDS if r[0] == partition]
        assert [(r["key"], r["value"], list(r["headers"]), r["timestamp"]) for r in restored[partition]] == [
            (k.encode(), v.encode(), [(n, h[n].encode()) for n in sorted(h)], ts) for _, _, k, v, h, ts in expected
        ]


def test_lenses_avro_bucket_without_envelope_restores_values(
    restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source, target = f"orders-{fresh_topic(1)}", fresh_topic(2)
    for key, body in lenses_objects(source, "avro", False).items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    properties = {"connector.class": LENSES_SOURCE, "connect.s3.kcql": _kcql(target, fresh_bucket, "avro", False)}

    summary = restorer(fresh_bucket, source, properties).run()

    assert summary.records == len(RECORDS)
    restored = read_topic(kafka_bootstrap, target)
    for partition in (0, 1):
        assert [(r["key"], r["value"], list(r["headers"])) for r in restored[partition]] == [
            (None, r[3].encode(), []) for r in RECORDS if r[0] == partition
        ]
