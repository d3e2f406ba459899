"""JsonConverter: schemaless JSON, Connect envelopes typed into Arrow + Avro, runs per schema, and restores."""

import base64
import datetime as dt
from decimal import Decimal

import fastavro
import orjson
import pyarrow as pa
import pytest

from kafka_s3.core.converters import REGISTRY
from kafka_s3.core.converters import connect_schema as connect_module
from kafka_s3.core.converters.base import Logical, ValueSchema
from kafka_s3.core.converters.connect_schema import ConnectSchema
from kafka_s3.core.converters.json import JsonConverter
from kafka_s3.core.errors import ConfigError, ConversionError

USER_SCHEMA = {
    "type": "struct",
    "name": "com.example.User",
    "version": 3,
    "fields": [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "int8", "optional": True, "field": "level"},
        {"type": "string", "optional": True, "default": "anonymous", "field": "name"},
        {"type": "bytes", "optional": True, "field": "avatar"},
        {
            "type": "bytes",
            "optional": False,
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2", "connect.decimal.precision": "10"},
            "field": "balance",
        },
        {"type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp", "field": "created"},
        {"type": "int32", "optional": True, "name": "org.apache.kafka.connect.data.Date", "field": "birthday"},
        {"type": "int32", "optional": True, "name": "org.apache.kafka.connect.data.Time", "field": "wakes_at"},
        {"type": "array", "items": {"type": "string", "optional": False}, "optional": False, "field": "tags"},
        {
            "type": "map",
            "keys": {"type": "string", "optional": False},
            "values": {"type": "int64", "optional": False},
            "optional": True,
            "field": "scores",
        },
        {
            "type": "map",
            "keys": {"type": "int32", "optional": False},
            "values": {"type": "string", "optional": True},
            "optional": True,
            "field": "by_id",
        },
        {
            "type": "struct",
            "fields": [
                {"type": "string", "optional": False, "field": "city"},
                {"type": "string", "optional": True, "field": "zip"},
            ],
            "optional": True,
            "field": "address",
        },
    ],
}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def user(user_id: int = 1, **overrides) -> dict:
    payload = {
        "id": user_id,
        "level": 3,
        "name": "Ada",
        "avatar": b64(b"\x89PNG"),
        "balance": b64((12345).to_bytes(2, "big", signed=True)),  # 123.45
        "created": 1700000000123,
        "birthday": 19000,
        "wakes_at": 25200000,
        "tags": ["a", "b"],
        "scores": {"x": 1},
        "by_id": [[1, "one"], [2, None]],
        "address": {"city": "Paris", "zip": None},
    }
    return {**payload, **overrides}


def envelope(payload, schema=USER_SCHEMA) -> bytes:
    return orjson.dumps({"schema": schema, "payload": payload})


def convert(values, **settings):
    return JsonConverter(settings, is_key=False).to_logical("users", pa.array(values, pa.binary()))


def test_registry_resolves_connect_class_name():
    assert REGISTRY.resolve("org.apache.kafka.connect.json.JsonConverter") is JsonConverter


# ---------------------------------------------------------------------------------------------------- schemaless
def test_schemaless_values_are_compact_json_and_nulls_stay_null():
    ((_, values),) = convert([b'{ "a" : [1, 2.5, "\xc3\xa9"] }', None, b" 7 "], **{"schemas.enable": "false"}).runs
    assert values.kind == "json"
    assert values.array.to_pylist() == ['{"a":[1,2.5,"é"]}'.encode(), None, b"7"]


def test_schemaless_invalid_json_names_the_row():
    with pytest.raises(ConversionError, match="not valid JSON") as error:
        convert([b"{}", b"[1,", b"{}"], **{"schemas.enable": "false"})
    assert error.value.row == 1


def test_schemas_enable_must_be_a_boolean():
    with pytest.raises(ConfigError) as error:
        JsonConverter({"schemas.enable": "yes"}, is_key=True)
    assert error.value.key == "key.converter.schemas.enable"


# ------------------------------------------------------------------------------------------------------- typed
def test_envelope_payload_becomes_typed_arrow_values():
    ((start, values),) = convert([envelope(user())]).runs
    assert start == 0 and values.kind == "struct"
    row = values.array.to_pylist()[0]
    assert row["balance"] == Decimal("123.45")
    assert row["created"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)
    assert row["birthday"] == dt.date(2022, 1, 8)
    assert row["wakes_at"] == dt.time(7, 0)
    assert row["avatar"] == b"\x89PNG"
    assert row["by_id"] == [(1, "one"), (2, None)]
    assert row["address"] == {"city": "Paris", "zip": None}
    types = values.array.type
    assert types.field("level").type == pa.int8()
    assert types.field("balance").type == pa.decimal128(10, 2)
    assert types.field("created").type == pa.timestamp("ms", tz="UTC")
    assert types.field("by_id").type == pa.map_(pa.int32(), pa.string())
    assert not types.field("id").nullable and types.field("level").nullable


def test_value_schema_carries_avro_version_name_and_fingerprint():
    ((_, values),) = convert([envelope(user())]).runs
    schema = values.schema
    assert (schema.name, schema.version) == ("com.example.User", 3)
    assert schema.avro["name"] == "User" and schema.avro["namespace"] == "com.example"
    fastavro.parse_schema(schema.avro)  # valid Avro
    fields = {f["name"]: f for f in schema.avro["fields"]}
    assert fields["level"]["type"] == ["null", {"type": "int", "connect.type": "int8"}]
    assert fields["level"]["default"] is None
    assert fields["name"]["type"] == [{"type": "string", "connect.default": "anonymous"}, "null"]
    assert fields["name"]["default"] == "anonymous"
    assert fields["by_id"]["type"][1]["items"]["name"] == "MapEntry"
    assert fields["address"]["type"][1]["name"] == "ConnectDefault"
    assert len(schema.fingerprint) == 64


@pytest.mark.issue(15, item=3)
def test_avro_schema_carries_connect_metadata_as_avrodata_sets_it():
    """SR AvroData.fromConnectSchema with connect.meta.data=true (the S3 sink's avroDataConfig, CS/SC
    StorageSinkConnectorConfig): connect.doc, connect.version, connect.parameters (not empty), connect.default,
    connect.name, then connect.type for int8/int16, on the non-union schema; logical types keep logicalType."""
    ((_, values),) = convert([envelope(user())]).runs
    avro = values.schema.avro
    fields = {f["name"]: f["type"] for f in avro["fields"]}

    assert (avro["connect.name"], avro["connect.version"]) == ("com.example.User", 3)
    assert fields["balance"] == {
        "type": "bytes",
        "scale": 2,
        "precision": 10,
        "connect.version": 1,
        "connect.parameters": {"scale": "2", "connect.decimal.precision": "10"},
        "connect.name": "org.apache.kafka.connect.data.Decimal",
        "logicalType": "decimal",
    }
    assert fields["created"] == {
        "type": "long",
        "connect.name": "org.apache.kafka.connect.data.Timestamp",
        "logicalType": "timestamp-millis",
    }
    assert fields["birthday"] == [
        "null",
        {"type": "int", "connect.name": "org.apache.kafka.connect.data.Date", "logicalType": "date"},
    ]
    assert fields["id"] == "int" and fields["tags"] == {"type": "array", "items": "string"}
    assert fields["address"][1]["name"] == "ConnectDefault" and "connect.name" not in fields["address"][1]


@pytest.mark.issue(15, item=3)
def test_connect_metadata_reads_back_into_the_connect_schema():
    """A restore rebuilds the Connect schema from the Avro one: int8 and the struct's version come back."""
    ((_, values),) = convert([envelope(user())]).runs
    back = ConnectSchema.from_avro(values.schema.avro)
    fields = dict(back.fields)

    assert (back.name, back.version) == ("com.example.User", 3)
    assert fields["level"].type == "int8"
    assert fields["name"].default == "anonymous"


def test_missing_optional_field_takes_its_default():
    payload = user()
    del payload["name"]
    ((_, values),) = convert([envelope(payload)]).runs
    assert values.array.to_pylist()[0]["name"] == "anonymous"


def test_decimal_payload_may_be_numeric():
    ((_, values),) = convert([envelope(user(balance=9.5))]).runs
    assert values.array.to_pylist()[0]["balance"] == Decimal("9.50")


@pytest.mark.parametrize(
    "bad, message",
    [
        (user(id="one"), "does not match its schema"),
        (user(level=300), "does not match its schema"),
        (user(avatar=5), "does not match its schema"),
        (user(address={"zip": "75001"}), "null address.city"),
        (user(tags=["a", None]), r"null tags\[\]"),
        ({k: v for k, v in user().items() if k != "id"}, "null id"),
    ],
)
def test_payload_not_matching_its_schema_names_the_row(bad, message):
    with pytest.raises(ConversionError, match=message) as error:
        convert([envelope(user()), None, envelope(bad)])
    assert error.value.row == 2


@pytest.mark.parametrize(
    "raw",
    [
        b'{"payload": 1}',
        b'{"schema": {"type": "int32"}, "payload": 1, "extra": 0}',
        b"[1]",
        b"not json",
    ],
)
def test_invalid_envelope_names_the_row(raw):
    with pytest.raises(ConversionError) as error:
        convert([envelope(user()), raw])
    assert error.value.row == 1


def test_invalid_connect_schema_names_the_row():
    with pytest.raises(ConversionError, match="unknown Connect schema type") as error:
        convert([envelope(1, {"type": "int33"})])
    assert error.value.row == 0


def test_null_payload_for_required_schema_is_an_error_but_tombstones_are_not():
    ((_, values),) = convert([None, envelope(user())]).runs
    assert values.array.to_pylist()[0] is None
    with pytest.raises(ConversionError, match="null payload") as error:
        convert([envelope(user()), envelope(None)])
    assert error.value.row == 1


def test_schema_change_starts_a_new_run_and_tombstones_join_the_current_one():
    other = {"type": "struct", "fields": [{"type": "string", "optional": False, "field": "s"}], "optional": False}
    raws = [None, envelope(user(1)), None, envelope({"s": "x"}, other), envelope(user(2))]
    runs = convert(raws).runs
    assert [start for start, _ in runs] == [0, 3, 4]
    assert [len(values) for _, values in runs] == [3, 1, 1]
    assert runs[0][1].schema.fingerprint == runs[2][1].schema.fingerprint != runs[1][1].schema.fingerprint


def test_same_schema_with_keys_in_another_order_is_one_run():
    reordered = dict(reversed(list(USER_SCHEMA.items())))
    runs = convert([envelope(user(1)), envelope(user(2), reordered)]).runs
    assert len(runs) == 1


def test_schema_is_parsed_once_per_distinct_text(monkeypatch):
    calls = []
    original = connect_module.ConnectSchema.from_json.__func__

    def counting(cls, obj):
        if obj is not None and obj.get("name") == "com.example.User":
            calls.append(1)
        return original(cls, obj)

    monkeypatch.setattr(connect_module.ConnectSchema, "from_json", classmethod(counting))
    converter = JsonConverter({}, is_key=False)
    converter.to_logical("users", pa.array([envelope(user(i)) for i in range(50)], pa.binary()))
    converter.to_logical("users", pa.array([envelope(user(i)) for i in range(50)], pa.binary()))
    assert len(calls) == 1


def test_only_tombstones_give_a_null_schema_run():
    ((_, values),) = convert([None, None]).runs
    assert values.kind == "struct" and values.schema.avro == "null" and values.array.null_count == 2


def test_null_schema_envelope_gives_schemaless_json():
    ((_, values),) = convert([orjson.dumps({"schema": None, "payload": {"a": [1]}})]).runs
    assert values.kind == "json" and values.array.to_pylist() == [b'{"a":[1]}']


# ---------------------------------------------------------------------------------------------------- restore
def test_from_logical_rebuilds_the_envelope():
    converter = JsonConverter({}, is_key=False)
    original = user()
    ((_, values),) = converter.to_logical("users", pa.array([envelope(original), None], pa.binary())).runs
    restored = converter.from_logical("users", values).to_pylist()
    assert restored[1] is None
    decoded = orjson.loads(restored[0])
    assert decoded["payload"] == original
    assert decoded["schema"]["name"] == "com.example.User" and decoded["schema"]["version"] == 3
    fields = {f["field"]: f for f in decoded["schema"]["fields"]}
    assert fields["level"]["type"] == "int8"
    assert fields["balance"]["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    assert fields["name"]["default"] == "anonymous"


def test_from_logical_without_schemas_writes_the_payload():
    converter = JsonConverter({"schemas.enable": "false"}, is_key=False)
    values = JsonConverter({}, is_key=False).to_logical("users", pa.array([envelope(user())])).runs[0][1]
    assert orjson.loads(converter.from_logical("users", values)[0].as_py()) == user()


def test_from_logical_of_raw_values_uses_connect_optional_schemas():
    converter = JsonConverter({}, is_key=False)
    restored = converter.from_logical("t", Logical("bytes", pa.array([b"\x00\x01"])))[0].as_py()
    assert orjson.loads(restored) == {"schema": {"type": "bytes", "optional": True}, "payload": "AAE="}
    assert converter.from_logical("t", Logical("json", pa.array([b'{"a":1}']))).to_pylist() == [b'{"a":1}']


def test_from_logical_rejects_avro_without_connect_equivalent():
    schema = ValueSchema(["null", "int", "string"], pa.int64(), "f")
    with pytest.raises(ConversionError, match="no Connect equivalent"):
        JsonConverter({}, is_key=False).from_logical("t", Logical("struct", pa.array([1]), schema))


# ------------------------------------------------------------------------------ repeated schema text, parsed once
TRICKY_SCHEMA = {
    "type": "struct",
    "doc": 'mentions ,"payload": in its doc',
    "fields": [
        {
            "type": "struct",
            "fields": [{"type": "int32", "optional": True, "field": "payload"}],
            "optional": True,
            "default": {"payload": 5},
            "field": "inner",
        },
        {"type": "int32", "optional": False, "field": "n"},
    ],
}


def test_schema_text_containing_payload_keys_does_not_confuse_the_fast_path():
    raws = [envelope({"inner": None, "n": i}, TRICKY_SCHEMA) for i in range(3)]
    ((_, values),) = convert(raws).runs
    assert values.array.to_pylist() == [{"inner": {"payload": 5}, "n": i} for i in range(3)]


def test_a_repeated_schema_followed_by_an_extra_field_is_still_refused():
    first = envelope(user(1))
    extra = first[:-1] + b',"extra":1}'
    with pytest.raises(ConversionError, match="may not contain additional fields") as error:
        convert([first, extra])
    assert error.value.row == 1


@pytest.mark.parametrize(
    "second",
    [
        b'{"payload": %s, "schema": %s}' % (orjson.dumps(user(2)), orjson.dumps(USER_SCHEMA)),  # payload first
        b'{ "schema" : %s , "payload" : %s }\n' % (orjson.dumps(USER_SCHEMA), orjson.dumps(user(2))),  # spaces
    ],
)
def test_envelopes_in_other_layouts_are_read_in_full(second):
    ((_, values),) = convert([envelope(user(1)), second]).runs
    assert [row["id"] for row in values.array.to_pylist()] == [1, 2]


def test_a_changed_schema_after_the_same_prefix_is_seen():
    other = {**USER_SCHEMA, "version": 4}
    runs = convert([envelope(user(1)), envelope(user(2), other), envelope(user(3))]).runs
    assert [values.schema.version for _, values in runs] == [3, 4, 3]
