"""PartitionBackup on a local store: chunk cuts, manifests, and replay after a crash (no Spark, no network)."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import SourceChanged
from kafka_s3.core.records import make_batch
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.commit import ChunkConflict
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins


@pytest.fixture
def setup(tmp_path):
    config = SINK.parse(
        {
            "name": "n",
            "topics": "t",
            "flush.size": "3",
            "s3.bucket.name": "b",
            "format.class": "bytearray",
            "store.url": tmp_path.as_uri(),
        }
    )
    store = StoreSpec.from_config(config, environ={}).open()
    store.create_bucket()
    return BackupPlugins.from_config(config), store


def _records(start, stop):
    return make_batch([{"topic": "t", "offset": o, "value": f"v{o}".encode()} for o in range(start, stop)])


def _objects(store):
    return {i.key: store.get(i.key) for i in store.list("") if "/_kafka-s3/" not in i.key}


def test_chunks_and_manifests(setup):
    plugins, store = setup
    writer = PartitionBackup(plugins, store, "t", 0)
    writer.write(_records(0, 8))
    result = writer.finish(8, flush_open=False)
    assert [(c.start, c.end) for c in result.chunks] == [(0, 2), (3, 5)]
    assert result.committed_offset == 6 and result.open_chunk.start == 6
    assert _objects(store) == {
        "topics/t/partition=0/t+0+0000000000.bin": b"v0\nv1\nv2\n",
        "topics/t/partition=0/t+0+0000000003.bin": b"v3\nv4\nv5\n",
    }


def test_replay_of_several_chunks_in_one_batch_reuses_them(setup, caplog):
    plugins, store = setup
    first = PartitionBackup(plugins, store, "t", 0)
    first.write(_records(0, 9))
    first.finish(9, flush_open=False)
    before = _objects(store)
    # A re-run from offset 0 (offsets were never committed): every chunk is already in the bucket.
    with caplog.at_level(logging.WARNING):
        again = PartitionBackup(plugins, store, "t", 0)
        again.write(_records(0, 11))
        result = again.finish(11, flush_open=True)
    assert "re-created chunk" not in caplog.text
    assert [(c.start, c.end) for c in result.chunks] == [(0, 2), (3, 5), (6, 8), (9, 10)]
    assert result.replayed_files == 3
    after = _objects(store)
    assert {k: after[k] for k in before} == before and len(after) == 4


def test_a_different_cut_defers_to_the_bucket(setup):
    plugins, store = setup
    partial = PartitionBackup(plugins, store, "t", 0, recover=False)
    partial.write(_records(0, 5))
    partial.finish(5, flush_open=True)  # --once: chunk 3..4 committed short
    later = PartitionBackup(plugins, store, "t", 0, recover=False)
    with pytest.raises(ChunkConflict) as info:
        later.write(_records(0, 9))
    assert (info.value.existing.start, info.value.existing.end) == (3, 4)


@pytest.mark.issue(15, item=9)
def test_a_replayed_deviantart_chunk_keeps_the_date_its_manifest_recorded(tmp_path, monkeypatch):
    """DeviantArt's date directory is the upload's (DA S3Writer.getChunkFileKey): a chunk whose manifest exists but
    whose objects never completed is finished on a later day under the names the manifest recorded."""
    from kafka_s3.core.peers.deviantart import layout as deviantart

    config = SINK.parse(
        {
            "name": "n",
            "topics": "t",
            "flush.size": "3",
            "connector.class": "com.deviantart.kafka_connect_s3.S3SinkConnector",
            "s3.bucket": "b",
            "s3.prefix": "da",
            "store.url": tmp_path.as_uri(),
        }
    )
    store = StoreSpec.from_config(config, environ={}).open()
    store.create_bucket()
    plugins = BackupPlugins.from_config(config)
    monkeypatch.setattr(deviantart, "upload_date", lambda: "2017-02-01")
    first = PartitionBackup(plugins, store, "t", 0)
    first.write(_records(0, 3))
    first.finish(3, flush_open=False)
    first = PartitionBackup(plugins, store, "t", 0)  # the cursor moves with every chunk
    first.write(_records(3, 6))
    first.finish(6, flush_open=False)
    assert store.get("da/last_chunk_index.t-00000.txt") == b"da/2017-02-01/t-00000-000000000003.index.json"
    store.delete(["da/2017-02-01/t-00000-000000000003.gz", "da/2017-02-01/t-00000-000000000003.index.json"])
    written = _objects(store)
    assert sorted(written) == [
        "da/2017-02-01/t-00000-000000000000.gz",
        "da/2017-02-01/t-00000-000000000000.index.json",
        "da/last_chunk_index.t-00000.txt",
    ]

    monkeypatch.setattr(deviantart, "upload_date", lambda: "2017-02-02")
    again = PartitionBackup(plugins, store, "t", 0)
    again.write(_records(3, 6))
    again.finish(6, flush_open=False)

    assert sorted(_objects(store)) == sorted(
        [*written, "da/2017-02-01/t-00000-000000000003.gz", "da/2017-02-01/t-00000-000000000003.index.json"]
    )
    assert not [key for key in _objects(store) if "2017-02-02" in key]


def test_a_partial_object_of_an_interrupted_run_is_replaced_not_taken_as_stored(setup, caplog):
    """A replayed chunk's object counts as stored only when it has the size the chunk's manifest recorded: a stub
    (a PUT cut short when a run was killed, seen once as a 0-byte object after a second Ctrl-C) is written again —
    never a manifest vouching for a stub."""
    plugins, store = setup
    first = PartitionBackup(plugins, store, "t", 0)
    first.write(_records(0, 9))
    first.finish(9, flush_open=False)
    whole = _objects(store)
    stub = "topics/t/partition=0/t+0+0000000003.bin"
    store.delete([stub])
    store.put(stub, b"")

    with caplog.at_level(logging.WARNING):
        again = PartitionBackup(plugins, store, "t", 0)
        again.write(_records(0, 9))
        result = again.finish(9, flush_open=False)
    assert _objects(store) == whole
    assert result.replayed_files == 2
    assert "t+0+0000000003.bin: held 0 bytes where the chunk's manifest recorded 9" in caplog.text


def test_an_object_of_another_size_under_a_new_chunks_key_fails_the_chunk_and_is_left_alone(setup):
    """Without a manifest to replay (forgotten manifests), an object already under a key is taken as this chunk's
    only when its size is; another is not provably this backup's: the chunk fails naming it, the object stays."""
    plugins, store = setup
    stub = "topics/t/partition=0/t+0+0000000003.bin"
    store.put(stub, b"")
    writer = PartitionBackup(plugins, store, "t", 0)
    writer.write(_records(0, 9))
    with pytest.raises(SourceChanged, match=r"t\+0\+0000000003\.bin: holds 0 bytes where this chunk's object has 9"):
        writer.finish(9, flush_open=False)
    assert store.get(stub) == b""


def test_a_replayed_chunks_object_larger_than_its_manifest_says_is_refused_not_replaced(setup):
    """A write cut short can only be shorter than the chunk's object: a larger one is not this backup's."""
    plugins, store = setup
    first = PartitionBackup(plugins, store, "t", 0)
    first.write(_records(0, 9))
    first.finish(9, flush_open=False)
    key = "topics/t/partition=0/t+0+0000000003.bin"
    store.delete([key])
    store.put(key, b"x" * 100)
    again = PartitionBackup(plugins, store, "t", 0)
    with pytest.raises(SourceChanged, match=r"t\+0\+0000000003\.bin: holds 100 bytes where the chunk's manifest"):
        again.write(_records(0, 9))
    assert store.get(key) == b"x" * 100


def test_a_replayed_chunk_whose_first_record_differs_is_another_log_refused_before_anything_is_written(setup):
    plugins, store = setup
    first = PartitionBackup(plugins, store, "t", 0)
    first.write(_records(0, 9))
    first.finish(9, flush_open=False)
    before = {key: store.get(key) for key in _objects(store)}
    records = _records(0, 9)
    column = records.schema.get_field_index("value")
    other = records.set_column(column, "value", pa.array([b"other"] * 9, pa.binary()))
    again = PartitionBackup(plugins, store, "t", 0)
    with pytest.raises(SourceChanged, match=r"t\[0\]: the record at offset 0 is not the one backed up"):
        again.write(other)
    assert {key: store.get(key) for key in _objects(store)} == before


def test_each_manifest_records_the_source_topic_id_and_its_first_and_last_records(setup):
    from kafka_s3.core.manifest import Manifest
    from kafka_s3.core.records import record_checksum

    plugins, store = setup
    writer = PartitionBackup(plugins, store, "t", 0, topic_id="id-1")
    records = _records(0, 3)
    writer.write(records)
    writer.finish(3, flush_open=False)
    [key] = [i.key for i in store.list("") if i.key.endswith(".chunk")]
    manifest = Manifest.from_bytes(store.get(key))
    assert (manifest.source_topic_id, manifest.first_record, manifest.last_record) == (
        "id-1",
        record_checksum(records, 0),
        record_checksum(records, 2),
    )


def _manifest_bytes(store):
    return {i.key: store.get(i.key) for i in store.list("") if i.key.endswith(".chunk")}


@pytest.mark.issue(14)
def test_each_manifest_follows_the_chunk_before_it_across_runs_and_replays(setup):
    from kafka_s3.core.manifest import Manifest

    plugins, store = setup
    first = PartitionBackup(plugins, store, "t", 0)
    first.write(_records(0, 6))
    first.finish(6, flush_open=False)
    # A later run (no predecessor given: looked up in the bucket), after a gap in the offsets (compaction).
    later = PartitionBackup(plugins, store, "t", 0)
    later.write(_records(9, 12))
    later.finish(12, flush_open=False)
    # A run told its predecessor by the driver.
    told = PartitionBackup(plugins, store, "t", 0, previous=(11,))
    told.write(_records(12, 15))
    told.finish(15, flush_open=False)
    manifests = [Manifest.from_bytes(b) for _, b in sorted(_manifest_bytes(store).items())]
    assert [(m.start, m.end, m.follows) for m in manifests] == [(0, 2, None), (3, 5, 2), (9, 11, 5), (12, 14, 11)]
    assert b"follows" not in sorted(_manifest_bytes(store).items())[0][1]  # the first chunk: no link, no field
    before = _manifest_bytes(store)
    # A replay of everything after a crash (offsets never committed) writes nothing new and the same links.
    again = PartitionBackup(plugins, store, "t", 0)
    again.write(_records(0, 6))
    again.write(_records(9, 15))
    result = again.finish(15, flush_open=False)
    assert [(c.start, c.follows) for c in result.chunks] == [(0, None), (3, 2), (9, 5), (12, 11)]
    assert _manifest_bytes(store) == before


@pytest.mark.issue(26, item=8)
def test_a_replayed_chunk_the_log_cannot_complete_yet_is_left_open_not_committed_short(setup, caplog):
    """A re-run replays a chunk whose manifest exists while the log's readable end (an open transaction holds the
    last stable offset) lies inside it: ``--once`` must not commit the replay short and move on from where it
    stopped reading — the next chunk would then start inside the stored one (found by a chaos schedule: chunks 0..69
    and 64..143, restores refused the overlap). The chunk stays open; the next run replays it whole."""
    plugins, store = setup
    first = PartitionBackup(plugins, store, "t", 0)
    first.write(_records(0, 3))  # chunk 0..2 committed
    first.finish(3, flush_open=False)
    store.delete(["topics/t/partition=0/t+0+0000000000.bin"])  # its upload never completed (a killed run)

    with caplog.at_level(logging.WARNING):
        short = PartitionBackup(plugins, store, "t", 0)
        short.write(_records(0, 2))  # the log's stable end is 2 for now
        result = short.finish(2, flush_open=True)
    assert "re-created chunk" not in caplog.text
    assert result.chunks == () and result.committed_offset == 0 and result.open_chunk.start == 0

    later = PartitionBackup(plugins, store, "t", 0)
    later.write(_records(result.committed_offset, 6))
    done = later.finish(6, flush_open=True)
    assert [(c.start, c.end) for c in done.chunks] == [(0, 2), (3, 5)]
    assert _objects(store)["topics/t/partition=0/t+0+0000000000.bin"] == b"v0\nv1\nv2\n"
