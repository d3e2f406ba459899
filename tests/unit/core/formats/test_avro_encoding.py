"""The vectorised Avro encoder writes, row by row, exactly what fastavro's reference encoder writes."""

import datetime as dt
import io
from decimal import Decimal

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_s3.core.errors import ConversionError
from kafka_s3.core.formats.avro_encoding import encode, varints

UTC = dt.UTC


def reference(schema, datums) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    out = []
    for datum in datums:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, parsed, datum)
        out.append(buffer.getvalue())
    return out


def assert_encodes_like_fastavro(array, schema, datums=None):
    expanded = fastavro.parse_schema(schema, expand=True)
    assert encode(array, expanded).to_pylist() == reference(schema, array.to_pylist() if datums is None else datums)


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=50))
def test_longs(values):
    assert_encodes_like_fastavro(pa.array(values, pa.int64()), "long")


@pytest.mark.parametrize(
    "array, schema",
    [
        (pa.array([0, -128, 127], pa.int8()), "int"),
        (pa.array([-(2**15), 2**15 - 1], pa.int16()), "int"),
        (pa.array([-(2**31), 2**31 - 1, 0], pa.int32()), "int"),
        (pa.array([True, False, True], pa.bool_()), "boolean"),
        (pa.array([1.5, -0.0, 3.4e38], pa.float32()), "float"),
        (pa.array([1e-300, float("inf"), -2.5], pa.float64()), "double"),
        (pa.array(["", "é", "x" * 300], pa.string()), "string"),
        (pa.array([b"", b"\x00\xff", b"y" * 200], pa.binary()), "bytes"),
    ],
)
def test_primitives(array, schema):
    assert_encodes_like_fastavro(array, schema)


def test_logical_types_from_arrow_temporal_types():
    days = pa.array([0, -1, 19000], pa.date32())
    assert_encodes_like_fastavro(days, {"type": "int", "logicalType": "date"})
    times = pa.array([0, 86_399_999], pa.time32("ms"))
    assert_encodes_like_fastavro(times, {"type": "int", "logicalType": "time-millis"})
    schema = {"type": "long", "logicalType": "timestamp-millis"}
    instants = [dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), dt.datetime(2024, 2, 29, 12, tzinfo=UTC)]
    for unit in ("s", "ms", "us", "ns"):
        values = [v.replace(microsecond=0) for v in instants] if unit == "s" else instants
        assert_encodes_like_fastavro(pa.array(values, pa.timestamp(unit, tz="UTC")), schema, values)


@pytest.mark.parametrize("arrow_type", [pa.decimal128(20, 3), pa.decimal256(64, 3)])
def test_decimals_are_minimal_twos_complement_as_java_writes_them(arrow_type):
    values = [
        Decimal("0.000"),
        Decimal("-0.128"),
        Decimal("0.128"),
        Decimal("-12345678901234567.891"),
        Decimal("0.255"),
    ]
    schema = {"type": "bytes", "logicalType": "decimal", "precision": arrow_type.precision, "scale": 3}
    rows = encode(pa.array(values, arrow_type), fastavro.parse_schema(schema, expand=True)).to_pylist()
    parsed = fastavro.parse_schema(schema)
    assert [fastavro.schemaless_reader(io.BytesIO(row), parsed) for row in rows] == values
    # BigInteger.toByteArray(): 0 -> 00, -128 -> 80, 128 -> 00 80 (fastavro would write ff 80 for -128)
    assert rows[:3] == [b"\x02\x00", b"\x02\x80", b"\x04\x00\x80"]


def test_unions_with_null_in_either_position():
    array = pa.array([None, b"a", None, b""], pa.binary())
    assert_encodes_like_fastavro(array, ["null", "bytes"])
    assert_encodes_like_fastavro(array, ["bytes", "null"])
    assert_encodes_like_fastavro(pa.array([b"a"], pa.binary()), ["null", "bytes"])


NESTED = {
    "type": "record",
    "name": "Outer",
    "namespace": "t",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "scores", "type": ["null", {"type": "map", "values": ["null", "double"]}]},
        {
            "name": "by_id",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "MapEntry",
                    "fields": [{"name": "key", "type": "int"}, {"name": "value", "type": "string"}],
                },
            },
        },
        {
            "name": "inner",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Inner",
                    "fields": [{"name": "xs", "type": {"type": "array", "items": "t.Outer2"}}],
                },
            ],
        },
    ],
}
NESTED["fields"][4]["type"][1]["fields"][0]["type"]["items"] = {
    "type": "record",
    "name": "Outer2",
    "fields": [{"name": "b", "type": "boolean"}],
}
NESTED_ARROW = pa.struct(
    [
        ("id", pa.int64()),
        ("tags", pa.list_(pa.string())),
        ("scores", pa.map_(pa.string(), pa.float64())),
        ("by_id", pa.map_(pa.int32(), pa.string())),
        ("inner", pa.struct([("xs", pa.list_(pa.struct([("b", pa.bool_())])))])),
    ]
)
NESTED_ROWS = [
    {"id": 1, "tags": [], "scores": None, "by_id": [], "inner": None},
    {"id": -2, "tags": ["a", "b"], "scores": [("x", 1.5), ("y", None)], "by_id": [(7, "s")], "inner": {"xs": []}},
    {"id": 3, "tags": ["c"], "scores": [], "by_id": [(1, "a"), (2, "b")], "inner": {"xs": [{"b": True}, {"b": False}]}},
]


def fastavro_datum(row):
    """The same row in fastavro's shape: maps as dicts, non-string maps as key/value records."""
    return {
        **row,
        "scores": None if row["scores"] is None else dict(row["scores"]),
        "by_id": [{"key": k, "value": v} for k, v in row["by_id"]],
    }


@pytest.mark.parametrize("start, length", [(0, 3), (1, 2), (2, 1)])
def test_nested_records_arrays_and_maps_including_sliced_arrays(start, length):
    array = pa.array(NESTED_ROWS, NESTED_ARROW).slice(start, length)
    datums = [fastavro_datum(r) for r in NESTED_ROWS[start : start + length]]
    assert_encodes_like_fastavro(array, NESTED, datums)


def test_null_where_the_schema_does_not_allow_it_is_refused_with_its_path():
    array = pa.array([{"id": None, "tags": [], "scores": None, "by_id": [], "inner": None}], NESTED_ARROW)
    with pytest.raises(ConversionError, match=r"value\.id is null"):
        encode(array, fastavro.parse_schema(NESTED, expand=True))


def test_unions_of_several_types_are_written_from_their_struct_of_members():
    schema = ["null", "int", "string", {"type": "record", "name": "P", "fields": [{"name": "x", "type": "long"}]}]
    arrow = pa.struct(
        [("int", pa.int32()), ("string", pa.string()), ("P", pa.struct([pa.field("x", pa.int64(), False)]))]
    )
    rows = [{"int": 3}, None, {"string": "é"}, {"P": {"x": -5}}, {"int": None, "string": None, "P": None}]
    datums = [3, None, "é", {"x": -5}, None]
    assert_encodes_like_fastavro(pa.array(rows, arrow), schema, datums)
    assert_encodes_like_fastavro(pa.array(rows, arrow).slice(2), schema, datums[2:])


def test_a_union_without_null_refuses_a_value_with_no_member_set():
    arrow = pa.struct([("int", pa.int32()), ("string", pa.string())])
    with pytest.raises(ConversionError, match="has no null"):
        encode(pa.array([{"int": 1}, {}], arrow), ["int", "string"])
    with pytest.raises(ConversionError, match="needs a struct of members"):
        encode(pa.array([1]), ["null", "int", "string"])


def test_enums_fixed_and_micros_logical_types():
    enum = {"type": "enum", "name": "Suit", "symbols": ["SPADES", "HEARTS", "CLUBS"]}
    assert_encodes_like_fastavro(pa.array(["CLUBS", "SPADES", "HEARTS"]), enum)
    with pytest.raises(ConversionError, match="'JOKER' is not a symbol"):
        encode(pa.array(["SPADES", "JOKER"]), fastavro.parse_schema(enum, expand=True))
    fixed = {"type": "fixed", "name": "Md5", "size": 4}
    assert_encodes_like_fastavro(pa.array([b"abcd", b"\x00\x01\x02\x03"], pa.binary(4)), fixed)
    with pytest.raises(ConversionError, match="fixed of 4 bytes cannot hold 3"):
        encode(pa.array([b"abc"]), fastavro.parse_schema(fixed, expand=True))
    instants = [
        dt.datetime(1969, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC),
        dt.datetime(2024, 2, 29, 12, 0, 0, 1, tzinfo=UTC),
    ]
    micros = {"type": "long", "logicalType": "timestamp-micros"}
    for unit in ("us", "ns"):
        assert_encodes_like_fastavro(pa.array(instants, pa.timestamp(unit, tz="UTC")), micros, instants)
    local = {"type": "long", "logicalType": "local-timestamp-micros"}
    naive = [i.replace(tzinfo=None) for i in instants]
    assert_encodes_like_fastavro(pa.array(naive, pa.timestamp("us")), local, naive)
    times = [dt.time(0, 0), dt.time(23, 59, 59, 999_999)]
    assert_encodes_like_fastavro(
        pa.array(times, pa.time64("us")), {"type": "long", "logicalType": "time-micros"}, times
    )


@pytest.mark.parametrize("size", [3, 5, 16, 20])
def test_decimals_on_fixed_are_sign_extended_to_the_size(size):
    schema = {"type": "fixed", "name": "Amount", "size": size, "logicalType": "decimal", "precision": 6, "scale": 2}
    values = [Decimal("0.00"), Decimal("-0.01"), Decimal("9999.99"), Decimal("-9999.99"), Decimal("1.28")]
    assert_encodes_like_fastavro(pa.array(values, pa.decimal128(6, 2)), schema, values)


def test_decimals_too_wide_for_their_fixed_are_refused():
    schema = {"type": "fixed", "name": "Small", "size": 1, "logicalType": "decimal", "precision": 2, "scale": 0}
    assert_encodes_like_fastavro(
        pa.array([Decimal("-99"), Decimal("99")], pa.decimal128(2, 0)), schema, [Decimal("-99"), Decimal("99")]
    )
    # An Arrow decimal wider than the Avro one: a value that does not fit is refused, not cut.
    with pytest.raises(ConversionError, match="does not fit"):
        encode(pa.array([Decimal("300")], pa.decimal128(4, 0)), fastavro.parse_schema(schema, expand=True))


def test_varints_can_leave_zeros_empty():
    assert varints(np.array([0, 1, 0, 64]), empty_for_zero=True).to_pylist() == [b"", b"\x02", b"", b"\x80\x01"]
