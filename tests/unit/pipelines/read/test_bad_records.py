"""Issue 14, item 4: ``behavior.on.error=log|ignore`` skips only the bad record — one JSON line, one Parquet row
group, one Avro block when its records cannot be told apart — never the rest of the object; ``fail`` stops before
the bad record, after producing every record before it.

Objects are written by the backup's own PartitionBackup on a local store (no Kafka, no Spark), damaged in place, and
read back with the restore's reader.
"""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import FormatError
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.records import make_batch
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins
from kafka_s3.pipelines.read.discovery import Problem, discover
from kafka_s3.pipelines.read.plugins import ReadPlugins
from kafka_s3.pipelines.read.reader import read_partition

TOPIC = "orders"
KEY = f"topics/{TOPIC}/partition=0/{TOPIC}+0+0000000000"


def raw_config(root, **settings) -> dict[str, str]:
    raw = {"name": "t", "topics": TOPIC, "flush.size": "1000", "s3.bucket.name": "b", "store.url": f"file://{root}"}
    raw.update({k.replace("__", "."): v for k, v in settings.items()})
    return raw


def value(offset: int, size: int) -> bytes:
    return (b"value-%03d-" % offset).ljust(size, b"x")


def back_up(root, count: int, size: int = 20, **settings):
    """One object of ``count`` records (offsets 0..count-1), keys ``k<offset>`` in a ByteArray keys sidecar."""
    config = SINK.parse(raw_config(root, store__kafka__keys="true", keys__format__class="bytearray", **settings))
    store = StoreSpec.from_config(config).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, TOPIC, 0)
    rows = [{"offset": o, "topic": TOPIC, "key": b"k%d" % o, "value": value(o, size)} for o in range(count)]
    writer.write(make_batch(rows))
    writer.finish(count, flush_open=True)
    return store


def read(root, store, on_error: str, **settings):
    """(offset, key, value) of every record read, the problems noted, and the error that stopped the read."""
    raw = raw_config(root, store__kafka__keys="true", keys__format__class="bytearray", **settings)
    plugins = ReadPlugins.from_config(SOURCE.parse(raw))
    part = discover(store, plugins)[(TOPIC, 0)]
    problems: list[Problem] = []
    rows = []
    error = None
    try:
        for batch in read_partition(store, plugins, part, on_error=on_error, problems=problems):
            rows += [(r["offset"], r["key"], r["value"]) for r in batch.to_pylist()]
    except FormatError as exc:
        error = exc
    return rows, problems, error


def expected(offsets, size: int = 20):
    return [(o, b"k%d" % o, value(o, size)) for o in offsets]


def damage(store, key: str, start: int, length: int) -> None:
    data = bytearray(store.get(key))
    data[start : start + length] = b"\xff" * length
    _replace(store, key, bytes(data))


def _replace(store, key: str, data: bytes) -> None:
    store.delete([key])
    store.put(key, data)


def replace_line(store, key: str, line: int, text: bytes) -> None:
    lines = store.get(key).split(b"\n")
    lines[line - 1] = text
    _replace(store, key, b"\n".join(lines))


JSON = {"format__class": "json"}


# ---------------------------------------------------------------------------------------------------- JSON
@pytest.mark.parametrize("on_error", ["ignore", "log"])
def test_bad_json_line_skips_only_that_record(tmp_path, on_error):
    store = back_up(tmp_path, 9, **JSON)
    replace_line(store, KEY + ".json", 5, b"not json at all")
    rows, problems, error = read(tmp_path, store, on_error, **JSON)
    assert error is None
    # Every other record, with its own offset and its own key: the sidecar stays aligned past the skipped line.
    assert rows == expected([0, 1, 2, 3, 5, 6, 7, 8])
    assert [(p.key, p.position, p.records, p.first_offset) for p in problems] == [(KEY + ".json", "line 5", 1, 4)]
    assert "invalid JSON line" in problems[0].message


def test_json_line_of_the_wrong_type_skips_only_that_record(tmp_path):
    store = back_up(tmp_path, 9, **JSON)
    replace_line(store, KEY + ".json", 2, b"12345")  # valid JSON, but not the base64 string a value line is
    rows, problems, error = read(tmp_path, store, "ignore", **JSON)
    assert error is None and rows == expected([0, 2, 3, 4, 5, 6, 7, 8])
    assert [(p.position, p.records, p.first_offset) for p in problems] == [("line 2", 1, 1)]


def test_fail_stops_before_the_bad_json_line_after_every_record_before_it(tmp_path):
    store = back_up(tmp_path, 9, **JSON)
    replace_line(store, KEY + ".json", 5, b"not json at all")
    rows, problems, error = read(tmp_path, store, "fail", **JSON)
    assert rows == expected([0, 1, 2, 3])
    assert error is not None and error.position == "line 5" and error.object_key == KEY + ".json"
    assert problems == []


# ---------------------------------------------------------------------------------------------------- Parquet
PARQUET = {"format__class": "parquet", "parquet__row__group__bytes": "1024", "parquet__codec": "none"}


def test_bad_parquet_row_group_skips_only_that_row_group(tmp_path):
    store = back_up(tmp_path, 30, size=200, **PARQUET)
    key = KEY + ".parquet"
    metadata = pq.ParquetFile(store.open(key)).metadata
    groups = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert len(groups) >= 3 and sum(groups) == 30
    column = metadata.row_group(1).column(0)
    start = column.dictionary_page_offset or column.data_page_offset
    damage(store, key, start, column.total_compressed_size)

    rows, problems, error = read(tmp_path, store, "ignore", **PARQUET)
    bad = range(groups[0], groups[0] + groups[1])
    assert error is None
    assert rows == expected([o for o in range(30) if o not in bad], size=200)
    assert [(p.key, p.position, p.records, p.first_offset) for p in problems] == [
        (key, "row group 2", groups[1], groups[0])
    ]
    assert "row group" in problems[0].message and "cannot be told apart" in problems[0].message

    rows, _, error = read(tmp_path, store, "fail", **PARQUET)
    assert rows == expected(range(groups[0]), size=200)
    assert error is not None and error.position == "row group 2"


# ---------------------------------------------------------------------------------------------------- Avro
AVRO = {"format__class": "avro", "avro__codec": "deflate", "avro__deflate__level": "6"}


def avro_blocks(data: bytes, ctx_sync: bytes) -> list[tuple[int, int]]:
    """(start, end) byte ranges of each block's bytes (after the header, each up to and including its sync)."""
    ends = []
    position = data.find(ctx_sync) + 16  # the header ends with the sync marker
    header_end = position
    while True:
        found = data.find(ctx_sync, position)
        if found < 0:
            break
        ends.append(found + 16)
        position = found + 16
    starts = [header_end] + ends[:-1]
    return list(zip(starts, ends, strict=True))


@pytest.mark.parametrize("envelope", [False, True], ids=["plain", "envelope"])
def test_bad_avro_block_skips_only_that_block(tmp_path, envelope):
    settings = {**AVRO, "store__envelope": str(envelope).lower()}
    store = back_up(tmp_path, 40, size=5000, **settings)
    key = KEY + ".avro"
    data = store.get(key)
    blocks = avro_blocks(data, FileContext(TOPIC, 0, 0).sync_marker())
    assert len(blocks) >= 3
    start, end = blocks[1]
    damage(store, key, start + 8, (end - 16) - (start + 8))  # the block's compressed data, not its framing

    rows, problems, error = read(tmp_path, store, "ignore", **settings)
    assert error is None
    per_block = 13  # 64000-byte blocks of ~5 kB records
    bad = range(per_block, 2 * per_block)
    assert rows == expected([o for o in range(40) if o not in bad], size=5000)
    assert [(p.key, p.position, p.records) for p in problems] == [(key, "block 2", per_block)]
    assert problems[0].first_offset == (None if envelope else per_block)
    assert "cannot be told apart" in problems[0].message

    rows, _, error = read(tmp_path, store, "fail", **settings)
    assert rows == expected(range(per_block), size=5000)
    assert error is not None and error.position == "block 2"


# ---------------------------------------------------------------------------------------------------- sidecars
def test_bad_line_in_a_keys_sidecar_skips_only_its_record(tmp_path):
    settings = {**JSON, "keys__format__class": "json"}
    config = SINK.parse(raw_config(tmp_path, store__kafka__keys="true", **settings))
    store = StoreSpec.from_config(config).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, TOPIC, 0)
    writer.write(
        make_batch([{"offset": o, "topic": TOPIC, "key": b"k%d" % o, "value": value(o, 20)} for o in range(9)])
    )
    writer.finish(9, flush_open=True)
    sidecar = KEY + ".keys.json"
    replace_line(store, sidecar, 3, b"{broken")

    plugins = ReadPlugins.from_config(SOURCE.parse(raw_config(tmp_path, store__kafka__keys="true", **settings)))
    part = discover(store, plugins)[(TOPIC, 0)]
    problems: list[Problem] = []
    rows = [
        (r["offset"], r["key"], r["value"])
        for batch in read_partition(store, plugins, part, on_error="ignore", problems=problems)
        for r in batch.to_pylist()
    ]
    # The record whose key cannot be read is skipped (never restored with a wrong or missing key); the others keep
    # their own keys.
    assert rows == expected([0, 1, 3, 4, 5, 6, 7, 8])
    assert [(p.key, p.position, p.records, p.first_offset) for p in problems] == [(sidecar, "line 3", 1, 2)]

    with pytest.raises(FormatError) as error:
        list(read_partition(store, plugins, part))
    assert error.value.object_key == sidecar and error.value.position == "line 3"


# ---------------------------------------------------------------------------------------------------- block_gzip
def test_bad_block_gzip_block_skips_only_that_block(tmp_path):
    import json

    settings = {"format__class": "block_gzip", "compressed_block_size": "40"}  # 9-byte values + "\n": 4 per block
    store = back_up(tmp_path, 20, size=9, **settings)
    key = KEY + ".gz"
    block = json.loads(store.get(KEY + ".index"))["chunks"][1]
    assert (block["first_record_offset"], block["num_records"]) == (4, 4)
    damage(store, key, block["byte_offset"] + 10, block["byte_length"] - 10)  # past the gzip header

    rows, problems, error = read(tmp_path, store, "ignore", **settings)
    assert error is None
    assert rows == expected([o for o in range(20) if not 4 <= o < 8], size=9)
    assert [(p.key, p.records, p.first_offset) for p in problems] == [(key, 4, 4)]
    assert "cannot be told apart" in problems[0].message

    rows, _, error = read(tmp_path, store, "fail", **settings)
    assert rows == expected(range(4), size=9) and error is not None and error.object_key == key


# ---------------------------------------------------------------------------------------------------- gaps
def test_a_skipped_last_record_is_a_skip_not_a_gap(tmp_path):
    from kafka_s3.pipelines.read.reader import missing_offsets

    store = back_up(tmp_path, 10, **JSON, flush__size="5")  # objects at offsets 0 and 5
    replace_line(store, KEY + ".json", 5, b"not json at all")  # offset 4, the first object's last record
    plugins = ReadPlugins.from_config(
        SOURCE.parse(raw_config(tmp_path, store__kafka__keys="true", keys__format__class="bytearray", **JSON))
    )
    part = discover(store, plugins)[(TOPIC, 0)]
    problems: list[Problem] = []
    spans: list = []
    rows = [
        r["offset"]
        for batch in read_partition(
            store,
            plugins,
            part,
            on_error="ignore",
            problems=problems,
            on_span=lambda obj, first, last: spans.append((obj.start if first is None else first, last, obj.key)),
        )
        for r in batch.to_pylist()
    ]
    assert rows == [0, 1, 2, 3, 5, 6, 7, 8, 9]
    assert [(p.position, p.records, p.first_offset) for p in problems] == [("line 5", 1, 4)]
    assert missing_offsets(TOPIC, 0, spans) == []  # reported once, as skipped, not also as missing


@pytest.mark.parametrize("envelope", [False, True], ids=["plain", "envelope"])
def test_avro_block_with_broken_framing_skips_to_the_next_sync_marker_when_offsets_are_stored(tmp_path, envelope):
    settings = {**AVRO, "store__envelope": str(envelope).lower()}
    store = back_up(tmp_path, 40, size=5000, **settings)
    key = KEY + ".avro"
    data = bytearray(store.get(key))
    start, _ = avro_blocks(bytes(data), FileContext(TOPIC, 0, 0).sync_marker())[1]
    data[start + 1] ^= 0x04  # block 2's byte size (after its one-byte record count): its end is no longer known
    _replace(store, key, bytes(data))

    rows, problems, error = read(tmp_path, store, "ignore", **settings)
    assert error is None
    per_block = 13
    if envelope:  # offsets are stored: reading goes on after the next sync marker, at block 3
        assert rows == expected([o for o in range(40) if not per_block <= o < 2 * per_block], size=5000)
    else:  # offsets are derived: how many records were lost cannot be told, so nothing after can be numbered
        assert rows == expected(range(per_block), size=5000)
    assert [(p.key, p.position, p.records) for p in problems] == [(key, "block 2", None)]
    assert "sync marker" in problems[0].message
