"""block_gzip through the backup writer and the readers: index sidecars in the chunk, ranged reads of blocks only.

The backup runs PartitionBackup on a local store (no Kafka, no Spark); a recording store shows every byte range
the readers ask for.
"""

from __future__ import annotations

import gzip
import json

import pytest

from kafka_s3.cli.main import main
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import FormatError, NotInBackup
from kafka_s3.core.manifest import Manifest
from kafka_s3.core.records import make_batch
from kafka_s3.io.stores.local import LocalStore
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins
from kafka_s3.pipelines.read.discovery import discover
from kafka_s3.pipelines.read.lookup import read_records
from kafka_s3.pipelines.read.options import Bounds
from kafka_s3.pipelines.read.plugins import ReadPlugins
from kafka_s3.pipelines.read.reader import read_partition

TOPIC = "orders"
PREFIX = f"topics/{TOPIC}/partition=0/"
FIRST = PREFIX + f"{TOPIC}+0+0000000000"
INDEX = ".index"  # the block index sidecar (".index.json" before issue 15 item 5)


class RecordingStore:
    """A store that notes every read: ``("get", key, start, end)`` and ``("open", key)``."""

    def __init__(self, inner):
        self.inner = inner
        self.calls: list[tuple] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def get(self, key, start=None, end=None):
        self.calls.append(("get", key, start, end))
        return self.inner.get(key, start, end)

    def open(self, key):
        self.calls.append(("open", key))
        return self.inner.open(key)

    def reads_of(self, key):
        return [c for c in self.calls if c[1] == key]


def raw_config(root, **settings) -> dict[str, str]:
    raw = {
        "name": "t",
        "topics": TOPIC,
        "flush.size": "50",
        "s3.bucket.name": "b",
        "format.class": "block_gzip",
        "compressed_block_size": "40",
        "store.url": f"file://{root}",
    }
    raw.update({k.replace("__", "."): v for k, v in settings.items()})
    return raw


def value(offset: int) -> bytes:
    return b"value-%03d" % offset  # 9 bytes + "\n": 4 records per 40-byte block


def back_up(root, offsets, **settings):
    """Back the records at ``offsets`` up (``--once``); returns (store, finish result)."""
    config = SINK.parse(raw_config(root, **settings))
    store = StoreSpec.from_config(config).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, TOPIC, 0)
    batch = make_batch([{"offset": o, "topic": TOPIC, "key": b"k%d" % o, "value": value(o)} for o in offsets])
    writer.write(batch)
    return store, writer.finish(offsets[-1] + 1, flush_open=True)


def reader(root, store, **settings):
    plugins = ReadPlugins.from_config(SOURCE.parse(raw_config(root, **settings)))
    recording = RecordingStore(store)
    return recording, plugins, discover(recording, plugins)[(TOPIC, 0)]


def index_of(store, data_key: str) -> list[dict]:
    return json.loads(store.get(data_key[: -len(".gz")] + INDEX))["chunks"]


def test_each_object_has_an_index_sidecar_listed_in_its_chunk_manifest(tmp_path):
    store, result = back_up(tmp_path, list(range(120)))
    keys = sorted(info.key for info in store.list(PREFIX))
    assert keys == [PREFIX + f"{TOPIC}+0+{start:010d}{ext}" for start in (0, 50, 100) for ext in (".gz", INDEX)]
    manifest = Manifest.from_bytes(store.get(f"topics/_kafka-s3/gz/{TOPIC}/0/{0:020d}.chunk"))
    assert [(f.kind, f.key) for f in manifest.files] == [("data", FIRST + ".gz"), ("index", FIRST + INDEX)]
    index_entry = manifest.files[1]
    assert index_entry.bytes == store.head(FIRST + INDEX).size
    assert (index_entry.records, index_entry.first_offset, index_entry.last_offset) == (50, 0, 49)
    assert [f.kind for f in result.files] == ["data", "index"] * 3


def test_the_index_describes_the_object(tmp_path):
    store, _ = back_up(tmp_path, list(range(50)))
    data = store.get(FIRST + ".gz")
    chunks = index_of(store, FIRST + ".gz")
    assert len(chunks) == 13  # 12 blocks of 4 records and one of 2
    assert gzip.decompress(data) == b"".join(value(o) + b"\n" for o in range(50))
    for chunk in chunks:
        block = gzip.decompress(data[chunk["byte_offset"] : chunk["byte_offset"] + chunk["byte_length"]])
        first = chunk["first_record_offset"]
        assert block == b"".join(value(o) + b"\n" for o in range(first, first + chunk["num_records"]))
        assert chunk["byte_length_uncompressed"] == len(block)


def test_unbounded_read_returns_every_record_with_its_offset(tmp_path):
    store, _ = back_up(tmp_path, list(range(120)), store__kafka__keys="true", keys__format__class="bytearray")
    recording, plugins, part = reader(tmp_path, store, store__kafka__keys="true", keys__format__class="bytearray")
    rows = [r for b in read_partition(recording, plugins, part) for r in b.to_pylist()]
    assert [(r["offset"], r["value"], r["key"]) for r in rows] == [(o, value(o), b"k%d" % o) for o in range(120)]


def test_bounded_read_fetches_only_the_blocks_holding_the_bounds(tmp_path):
    store, _ = back_up(tmp_path, list(range(120)))
    recording, plugins, part = reader(tmp_path, store)
    rows = [r for b in read_partition(recording, plugins, part, Bounds(59, 61)) for r in b.to_pylist()]
    assert [(r["offset"], r["value"]) for r in rows] == [(59, value(59)), (60, value(60))]
    data_key = PREFIX + f"{TOPIC}+0+0000000050.gz"
    chunks = index_of(store, data_key)
    block = next(c for c in chunks if c["first_record_offset"] == 58)  # blocks of 4: 50, 54, 58 (58..61), 62...
    assert block["num_records"] == 4 and len(chunks) == 13
    assert recording.reads_of(data_key) == [
        ("get", data_key, block["byte_offset"], block["byte_offset"] + block["byte_length"] - 1)
    ]
    # Nothing at all from the objects before or after.
    assert {c[1] for c in recording.calls} == {data_key, data_key[: -len(".gz")] + INDEX}


def test_restore_style_bounds_spanning_blocks_fetch_their_run_only(tmp_path):
    store, _ = back_up(tmp_path, list(range(50)))
    recording, plugins, part = reader(tmp_path, store)
    rows = [r["offset"] for b in read_partition(recording, plugins, part, Bounds(9, 18)) for r in b.to_pylist()]
    assert rows == list(range(9, 18))
    chunks = index_of(store, FIRST + ".gz")
    needed = [c for c in chunks if c["first_record_offset"] + c["num_records"] > 9 and c["first_record_offset"] < 18]
    assert [c["first_record_offset"] for c in needed] == [8, 12, 16]
    start, end = needed[0]["byte_offset"], needed[-1]["byte_offset"] + needed[-1]["byte_length"] - 1
    assert recording.reads_of(FIRST + ".gz") == [("get", FIRST + ".gz", start, end)]


def test_offsets_come_from_the_index_when_the_partition_has_gaps(tmp_path):
    offsets = [o for o in range(0, 60) if o % 10 not in (3, 4)]  # e.g. transaction markers or compaction
    store, _ = back_up(tmp_path, offsets, flush__size="100")
    recording, plugins, part = reader(tmp_path, store)
    chunks = index_of(store, FIRST + ".gz")
    # Every block's first record is numbered by its Kafka offset, both in whole and in bounded reads.
    whole = {r["offset"]: r["value"] for b in read_partition(recording, plugins, part) for r in b.to_pylist()}
    assert all(whole[c["first_record_offset"]] == value(c["first_record_offset"]) for c in chunks)
    target = next(c for c in chunks if c["first_record_offset"] > 20)
    bounded = [
        r
        for b in read_partition(recording, plugins, part, Bounds(target["first_record_offset"]))
        for r in b.to_pylist()
    ]
    assert bounded[0]["value"] == value(target["first_record_offset"])


def test_without_an_index_the_whole_object_is_read(tmp_path):
    store, _ = back_up(tmp_path, list(range(50)))
    store.delete([FIRST + INDEX])
    recording, plugins, part = reader(tmp_path, store)
    rows = [r["offset"] for b in read_partition(recording, plugins, part, Bounds(30, 32)) for r in b.to_pylist()]
    assert rows == [30, 31]
    assert recording.calls == [("open", FIRST + ".gz")]


def test_an_index_that_does_not_match_its_object_is_a_format_error(tmp_path):
    store, _ = back_up(tmp_path, list(range(50)))
    chunks = index_of(store, FIRST + ".gz")
    chunks[-1]["byte_length"] += 5
    store.delete([FIRST + INDEX])
    store.put(FIRST + INDEX, json.dumps({"chunks": chunks}).encode())
    recording, plugins, part = reader(tmp_path, store)
    with pytest.raises(FormatError, match="the index covers") as caught:
        list(read_partition(recording, plugins, part, Bounds(30, 32)))
    assert caught.value.object_key == FIRST + INDEX


def test_a_block_with_other_records_than_its_index_says_is_a_format_error(tmp_path):
    store, _ = back_up(tmp_path, list(range(50)))
    chunks = index_of(store, FIRST + ".gz")
    assert chunks[-1]["num_records"] == 2  # offsets 48 and 49
    chunks[-1]["num_records"] += 1
    store.delete([FIRST + INDEX])
    store.put(FIRST + INDEX, json.dumps({"chunks": chunks}).encode())
    recording, plugins, part = reader(tmp_path, store)
    with pytest.raises(FormatError, match="holds 2 records but its index entry says 3") as caught:
        list(read_partition(recording, plugins, part, Bounds(48, 49)))
    assert caught.value.position == f"byte {chunks[-1]['byte_offset']}"


def test_a_rerun_recreates_identical_objects_and_index(tmp_path):
    store, _ = back_up(tmp_path, list(range(50)))
    before = {k: store.get(k) for k in (FIRST + ".gz", FIRST + INDEX)}
    for key in before:
        store.delete([key])  # a crash after the manifest, before the files
    config = SINK.parse(raw_config(tmp_path))
    writer = PartitionBackup(BackupPlugins.from_config(config), store, TOPIC, 0)
    writer.write(make_batch([{"offset": o, "topic": TOPIC, "key": b"k%d" % o, "value": value(o)} for o in range(50)]))
    writer.finish(50, flush_open=True)
    assert {k: store.get(k) for k in before} == before


def test_read_records_fetches_the_index_and_the_one_block_holding_the_offset(tmp_path):
    store, _ = back_up(tmp_path, list(range(120)))
    recording = RecordingStore(store)
    config = SOURCE.parse(raw_config(tmp_path))
    records = read_records(config, 0, 73, 3, store=recording)
    assert [(r["offset"], r["value"]) for r in records] == [(o, value(o)) for o in (73, 74, 75)]
    data_key = PREFIX + f"{TOPIC}+0+0000000050.gz"
    expected_blocks = [
        c
        for c in index_of(store, data_key)
        if c["first_record_offset"] + c["num_records"] > 73 and c["first_record_offset"] < 76
    ]
    start = expected_blocks[0]["byte_offset"]
    end = expected_blocks[-1]["byte_offset"] + expected_blocks[-1]["byte_length"] - 1
    assert [c["first_record_offset"] for c in expected_blocks] == [70, 74]  # 73 | 74, 75: two adjacent blocks
    assert recording.reads_of(data_key) == [("get", data_key, start, end)]
    # Besides the chunk manifests (the integrity check every read runs first), only the index and that one range.
    fetched = {c[1] for c in recording.calls}
    assert {k for k in fetched if not k.endswith(".chunk")} == {data_key, data_key[: -len(".gz")] + INDEX}
    assert all("/_kafka-s3/" in k for k in fetched if k.endswith(".chunk"))


def test_read_records_with_gaps_reads_on_until_count_and_fails_past_the_end(tmp_path):
    offsets = [o for o in range(0, 40) if o not in (11, 12, 13)]
    store, _ = back_up(tmp_path, offsets, flush__size="100")
    config = SOURCE.parse(raw_config(tmp_path))
    got = read_records(config, 0, 8, 4, store=store)
    assert len(got) == 4 and [r["value"] for r in got][:3] == [value(8), value(9), value(10)]
    with pytest.raises(NotInBackup):
        read_records(config, 0, 500, 1, store=store)
    with pytest.raises(NotInBackup):
        read_records(config, 1, 0, 1, store=store)


def test_cli_read_prints_values_fetching_one_block(tmp_path, capsys, monkeypatch):
    store, _ = back_up(tmp_path, list(range(120)))
    path = tmp_path / "backup.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in raw_config(tmp_path).items()))
    ranges, opened, inside_get = [], [], []
    original_get, original_open = LocalStore.get, LocalStore.open

    def recording_get(self, key, start=None, end=None):
        ranges.append((key, start, end))
        inside_get.append(key)
        try:
            return original_get(self, key, start, end)
        finally:
            inside_get.pop()

    def recording_open(self, key):
        if not inside_get:  # LocalStore.get reads through open
            opened.append(key)
        return original_open(self, key)

    monkeypatch.setattr(LocalStore, "get", recording_get)
    monkeypatch.setattr(LocalStore, "open", recording_open)
    data_key = PREFIX + f"{TOPIC}+0+0000000100.gz"
    chunks = index_of(store, data_key)
    ranges.clear()
    assert main(["read", "--config", str(path), "--offset", "0:100", "--count", "2", "--raw"]) == 0
    assert capsys.readouterr().out == "value-100\nvalue-101\n"
    assert opened == []
    assert len(chunks) == 5 and chunks[0]["num_records"] == 4  # offsets 100..119: the first of five blocks
    # Besides the chunk manifests (the integrity check every read runs first), only the index and the first block.
    assert [r for r in ranges if not r[0].endswith(".chunk")] == [
        (data_key[: -len(".gz")] + INDEX, None, None),
        (data_key, 0, chunks[0]["byte_length"] - 1),
    ]


def test_cli_read_base64_and_errors(tmp_path, capsys):
    back_up(tmp_path, list(range(10)))
    path = tmp_path / "backup.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in raw_config(tmp_path).items()))
    assert main(["read", "--config", str(path), "--offset", "0:3", "--base64", "--raw"]) == 0
    assert capsys.readouterr().out == "dmFsdWUtMDAz\n"  # base64 of b"value-003"
    assert main(["read", "--config", str(path), "--offset", "zero"]) == 2
    assert "PARTITION:OFFSET" in capsys.readouterr().err
    assert main(["read", "--config", str(path), "--offset", "0:99"]) == 5
    assert "no backed-up record" in capsys.readouterr().err
