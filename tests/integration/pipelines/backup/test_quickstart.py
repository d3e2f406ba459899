"""Confluent's quickstart (9 records, flush.size=3) in every format, read back with independent readers."""

from __future__ import annotations

import gzip
import io
import json
import subprocess

import avro.datafile
import avro.io
import duckdb
import pyarrow.parquet as pq
import pytest

from kafka_s3.pipelines.backup.driver import Backup
from tests.support.integration import list_keys, quickstart_values

pytestmark = pytest.mark.integration

CASES = {
    # id: (properties, extension, value converter emits a schema)
    "json": (
        {
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
        },
        ".json",
        False,
    ),
    "json-gzip": (
        {
            "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "s3.compression.type": "gzip",
        },
        ".json.gz",
        False,
    ),
    "bytearray": (
        {
            "format.class": "io.confluent.connect.s3.format.bytearray.ByteArrayFormat",
            "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        },
        ".bin",
        False,
    ),
    "bytearray-gzip": (
        {"format.class": "io.confluent.connect.s3.format.bytearray.ByteArrayFormat", "s3.compression.type": "gzip"},
        ".bin.gz",
        False,
    ),
    "avro": (
        {
            "format.class": "io.confluent.connect.s3.format.avro.AvroFormat",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true",
        },
        ".avro",
        True,
    ),
    "parquet": (
        {
            "format.class": "io.confluent.connect.s3.format.parquet.ParquetFormat",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true",
        },
        ".snappy.parquet",
        True,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_quickstart(case, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, tmp_path):
    properties, extension, with_schema = CASES[case]
    topic = fresh_topic(1, prefix="s3_topic")
    values = quickstart_values(with_schema)
    produce(topic, [{"value": v} for v in values])
    _, config = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in properties.items()})

    summary = Backup(config, engine=engine).run_once()

    expected = [f"topics/{topic}/partition=0/{topic}+0+{start:010d}{extension}" for start in (0, 3, 6)]
    assert list_keys(s3_client, fresh_bucket, f"topics/{topic}/") == expected
    assert summary.records == 9 and summary.objects == 3
    bookkeeping = list_keys(s3_client, fresh_bucket, "topics/_kafka-s3/")
    kind = extension.lstrip(".")  # one bookkeeping tree per object extension
    assert [k for k in bookkeeping if not k.endswith((".chunk", ".tail", ".topicconfig"))] == [
        f"topics/_kafka-s3/{kind}/{topic}/partition-count/1.count"
    ]
    configs = [k for k in bookkeeping if k.endswith(".topicconfig")]  # issue 17 item 2: the topic's configs
    assert len(configs) == 1 and configs[0].startswith(f"topics/_kafka-s3/{kind}/{topic}/topic-config/"), configs
    # a manifest per chunk, the partition's committed-end mark, the topic's partition count and configs; none of them
    # ends in a data format's extension (issue 15 item 5), so a *.json or *.avro glob sees data only
    assert len(bookkeeping) == 6
    assert not [k for k in bookkeeping if k.endswith((".json", ".avro", ".parquet", ".bin", ".gz", ".csv"))]

    records = []
    for key in expected:
        body = s3_client.get_object(Bucket=fresh_bucket, Key=key)["Body"].read()
        local = tmp_path / key.rsplit("/", 1)[-1]
        local.write_bytes(body)
        records.append(_independent_read(case, local, body))
    flat = [r for chunk in records for r in chunk]
    assert [r["f1"] for r in flat] == [f"value{i}" for i in range(1, 10)]
    assert [len(chunk) for chunk in records] == [3, 3, 3]


def _independent_read(case: str, path, body: bytes) -> list[dict]:
    if case in ("json", "json-gzip"):
        if case == "json-gzip":
            plain = subprocess.run(["gzip", "-dc", str(path)], capture_output=True, check=True).stdout
            assert plain == gzip.decompress(body)
            assert plain.count(b"\n") == 3 and plain.endswith(b"\n")
        rows = duckdb.sql(f"select f1 from read_json('{path}', format='newline_delimited')").fetchall()
        return [{"f1": r[0]} for r in rows]
    if case.startswith("bytearray"):
        raw = (
            subprocess.run(["gzip", "-dc", str(path)], capture_output=True, check=True).stdout
            if case.endswith("gzip")
            else body
        )
        assert raw.endswith(b"\n") and raw.count(b"\n") == 3  # value + line separator after every record
        return [json.loads(line) for line in raw.split(b"\n")[:-1]]
    if case == "avro":
        reader = avro.datafile.DataFileReader(io.BytesIO(body), avro.io.DatumReader())
        rows = list(reader)
        assert json.loads(reader.schema)["name"] == "myrecord"
        return rows
    if case == "parquet":
        table = pq.read_table(path)
        assert duckdb.sql(f"select count(*) from read_parquet('{path}')").fetchall()[0][0] == 3
        return table.to_pylist()
    raise AssertionError(case)
