"""Keys and headers sidecars (store.kafka.keys / store.kafka.headers) against the real services: named
``<name>.keys.<ext>`` / ``<name>.headers.<ext>`` next to each data object, holding the same records in the same order,
repeated header keys kept."""

from __future__ import annotations

import base64
import io

import avro.datafile
import avro.io
import pyarrow.parquet as pq
import pytest

from kafka_s3.pipelines.backup.driver import Backup
from tests.support.backup import data_keys, get, json_lines
from tests.support.integration import sidecar_records

pytestmark = pytest.mark.integration

PARTITIONS, PER_PARTITION = 2, 5


VALUE_JSON = {
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true",
}

CASES = {
    # value format, its extension, keys format, headers format, key converter
    "json+avro-sidecars": ("json", ".json", "avro", "avro", "bytearray"),
    "avro+json-sidecars": ("avro", ".avro", "json", "json", "string"),
    "parquet+avro-keys+json-headers": ("parquet", ".snappy.parquet", "avro", "json", "string"),
}


def _read_values(fmt: str, body: bytes) -> list[dict]:
    if fmt == "json":
        return json_lines(body)
    if fmt == "avro":
        return list(avro.datafile.DataFileReader(io.BytesIO(body), avro.io.DatumReader()))
    return pq.read_table(io.BytesIO(body)).to_pylist()


def _read_keys(fmt: str, body: bytes, converter: str) -> list:
    if fmt == "avro":
        keys = list(avro.datafile.DataFileReader(io.BytesIO(body), avro.io.DatumReader()))
        return [k if k is None or isinstance(k, bytes) else k.encode() for k in keys]
    return [None if k is None else k.encode() for k in json_lines(body)]


def _read_headers(fmt: str, body: bytes) -> list[list[tuple]]:
    if fmt == "avro":
        rows = list(avro.datafile.DataFileReader(io.BytesIO(body), avro.io.DatumReader()))
        # Confluent's ConnectDefault {key, value: string}, or kafka-s3's own (bytes, null) when a value is null
        return [
            [(h["key"], h["value"].encode() if isinstance(h["value"], str) else h["value"]) for h in row]
            for row in rows
        ]
    rows = json_lines(body)
    return [
        [(h["key"], h["value"].encode()) for h in row["headers"]]  # Confluent's {"headers": [...]}: text values
        if isinstance(row, dict)
        else [(h["key"], None if h["value"] is None else base64.b64decode(h["value"])) for h in row]
        for row in rows
    ]


@pytest.mark.parametrize("case", list(CASES))
def test_keys_and_headers_sidecars(case, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client):
    fmt, extension, keys_fmt, headers_fmt, key_converter = CASES[case]
    topic = fresh_topic(PARTITIONS)
    records = sidecar_records(PARTITIONS, PER_PARTITION)
    produce(topic, records)
    props = {
        **VALUE_JSON,
        "format.class": fmt,
        "flush.size": "3",
        "store.kafka.keys": "true",
        "store.kafka.headers": "true",
        "keys.format.class": keys_fmt,
        "headers.format.class": headers_fmt,
        "key.converter": key_converter,
    }
    _, config = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in props.items()})

    summary = Backup(config, engine=engine).run_once()
    assert summary.records == PARTITIONS * PER_PARTITION and summary.objects == 4

    expected = []
    for p in range(PARTITIONS):
        for start in (0, 3):
            base = f"topics/{topic}/partition={p}/{topic}+{p}+{start:010d}"
            expected.append((p, start, base + extension, f"{base}.keys.{keys_fmt}", f"{base}.headers.{headers_fmt}"))
    assert data_keys(s3_client, fresh_bucket, topic) == sorted(k for e in expected for k in e[2:])

    for p, start, data_key, keys_key, headers_key in expected:
        sent = [r for r in records if r["partition"] == p][start : start + 3]
        values = _read_values(fmt, get(s3_client, fresh_bucket, data_key))
        keys = _read_keys(keys_fmt, get(s3_client, fresh_bucket, keys_key), key_converter)
        headers = _read_headers(headers_fmt, get(s3_client, fresh_bucket, headers_key))
        assert len(values) == len(keys) == len(headers) == len(sent), data_key
        assert values == [{"p": p, "i": i} for i in range(start, start + len(sent))]
        assert keys == [r["key"] for r in sent]
        assert headers == [list(r["headers"] or []) for r in sent]  # repeated "h" kept, in order
