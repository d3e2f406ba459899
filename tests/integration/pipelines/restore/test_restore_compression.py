"""Compressed backups restore: gzip and zstd JSON / ByteArray objects, every ``avro.codec``, every ``parquet.codec``,
with whole-record envelopes and with plain values (Confluent's layout). Confluent's source reads no compressed object
at all; kafka-s3 must read back whatever its backup (or Confluent's sink) wrote."""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow.parquet as pq
import pytest

from tests.support.integration import list_keys
from tests.support.restore import fidelity, get_object, read_topic, records

pytestmark = pytest.mark.integration

PARTITIONS, PER_PARTITION = 2, 7
JSON_PLAIN = {
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
JSON_SCHEMA = {
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true",
}
GZIP_MAGIC, ZSTD_MAGIC = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"
PARQUET_EXTENSIONS = {
    "none": ".parquet",
    "snappy": ".snappy.parquet",
    "gzip": ".gz.parquet",
    "zstd": ".zstd.parquet",
    "lz4": ".lz4.parquet",
}
PARQUET_CODECS = {"none": "UNCOMPRESSED", "snappy": "SNAPPY", "gzip": "GZIP", "zstd": "ZSTD", "lz4": "LZ4"}


def _cases():
    cases = []
    for fmt in ("json", "bytearray"):
        for compression, ext in (("gzip", ".gz"), ("zstd", ".zst")):
            base = {"format.class": fmt, "s3.compression.type": compression}
            data_ext = (".json" if fmt == "json" else ".bin") + ext
            cases.append(
                pytest.param(
                    {**base, **(JSON_PLAIN if fmt == "json" else {})}, data_ext, False, id=f"{fmt}-{compression}-plain"
                )
            )
            if fmt == "json":
                cases.append(
                    pytest.param({**base, "store.envelope": "true"}, data_ext, True, id=f"{fmt}-{compression}-envelope")
                )
    for codec in ("null", "deflate", "snappy", "bzip2", "xz", "zstandard"):
        base = {"format.class": "avro", "avro.codec": codec}
        cases.append(pytest.param({**base, **JSON_SCHEMA}, ".avro", False, id=f"avro-{codec}-plain"))
        cases.append(pytest.param({**base, "store.envelope": "true"}, ".avro", True, id=f"avro-{codec}-envelope"))
    for codec, ext in PARQUET_EXTENSIONS.items():
        base = {"format.class": "parquet", "parquet.codec": codec}
        cases.append(pytest.param({**base, **JSON_SCHEMA}, ext, False, id=f"parquet-{codec}-plain"))
        cases.append(pytest.param({**base, "store.envelope": "true"}, ext, True, id=f"parquet-{codec}-envelope"))
    return cases


def _assert_compressed_as_configured(body: bytes, key: str, properties: dict) -> None:
    """The object really is compressed with the codec under test (else the test would prove nothing)."""
    fmt = properties["format.class"]
    if fmt in ("json", "bytearray"):
        magic = GZIP_MAGIC if properties["s3.compression.type"] == "gzip" else ZSTD_MAGIC
        assert body.startswith(magic), key
    elif fmt == "avro":
        assert fastavro.reader(io.BytesIO(body)).codec == properties["avro.codec"], key
    else:
        metadata = pq.ParquetFile(io.BytesIO(body)).metadata
        assert metadata.row_group(0).column(0).compression == PARQUET_CODECS[properties["parquet.codec"]], key


@pytest.mark.parametrize(("properties", "extension", "envelope"), _cases())
def test_compressed_backup_restores(
    properties, extension, envelope, backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic = fresh_topic(PARTITIONS)
    with_schema = properties["format.class"] in ("avro", "parquet") and not envelope
    sent = records(PARTITIONS, PER_PARTITION, with_schema=with_schema)
    produce(topic, sent)
    summary = backup(fresh_bucket, topic, properties)
    assert summary.records == PARTITIONS * PER_PARTITION

    keys = list_keys(s3_client, fresh_bucket, f"topics/{topic}/")
    expected = [
        f"topics/{topic}/partition={p}/{topic}+{p}+{start:010d}{extension}"
        for p in range(PARTITIONS)
        for start in (0, 3, 6)
    ]
    assert keys == expected
    for key in keys:
        _assert_compressed_as_configured(get_object(s3_client, fresh_bucket, key), key, properties)

    target = f"{topic}-restored"
    result = restorer(
        fresh_bucket,
        topic,
        {
            **properties,
            "topic.rename": f"{topic}:{target}",
            "topic.creation.enable": "true",
            "topic.creation.default.retention.ms": "-1",
        },
    ).run()
    assert result.records == PARTITIONS * PER_PARTITION and not result.problems
    assert [(r.source_partition, r.target_partition, r.objects, r.records) for r in result.results] == [
        (p, p, 3, PER_PARTITION) for p in range(PARTITIONS)
    ]

    restored = read_topic(kafka_bootstrap, target)
    original = read_topic(kafka_bootstrap, topic)
    assert sorted(restored) == list(range(PARTITIONS))
    for p in range(PARTITIONS):
        if envelope:
            assert fidelity(restored[p]) == fidelity(original[p])
        elif properties["format.class"] == "bytearray":
            assert [r["value"] for r in restored[p]] == [r["value"] for r in original[p]]
        else:
            assert [json.loads(r["value"]) for r in restored[p]] == [json.loads(r["value"]) for r in original[p]]
