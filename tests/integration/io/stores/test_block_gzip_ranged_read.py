"""``kafka-s3 read`` on a block_gzip backup in S3: the fault proxy shows the only data bytes asked for are one
block's."""

from __future__ import annotations

import gzip
import json

import pytest

from kafka_s3.cli.main import main
from kafka_s3.core.records import make_batch
from kafka_s3.io.stores.spec import open_store
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins

pytestmark = pytest.mark.integration

TOPIC = "orders"
SETTINGS = {"topics": TOPIC, "format.class": "block_gzip", "compressed_block_size": "100", "flush.size": "200"}


def test_read_fetches_the_index_and_only_the_block_holding_the_offset(s3_config, s3_env, fault_proxy, tmp_path, capsys):
    config = s3_config(SETTINGS)
    store = open_store(config)
    writer = PartitionBackup(BackupPlugins.from_config(config), store, TOPIC, 0)
    writer.write(make_batch({"offset": o, "topic": TOPIC, "value": b"record number %04d" % o} for o in range(200)))
    writer.finish(200, flush_open=True)
    data_key = f"topics/{TOPIC}/partition=0/{TOPIC}+0+0000000000.gz"
    index_key = data_key[: -len(".gz")] + ".index"
    chunks = json.loads(store.get(index_key))["chunks"]
    assert len(chunks) == 34  # 19-byte lines: the sixth reaches 100 bytes, so 6 records per block (2 in the last)
    block = next(c for c in chunks if c["first_record_offset"] <= 123 < c["first_record_offset"] + c["num_records"])
    assert block["byte_offset"] > 0 and block["byte_offset"] + block["byte_length"] < store.head(data_key).size

    path = tmp_path / "backup.properties"
    proxied = {**{k: str(v) for k, v in config.originals.items()}, "store.url": fault_proxy.url}
    path.write_text("".join(f"{k}={v}\n" for k, v in proxied.items()))
    assert main(["read", "--config", str(path), "--offset", "0:123", "--count", "2", "--raw"]) == 0
    assert capsys.readouterr().out == "record number 0123\nrecord number 0124\n"

    data_gets = fault_proxy.requests("GET", path=f"{TOPIC}%2B0%2B0000000000\\.gz$")  # (URL-encoded "+")
    assert [r.headers.get("range") for r in data_gets] == [
        f"bytes={block['byte_offset']}-{block['byte_offset'] + block['byte_length'] - 1}"
    ]
    assert len(fault_proxy.requests("GET", path=r"\.index$")) == 1
    # The block alone is a gzip file of its records.
    alone = store.get(data_key, block["byte_offset"], block["byte_offset"] + block["byte_length"] - 1)
    first = block["first_record_offset"]
    assert gzip.decompress(alone) == b"".join(
        b"record number %04d\n" % o for o in range(first, first + block["num_records"])
    )
