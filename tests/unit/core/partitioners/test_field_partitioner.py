"""FieldPartitioner: ``<field>=<value>`` directories from struct or schemaless JSON values, as Confluent's."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_s3.core.converters.base import Logical
from kafka_s3.core.errors import ConfigError, PartitionerError
from kafka_s3.core.partitioners.field import FieldPartitioner
from tests.support.partitioners import (
    batch,
    bytes_values,
    json_values,
    partitioner,
    sink_config,
    struct_values,
)

ORDER = pa.struct(
    [
        pa.field("region", pa.string()),
        pa.field("shard", pa.int32()),
        pa.field("urgent", pa.bool_()),
        pa.field("amount", pa.float64()),
        pa.field("customer", pa.struct([pa.field("country", pa.string()), pa.field("tier", pa.int64())])),
    ]
)
ORDERS = [
    {"region": "eu", "shard": 3, "urgent": True, "amount": 1.5, "customer": {"country": "fr", "tier": 2}},
    {"region": "us", "shard": -1, "urgent": False, "amount": 2.0, "customer": {"country": "us", "tier": 10}},
]


def field_partitioner(fields: str, **props: str) -> FieldPartitioner:
    return partitioner(**{"partitioner.class": "FieldPartitioner", "partition.field.name": fields, **props})


@pytest.mark.parametrize("values", [struct_values(ORDERS, ORDER), json_values(ORDERS)], ids=["struct", "json"])
@pytest.mark.parametrize(
    "fields, expected",
    [
        ("region", ["region=eu", "region=us"]),
        ("region,shard", ["region=eu/shard=3", "region=us/shard=-1"]),
        ("customer.country,urgent", ["customer.country=fr/urgent=true", "customer.country=us/urgent=false"]),
        ("customer.tier", ["customer.tier=2", "customer.tier=10"]),
    ],
)
def test_encodes_fields_in_the_configured_order(values, fields, expected):
    assert field_partitioner(fields).encode(batch(2), values, now_ms=0).to_pylist() == expected


@pytest.mark.parametrize("values", [struct_values(ORDERS, ORDER), json_values(ORDERS)], ids=["struct", "json"])
def test_fields_are_joined_with_the_directory_delimiter(values):
    encoded = field_partitioner("region,shard", **{"directory.delim": "_"}).encode(batch(2), values, now_ms=0)

    assert encoded.to_pylist() == ["region=eu_shard=3", "region=us_shard=-1"]


def test_json_keys_with_dots_are_quoted():
    values = json_values([{"a.b": {"c": "x"}}])

    assert field_partitioner('"a.b".c').encode(batch(1), values, now_ms=0).to_pylist() == ['"a.b".c=x']


def test_partition_fields_are_the_configured_names():
    assert field_partitioner("region,customer.country").partition_fields() == ["region", "customer.country"]


def test_needs_partition_field_name():
    config = sink_config(**{"partitioner.class": "field", "partition.field.name": "region"})

    with pytest.raises(ConfigError) as error:
        FieldPartitioner(config.replace(partition__field__name=[]))

    assert error.value.key == "partition.field.name"


@pytest.mark.parametrize("values", [struct_values(ORDERS, ORDER), json_values(ORDERS)], ids=["struct", "json"])
def test_float_fields_are_refused_as_confluent_does(values):
    with pytest.raises(PartitionerError, match=r"'amount' has type (double|float).*integers, strings or booleans"):
        field_partitioner("amount").encode(batch(2), values, now_ms=0)


def test_struct_field_missing_from_the_schema_names_the_field_and_record():
    records = batch(2, topic="orders", partition=4, first_offset=40)

    with pytest.raises(PartitionerError) as error:
        field_partitioner("customer.city").encode(records, struct_values(ORDERS, ORDER), now_ms=0)

    assert "'customer.city' does not exist" in str(error.value)
    assert "topic=orders partition=4 offset=40" in str(error.value)


@pytest.mark.issue(15, item=3)
@pytest.mark.parametrize("field", ["region", "shard", "urgent", "customer.tier"])
def test_a_null_struct_field_is_the_text_null_whatever_its_type(field):
    """SC FieldPartitioner.getStructField: a null partition key gives ``<field>=null`` for any type (CC-36988,
    b6487958); before it INT and BOOLEAN threw a NullPointerException."""
    second = {**ORDERS[1], "customer": {"country": "us", "tier": None}}
    second.update({name: None for name in ("region", "shard", "urgent") if name == field})

    encoded = field_partitioner(field).encode(batch(2), struct_values([ORDERS[0], second], ORDER), now_ms=0)

    assert encoded.to_pylist()[1] == f"{field}=null"


@pytest.mark.issue(15, item=3)
def test_a_null_parent_struct_names_the_record_holding_it():
    """SC DataUtils.getField: a null parent is not a Struct or Map, a DataException."""
    rows = [ORDERS[0], {**ORDERS[1], "customer": None}]

    with pytest.raises(PartitionerError) as error:
        field_partitioner("customer.tier").encode(batch(2, first_offset=100), struct_values(rows, ORDER), now_ms=0)

    assert "'customer.tier' is inside a null struct" in str(error.value) and "offset=101" in str(error.value)


def test_tombstone_cannot_be_partitioned_by_field():
    with pytest.raises(PartitionerError, match="offset=11"):
        field_partitioner("region").encode(batch(2, first_offset=10), struct_values([ORDERS[0], None], ORDER), 0)
    with pytest.raises(PartitionerError, match="not a JSON object.*offset=11"):
        field_partitioner("region").encode(batch(2, first_offset=10), json_values([ORDERS[0], None]), 0)


@pytest.mark.parametrize(
    "second, problem",
    [
        ({"customer": {"country": "de"}}, "'customer.tier' is missing or null"),
        ({"customer": {"tier": None}}, "'customer.tier' is missing or null"),
        ({"customer": "gold"}, "'customer.tier' is missing or null"),
        ({"customer": {"tier": [1]}}, "'customer.tier' has type list"),
    ],
)
def test_json_field_problems_name_the_field_and_record(second, problem):
    values = json_values([ORDERS[0], second])

    with pytest.raises(PartitionerError) as error:
        field_partitioner("customer.tier").encode(batch(2, topic="orders", partition=1, first_offset=7), values, 0)

    assert problem in str(error.value)
    assert "topic=orders partition=1 offset=8" in str(error.value)


@pytest.mark.parametrize(
    "values",
    [bytes_values(1), Logical("string", pa.array(['{"region": "eu"}'])), Logical("struct", pa.array([5]))],
    ids=["bytes", "string", "primitive"],
)
def test_unstructured_values_are_refused(values):
    with pytest.raises(PartitionerError, match="partition.field.name reads fields of record values.*offset=0"):
        field_partitioner("region").encode(batch(1), values, now_ms=0)


def test_empty_batch_encodes_to_nothing():
    assert field_partitioner("region").encode(batch(0), bytes_values(0), now_ms=0).to_pylist() == []


partition_values = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.booleans(),
    st.text(st.characters(blacklist_characters="/=", blacklist_categories=("Cs",)), min_size=1),
)


@settings(deadline=None)
@given(st.lists(st.tuples(partition_values, partition_values), min_size=1, max_size=20))
def test_json_encoding_parses_back_to_the_values(rows):
    values = json_values([{"a": first, "b": {"c": second}} for first, second in rows])

    encoded = field_partitioner("a,b.c").encode(batch(len(rows)), values, now_ms=0).to_pylist()

    def text(value):
        return str(value).lower() if isinstance(value, bool) else str(value)

    assert [dict(part.split("=", 1) for part in directory.split("/")) for directory in encoded] == [
        {"a": text(first), "b.c": text(second)} for first, second in rows
    ]


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**31), 2**31 - 1), st.booleans()), min_size=1, max_size=20))
def test_struct_encoding_parses_back_to_the_values(rows):
    arrow_type = pa.struct([pa.field("n", pa.int32()), pa.field("flag", pa.bool_())])
    values = struct_values([{"n": n, "flag": flag} for n, flag in rows], arrow_type)

    encoded = field_partitioner("n,flag").encode(batch(len(rows)), values, now_ms=0).to_pylist()

    parsed = [dict(part.split("=") for part in directory.split("/")) for directory in encoded]
    assert [(int(p["n"]), p["flag"] == "true") for p in parsed] == rows
