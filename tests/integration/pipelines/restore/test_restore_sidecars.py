"""Restoring keys and headers from Confluent's sidecar objects (``store.kafka.keys`` / ``store.kafka.headers``), not
only from envelope backups: every record comes back with its key and its headers (repeated keys, null values and
order kept), in every value format."""

from __future__ import annotations

import json

import pytest

from tests.support.integration import sidecar_records
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

CASES = {
    # value format, keys format, headers format, key converter
    "json+avro-sidecars": ("json", "avro", "avro", "bytearray"),
    "avro+json-sidecars": ("avro", "json", "json", "string"),
    "parquet+parquet-sidecars": ("parquet", "parquet", "parquet", "bytearray"),
}


def payload(value: bytes) -> dict:
    doc = json.loads(value)
    return doc.get("payload", doc) if isinstance(doc, dict) and "schema" in doc else doc


@pytest.mark.parametrize("case", list(CASES))
def test_keys_and_headers_restore_from_sidecars(
    case, backup, restorer, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    fmt, keys_fmt, headers_fmt, key_converter = CASES[case]
    topic, target = fresh_topic(2), fresh_topic(2)
    produce(topic, sidecar_records())
    properties = {
        "format.class": fmt,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
        "store.kafka.keys": "true",
        "store.kafka.headers": "true",
        "keys.format.class": keys_fmt,
        "headers.format.class": headers_fmt,
        "key.converter": key_converter,
        "flush.size": "3",
    }
    backup(fresh_bucket, topic, properties)

    summary = restorer(fresh_bucket, topic, {**properties, "topic.rename": f"{topic}:{target}"}).run()

    assert summary.records == 10
    original, restored = read_topic(kafka_bootstrap, topic), read_topic(kafka_bootstrap, target)
    assert [(k, v) for k, v in original[0][0]["headers"]] == [
        ("h", b"first-0-0"),
        ("empty", None),
        ("h", b"second-0-0"),
    ]
    assert original[0][2]["key"] is None and original[0][1]["headers"] in (None, [])
    for partition in (0, 1):
        assert [r["key"] for r in restored[partition]] == [r["key"] for r in original[partition]]
        assert [r["headers"] for r in restored[partition]] == [r["headers"] for r in original[partition]]
        assert [payload(r["value"]) for r in restored[partition]] == [payload(r["value"]) for r in original[partition]]
