"""Issue 15 item 9: a bucket written by DeviantArt's connector restores record-exact (values, one per line, per
partition in offset order) from a DeviantArt connector configuration, through real S3, Kafka and Spark.

The bucket is built here from DeviantArt's source (DA ``src/main/java/com/deviantart/kafka_connect_s3/``), never by
our writer:

- names: ``BlockGZIPFileWriter.getDataFileName`` / ``S3Writer.getChunkFileKey``:
  ``<s3.prefix>/<yyyy-MM-dd>/<topic>-<p %05d>-<first offset %012d>.gz`` and ``.index.json``; the cursor
  ``<s3.prefix>/last_chunk_index.<topic>-<p %05d>.txt`` holding the newest index key (``S3Writer.updateCursorFile``);
- data: one gzip member per chunk (``BlockGZIPFileWriter``: a new ``GZIPOutputStream`` per chunk), each line
  ``record.value().toString()`` plus ``\\n``; a chunk closes once the next line would pass ``compressed_block_size``;
- index: json-simple's ``{"chunks":[{"byte_length_uncompressed","num_records","byte_length","byte_offset",
  "first_record_offset"}]}``, compact, in that key order (``BlockGZIPFileWriter.writeIndex``).
"""

from __future__ import annotations

import gzip

import pytest

from kafka_s3.pipelines.read.lookup import read_records
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

PREFIX = "da-backups"
# (partition, date directory, first offset, chunks of lines)
FILES = [
    (0, "2017-02-01", 0, [["r0", "r1 with spaces", "r2"], ["r3", '{"json": true}']]),
    (0, "2017-02-02", 5, [["r5", "r6 \u00e9"]]),
    (1, "2017-02-01", 0, [["p1-0"], ["p1-1"], ["p1-2"]]),
]


def deviantart_objects(topic: str) -> dict[str, bytes]:
    objects: dict[str, bytes] = {}
    cursors: dict[int, str] = {}
    for partition, date, first, chunks in FILES:
        base = f"{PREFIX}/{date}/{topic}-{partition:05d}-{first:012d}"
        data = b""
        entries = []
        offset = first
        for lines in chunks:
            raw = "".join(line + "\n" for line in lines).encode()
            member = gzip.compress(raw)
            entries.append(
                f'{{"byte_length_uncompressed":{len(raw)},"num_records":{len(lines)},"byte_length":{len(member)},'
                f'"byte_offset":{len(data)},"first_record_offset":{offset}}}'
            )
            data += member
            offset += len(lines)
        objects[base + ".gz"] = data
        objects[base + ".index.json"] = ('{"chunks":[' + ",".join(entries) + "]}").encode()
        cursors[partition] = base + ".index.json"
    for partition, index_key in cursors.items():
        objects[f"{PREFIX}/last_chunk_index.{topic}-{partition:05d}.txt"] = index_key.encode()
    return objects


def expected(partition: int) -> list[bytes]:
    return [line.encode() for p, _, _, chunks in FILES if p == partition for lines in chunks for line in lines]


DEVIANTART_CONFIG = {
    "connector.class": "com.deviantart.kafka_connect_s3.S3SinkConnector",
    "s3.prefix": PREFIX,
    "compressed_block_size": "67108864",
}


def test_deviantart_bucket_restores_record_exact(
    spark, restorer, make_config, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap
):
    source, target = f"da-{fresh_topic(2)}", fresh_topic(2)
    for key, body in deviantart_objects(source).items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    restore = restorer(fresh_bucket, source, {**DEVIANTART_CONFIG, "topic.rename": f"{source}:{target}"})

    plan = restore.plan()
    summary = restore.run()

    assert plan.layout.startswith("layout: DeviantArt's connector, detected under ")
    assert summary.records == len(expected(0)) + len(expected(1))
    restored = read_topic(kafka_bootstrap, target)
    for partition in (0, 1):
        assert [r["value"] for r in restored[partition]] == expected(partition)
        assert all(r["key"] is None and not r["headers"] for r in restored[partition])
    _, config = make_config(
        fresh_bucket, source, source=True, **{k.replace(".", "__"): v for k, v in DEVIANTART_CONFIG.items()}
    )
    # The index's blocks: offset 3 is the second block of the first object, fetched alone by a ranged GET.
    assert [(r["offset"], r["value"]) for r in read_records(config, 0, 3, 3)] == [
        (3, b"r3"),
        (4, b'{"json": true}'),
        (5, b"r5"),
    ]
    # The DataFrame reader detects the layout too; its tasks read with the layout the driver found.
    raw, _ = make_config(fresh_bucket, source, **{k.replace(".", "__"): v for k, v in DEVIANTART_CONFIG.items()})
    rows = spark.read.format("kafka-s3").options(**raw).load().orderBy("partition", "offset").collect()
    assert [(r.partition, r.offset, bytes(r.value)) for r in rows] == [
        (p, i, value) for p in (0, 1) for i, value in enumerate(expected(p))
    ]
