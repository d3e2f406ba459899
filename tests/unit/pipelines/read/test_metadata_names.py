"""Issue 15 item 5: kafka-s3's own metadata objects under topics.dir never end in a data format's extension.

A ``**/*.json`` (or ``*.gz``) glob over a bucket, in DuckDB or in Confluent's source connector, must see data only.
Our metadata: the partition-count records (``_kafka-s3/<ext>/<topic>/partition-count/<n>``) and block_gzip's block
index. The index is not DeviantArt's exact object (DeviantArt's ``BlockGZIPFileWriter`` writes its keys in json-simple
HashMap order ``byte_length_uncompressed, num_records, byte_length, byte_offset, first_record_offset`` beside
``<topic>-<p %05d>-<offset %012d>.gz``, not beside Confluent names), so in our layout it is ours and is renamed.
Objects written by earlier versions (``<n>.json``, ``<name>.index.json``) are still read.
"""

from __future__ import annotations

import pytest

from kafka_s3.core.manifest import ManifestStore
from kafka_s3.pipelines.read.options import Bounds
from kafka_s3.pipelines.read.reader import read_partition
from tests.unit.pipelines.read.test_blocks import FIRST, PREFIX, TOPIC, back_up, reader, value

DATA_EXTENSIONS = (".json", ".avro", ".parquet", ".bin", ".gz", ".csv")


def metadata_keys(store, data_extension: str) -> list[str]:
    return [info.key for info in store.list("topics/") if not info.key.endswith(data_extension)]


def test_no_metadata_object_ends_in_a_data_extension(tmp_path):
    store, _ = back_up(tmp_path, list(range(120)))
    ManifestStore(store, "topics/_kafka-s3/gz").note_partition_count(TOPIC, 1)
    metadata = metadata_keys(store, ".gz")
    assert metadata, "the backup wrote manifests, marks, indexes and a partition count"
    assert [k for k in metadata if k.endswith(DATA_EXTENSIONS)] == []
    # a *.gz glob sees the data objects and nothing else
    assert sorted(i.key for i in store.list("topics/") if i.key.endswith(".gz")) == [
        PREFIX + f"{TOPIC}+0+{start:010d}.gz" for start in (0, 50, 100)
    ]


def test_partition_count_records_old_and_new_names_are_read(tmp_path):
    store, _ = back_up(tmp_path, [0])
    manifests = ManifestStore(store, "topics/_kafka-s3/gz")
    store.put(f"topics/_kafka-s3/gz/{TOPIC}/partition-count/3.json", b'{"topic": "orders", "partitions": 3}')
    assert manifests.partition_count(TOPIC) == 3  # an earlier version's record
    manifests.note_partition_count(TOPIC, 5)
    assert manifests.partition_count(TOPIC) == 5
    assert not any(i.key.endswith("5.json") for i in store.list(f"topics/_kafka-s3/gz/{TOPIC}/partition-count/"))


@pytest.mark.parametrize("bounds", [Bounds(), Bounds(59, 61)])
def test_block_index_named_index_json_by_earlier_versions_is_still_used(tmp_path, bounds):
    store, _ = back_up(tmp_path, list(range(120)))
    for start in (0, 50, 100):
        base = PREFIX + f"{TOPIC}+0+{start:010d}"
        new = next(i.key for i in store.list(base) if not i.key.endswith(".gz"))
        store.put(base + ".index.json", store.get(new))
        store.delete([new])
    recording, plugins, part = reader(tmp_path, store)
    rows = [r for b in read_partition(recording, plugins, part, bounds) for r in b.to_pylist()]
    expected = range(59, 61) if bounds.from_offset else range(120)
    assert [(r["offset"], r["value"]) for r in rows] == [(o, value(o)) for o in expected]
    if bounds.from_offset:  # the old index was read, and only one block of the data
        assert any(c[1] == FIRST.replace("0000000000", "0000000050") + ".index.json" for c in recording.calls)
