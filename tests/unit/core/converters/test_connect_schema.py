"""The Connect data model mapping: Connect schema <-> Avro (as AvroData) and Arrow; payload rendering helpers."""

import datetime as dt
from decimal import Decimal

import fastavro
import orjson
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_s3.core.converters.connect_payload import first_null_violation, json_default, payload_values
from kafka_s3.core.converters.connect_schema import ConnectSchema, SchemaError, decimal_bytes


def struct(*fields, name=None, optional=False, **extra):
    schema = {"type": "struct", "fields": [dict(f) for f in fields], "optional": optional, **extra}
    if name:
        schema["name"] = name
    return schema


def field(name, type_, optional=False, **extra):
    return {"type": type_, "optional": optional, "field": name, **extra}


def test_unnamed_structs_get_distinct_default_names_and_identical_ones_are_reused():
    point = struct(field("x", "int32"))
    schema = ConnectSchema.from_json(
        struct(
            {**point, "field": "a"},
            {**point, "field": "b"},
            {**struct(field("label", "string")), "field": "c"},
        )
    )
    avro = schema.to_avro()
    assert avro["name"] == "ConnectDefault" and avro["namespace"] == "io.confluent.connect.avro"
    a, b, c = avro["fields"]
    assert a["type"]["name"] == "ConnectDefault2"
    assert b["type"] == "io.confluent.connect.avro.ConnectDefault2"  # the same struct: a reference
    assert c["type"]["name"] == "ConnectDefault3"
    fastavro.parse_schema(avro)


def test_named_struct_splits_namespace_and_keeps_docs():
    schema = ConnectSchema.from_json(struct(field("a", "string", doc="the a"), name="com.acme.Thing", doc="A thing."))
    avro = schema.to_avro()
    assert (avro["namespace"], avro["name"], avro["doc"]) == ("com.acme", "Thing", "A thing.")
    assert avro["fields"][0]["doc"] == "the a"


def test_two_different_structs_with_one_name_cannot_be_avro():
    schema = ConnectSchema.from_json(
        struct(
            {**struct(field("x", "int32"), name="a.B"), "field": "p"},
            {**struct(field("y", "int32"), name="a.B"), "field": "q"},
        )
    )
    with pytest.raises(SchemaError, match="both named a.B"):
        schema.to_avro()


def test_optional_top_level_is_a_union_with_null_first():
    assert ConnectSchema.from_json({"type": "bytes", "optional": True}).to_avro() == ["null", "bytes"]
    assert ConnectSchema.from_json({"type": "int32", "optional": False}).to_avro() == "int"


def test_field_defaults_are_avro_json():
    schema = ConnectSchema.from_json(
        struct(
            field("b", "bytes", default="AAE="),
            field("m", "map", keys={"type": "int32"}, values={"type": "string"}, default=[[1, "x"]]),
            field("o", "int64", optional=True, default=5),
        )
    )
    b, m, o = schema.to_avro()["fields"]
    assert b["default"] == "\x00\x01"
    assert m["default"] == [{"key": 1, "value": "x"}]
    assert o["type"] == [{"type": "long", "connect.default": 5}, "null"] and o["default"] == 5
    assert (b["type"]["connect.default"], m["type"]["connect.default"]) == ("AAE=", [{"key": 1, "value": "x"}])
    fastavro.parse_schema(schema.to_avro())


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"type": "struct"}, "needs a 'fields' array"),
        (struct({"type": "int32"}), "'field' name"),
        ({"type": "array"}, "must be a JSON object"),
        ({"type": "int32", "optional": "yes"}, "'optional' must be"),
        ({"type": "int32", "version": "1"}, "version must be an integer"),
        (struct(field("a", "int32"), field("a", "int64")), "duplicate field names"),
        ({"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "x"}}, "integers"),
        (
            {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "90"}},
            "not supported",
        ),
    ],
)
def test_invalid_connect_schemas_are_explained(bad, message):
    with pytest.raises(SchemaError, match=message):
        ConnectSchema.from_json(bad)


SCALARS = ["int8", "int16", "int32", "int64", "float", "double", "boolean", "string", "bytes"]
LOGICAL = [
    {
        "type": "bytes",
        "name": "org.apache.kafka.connect.data.Decimal",
        "version": 1,
        "parameters": {"scale": "3", "connect.decimal.precision": "12"},
    },
    {"type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1},
    {"type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1},
    {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1},
]


def connect_schemas(depth: int = 2):
    leaf = st.one_of(
        st.builds(lambda t, o: {"type": t, "optional": o}, st.sampled_from(SCALARS), st.booleans()),
        st.builds(lambda s, o: {**s, "optional": o}, st.sampled_from(LOGICAL), st.booleans()),
    )
    if depth == 0:
        return leaf
    inner = connect_schemas(depth - 1)
    return st.one_of(
        leaf,
        st.builds(lambda i, o: {"type": "array", "items": i, "optional": o}, inner, st.booleans()),
        st.builds(
            lambda k, v, o: {"type": "map", "keys": {"type": k, "optional": False}, "values": v, "optional": o},
            st.sampled_from(["string", "int32"]),
            inner,
            st.booleans(),
        ),
        st.builds(
            lambda fs, o: {
                "type": "struct",
                "fields": [{**s, "field": f"f{i}"} for i, s in enumerate(fs)],
                "optional": o,
            },
            st.lists(inner, min_size=1, max_size=3),
            st.booleans(),
        ),
    )


@given(connect_schemas())
def test_avro_mapping_is_valid_and_reads_back_as_the_same_connect_schema(raw):
    schema = ConnectSchema.from_json(raw)
    avro = schema.to_avro()
    fastavro.parse_schema(avro)
    assert ConnectSchema.from_avro(avro, schema.to_arrow()) == schema


def test_arrow_types_of_logical_types_and_wide_decimals():
    assert ConnectSchema.from_json(LOGICAL[0]).to_arrow() == pa.decimal128(12, 3)
    wide = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": "2"}}
    assert ConnectSchema.from_json(wide).to_arrow() == pa.decimal256(64, 2)  # AvroData's default precision
    assert [ConnectSchema.from_json(s).to_arrow() for s in LOGICAL[1:]] == [
        pa.date32(),
        pa.time32("ms"),
        pa.timestamp("ms", tz="UTC"),
    ]


def test_from_avro_rejects_unions_of_several_types():
    with pytest.raises(SchemaError, match="no Connect equivalent"):
        ConnectSchema.from_avro(["null", "int", "string"])


@pytest.mark.parametrize(
    "value, expected",
    [(0, "00"), (1, "01"), (-1, "ff"), (127, "7f"), (128, "0080"), (-128, "80"), (-129, "ff7f"), (65535, "00ffff")],
)
def test_decimal_bytes_match_java_biginteger(value, expected):
    assert decimal_bytes(Decimal(value)).hex() == expected


def test_json_default_renders_as_connect():
    rendered = orjson.dumps(
        {
            "b": b"\x00\x01",
            "d": Decimal("-1.28"),
            "ts": dt.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=dt.UTC),
            "day": dt.date(1970, 1, 3),
            "t": dt.time(0, 1, 2, 3000),
        },
        default=json_default,
        option=orjson.OPT_PASSTHROUGH_DATETIME,
    )
    assert orjson.loads(rendered) == {"b": "AAE=", "d": "gA==", "ts": 1500, "day": 2, "t": 62003}


def test_payload_values_render_maps_in_connect_forms():
    array = pa.array(
        [{"s": [("a", 1)], "n": [(7, {"inner": [("k", 2)]})]}],
        pa.struct(
            [
                ("s", pa.map_(pa.string(), pa.int64())),
                ("n", pa.map_(pa.int32(), pa.struct([("inner", pa.map_(pa.string(), pa.int64()))]))),
            ]
        ),
    )
    assert orjson.loads(orjson.dumps(payload_values(array))) == [{"s": {"a": 1}, "n": [[7, {"inner": {"k": 2}}]]}]


def test_first_null_violation_ignores_nulls_under_null_parents():
    t = pa.struct(
        [
            pa.field("required", pa.int32(), nullable=False),
            pa.field("items", pa.list_(pa.field("item", pa.int32(), nullable=False)), nullable=True),
        ]
    )
    array = pa.array([None, {"required": 1, "items": [1]}, {"required": 2, "items": [1, None]}], t)
    assert first_null_violation(array, optional=True) == (2, "items[]")
    assert first_null_violation(array, optional=False) == (0, "value")
    assert first_null_violation(array.slice(0, 2), optional=True) is None
