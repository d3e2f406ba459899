"""Three versions of one Avro schema, registered in that order, for the schema-evolution tests (unit and integration).

- v1: ``id``, ``customer``, ``note`` (default ""), ``quantity`` (int);
- v2: v1 plus ``channel`` with a default ("web") — an added field with a default;
- v3: v2 without ``note`` (a removed field) and ``quantity`` a long (a promoted type).

Each step is BACKWARD compatible (the Schema Registry's default): a v3 reader reads v1 and v2 data. Going back, a v1
reader reads v2 data (FORWARD) but not v3's long ``quantity``.
"""

from __future__ import annotations

import copy
import datetime as dt
import io
import json
import struct
import uuid
from decimal import Decimal

import fastavro

V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "note", "type": "string", "default": ""},
        {"name": "quantity", "type": "int"},
    ],
}
V2 = copy.deepcopy(V1)
V2["fields"].append({"name": "channel", "type": "string", "default": "web"})
V3 = copy.deepcopy(V2)
V3["fields"] = [f for f in V3["fields"] if f["name"] != "note"]
V3["fields"][2] = {"name": "quantity", "type": "long"}
VERSIONS = {1: V1, 2: V2, 3: V3}


def record(version: int, n: int) -> dict:
    """Record ``n`` written with schema ``version``."""
    rec = {"id": n, "customer": f"c{n}", "note": f"n{n}", "quantity": n, "channel": "app"}
    if version == 1:
        del rec["channel"]
    if version == 3:
        del rec["note"]
        rec["quantity"] = 10_000_000_000 + n  # needs the promoted long
    return rec


def read_as(record_: dict, writer_version: int, reader_version: int) -> dict:
    """``record_`` (written with ``writer_version``) read with ``reader_version``, by fastavro's schema resolution:
    the reference for projections."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(VERSIONS[writer_version]), record_)
    body.seek(0)
    return fastavro.schemaless_reader(
        body, fastavro.parse_schema(VERSIONS[writer_version]), fastavro.parse_schema(VERSIONS[reader_version])
    )


def wire(schema_id: int, version: int, record_: dict) -> bytes:
    """The Schema Registry wire format of a record: magic byte 0, the 4-byte schema id, the Avro datum."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(VERSIONS[version]), record_)
    return b"\x00" + struct.pack(">I", schema_id) + body.getvalue()


def unwire(client, value: bytes) -> tuple[dict, dict]:
    """``(writer schema, record)`` of a wire-format value, the schema fetched from ``client``."""
    assert value[0] == 0, value[:5]
    schema_id = struct.unpack(">I", value[1:5])[0]
    schema = json.loads(client.get_schema(schema_id).schema_str)
    return schema, fastavro.schemaless_reader(io.BytesIO(value[5:]), fastavro.parse_schema(schema), None)


def register_versions(client, subject: str) -> dict[int, int]:
    """Register v1, v2, v3 under ``subject`` in order: {version: schema id}. Compact JSON, as kafka-s3 registers
    schemas on restores (a real registry compares schemas by content; the in-memory one by text)."""
    from confluent_kafka.schema_registry import Schema

    return {
        v: client.register_schema(subject, Schema(json.dumps(s, separators=(",", ":")), "AVRO"))
        for v, s in VERSIONS.items()
    }


# ------------------------------------------------------------------------------------------ every Avro type
UTC = dt.UTC

RICH = {
    "type": "record",
    "name": "Payment",
    "namespace": "bank",
    "fields": [
        {"name": "id", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {
            "name": "fee",
            "type": {"type": "fixed", "name": "Fee", "size": 6, "logicalType": "decimal", "precision": 10, "scale": 3},
        },
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
        {"name": "local", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "time", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "time_us", "type": {"type": "long", "logicalType": "time-micros"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "VOID"]}},
        {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}},
        {
            "name": "payer",
            "type": {
                "type": "record",
                "name": "Party",
                "fields": [
                    {"name": "name", "type": "string"},
                    {"name": "iban", "type": ["null", "string"], "default": None},
                ],
            },
        },
        {"name": "payee", "type": "Party"},  # a named type used again
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "limits", "type": {"type": "map", "values": ["null", "double"]}},
        {"name": "memo", "type": ["null", "string"], "default": None},
        {"name": "detail", "type": ["null", "long", "string", "Party", "Status"], "default": None},
        {"name": "ratio", "type": "float"},
        {"name": "flag", "type": "boolean"},
        {"name": "raw", "type": "bytes"},
        {"name": "count", "type": "int"},
    ],
}


def rich_record(n: int) -> dict:
    details = [None, 7 * n, f"text{n}", ("bank.Party", {"name": f"d{n}", "iban": None}), ("bank.Status", "VOID")]
    return {
        "id": str(uuid.UUID(int=n + 1)),
        "amount": Decimal(n * 101) / 100 - Decimal("5.5"),
        "fee": Decimal(-n) / 1000,
        "at": dt.datetime(2024, 5, 1, 12, 0, n % 60, 123000, tzinfo=UTC),
        "at_us": dt.datetime(2024, 5, 1, 12, 0, n % 60, 123456, tzinfo=UTC),
        "local": dt.datetime(2024, 5, 1, 8, 30, n % 60, 5000),
        "day": dt.date(2024, 2, 29) + dt.timedelta(days=n),
        "time": dt.time(23, 59, n % 60, 999000),
        "time_us": dt.time(0, 0, 1, 1 + n),
        "status": ["NEW", "PAID", "VOID"][n % 3],
        "digest": struct.pack(">I", n),
        "payer": {"name": f"p{n}", "iban": f"DE{n}" if n % 2 else None},
        "payee": {"name": f"q{n}", "iban": None},
        "tags": [f"t{i}" for i in range(n % 3)],
        "limits": {"day": 100.5, "night": None} if n % 2 else {},
        "memo": None if n % 2 else f"memo {n}",
        "detail": details[n % 5],
        "ratio": 0.5,
        "flag": n % 2 == 0,
        "raw": bytes([n, 0, 255]),
        "count": -n,
    }


def encoded(schema: dict, schema_id: int, datum) -> bytes:
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), datum)
    return b"\x00" + struct.pack(">I", schema_id) + body.getvalue()
