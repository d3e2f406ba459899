"""Issue 17 items 3 and 6: saved subjects and the schema-id rewrite (pure core)."""

from __future__ import annotations

import struct

from kafka_s3.core.schemas import SERIES, SavedSchemas, SubjectVersion, rewrite_schema_id


def test_saved_schemas_round_trip_and_name():
    saved = SavedSchemas(
        "t",
        7,
        {"t-value": (SubjectVersion(1, 4, '{"type":"string"}', "AVRO", (("Ref", "ref", 2),)),)},
        {"": "BACKWARD", "t-value": "FULL"},
    )
    assert SavedSchemas.from_bytes(saved.to_bytes()) == saved
    assert SERIES.time(SERIES.name(7)) == 7 and SERIES.name(7).endswith(".schemas")


def test_referenced_versions_register_first():
    saved = SavedSchemas(
        "t",
        1,
        {
            "a-value": (SubjectVersion(1, 10, "a1", "AVRO", (("R", "z-ref", 1),)), SubjectVersion(2, 11, "a2")),
            "z-ref": (SubjectVersion(1, 5, "z1"),),
        },
    )
    assert [(s, v.version) for s, v in saved.registration_order()] == [("z-ref", 1), ("a-value", 1), ("a-value", 2)]


def test_rewrite_schema_id_only_in_the_wire_format():
    value = b"\x00" + struct.pack(">I", 3) + b"datum"
    assert rewrite_schema_id(value, {3: 70000}) == b"\x00" + struct.pack(">I", 70000) + b"datum"
    assert rewrite_schema_id(value, {4: 9}) == value
    assert rewrite_schema_id(b"\x01abcdef", {1: 2}) == b"\x01abcdef"
    assert rewrite_schema_id(b"\x00ab", {1: 2}) == b"\x00ab"
    assert rewrite_schema_id(None, {1: 2}) is None
