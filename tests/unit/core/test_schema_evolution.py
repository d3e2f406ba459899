"""schema.compatibility decisions and the projection of values to another schema (Avro's schema resolution on
Arrow columns), checked against fastavro's own resolution."""

from __future__ import annotations

import copy
import datetime as dt
import io
from decimal import Decimal

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_s3.core.converters.avro_data import arrow_type, datums_array, expand
from kafka_s3.core.converters.base import Logical, ValueSchema
from kafka_s3.core.converters.connect_schema import fingerprint
from kafka_s3.core.errors import ConversionError
from kafka_s3.core.schema_evolution import (
    Compatibility,
    Decision,
    SchemaJudge,
    SchemaVersionRequired,
    can_project,
    decide,
    project,
    projection_problem,
)
from tests.support.avro_versions import V1, VERSIONS, read_as, record


def vs(avro, version=None) -> ValueSchema:
    return ValueSchema(
        avro=avro, arrow=arrow_type(expand(avro)), fingerprint=fingerprint(avro), version=version, name=None
    )


S1, S2, S3 = (vs(VERSIONS[v], v) for v in (1, 2, 3))


def logical(schema: ValueSchema, datums: list) -> Logical:
    return Logical("struct", datums_array(datums, expand(schema.avro), schema.arrow), schema)


def resolved(writer: dict, reader: dict, datum):
    """fastavro's resolution of ``datum`` (written with ``writer``) read with ``reader``: the reference."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(writer), datum)
    body.seek(0)
    return fastavro.schemaless_reader(body, fastavro.parse_schema(writer), fastavro.parse_schema(reader))


# ---------------------------------------------------------------------------------------------------- decide
@pytest.mark.parametrize(
    "mode, current, incoming, expected",
    [
        # NONE: any other schema rolls
        ("NONE", S1, S1, Decision.SAME),
        ("NONE", S1, S2, Decision.ROLL),
        ("NONE", S3, S1, Decision.ROLL),
        # BACKWARD / FULL: a newer version rolls, an older one is projected to the file's (latest) schema
        ("BACKWARD", S1, S2, Decision.ROLL),
        ("BACKWARD", S3, S1, Decision.PROJECT),
        ("BACKWARD", S3, S2, Decision.PROJECT),
        ("FULL", S2, S3, Decision.ROLL),
        ("FULL", S3, S1, Decision.PROJECT),
        # FORWARD: an older version rolls, a newer one is projected to the file's (oldest) schema...
        ("FORWARD", S2, S1, Decision.ROLL),
        ("FORWARD", S1, S2, Decision.PROJECT),
        # ...unless it cannot be: v3's long quantity does not fit v1's int: the file rolls (Confluent would fail)
        ("FORWARD", S1, S3, Decision.ROLL),
        ("FORWARD", S2, S3, Decision.ROLL),
    ],
)
def test_decisions_follow_the_seeds(mode, current, incoming, expected):
    assert decide(mode, current, incoming) is expected


def test_an_equal_version_of_another_schema_is_projected_when_it_can_be():
    renamed = copy.deepcopy(V1)
    renamed["fields"][1]["doc"] = "who ordered"
    assert decide("BACKWARD", S1, vs(renamed, 1)) is Decision.PROJECT
    assert decide("FORWARD", vs(renamed, 1), S1) is Decision.PROJECT
    other = {"type": "record", "name": "Refund", "fields": [{"name": "id", "type": "long"}]}
    assert decide("BACKWARD", vs(other, 9), vs({**other, "doc": "x"}, 9)) is Decision.PROJECT
    assert decide("BACKWARD", S3, vs(other, 1)) is Decision.ROLL  # another record: never projected


def test_versions_are_needed_only_when_two_schemas_meet():
    unversioned = vs(V1)
    assert decide("BACKWARD", unversioned, unversioned) is Decision.SAME
    with pytest.raises(SchemaVersionRequired, match="schema.compatibility=BACKWARD needs schema versions"):
        decide("BACKWARD", unversioned, S2)
    assert decide("NONE", unversioned, S2) is Decision.ROLL


def test_the_judge_caches_decisions_and_rolls_schemaless_changes():
    judge = SchemaJudge("BACKWARD")
    for schema in (S1, S2, S3):
        judge.learn(schema)
    assert judge.rolls(S1.fingerprint, S3.fingerprint) and not judge.rolls(S3.fingerprint, S1.fingerprint)
    assert judge.decision(S3.fingerprint, S1.fingerprint) is Decision.PROJECT
    assert judge.decision(S3.fingerprint, S3.fingerprint) is Decision.SAME
    # values without a schema (schemaless JSON, bytes) on either side: any change rolls, nothing is projected
    assert judge.rolls(S3.fingerprint, "json") and not judge.rolls("json", "json")


# --------------------------------------------------------------------------------------------------- project
@settings(max_examples=60, deadline=None)
@given(
    ns=st.lists(st.integers(0, 2**31 - 1), min_size=0, max_size=20),
    writer=st.sampled_from([(1, 3), (2, 3), (1, 2), (2, 1)]),
)
def test_projections_of_the_three_versions_are_avros_schema_resolution(ns, writer):
    """Field added with a default (v1 → v2), removed (v2 → v3), promoted (int → long), and back (v2 → v1)."""
    source, target = writer
    datums = [record(source, n) for n in ns]
    projected = project(logical(vs(VERSIONS[source], source), datums), vs(VERSIONS[target], target))
    assert projected.schema.version == target
    assert projected.array.type == arrow_type(expand(VERSIONS[target]))
    assert projected.array.to_pylist() == [read_as(d, source, target) for d in datums]


def test_projection_keeps_nulls_and_slices():
    datums = [record(1, 0), None, record(1, 2), record(1, 3)]
    values = logical(S1, datums)
    sliced = Logical("struct", values.array.slice(1), S1)
    assert project(sliced, S3).array.to_pylist() == [None, read_as(datums[2], 1, 3), read_as(datums[3], 1, 3)]


RICH_WRITER = {
    "type": "record",
    "name": "Event",
    "namespace": "x",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "tags", "type": {"type": "array", "items": "int"}},
        {"name": "scores", "type": {"type": "map", "values": "float"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
        {
            "name": "inner",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Inner",
                    "fields": [{"name": "label", "type": "string"}, {"name": "gone", "type": "boolean"}],
                },
            ],
            "default": None,
        },
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 8, "scale": 2}},
        {"name": "blob", "type": "string"},
        {"name": "choice", "type": ["int", "string"]},
        {"name": "old_name", "type": "int"},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}
RICH_READER = {
    "type": "record",
    "name": "Event",
    "namespace": "x",
    "fields": [
        {"name": "id", "type": "double"},  # int -> double
        {"name": "tags", "type": {"type": "array", "items": "long"}},  # promoted items
        {"name": "scores", "type": {"type": "map", "values": "double"}},  # promoted map values
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["B", "A"], "default": "B"}},
        {
            "name": "inner",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "Inner",
                    "fields": [
                        {"name": "label", "type": "bytes"},  # string -> bytes
                        {"name": "extra", "type": {"type": "array", "items": "string"}, "default": ["x", "y"]},
                    ],
                },
            ],
            "default": None,
        },
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "blob", "type": ["null", "bytes"], "default": None},  # into a nullable union, promoted
        {"name": "choice", "type": ["null", "string", "long"]},  # union into a wider union
        {"name": "new_name", "aliases": ["old_name"], "type": "long"},  # renamed with an alias
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {
            "name": "added",
            "type": {
                "type": "record",
                "name": "Added",
                "fields": [{"name": "n", "type": "int"}, {"name": "m", "type": {"type": "map", "values": "string"}}],
            },
            "default": {"n": 7, "m": {"k": "v"}},
        },
        {"name": "optional_added", "type": ["null", "string"], "default": None},
    ],
}

rich_datums = st.fixed_dictionaries(
    {
        "id": st.integers(-(2**31), 2**31 - 1),
        "tags": st.lists(st.integers(-(2**31), 2**31 - 1), max_size=3),
        "scores": st.dictionaries(st.text(max_size=3), st.floats(width=32, allow_nan=False), max_size=3),
        "kind": st.sampled_from(["A", "B", "C"]),
        "inner": st.none() | st.fixed_dictionaries({"label": st.text(max_size=5), "gone": st.booleans()}),
        "amount": st.decimals(min_value=Decimal("-999999.99"), max_value=Decimal("999999.99"), places=2),
        "blob": st.text(max_size=5),
        "choice": st.integers(-(2**31), 2**31 - 1) | st.text(max_size=4),
        "old_name": st.integers(-(2**31), 2**31 - 1),
        "at": st.datetimes(
            min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2200, 1, 1), timezones=st.just(dt.UTC)
        ).map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000)),
    }
)


@settings(max_examples=60, deadline=None)
@given(datums=st.lists(rich_datums, max_size=8))
def test_projection_of_nested_types_is_avros_schema_resolution(datums):
    assert can_project(vs(RICH_WRITER), vs(RICH_READER)), projection_problem(vs(RICH_WRITER), vs(RICH_READER))
    source = vs(RICH_WRITER)
    projected = project(logical(source, [dict(d) for d in datums]), vs(RICH_READER)).array.to_pylist()
    expected = [resolved(RICH_WRITER, RICH_READER, d) for d in datums]
    for got, want in zip(projected, expected, strict=True):
        want = dict(want)
        want["scores"] = list(want["scores"].items())
        want["added"] = {"n": 7, "m": [("k", "v")]}
        choice = want["choice"]
        want["choice"] = {
            "string": choice if isinstance(choice, str) else None,
            "long": choice if isinstance(choice, int) else None,
        }
        assert got == want
    assert len(projected) == len(expected)


@pytest.mark.parametrize(
    "writer, reader, problem",
    [
        ({"type": "long"}, "int", "long cannot be read as int"),
        (["null", "string"], "string", "may be null"),
        (
            {"type": "record", "name": "A", "fields": []},
            {"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]},
            "gives it no default",
        ),
        (
            {"type": "record", "name": "A", "fields": []},
            {"type": "record", "name": "B", "fields": []},
            "cannot be read as B",
        ),
        (
            {"type": "enum", "name": "E", "symbols": ["A", "B"]},
            {"type": "enum", "name": "E", "symbols": ["A"]},
            "are not in the file's enum",
        ),
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2},
            {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 3},
            "cannot be read as decimal",
        ),
        ({"type": "array", "items": "string"}, {"type": "map", "values": "string"}, "array cannot be read as map"),
        (["int", "boolean"], ["null", "int"], "boolean matches no branch"),
        ({"type": "int", "logicalType": "date"}, "int", "date cannot be read as int"),
    ],
)
def test_what_cannot_be_projected_is_known_from_the_schemas(writer, reader, problem):
    wrap = lambda t: {"type": "record", "name": "R", "fields": [{"name": "f", "type": t}]}  # noqa: E731
    found = projection_problem(vs(wrap(writer)), vs(wrap(reader)))
    assert found is not None and problem in found, found


def test_projecting_across_an_impossible_pair_is_an_error_not_a_guess():
    with pytest.raises(ConversionError, match="cannot be projected"):
        project(logical(S3, [record(3, 1)]), S1)


def test_tombstone_runs_become_nulls_of_the_target():
    from kafka_s3.core.converters.json import NULL_VALUES

    nulls = Logical("struct", pa.nulls(2), NULL_VALUES)
    assert project(nulls, S3).array.type == S3.arrow and project(nulls, S3).array.null_count == 2


def test_connect_schemas_from_json_converter_project_too():
    """JsonConverter's schemas (Connect → Avro) go through the same resolution: a field added with a default."""
    import orjson

    from kafka_s3.core.converters.json import JsonConverter

    v1 = {
        "type": "struct",
        "name": "shop.Item",
        "version": 1,
        "optional": False,
        "fields": [{"field": "sku", "type": "string", "optional": False}],
    }
    v2 = {
        **v1,
        "version": 2,
        "fields": v1["fields"] + [{"field": "qty", "type": "int16", "optional": False, "default": 1}],
    }
    converter = JsonConverter({}, False)
    raws = [
        orjson.dumps({"schema": v1, "payload": {"sku": "a"}}),
        orjson.dumps({"schema": v2, "payload": {"sku": "b", "qty": 5}}),
    ]
    runs = converter.to_logical("t", pa.array(raws, pa.binary())).runs
    (_, old), (_, new) = runs
    assert decide(Compatibility.BACKWARD, new.schema, old.schema) is Decision.PROJECT
    assert project(old, new.schema).array.to_pylist() == [{"sku": "a", "qty": 1}]
