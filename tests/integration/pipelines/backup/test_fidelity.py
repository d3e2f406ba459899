"""Full-fidelity round trips: keys, repeated header keys, old timestamps, tombstones, 3 partitions, every format."""

from __future__ import annotations

import pytest

from kafka_s3.core.records import to_dicts
from kafka_s3.io.kafka.reader import read_range
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.restore.driver import Restore
from tests.support.integration import stable_end_offsets

pytestmark = pytest.mark.integration

PARTITIONS = 3


def rich_records(n_per_partition: int = 40):
    records = []
    for p in range(PARTITIONS):
        for i in range(n_per_partition):
            records.append(
                {
                    "partition": p,
                    "key": None if i % 11 == 0 else f"key-{p}-{i}".encode(),
                    "value": None
                    if i % 7 == 3
                    else (b"\x00\xffbinary\n" + bytes([i % 256]) * (i % 5) if i % 2 else b""),
                    "headers": [("h", b"first"), ("other", None), ("h", f"second-{i}".encode())] if i % 3 else None,
                    "timestamp": 1_262_304_000_000 + p * 1_000_000 + i * 60_000,  # 2010: older than any retention
                }
            )
    return records


def snapshot(bootstrap, topic):
    ends = stable_end_offsets(bootstrap, [(topic, p) for p in range(PARTITIONS)])
    out = {}
    for p in range(PARTITIONS):
        rows = to_dicts(list(read_range({"bootstrap.servers": bootstrap}, topic, p, 0, ends[(topic, p)])))
        out[p] = [(r["key"], r["value"], r["headers"], r["timestamp"], r["timestampType"]) for r in rows]
    return out


@pytest.mark.parametrize(
    "properties",
    [
        {"format.class": "avro", "avro.codec": "deflate"},
        {"format.class": "parquet", "parquet.codec": "zstd"},
        {"format.class": "json", "s3.compression.type": "gzip"},
        {
            "format.class": "avro",
            "partitioner.class": "field",
            "partition.field.name": "kind",
            "value.converter": "json",
            "value.converter.schemas.enable": "false",
        },
    ],
    ids=["avro-deflate", "parquet-zstd", "json-gzip", "avro-field-partitioner"],
)
def test_envelope_round_trip_is_exact(
    properties, engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    topic = fresh_topic(PARTITIONS)
    records = rich_records()
    if properties.get("partitioner.class") == "field":
        # field partitioning needs JSON objects: alternate two kinds so each chunk spans two directories
        for i, r in enumerate(records):
            if r["value"] is not None:
                r["value"] = f'{{"kind":"k{i % 2}","n":{i}}}'.encode()
    produce(topic, records)
    props = {"store.envelope": "true", "flush.size": "7", **properties}
    _, sink = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in props.items()})
    summary = Backup(sink, engine=engine).run_once()
    assert summary.records == len(records)

    target = f"{topic}-restored"
    _, source = make_config(
        fresh_bucket,
        topic,
        source=True,
        **{k.replace(".", "__"): v for k, v in props.items()},
        topic__rename=f"{topic}:{target}",
        topic__creation__enable="true",
        topic__creation__default__retention__ms="-1",
    )  # 2010 records: keep them
    restore = Restore(source, engine=engine).run()
    assert restore.records == len(records)
    assert snapshot(kafka_bootstrap, target) == snapshot(kafka_bootstrap, topic)
