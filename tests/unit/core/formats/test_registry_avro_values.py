"""Avro values from a Schema Registry (every Avro type) in Avro, Parquet and JSON objects, read by independent
readers, and read back into the wire format for restores."""

from __future__ import annotations

import base64
import io
import json
import uuid

import avro.datafile
import avro.io
import duckdb
import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka.schema_registry import Schema

from kafka_s3.core.formats.avro import AvroFormat
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.formats.json import JsonFormat
from kafka_s3.core.formats.parquet import ParquetFormat
from kafka_s3.core.records import make_batch
from kafka_s3.io.schema_registry.client import registry_client
from kafka_s3.io.schema_registry.converter import AvroConverter
from tests.support.avro_versions import RICH, encoded, rich_record
from tests.support.formats import read_object, sink_config, write_object

N = 10


@pytest.fixture
def payments():
    """``(converter, records batch, converted values, wire values)`` of N rich records in a fresh registry."""
    url = f"mock://formats-{uuid.uuid4().hex}"
    schema_id = registry_client({"url": url}).register_schema(
        "payments-value", Schema(json.dumps(RICH, separators=(",", ":")), "AVRO")
    )
    wire = [encoded(RICH, schema_id, rich_record(n)) for n in range(N)]
    records = make_batch([{"topic": "payments", "offset": n, "value": v} for n, v in enumerate(wire)])
    converter = AvroConverter({"schema.registry.url": url}, False)
    ((_, values),) = converter.to_logical("payments", records.column("value")).runs
    return converter, records, values, wire


def _bodies(schema, datums) -> list[bytes]:
    out = []
    for datum in datums:
        body = io.BytesIO()
        fastavro.schemaless_writer(body, fastavro.parse_schema(schema), datum)
        out.append(body.getvalue())
    return out


@pytest.mark.filterwarnings("ignore::avro.errors.IgnoredLogicalType")  # the avro package lacks local-timestamp
def test_avro_objects_keep_the_registered_writer_schema_and_every_value(payments):
    converter, records, values, wire = payments
    data = write_object(
        AvroFormat(sink_config("avro", avro__codec="deflate"), converter=converter),
        [(records.slice(0, 4), values.slice(0, 4)), (records.slice(4), values.slice(4, N - 4))],
    )
    reader = fastavro.reader(io.BytesIO(data), return_named_type=True)
    assert json.loads(reader.metadata["avro.schema"]) == RICH  # as registered, not rewritten
    # every datum is the producer's, bit for bit
    assert _bodies(RICH, list(reader)) == [v[5:] for v in wire]
    reference = list(avro.datafile.DataFileReader(io.BytesIO(data), avro.io.DatumReader()))
    assert [r["status"] for r in reference] == [rich_record(n)["status"] for n in range(N)]
    assert reference[3]["detail"] == {"name": "d3", "iban": None} and reference[1]["detail"] == 7
    assert reference[2]["amount"] == rich_record(2)["amount"] and reference[0]["digest"] == b"\x00\x00\x00\x00"


def test_parquet_columns_have_the_types_pyarrow_writes_for_each_avro_type(payments):
    converter, records, values, _ = payments
    data = write_object(ParquetFormat(sink_config("parquet"), converter=converter), [(records, values)])
    table = pq.read_table(io.BytesIO(data))
    schema = table.schema
    assert json.loads(schema.metadata[b"parquet.avro.schema"]) == RICH
    assert schema.field("status").type == pa.string() and schema.field("digest").type == pa.binary(4)
    assert schema.field("at_us").type == pa.timestamp("us", tz="UTC") and schema.field("time_us").type == pa.time64(
        "us"
    )
    assert schema.field("amount").type == pa.decimal128(12, 2) and schema.field("limits").type.item_type == pa.float64()
    assert [f.name for f in schema.field("detail").type] == ["long", "string", "Party", "Status"]
    parquet_types = {c.name: c.logical_type.type for c in pq.ParquetFile(io.BytesIO(data)).schema}
    assert parquet_types["at_us"] == "TIMESTAMP" and parquet_types["day"] == "DATE"
    assert parquet_types["amount"] == "DECIMAL" and parquet_types["status"] == "STRING"
    rows = (
        duckdb.from_arrow(table)
        .query("tbl", 'select payer.name, detail.long, status, tags from tbl order by "count" desc')
        .fetchall()
    )
    assert rows[1] == ("p1", 7, "PAID", ["t0"])
    assert table.column("id").to_pylist()[0] == rich_record(0)["id"]


def test_json_objects_render_plain_json_as_connect_does(payments):
    converter, records, values, _ = payments
    data = write_object(JsonFormat(sink_config("json"), converter=converter), [(records, values)])
    lines = [json.loads(line) for line in data.decode().splitlines()]
    first, second = lines[0], lines[1]
    assert first["id"] == rich_record(0)["id"] and first["status"] == "NEW" and first["memo"] == "memo 0"
    assert first["at"] == 1714564800123  # timestamp-millis: epoch milliseconds
    assert first["at_us"] == 1714564800123456  # micros (no Connect logical type): the number as stored
    assert first["day"] == 19782 and first["time"] == 86340999 and second["time_us"] == 1000002
    assert base64.b64decode(first["digest"]) == b"\x00\x00\x00\x00"
    assert base64.b64decode(second["amount"]) == (-449).to_bytes(2, "big", signed=True)  # -4.49, Connect's Decimal
    assert second["detail"] == {"long": 7, "string": None, "Party": None, "Status": None}
    assert second["limits"] == {"day": 100.5, "night": None} and first["payee"] == {"name": "q0", "iban": None}


@pytest.mark.parametrize("fmt", [AvroFormat, ParquetFormat])
def test_objects_read_back_to_the_wire_format(payments, fmt):
    converter, records, values, wire = payments
    data = write_object(fmt(sink_config(fmt.name), converter=converter), [(records, values)])
    ctx = FileContext("payments", 0, 0, "topics/payments/partition=0/payments+0+0000000000")
    restored = read_object(fmt(sink_config(fmt.name), converter=converter), data, ctx)
    assert [v for batch in restored for v in batch.column("value").to_pylist()] == wire
