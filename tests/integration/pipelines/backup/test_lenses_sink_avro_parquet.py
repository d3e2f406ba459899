"""Issue 15 item 6 (B3): a Lenses S3 *sink* configuration with ``STOREAS AVRO``/``PARQUET`` and
``'store.envelope'=true`` backs up into Lenses' layout and envelope, and a Lenses S3 *source* configuration restores
it record-exact — with the real Kafka, S3 (SeaweedFS) and Spark.

What Lenses writes is taken from its source (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``), never
from our writer:

- names: ``sink/naming/FileNamer.OffsetFileNamer.fileName`` under ``CloudKeyNamer``'s ``<prefix>/<topic>/
  <partition>/``: ``<last offset %012d>_<smallest timestamp>_<largest timestamp>.avro`` (``.parquet``;
  ``FileExtensionNamer``: Avro and Parquet keep their extension whatever the codec);
- objects roll where ``'flush.count'`` says and where the envelope's schema changes (``formats/writer/
  AvroFormatWriter.rolloverFileOnSchemaChange``/``ParquetFormatWriter``: true): the headers struct has one field per
  header name (``sink/transformers/EnvelopeWithSchemaTransformer.headersSchema``), so other header names or types
  start a new object;
- the envelope: ``EnvelopeWithSchemaTransformer.envelopeSchema``: ``key``, ``value`` (the converters' optional
  schemas: StringConverter ``OPTIONAL_STRING_SCHEMA``, ByteArrayConverter ``OPTIONAL_BYTES_SCHEMA``), ``headers``
  (sorted by name, each ``toOptional``; a header's type is Connect's SimpleHeaderConverter's: ``"7"`` an int8,
  ``"1.5"`` a float32, text a string), ``metadata`` (``MetadataSchema``: ``.optional()`` after its first field makes
  the struct optional, its four fields required);
- Avro schema: ``sink/conversion/ToAvroDataConverter`` uses Confluent's AvroData (SR ``AvroData.fromConnectSchema``:
  unnamed structs ``io.confluent.connect.avro.ConnectDefault``, then ``ConnectDefault2``… in the order met
  (``getNameOrDefault``), optional schemas ``["null", T]`` with default null, ``connect.type`` on int8), written as
  Java's ``Schema.toString`` writes it (a nested record's namespace left out when it is the enclosing one);
- Avro container: ``AvroFormatWriter.AvroWriterState.write`` flushes the ``DataFileWriter`` after every record: one
  record per block; codec ``null`` (``connect.s3.compression.codec`` defaults to UNCOMPRESSED, LS
  ``config/CompressionCodecSettings``);
- Parquet: ``ParquetFormatWriter.init``: ``AvroParquetWriter`` (``parquet.avro.schema`` holds the same Avro schema),
  UNCOMPRESSED by default.

The Lenses source brings back (``formats/reader``): headers in the struct's (name) order, the last of repeated
names, numbers as their text; partition and timestamp from the metadata.
"""

from __future__ import annotations

import io
import re

import fastavro
import pyarrow.parquet as pq
import pytest

from tests.support.integration import list_keys
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
LENSES_SOURCE = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
PREFIX = "lenses/struct"
FLUSH = 3
T0 = 1_700_000_000_000
# (partition, key, value (None: tombstone), headers, timestamp)
RECORDS = [
    (0, b"k0", "v0", [("trace", b"t0"), ("n", b"7")], T0 + 5),
    (0, b"k1", "v1 caf\u00e9", [("n", b"-12"), ("trace", b"t1")], T0 + 1),
    (0, b"k2", None, [("trace", b"t2"), ("n", b"100")], T0 + 9),
    (0, b"k3", "v3", [("trace", b"t3"), ("n", b"1")], T0 + 20),
    (0, b"k4", "v4", [("trace", b"t4")], T0 + 21),
    (0, None, "v5", [("trace", b"a"), ("trace", b"b")], T0 + 19),
    (0, b"k6", "v6", [], T0 + 30),
    (0, b"k7", "v7", [], T0 + 31),
    (1, b"p0", "w0", [("trace", b"x")], T0 + 100),
    (1, b"p1", "w1", [("trace", b"y"), ("f", b"1.5")], T0 + 101),
]
# Lenses' objects: three records at most ('flush.count'=3), and a new object where the header names/types change
FILES = {0: [[0, 1, 2], [3], [4, 5], [6, 7]], 1: [[0], [1]]}
# Connect's type of each header (SimpleHeaderConverter → Values.parseString), as AvroData writes it
HEADER_AVRO = {"trace": '"string"', "n": '{"type":"int","connect.type":"int8"}', "f": '"float"'}
HEADER_VALUE = {"trace": bytes.decode, "n": lambda raw: int(raw), "f": lambda raw: float(raw)}


def _schema_json(key_type: str, headers: list[str]) -> str:
    """The envelope's Avro schema, as Java's Schema.toString() writes AvroData's conversion of it."""
    fields = [
        f'{{"name":"key","type":["null","{key_type}"],"default":null}}',
        '{"name":"value","type":["null","string"],"default":null}',
    ]
    metadata_name = "ConnectDefault2"
    if headers:
        header_fields = ",".join(f'{{"name":"{n}","type":["null",{HEADER_AVRO[n]}],"default":null}}' for n in headers)
        fields.append(
            f'{{"name":"headers","type":{{"type":"record","name":"ConnectDefault2","fields":[{header_fields}]}}}}'
        )
        metadata_name = "ConnectDefault3"
    fields.append(
        f'{{"name":"metadata","type":["null",{{"type":"record","name":"{metadata_name}","fields":['
        '{"name":"timestamp","type":"long"},{"name":"topic","type":"string"},{"name":"partition","type":"int"},'
        '{"name":"offset","type":"long"}]}],"default":null}'
    )
    return (
        '{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro","fields":['
        + ",".join(fields)
        + "]}"
    )


def _last_wins(headers) -> dict:
    out: dict = {}
    for name, raw in headers:
        out[name] = raw
    return dict(sorted(out.items()))


def _envelope(topic: str, partition: int, offset: int, record, key_type: str) -> dict:
    _, key, value, headers, timestamp = record
    datum = {
        "key": None if key is None else key.decode() if key_type == "string" else key,
        "value": value,
    }
    named = _last_wins(headers)
    if named:
        datum["headers"] = {n: HEADER_VALUE[n](raw) for n, raw in named.items()}
    datum["metadata"] = {"timestamp": timestamp, "topic": topic, "partition": partition, "offset": offset}
    return datum


def _expected(topic: str, fmt: str, key_type: str) -> dict[str, tuple[str, list[dict]]]:
    objects = {}
    for partition, files in FILES.items():
        records = [r for r in RECORDS if r[0] == partition]
        for offsets in files:
            group = [records[o] for o in offsets]
            stamps = [r[4] for r in group]
            name = f"{PREFIX}/{topic}/{partition}/{offsets[-1]:012d}_{min(stamps)}_{max(stamps)}.{fmt}"
            schema = _schema_json(key_type, list(_last_wins(group[0][3])))
            datums = [_envelope(topic, partition, o, r, key_type) for o, r in zip(offsets, group, strict=True)]
            objects[name] = (schema, datums)
    return objects


def _read_object(fmt: str, body: bytes) -> tuple[str, list[dict], list[int]]:
    """The object's schema JSON (as stored), its records, and the records per block (Avro) or row group."""
    if fmt == "avro":
        header = fastavro.block_reader(io.BytesIO(body))
        blocks = list(header)
        schema = header.metadata["avro.schema"]
        assert header.metadata["avro.codec"] == "null"
        return schema, [d for b in blocks for d in b], [b.num_records for b in blocks]
    parquet = pq.ParquetFile(io.BytesIO(body))
    metadata = parquet.metadata
    assert metadata.metadata[b"writer.model.name"] == b"avro"
    for group in range(metadata.num_row_groups):
        for column in range(metadata.num_columns):
            assert metadata.row_group(group).column(column).compression == "UNCOMPRESSED"
    rows = parquet.read().to_pylist()
    for row in rows:
        if row.get("headers") is None:
            row.pop("headers", None)
    return metadata.metadata[b"parquet.avro.schema"].decode(), rows, [metadata.num_rows]


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_lenses_sink_avro_parquet_envelope_backs_up_lenses_objects_and_restores_record_exact(
    fmt, backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic, target = fresh_topic(2), fresh_topic(2)
    produce(
        topic,
        [
            {"partition": p, "key": k, "value": None if v is None else v.encode(), "headers": h, "timestamp": ts}
            for p, k, v, h, ts in RECORDS
        ],
    )
    key_type = "string" if fmt == "avro" else "bytes"
    sink = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:{PREFIX} SELECT * FROM {topic} STOREAS `{fmt.upper()}` "
        f"PROPERTIES('store.envelope'=true, 'flush.count'={FLUSH})",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter"
        if key_type == "string"
        else "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }

    summary = backup(fresh_bucket, topic, sink)

    assert summary.records == len(RECORDS)
    expected = _expected(topic, fmt, key_type)
    keys = [k for k in list_keys(s3_client, fresh_bucket, PREFIX + "/") if "/_kafka-s3/" not in k]
    assert sorted(keys) == sorted(expected)
    for key, (schema, datums) in expected.items():
        body = s3_client.get_object(Bucket=fresh_bucket, Key=key)["Body"].read()
        stored_schema, records, per_block = _read_object(fmt, body)
        assert stored_schema == schema, key
        assert records == datums, key
        if fmt == "avro":
            assert per_block == [1] * len(datums), key  # flushed after every record
    connector = f"it-{fresh_bucket}"
    for partition, last in ((0, 7), (1, 1)):
        lock = f".indexes/{connector}/.locks/{topic}/{partition}.lock"
        body = s3_client.get_object(Bucket=fresh_bucket, Key=lock)["Body"].read()
        assert re.fullmatch(rb'\{"owner":"[0-9a-f-]{36}","committedOffset":%d,"pendingState":null\}' % last, body)

    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:{PREFIX} STOREAS `{fmt.upper()}` "
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
        assert [(r["key"], r["value"], list(r["headers"]), r["timestamp"]) for r in restored[partition]] == [
            (k, None if v is None else v.encode(), list(_last_wins(h).items()), ts) for _, k, v, h, ts in want
        ]


def test_lenses_sink_avro_without_envelope_backs_up_values_and_restores_them(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    """Without the envelope Lenses writes the value alone with its schema (LS ``AvroFormatWriter.write``:
    ``message.value.schema()``: StringConverter's ``OPTIONAL_STRING_SCHEMA`` → ``["null","string"]``), one record
    per block; the source gives the values back, with no key, headers or timestamp."""
    topic, target = fresh_topic(1), fresh_topic(1)
    values = ["a", "b\u00e9", "c", "d"]
    produce(topic, [{"key": b"k", "value": v.encode(), "headers": [("h", b"1")], "timestamp": T0} for v in values])
    sink = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:{PREFIX} SELECT * FROM {topic} STOREAS `AVRO` "
        "PROPERTIES('flush.count'=3)",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }

    assert backup(fresh_bucket, topic, sink).records == len(values)

    keys = sorted(k for k in list_keys(s3_client, fresh_bucket, PREFIX + "/") if "/_kafka-s3/" not in k)
    assert keys == [
        f"{PREFIX}/{topic}/0/000000000002_{T0}_{T0}.avro",
        f"{PREFIX}/{topic}/0/000000000003_{T0}_{T0}.avro",
    ]
    stored = []
    for key in keys:
        schema, records, per_block = _read_object(
            "avro", s3_client.get_object(Bucket=fresh_bucket, Key=key)["Body"].read()
        )
        assert schema == '["null","string"]'
        assert per_block == [1] * len(records)
        stored += records
    assert stored == values

    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:{PREFIX} STOREAS `AVRO`",
    }
    assert restorer(fresh_bucket, topic, source).run().records == len(values)
    restored = read_topic(kafka_bootstrap, target)[0]
    assert [(r["key"], r["value"], list(r["headers"])) for r in restored] == [(None, v.encode(), []) for v in values]


def test_lenses_sink_parquet_partitionby_has_lenses_names_and_restores_record_exact(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    """``PARTITIONBY _key STOREAS PARQUET``: LS ``sink/naming/CloudKeyNamer.finalFilename`` and ``FileNamer
    .TopicPartitionOffsetFileNamer.fileName``: ``<prefix>/key=<key>/<topic>(<partition>_<last offset %012d>).parquet``
    (``config/PartitionSelection.apply``: KeysAndValues by default); each directory's objects hold the envelope."""
    topic, target = fresh_topic(2), fresh_topic(2)
    records = [
        (0, b"a", b"v0", [("trace", b"t0")], T0 + 5),
        (0, b"b", b"v1", [("trace", b"t1")], T0 + 1),
        (0, b"a", b"v2", [("trace", b"t2")], T0 + 9),
        (1, b"b", b"w0", [("trace", b"x")], T0 + 100),
    ]
    produce(
        topic, [{"partition": p, "key": k, "value": v, "headers": h, "timestamp": ts} for p, k, v, h, ts in records]
    )
    sink = {
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO {fresh_bucket}:{PREFIX} SELECT * FROM {topic} PARTITIONBY _key "
        "STOREAS `PARQUET` PROPERTIES('store.envelope'=true)",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }

    assert backup(fresh_bucket, topic, sink).records == len(records)

    keys = [k for k in list_keys(s3_client, fresh_bucket, PREFIX + "/") if "/_kafka-s3/" not in k]
    assert sorted(keys) == sorted(
        [
            f"{PREFIX}/key=a/{topic}(0_000000000002).parquet",
            f"{PREFIX}/key=b/{topic}(0_000000000001).parquet",
            f"{PREFIX}/key=b/{topic}(1_000000000000).parquet",
        ]
    )
    body = s3_client.get_object(Bucket=fresh_bucket, Key=f"{PREFIX}/key=a/{topic}(0_000000000002).parquet")["Body"]
    _, rows, _ = _read_object("parquet", body.read())
    assert [(r["key"], r["value"], r["metadata"]["offset"]) for r in rows] == [("a", "v0", 0), ("a", "v2", 2)]

    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:{PREFIX} STOREAS `PARQUET` "
        "PROPERTIES('store.envelope'=true)",
    }
    assert restorer(fresh_bucket, topic, source).run().records == len(records)
    restored = read_topic(kafka_bootstrap, target)
    for partition in (0, 1):
        assert [(r["key"], r["value"], list(r["headers"]), r["timestamp"]) for r in restored[partition]] == [
            (k, v, h, ts) for p, k, v, h, ts in records if p == partition
        ]
