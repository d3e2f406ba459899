"""Helpers of the security tests (a uniquely named module, importable beside the other test directories' helpers)."""

from __future__ import annotations

import json

from integration_helpers import run_cli as run_cli  # re-exported: the security tests import them from here
from integration_helpers import write_properties as write_properties

from kafka_s3.core.records import to_dicts
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.reader import read_range

JSON = {
    "format__class": "json",
    "value__converter": "org.apache.kafka.connect.json.JsonConverter",
    "value__converter__schemas__enable": "false",
}


def records(partitions: int, per_partition: int) -> list[dict]:
    """Keyed JSON records ``{"n": ...}``, ``n`` unique across partitions."""
    return [
        {"partition": p, "key": f"k{p}-{i}".encode(), "value": json.dumps({"n": p * 1000 + i}).encode()}
        for p in range(partitions)
        for i in range(per_partition)
    ]


def values_of(bootstrap: str, topic: str) -> dict[int, list[dict]]:
    """Every partition's values, decoded from JSON."""
    admin = Admin({"bootstrap.servers": bootstrap})
    count = admin.topics()[topic]
    ends = admin.end_offsets([(topic, p) for p in range(count)])
    out = {}
    for p in range(count):
        rows = to_dicts(list(read_range({"bootstrap.servers": bootstrap}, topic, p, 0, ends[(topic, p)])))
        out[p] = [json.loads(r["value"]) for r in rows]
    return out
