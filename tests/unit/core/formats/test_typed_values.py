"""Connect JSON with schemas -> Avro and Parquet keep the types; readers see them; restores give the payload back."""

import base64
import datetime as dt
import io
from decimal import Decimal

import avro.datafile
import avro.io
import duckdb
import fastavro
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_s3.core.converters.json import JsonConverter
from kafka_s3.core.formats.avro import AvroFormat
from kafka_s3.core.formats.json import JsonFormat
from kafka_s3.core.formats.parquet import ParquetFormat
from kafka_s3.core.records import make_batch, to_dicts
from tests.support.formats import read_object, sink_config, write_object

UTC = dt.UTC
ORDER_SCHEMA = {
    "type": "struct",
    "name": "shop.Order",
    "version": 2,
    "optional": False,
    "fields": [
        {"type": "int64", "optional": False, "field": "id"},
        {"type": "int16", "optional": False, "field": "quantity"},
        {"type": "string", "optional": True, "field": "note"},
        {
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2", "connect.decimal.precision": "12"},
            "optional": False,
            "field": "amount",
        },
        {
            "type": "int64",
            "name": "org.apache.kafka.connect.data.Timestamp",
            "version": 1,
            "optional": False,
            "field": "at",
        },
        {"type": "array", "items": {"type": "string", "optional": False}, "optional": False, "field": "tags"},
        {
            "type": "map",
            "keys": {"type": "string", "optional": False},
            "values": {"type": "double", "optional": False},
            "optional": True,
            "field": "metrics",
        },
        {
            "type": "struct",
            "name": "shop.Address",
            "optional": True,
            "field": "ship_to",
            "fields": [
                {"type": "string", "optional": False, "field": "city"},
                {
                    "type": "array",
                    "items": {
                        "type": "struct",
                        "optional": False,
                        "fields": [{"type": "double", "optional": False, "field": "lat"}],
                    },
                    "optional": False,
                    "field": "points",
                },
            ],
        },
    ],
}


def amount(value: str) -> str:
    unscaled = int(Decimal(value).scaleb(2))
    return base64.b64encode(unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)).decode()


PAYLOADS = [
    {
        "id": 1,
        "quantity": 2,
        "note": "café",
        "amount": amount("19.99"),
        "at": 1700000000123,
        "tags": ["new", "gift"],
        "metrics": {"weight": 1.5},
        "ship_to": {"city": "Paris", "points": [{"lat": 48.85}]},
    },
    {
        "id": 2,
        "quantity": -1,
        "note": None,
        "amount": amount("-0.50"),
        "at": 0,
        "tags": [],
        "metrics": None,
        "ship_to": None,
    },
]


def order_records():
    return make_batch(
        [{"offset": i, "value": orjson.dumps({"schema": ORDER_SCHEMA, "payload": p})} for i, p in enumerate(PAYLOADS)]
    )


def write_orders(fmt):
    records = order_records()
    ((_, values),) = fmt.converter.to_logical("orders", records.column("value")).runs
    return write_object(fmt, [(records, values)])


def test_avro_keeps_the_types_for_fastavro_and_the_avro_package():
    data = write_orders(AvroFormat(sink_config("avro", avro__codec="snappy"), converter=JsonConverter({}, False)))
    fast = list(fastavro.reader(io.BytesIO(data)))
    reference = list(avro.datafile.DataFileReader(io.BytesIO(data), avro.io.DatumReader()))
    for rows in (fast, reference):
        first, second = rows
        assert first["amount"] == Decimal("19.99") and second["amount"] == Decimal("-0.50")
        assert first["at"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
        assert first["metrics"] == {"weight": 1.5} and second["metrics"] is None
        assert first["ship_to"] == {"city": "Paris", "points": [{"lat": 48.85}]}
        assert (first["quantity"], second["quantity"], second["note"], second["tags"]) == (2, -1, None, [])
    schema = fastavro.reader(io.BytesIO(data)).writer_schema
    assert schema["name"] == "shop.Order"


def test_parquet_keeps_the_types_as_columns():
    fmt = ParquetFormat(sink_config("parquet"), converter=JsonConverter({}, False))
    table = pq.read_table(io.BytesIO(write_orders(fmt)))
    assert table.column_names == [f["field"] for f in ORDER_SCHEMA["fields"]]
    types = table.schema
    assert types.field("quantity").type == pa.int16() and not types.field("quantity").nullable
    assert types.field("amount").type == pa.decimal128(12, 2)
    assert types.field("at").type == pa.timestamp("ms", tz="UTC")
    metrics = types.field("metrics").type
    assert pa.types.is_map(metrics) and (metrics.key_type, metrics.item_type) == (pa.string(), pa.float64())
    assert types.field("ship_to").type.field("points").type.value_type == pa.struct(
        [pa.field("lat", pa.float64(), False)]
    )
    assert table.column("amount").to_pylist() == [Decimal("19.99"), Decimal("-0.50")]
    avro_schema = orjson.loads(table.schema.metadata[b"parquet.avro.schema"])
    assert (avro_schema["namespace"], avro_schema["name"]) == ("shop", "Order")


def test_duckdb_queries_the_typed_parquet(tmp_path):
    path = tmp_path / "orders.snappy.parquet"
    path.write_bytes(write_orders(ParquetFormat(sink_config("parquet"), converter=JsonConverter({}, False))))
    rows = duckdb.sql(
        f"select id, amount, ship_to.city, tags, metrics['weight'], epoch_ms(\"at\") from '{path}' order by id"
    ).fetchall()
    assert rows == [
        (1, Decimal("19.99"), "Paris", ["new", "gift"], 1.5, 1700000000123),
        (2, Decimal("-0.50"), None, [], None, 0),
    ]


def test_json_renders_the_payload_as_connect_does():
    fmt = JsonFormat(sink_config("json"), converter=JsonConverter({}, False))
    lines = write_orders(fmt).splitlines()
    assert [orjson.loads(line) for line in lines] == PAYLOADS


# Avro has no 16-bit integer: AvroData's connect.type metadata (written as Confluent's sink writes it) keeps int16.
@pytest.mark.parametrize("cls, quantity_type", [(AvroFormat, "int16"), (ParquetFormat, "int16")])
def test_restore_rebuilds_connect_envelopes_with_the_payload(cls, quantity_type):
    fmt = cls(sink_config(cls.name), converter=JsonConverter({}, False))
    restored = [orjson.loads(row["value"]) for row in to_dicts(read_object(fmt, write_orders(fmt)))]
    assert [r["payload"] for r in restored] == PAYLOADS
    schema = restored[0]["schema"]
    assert schema["name"] == "shop.Order"
    fields = {f["field"]: f for f in schema["fields"]}
    assert fields["quantity"]["type"] == quantity_type
    assert fields["amount"]["parameters"] == {"scale": "2", "connect.decimal.precision": "12"}
    assert fields["ship_to"]["name"] == "shop.Address" and fields["ship_to"]["optional"] is True


def test_keys_with_schemas_are_stored_typed_too():
    key_schema = {"type": "struct", "fields": [{"type": "int64", "optional": False, "field": "id"}], "optional": False}
    records = make_batch([{"offset": 0, "key": orjson.dumps({"schema": key_schema, "payload": {"id": 7}})}])
    fmt = ParquetFormat(sink_config("parquet"), role="keys", converter=JsonConverter({}, True))
    ((_, keys),) = fmt.converter.to_logical("orders", records.column("key")).runs
    data = write_object(fmt, [(records, keys)])
    assert pq.read_table(io.BytesIO(data)).column("key").to_pylist() == [{"id": 7}]
    (batch,) = read_object(fmt, data)
    assert orjson.loads(batch.column("key")[0].as_py())["payload"] == {"id": 7}


KEY_SCHEMA = {"type": "struct", "fields": [{"type": "int64", "optional": False, "field": "id"}], "optional": True}


@pytest.mark.parametrize("cls", [AvroFormat, ParquetFormat])
def test_null_keys_take_the_schema_of_the_object_whenever_they_come(cls):
    """A batch of only null keys has no schema; it must not split (or break) a typed keys sidecar."""
    keys = [None, None, orjson.dumps({"schema": KEY_SCHEMA, "payload": {"id": 7}}), None]
    records = make_batch([{"offset": i, "key": k} for i, k in enumerate(keys)])
    fmt = cls(sink_config(cls.name), role="keys", converter=JsonConverter({}, True))
    chunks = []
    for start, length in [(0, 2), (2, 1), (3, 1)]:  # nulls only, typed, nulls only
        part = records.slice(start, length)
        ((_, converted),) = fmt.converter.to_logical("orders", part.column("key")).runs
        chunks.append((part, converted))
    data = write_object(fmt, chunks)
    restored = [
        None if k is None else orjson.loads(k)["payload"] for k in read_object(fmt, data)[0].column("key").to_pylist()
    ]
    assert restored == [None, None, {"id": 7}, None]


@pytest.mark.parametrize("cls", [AvroFormat, ParquetFormat])
def test_an_object_of_only_null_keys_is_valid(cls):
    records = make_batch([{"offset": i} for i in range(3)])
    fmt = cls(sink_config(cls.name), role="keys", converter=JsonConverter({}, True))
    ((_, converted),) = fmt.converter.to_logical("orders", records.column("key")).runs
    (batch,) = read_object(fmt, write_object(fmt, [(records, converted)]))
    assert batch.column("key").to_pylist() == [None, None, None]
