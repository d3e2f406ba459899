"""A discarded open chunk leaves nothing behind that writes later (the "No silent loss II" issue, item 7: no
``Exception ignored in ParquetWriter.__del__ ... upload ... already committed or aborted`` when a follow cycle ends
or is stopped).

The open chunk of a follow cycle is discarded (its uploads aborted); a format writer left open would be closed by
the garbage collector, which writes its footer into the aborted upload and prints a traceback nobody can act on.
"""

from __future__ import annotations

import gc
import sys

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.records import make_batch
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins


@pytest.fixture
def unraisable(monkeypatch):
    """What the interpreter would print as "Exception ignored in ..." (``sys.unraisablehook``)."""
    seen: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(f"{info.object!r}: {info.exc_value!r}"))
    return seen


@pytest.mark.parametrize("fmt", ["parquet", "avro", "json", "bytearray"])
@pytest.mark.parametrize("envelope", ["false", "true"])
def test_a_discarded_open_chunk_leaves_no_writer_for_the_garbage_collector(tmp_path, unraisable, fmt, envelope):
    config = SINK.parse(
        {
            "name": "n",
            "topics": "t",
            "flush.size": "100",
            "s3.bucket.name": "b",
            "format.class": fmt,
            "store.envelope": envelope if fmt != "bytearray" else "false",
            "store.kafka.keys": "true",
            "store.kafka.headers": "true",
            "store.url": tmp_path.as_uri(),
        }
    )
    store = StoreSpec.from_config(config, environ={}).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, "t", 0)
    writer.write(
        make_batch(
            [
                {"topic": "t", "offset": o, "key": b"k", "value": f"v{o}".encode(), "headers": [("h", b"x")]}
                for o in range(5)
            ]
        )
    )
    result = writer.finish(5, flush_open=False)  # a follow cycle's end: the open chunk is discarded
    assert result.open_chunk is not None and result.open_chunk.records == 5 and not result.chunks
    del writer
    gc.collect()
    assert unraisable == []
    assert [i.key for i in store.list("topics/t/")] == []
