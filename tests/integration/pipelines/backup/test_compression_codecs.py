"""Compression against the real services: s3.compression.type (gzip, zstd, with s3.compression.level) for JSON and
ByteArray, every avro.codec and every parquet.codec. Objects carry Confluent's extensions and read back with
independent readers (gzip -d, the zstandard module, the reference avro package, fastavro for xz, pyarrow, DuckDB)."""

from __future__ import annotations

import io
import json
import subprocess

import avro.datafile
import avro.io
import duckdb
import fastavro
import pyarrow.parquet as pq
import pytest
import zstandard

from kafka_s3.pipelines.backup.driver import Backup
from tests.support.backup import data_keys, get, json_lines

pytestmark = pytest.mark.integration

SCHEMA = {
    "type": "struct",
    "name": "reading",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int32", "optional": False},
        {"field": "text", "type": "string", "optional": False},
    ],
}
N = 7  # flush.size=4: objects at offsets 0 and 4


def _payload(i: int) -> dict:
    return {"id": i, "text": f"record {i} " + "compressible " * 20}


def _produce_and_backup(engine, make_config, bucket, topic, produce, with_schema: bool, **properties):
    values = [
        json.dumps({"schema": SCHEMA, "payload": _payload(i)} if with_schema else _payload(i)).encode()
        for i in range(N)
    ]
    produce(topic, [{"value": v} for v in values])
    converter = {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true" if with_schema else "false",
    }
    props = {**converter, "flush.size": "4", **properties}
    _, config = make_config(bucket, topic, **{k.replace(".", "__"): v for k, v in props.items()})
    summary = Backup(config, engine=engine).run_once()
    assert summary.records == N and summary.objects == 2
    return values


def _expected_keys(topic: str, extension: str) -> list[str]:
    return [f"topics/{topic}/partition=0/{topic}+0+{start:010d}{extension}" for start in (0, 4)]


# ------------------------------------------------------------------------------------------------ stream compression
STREAM_CASES = {
    "json-gzip": ("json", "gzip", "9", ".json.gz"),
    "json-zstd": ("json", "zstd", "19", ".json.zst"),
    "bytearray-gzip": ("bytearray", "gzip", "1", ".bin.gz"),
    "bytearray-zstd": ("bytearray", "zstd", "3", ".bin.zst"),
}


@pytest.mark.parametrize("case", list(STREAM_CASES))
def test_stream_compression(case, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, tmp_path):
    fmt, compression, level, extension = STREAM_CASES[case]
    topic = fresh_topic(1)
    values = _produce_and_backup(
        engine,
        make_config,
        fresh_bucket,
        topic,
        produce,
        False,
        **{"format.class": fmt, "s3.compression.type": compression, "s3.compression.level": level},
    )

    keys = _expected_keys(topic, extension)
    assert data_keys(s3_client, fresh_bucket, topic) == keys
    plain_objects = []
    for key in keys:
        body = get(s3_client, fresh_bucket, key)
        local = tmp_path / key.rsplit("/", 1)[1]
        local.write_bytes(body)
        if compression == "gzip":
            assert body[:2] == b"\x1f\x8b"
            # The header's XFL byte records the level class: 2 = maximum compression (9), 4 = fastest (1).
            assert body[8] == {"9": 2, "1": 4}[level]
            plain = subprocess.run(["gzip", "-dc", str(local)], capture_output=True, check=True).stdout
        else:
            assert body[:4] == b"\x28\xb5\x2f\xfd"  # zstd frame magic
            plain = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body)).read()
        assert len(body) < len(plain)
        plain_objects.append(plain)
    if fmt == "json":
        records = [r for plain in plain_objects for r in json_lines(plain)]
        assert records == [_payload(i) for i in range(N)]
    else:
        records = [r for plain in plain_objects for r in plain.split(b"\n")[:-1]]
        assert records == values  # the Kafka bytes, one per line
    assert [len(json_lines(p)) if fmt == "json" else p.count(b"\n") for p in plain_objects] == [4, 3]


# ------------------------------------------------------------------------------------------------ Avro codecs
@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "bzip2", "xz", "zstandard"])
def test_avro_codecs(codec, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client):
    topic = fresh_topic(1)
    _produce_and_backup(
        engine,
        make_config,
        fresh_bucket,
        topic,
        produce,
        True,
        **{"format.class": "io.confluent.connect.s3.format.avro.AvroFormat", "avro.codec": codec},
    )

    keys = _expected_keys(topic, ".avro")  # .avro whatever the codec, as Confluent names them
    assert data_keys(s3_client, fresh_bucket, topic) == keys
    rows = []
    for key in keys:
        body = get(s3_client, fresh_bucket, key)
        if codec == "xz":  # the reference avro package has no xz codec
            reader = fastavro.reader(io.BytesIO(body))
            assert reader.codec == "xz"
            chunk = list(reader)
        else:
            reader = avro.datafile.DataFileReader(io.BytesIO(body), avro.io.DatumReader())
            assert reader.get_meta("avro.codec").decode() == codec
            assert json.loads(reader.schema)["name"] == "reading"
            chunk = list(reader)
        rows.append(chunk)
    assert [len(c) for c in rows] == [4, 3]
    assert [r for c in rows for r in c] == [_payload(i) for i in range(N)]


# ------------------------------------------------------------------------------------------------ Parquet codecs
PARQUET_CASES = {
    "none": (".parquet", {"UNCOMPRESSED"}),
    "snappy": (".snappy.parquet", {"SNAPPY"}),
    "gzip": (".gz.parquet", {"GZIP"}),
    "zstd": (".zstd.parquet", {"ZSTD"}),
    "lz4": (".lz4.parquet", {"LZ4", "LZ4_RAW"}),
}


@pytest.mark.parametrize("codec", list(PARQUET_CASES))
def test_parquet_codecs(codec, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, tmp_path):
    extension, compressions = PARQUET_CASES[codec]
    topic = fresh_topic(1)
    _produce_and_backup(
        engine,
        make_config,
        fresh_bucket,
        topic,
        produce,
        True,
        **{"format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat", "parquet.codec": codec},
    )

    keys = _expected_keys(topic, extension)
    assert data_keys(s3_client, fresh_bucket, topic) == keys
    rows = []
    for key in keys:
        local = tmp_path / key.rsplit("/", 1)[1]
        local.write_bytes(get(s3_client, fresh_bucket, key))
        metadata = pq.ParquetFile(local).metadata
        used = {
            metadata.row_group(g).column(c).compression
            for g in range(metadata.num_row_groups)
            for c in range(metadata.num_columns)
        }
        assert used <= compressions and used, used
        table = pq.read_table(local)
        assert duckdb.sql(f"select count(*) from read_parquet('{local}')").fetchall()[0][0] == table.num_rows
        rows.append(table.to_pylist())
    assert [len(c) for c in rows] == [4, 3]
    assert [r for c in rows for r in c] == [_payload(i) for i in range(N)]
