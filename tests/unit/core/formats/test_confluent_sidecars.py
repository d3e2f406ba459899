"""Issue 15 item 1: keys and headers sidecars as Confluent's S3 sink writes them, and earlier kafka-s3 ones still read.

Golden objects are built here from the peers' source, never from our writer:

- Headers record: CS ``format/RecordViews.HeadersRecordView`` (kafka-connect-storage-cloud): an ARRAY of an unnamed
  STRUCT ``{key: STRING, value: STRING}``, both required, ``value = Values.convertToString(...)``. Its Avro schema is
  what SR ``AvroData.fromConnectSchema`` (schema-registry ``avro-data``) makes of it: the unnamed struct becomes
  ``io.confluent.connect.avro.ConnectDefault``, no ``connect.name``, no union (PEER-FORMATS.md A2).
- Avro container: CS ``format/avro/AvroRecordWriterProvider``: metadata ``avro.schema`` and ``avro.codec`` only (codec
  ``null`` by default); no envelope for sidecars (the ``enveloped`` argument is false for Avro).
- JSON: CS ``format/json/JsonRecordWriterProvider`` envelopes the headers (struct ``{headers}``) and JsonConverter
  (``schemas.enable=false``) renders ``{"headers":[{"key":"tag","value":"a"},{"key":"tag","value":"b"}]}``.
- Parquet: CS ``format/parquet/ParquetRecordWriterProvider`` envelopes both: ``RecordHeaders{headers}``,
  ``RecordKey{key}``: one column ``headers`` (list of ``{key, value}`` strings), one column ``key``.
- Names: CS ``format/KeyValueHeaderRecordWriterProvider.getRecordWriter`` + ``util/Utils.getAdjustedFilename``: the
  value name loses its extension and gets ``.keys``/``.headers`` + the sidecar format's extension.
"""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_s3.core.converters.string import StringConverter
from kafka_s3.core.formats import REGISTRY
from kafka_s3.core.layout import Layout
from kafka_s3.core.records import make_batch
from tests.support.formats import read_object, sink_config, write_object
from tests.unit.core.formats.test_avro_format import avro_format
from tests.unit.core.formats.test_json_format import json_format
from tests.unit.core.formats.test_parquet_format import parquet_format

# SR AvroData.fromConnectSchema of CS RecordViews.HeadersRecordView's schema (facts sheet A2, verbatim)
CONFLUENT_HEADERS_SCHEMA = {
    "type": "array",
    "items": {
        "type": "record",
        "name": "ConnectDefault",
        "namespace": "io.confluent.connect.avro",
        "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": "string"}],
    },
}
# kafka-s3's headers sidecar schema before issue 15 (still read)
LEGACY_HEADERS_SCHEMA = {
    "type": "array",
    "items": {
        "type": "record",
        "name": "Header",
        "namespace": "io.kafka_s3",
        "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": ["null", "bytes"], "default": None}],
    },
}
TEXT_HEADERS = [[("tag", b"a"), ("tag", b"b")], [("trace", "t\u00e9".encode())], [("n", b"007")]]


def records(headers_per_record) -> pa.RecordBatch:
    return make_batch(
        {"offset": 1200 + i, "partition": 3, "topic": "orders", "key": f"k{i}".encode(), "value": b"v", "headers": h}
        for i, h in enumerate(headers_per_record)
    )


def read_headers(fmt, data: bytes) -> list[list[tuple]]:
    rows = [r for b in read_object(fmt, data) for r in b.column("headers").to_pylist()]
    return [[(h["key"], h["value"]) for h in row] for row in rows]


def confluent_avro(schema, datums) -> bytes:
    """An Avro container as CS AvroRecordWriterProvider writes it (codec null; random sync marker)."""
    out = io.BytesIO()
    fastavro.writer(out, schema, datums, codec="null")
    return out.getvalue()


# ------------------------------------------------------------------------------------------------ writing
def test_avro_headers_sidecar_has_confluents_schema():
    data = write_object(avro_format(role="headers"), [(records(TEXT_HEADERS), None)])
    reader = fastavro.reader(io.BytesIO(data))
    assert json.loads(reader.metadata["avro.schema"]) == CONFLUENT_HEADERS_SCHEMA
    assert set(reader.metadata) == {"avro.schema", "avro.codec"} and reader.codec == "null"
    assert list(reader) == [
        [{"key": "tag", "value": "a"}, {"key": "tag", "value": "b"}],
        [{"key": "trace", "value": "t\u00e9"}],
        [{"key": "n", "value": "007"}],
    ]


def test_json_headers_sidecar_lines_are_confluents():
    data = write_object(json_format(role="headers"), [(records(TEXT_HEADERS), None)])
    assert data == (
        b'{"headers":[{"key":"tag","value":"a"},{"key":"tag","value":"b"}]}\n'
        + '{"headers":[{"key":"trace","value":"t\u00e9"}]}\n'.encode()
        + b'{"headers":[{"key":"n","value":"007"}]}\n'
    )


def test_parquet_headers_sidecar_holds_text_values():
    table = pq.read_table(io.BytesIO(write_object(parquet_format(role="headers"), [(records(TEXT_HEADERS), None)])))
    assert table.column_names == ["headers"]
    item = table.schema.field("headers").type.value_type
    assert item.field("key").type == pa.string() and item.field("value").type == pa.string()
    assert table.column("headers").to_pylist()[0] == [{"key": "tag", "value": "a"}, {"key": "tag", "value": "b"}]


def test_headers_confluent_cannot_hold_keep_kafka_s3s_lossless_form():
    """A null header value or non-UTF-8 bytes: Confluent's sink throws DataException (a required STRING; AK
    ConnectSchema.validateValue) and writes nothing, so the object keeps kafka-s3's own schema: nothing is lost."""
    headers = [[("h", b"1"), ("h", None)], [("bin", b"\xff\x00")], []]
    for fmt in (avro_format(role="headers"), json_format(role="headers"), parquet_format(role="headers")):
        data = write_object(fmt, [(records(headers), None)])
        assert read_headers(fmt, data) == headers
    legacy = fastavro.reader(io.BytesIO(write_object(avro_format(role="headers"), [(records(headers), None)])))
    assert json.loads(legacy.metadata["avro.schema"]) == LEGACY_HEADERS_SCHEMA


@pytest.mark.parametrize(
    "format_class, settings, keys_name, headers_name",
    [
        ("avro", {}, "orders+3+0000001200.keys.avro", "orders+3+0000001200.headers.avro"),
        ("json", {}, "orders+3+0000001200.keys.json", "orders+3+0000001200.headers.json"),
        ("json", {"s3.compression.type": "gzip"}, "orders+3+0000001200.keys.json.gz", None),
        ("parquet", {}, "orders+3+0000001200.keys.snappy.parquet", "orders+3+0000001200.headers.snappy.parquet"),
        ("bytearray", {}, "orders+3+0000001200.keys.bin", None),
    ],
)
def test_sidecar_names_are_confluents(format_class, settings, keys_name, headers_name):
    config = sink_config("avro", **{k.replace(".", "__"): v for k, v in settings.items()})
    fmt = REGISTRY.resolve(format_class)(config, "keys")
    data_key = "topics/orders/partition=3/orders+3+0000001200.avro"
    assert Layout().sidecar_key(data_key, ".avro", "keys", fmt.extension).rsplit("/", 1)[1] == keys_name
    if headers_name:
        fmt = REGISTRY.resolve(format_class)(config, "headers")
        assert Layout().sidecar_key(data_key, ".avro", "headers", fmt.extension).rsplit("/", 1)[1] == headers_name


def test_avro_keys_sidecar_has_the_key_schema():
    """StringConverter keys: AvroData's optional string, ``["null","string"]`` (facts sheet A2)."""
    batch = records([[]] * 2)
    fmt = avro_format(StringConverter({}, True), role="keys")
    runs = fmt.converter.to_logical("orders", batch.column("key")).runs
    data = write_object(fmt, [(batch.slice(s, len(v)), v) for s, v in runs])
    reader = fastavro.reader(io.BytesIO(data))
    assert json.loads(reader.metadata["avro.schema"]) == ["null", "string"] and list(reader) == ["k0", "k1"]


# ------------------------------------------------------------------------------------------------ reading
GOLDEN_ROWS = [[{"key": "tag", "value": "a"}, {"key": "tag", "value": "b"}], [{"key": "trace", "value": "t1"}]]
EXPECTED = [[("tag", b"a"), ("tag", b"b")], [("trace", b"t1")]]


def test_confluent_avro_headers_sidecar_reads_back():
    assert read_headers(avro_format(role="headers"), confluent_avro(CONFLUENT_HEADERS_SCHEMA, GOLDEN_ROWS)) == EXPECTED


def test_confluent_json_headers_sidecar_reads_back():
    data = (
        b'{"headers":[{"key":"tag","value":"a"},{"key":"tag","value":"b"}]}\n'
        b'{"headers":[{"key":"trace","value":"t1"}]}\n'
    )
    assert read_headers(json_format(role="headers"), data) == EXPECTED


def test_confluent_parquet_headers_sidecar_reads_back():
    """parquet-avro writes Avro arrays in the old 2-level list structure (repeated group ``array``)."""
    item = pa.struct([pa.field("key", pa.string(), False), pa.field("value", pa.string(), False)])
    column = pa.array(GOLDEN_ROWS, pa.list_(pa.field("array", item, False)))
    out = io.BytesIO()
    pq.write_table(pa.table({"headers": column}), out, use_compliant_nested_type=False)
    assert read_headers(parquet_format(role="headers"), out.getvalue()) == EXPECTED


def test_earlier_kafka_s3_headers_sidecars_still_read():
    legacy = [[{"key": "h", "value": b"1"}, {"key": "h", "value": None}], []]
    expected = [[("h", b"1"), ("h", None)], []]
    assert read_headers(avro_format(role="headers"), confluent_avro(LEGACY_HEADERS_SCHEMA, legacy)) == expected
    assert (
        read_headers(json_format(role="headers"), b'[{"key":"h","value":"MQ=="},{"key":"h","value":null}]\n[]\n')
        == expected
    )
    item = pa.struct([("key", pa.string()), ("value", pa.binary())])
    out = io.BytesIO()
    pq.write_table(pa.table({"headers": pa.array(legacy, pa.list_(item))}), out)
    assert read_headers(parquet_format(role="headers"), out.getvalue()) == expected


def test_text_headers_round_trip_through_confluents_form():
    for fmt in (avro_format(role="headers"), json_format(role="headers"), parquet_format(role="headers")):
        assert read_headers(fmt, write_object(fmt, [(records(TEXT_HEADERS + [[]]), None)])) == TEXT_HEADERS + [[]]
