"""Issue 15 item 9: a DeviantArt connector configuration backs up into DeviantArt's naming and bytes, and restores.

What DeviantArt writes is taken from its source (DA ``src/main/java/com/deviantart/kafka_connect_s3/``):
``S3Writer.getChunkFileKey`` (``<s3.prefix>/<upload date yyyy-MM-dd>/<topic>-<p %05d>-<first offset %012d>.gz``),
``BlockGZIPFileWriter`` (a gzip member per block; a block closes before the line that would pass
``compressed_block_size``; ``<name>.index.json`` in json-simple's key order, compact), ``S3Writer.updateCursorFile``
(``<s3.prefix>/last_chunk_index.<topic>-<p %05d>.txt`` holding the newest index key, no newline). The expected
index below is computed from those rules and the lines, never from our writer's output.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json

import pytest

from tests.support.integration import list_keys
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

PREFIX = "da"
LINES = [f"line {i:02d} {'x' * (i % 7)}" for i in range(12)]
BLOCK = 40  # compressed_block_size: a few lines per block
FLUSH = 8  # records per object: two objects, so the cursor moves twice


def deviantart_blocks(lines: list[str], block: int) -> list[list[str]]:
    """DA BlockGZIPFileWriter.write: before each line, close the block if raw + line length (+1) > block size."""
    blocks: list[list[str]] = [[]]
    raw = 0
    for text in lines:
        units = len(text) + 1
        if raw + units > block:
            blocks.append([])
            raw = 0
        blocks[-1].append(text)
        raw += units
    return blocks


def test_deviantart_config_writes_deviantarts_names_index_and_cursor(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic = fresh_topic(1)
    produce(topic, [{"value": text.encode()} for text in LINES])
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    config = {
        "connector.class": "com.deviantart.kafka_connect_s3.S3SinkConnector",
        "s3.prefix": PREFIX,
        "compressed_block_size": str(BLOCK),
        "flush.size": str(FLUSH),
    }

    summary = backup(fresh_bucket, topic, config)

    assert summary.records == len(LINES)
    bases = [f"{PREFIX}/{today}/{topic}-00000-{start:012d}" for start in (0, FLUSH)]
    cursor_key = f"{PREFIX}/last_chunk_index.{topic}-00000.txt"
    peer_keys = [k for k in list_keys(s3_client, fresh_bucket, PREFIX + "/") if "/_kafka-s3/" not in k]
    assert sorted(peer_keys) == sorted([b + ext for b in bases for ext in (".gz", ".index.json")] + [cursor_key])
    # moved after each chunk: it names the newest index
    assert (
        s3_client.get_object(Bucket=fresh_bucket, Key=cursor_key)["Body"].read() == (bases[1] + ".index.json").encode()
    )

    for base, lines, first in ((bases[0], LINES[:FLUSH], 0), (bases[1], LINES[FLUSH:], FLUSH)):
        body = s3_client.get_object(Bucket=fresh_bucket, Key=base + ".gz")["Body"].read()
        index_bytes = s3_client.get_object(Bucket=fresh_bucket, Key=base + ".index.json")["Body"].read()
        index = json.loads(index_bytes)
        assert gzip.decompress(body) == "".join(t + "\n" for t in lines).encode()  # one gzip file, members concatenated
        for chunk, block in zip(index["chunks"], deviantart_blocks(lines, BLOCK), strict=True):
            member = body[chunk["byte_offset"] : chunk["byte_offset"] + chunk["byte_length"]]
            assert gzip.decompress(member) == "".join(t + "\n" for t in block).encode()
            assert list(chunk) == [
                "byte_length_uncompressed",
                "num_records",
                "byte_length",
                "byte_offset",
                "first_record_offset",
            ]
            assert (chunk["num_records"], chunk["first_record_offset"]) == (len(block), first)
            assert chunk["byte_length_uncompressed"] == sum(len(t) + 1 for t in block)
            first += len(block)
        assert b" " not in index_bytes and not index_bytes.endswith(b"\n")  # compact, as json-simple's toJSONString

    target = fresh_topic(1)
    restore = restorer(fresh_bucket, topic, {**config, "topic.rename": f"{topic}:{target}"})
    plan = restore.plan()
    restore.run()
    assert plan.layout.startswith("layout: DeviantArt's connector, detected under ")
    assert [r["value"] for r in read_topic(kafka_bootstrap, target)[0]] == [t.encode() for t in LINES]
