"""Issue 14, item 5: ByteArray records that cannot be read back one by one are counted per file in the chunk
manifests by the backup, and refused by the restore's plan, naming each object and its count."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import PlanError
from kafka_s3.core.manifest import Manifest
from kafka_s3.core.records import make_batch
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins
from kafka_s3.pipelines.read.ambiguity import ambiguous_objects, refuse_ambiguous
from kafka_s3.pipelines.read.discovery import discover
from kafka_s3.pipelines.read.plugins import ReadPlugins

TOPIC = "orders"


def raw_config(root, **settings) -> dict[str, str]:
    raw = {
        "name": "t",
        "topics": TOPIC,
        "flush.size": "3",
        "s3.bucket.name": "b",
        "store.url": f"file://{root}",
        "format.class": "bytearray",
    }
    raw.update({k.replace("__", "."): v for k, v in settings.items()})
    return raw


class CountingStore:
    def __init__(self, inner):
        self.inner = inner
        self.gets: list[str] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def get(self, key, start=None, end=None):
        self.gets.append(key)
        return self.inner.get(key, start, end)


def back_up(root, values, **settings):
    config = SINK.parse(raw_config(root, **settings))
    store = StoreSpec.from_config(config).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, TOPIC, 0)
    writer.write(make_batch([{"offset": o, "topic": TOPIC, "value": v} for o, v in enumerate(values)]))
    return store, writer.finish(len(values), flush_open=True)


def test_backup_counts_ambiguous_records_per_file_and_restore_refuses_naming_each(tmp_path):
    # Objects of 3 records: [a, "b\nc", "x\ny"] holds 2, [d, e, f] none, [g, "h\n"] 1. (A tombstone is no longer
    # one: behavior.on.null.values=write keeps it as a keys sidecar in tombstone/, as Confluent does.)
    store, result = back_up(tmp_path, [b"a", b"b\nc", b"x\ny", b"d", b"e", b"f", b"g", b"h\n"])
    assert [(f.first_offset, f.ambiguous) for f in result.files] == [(0, 2), (3, 0), (6, 1)]
    first = f"topics/{TOPIC}/partition=0/{TOPIC}+0+0000000000.bin"
    last = f"topics/{TOPIC}/partition=0/{TOPIC}+0+0000000006.bin"
    chunk = store.get(f"topics/_kafka-s3/bin/{TOPIC}/0/{0:020d}.chunk")
    assert Manifest.from_bytes(chunk).files[0].ambiguous == 2

    plugins = ReadPlugins.from_config(SOURCE.parse(raw_config(tmp_path)))
    counting = CountingStore(store)
    partitions = discover(counting, plugins)
    manifests = list(plugins.manifests(counting).load_topic(TOPIC, plugins.manifest_cache).values())
    with pytest.raises(PlanError) as failure:
        refuse_ambiguous(partitions, manifests)
    message = str(failure.value)
    assert f"{first} holds 2 records" in message and f"{last} holds 1 record " in message
    assert "format.bytearray.separator" in message and "nothing was produced" in message
    assert len(counting.gets) == 3  # one manifest per chunk
    # Manifests never change: a following restore's next plan reads none again.
    counting.gets.clear()
    again = list(plugins.manifests(counting).load_topic(TOPIC, plugins.manifest_cache).values())
    assert ambiguous_objects(partitions, again) == [(first, 2), (last, 1)]
    assert counting.gets == []


def test_clean_bytearray_backups_pass(tmp_path):
    store, _ = back_up(tmp_path, [b"a", b"b", b""])
    plugins = ReadPlugins.from_config(SOURCE.parse(raw_config(tmp_path)))
    manifests = list(plugins.manifests(store).load_topic(TOPIC).values())
    refuse_ambiguous(discover(store, plugins), manifests)  # nothing ambiguous: no error
