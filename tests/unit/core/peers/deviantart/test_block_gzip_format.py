"""Block-GZIP (DeviantArt): lines in independent gzip members cut by uncompressed size, and their index."""

from __future__ import annotations

import gzip
import json
import subprocess

import pytest

from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.formats import REGISTRY
from kafka_s3.core.formats.base import Block, FileContext
from kafka_s3.core.peers.deviantart.block_gzip import BlockGzipFormat
from kafka_s3.core.records import make_batch
from tests.support.formats import CTX, WriteOnlySink, read_object, sink_config

INDEX_CTX = FileContext("orders", 3, 1200, "topics/orders/partition=3/orders+3+0000001200.index")


def block_format(block_size: int = 20, **settings) -> BlockGzipFormat:
    return BlockGzipFormat(sink_config("block_gzip", compressed_block_size=str(block_size), **settings))


def records(values, offsets=None, key=None):
    offsets = offsets if offsets is not None else range(1200, 1200 + len(values))
    return make_batch(
        [
            {"offset": o, "value": v, "key": key(i) if key else None}
            for i, (o, v) in enumerate(zip(offsets, values, strict=False))
        ]
    )


def write(fmt, batches):
    """(object bytes, parsed index) for ``batches`` written in that order."""
    sink = WriteOnlySink()
    writer = fmt.writer(sink, CTX)
    for batch in batches:
        writer.write(batch, None)
    writer.close()
    return sink.getvalue(), json.loads(writer.index())


def members(data: bytes, index: dict) -> list[bytes]:
    """Each block's bytes, decompressed on its own (the index's byte ranges)."""
    return [gzip.decompress(data[c["byte_offset"] : c["byte_offset"] + c["byte_length"]]) for c in index["chunks"]]


TEN = [b"value-%03d" % i for i in range(10)]  # 9 bytes + "\n" = 10 bytes per line


def test_whole_object_is_the_lines_of_every_record():
    data, _ = write(block_format(), [records(TEN)])
    assert gzip.decompress(data) == b"".join(v + b"\n" for v in TEN)


def test_a_block_closes_at_the_record_that_reaches_the_uncompressed_threshold():
    data, index = write(block_format(block_size=25), [records(TEN)])
    # 10-byte lines: the third line reaches 25 bytes, so blocks hold 3, 3, 3 and the remaining 1 record.
    assert [c["num_records"] for c in index["chunks"]] == [3, 3, 3, 1]
    assert [c["byte_length_uncompressed"] for c in index["chunks"]] == [30, 30, 30, 10]
    assert members(data, index) == [b"".join(v + b"\n" for v in TEN[i : i + 3]) for i in (0, 3, 6, 9)]


def test_index_lists_every_block_as_the_seed_describes():
    data, index = write(block_format(block_size=25), [records(TEN)])
    assert list(index) == ["chunks"]
    assert all(
        set(chunk) == {"byte_offset", "byte_length", "byte_length_uncompressed", "num_records", "first_record_offset"}
        for chunk in index["chunks"]
    )
    offsets = [c["byte_offset"] for c in index["chunks"]]
    lengths = [c["byte_length"] for c in index["chunks"]]
    assert offsets[0] == 0 and offsets[1:] == [o + n for o, n in zip(offsets, lengths, strict=True)][:-1]
    assert offsets[-1] + lengths[-1] == len(data)
    assert [c["first_record_offset"] for c in index["chunks"]] == [1200, 1203, 1206, 1209]


def test_first_record_offsets_are_the_records_kafka_offsets_even_with_gaps():
    offsets = [5, 6, 9, 20, 21, 22, 40, 41, 50, 51]
    _, index = write(block_format(block_size=25), [records(TEN, offsets)])
    assert [c["first_record_offset"] for c in index["chunks"]] == [5, 20, 40, 51]


def test_blocks_do_not_depend_on_how_records_were_batched():
    fmt = block_format(block_size=25)
    whole = write(fmt, [records(TEN)])
    one_by_one = write(fmt, [records(TEN).slice(i, 1) for i in range(10)])
    uneven = write(fmt, [records(TEN).slice(0, 4), records(TEN).slice(4, 0), records(TEN).slice(4, 6)])
    assert whole == one_by_one == uneven


def test_bytes_are_deterministic_with_gzip_mtime_zero():
    data, index = write(block_format(block_size=25), [records(TEN)])
    assert (data, index) == write(block_format(block_size=25), [records(TEN)])
    for chunk in index["chunks"]:
        header = data[chunk["byte_offset"] : chunk["byte_offset"] + 10]
        assert header[:3] == b"\x1f\x8b\x08"  # gzip magic, deflate
        assert header[4:8] == b"\x00\x00\x00\x00"  # MTIME 0


def test_a_record_larger_than_the_threshold_makes_a_block_of_its_own():
    values = [b"a", b"x" * 100, b"b"]
    data, index = write(block_format(block_size=10), [records(values)])
    assert [c["num_records"] for c in index["chunks"]] == [2, 1]
    assert members(data, index) == [b"a\n" + b"x" * 100 + b"\n", b"b\n"]


def test_default_block_size_is_deviantarts_64_mib():
    fmt = BlockGzipFormat(sink_config("block_gzip"))
    assert fmt.block_size == 67108864
    _, index = write(fmt, [records(TEN)])
    assert len(index["chunks"]) == 1 and index["chunks"][0]["num_records"] == 10


def test_system_gzip_decompresses_the_whole_file(tmp_path):
    data, index = write(block_format(block_size=25), [records(TEN)])
    assert len(index["chunks"]) == 4
    path = tmp_path / "orders+3+0000001200.gz"
    path.write_bytes(data)
    subprocess.run(["gzip", "-d", str(path)], check=True)
    assert (tmp_path / "orders+3+0000001200").read_bytes() == b"".join(v + b"\n" for v in TEN)


def test_null_values_are_empty_lines_and_read_back_as_empty():
    fmt = BlockGzipFormat(sink_config("block_gzip", behavior__on__null__values="write"))
    data, _ = write(fmt, [records([b"a", None, b"c"])])
    assert gzip.decompress(data) == b"a\n\nc\n"
    (batch,) = read_object(fmt, data)
    assert batch.column("value").to_pylist() == [b"a", b"", b"c"]


def test_reads_back_whole_objects_and_single_blocks():
    fmt = block_format(block_size=25)
    data, index = write(fmt, [records(TEN)])
    assert [v for b in read_object(fmt, data) for v in b.column("value").to_pylist()] == TEN
    second = index["chunks"][1]
    block = data[second["byte_offset"] : second["byte_offset"] + second["byte_length"]]
    assert [v for b in read_object(fmt, block) for v in b.column("value").to_pylist()] == TEN[3:6]


def test_keys_role_writes_raw_keys():
    fmt = BlockGzipFormat(sink_config("block_gzip"), role="keys")
    data, _ = write(fmt, [records(TEN[:2], key=lambda i: b"k%d" % i)])
    assert gzip.decompress(data) == b"k0\nk1\n"
    (batch,) = read_object(fmt, data)
    assert batch.column("key").to_pylist() == [b"k0", b"k1"]


def test_blocks_parse_the_index_with_running_rows():
    fmt = block_format(block_size=25)
    _, index = write(fmt, [records(TEN)])
    blocks = fmt.blocks(json.dumps(index).encode(), INDEX_CTX)
    assert [(b.first_offset, b.records, b.row) for b in blocks] == [
        (1200, 3, 0),
        (1203, 3, 3),
        (1206, 3, 6),
        (1209, 1, 9),
    ]
    assert all(isinstance(b, Block) for b in blocks)


@pytest.mark.parametrize(
    "index, problem",
    [
        (b"not json", "unreadable block index"),
        (b'{"blocks": []}', "unreadable block index"),
        (b'{"chunks": {}}', "unreadable block index"),
        (b'{"chunks": [{"byte_offset": 0, "byte_length": 5, "num_records": 1}]}', "first_record_offset"),
        (
            b'{"chunks": [{"byte_offset": -1, "byte_length": 5, "num_records": 1, "first_record_offset": 0}]}',
            "byte_offset",
        ),
        (
            b'{"chunks": [{"byte_offset": 0, "byte_length": "5", "num_records": 1, "first_record_offset": 0}]}',
            "byte_length",
        ),
    ],
)
def test_malformed_index_is_a_format_error_naming_the_index(index, problem):
    with pytest.raises(FormatError, match=problem) as caught:
        block_format().blocks(index, INDEX_CTX)
    assert caught.value.object_key == INDEX_CTX.object_key


def test_corrupt_block_is_a_format_error():
    fmt = block_format()
    data, _ = write(fmt, [records(TEN)])
    with pytest.raises(FormatError, match="corrupt gzip"):
        read_object(fmt, data[:12] + b"\xff" * 8 + data[20:])


@pytest.mark.parametrize(
    "alias",
    [
        "block_gzip",
        "com.deviantart.kafka_connect_s3.BlockGZIPFormat",
        "com.deviantart.kafka_connect_s3.BlockGZIPFileWriter",
        "BlockGZIPFormat",
    ],
)
def test_registered_with_deviantart_aliases(alias):
    config = sink_config(alias)
    assert config["format.class"] == "block_gzip"
    fmt = REGISTRY.resolve(config["format.class"])(config)
    assert isinstance(fmt, BlockGzipFormat) and fmt.extension == ".gz" and fmt.index_extension == ""


def test_refuses_envelope_headers_and_other_compressions():
    with pytest.raises(ConfigError, match="store.envelope"):
        BlockGzipFormat(sink_config("block_gzip"), envelope=True)
    with pytest.raises(ConfigError, match="headers"):
        BlockGzipFormat(sink_config("block_gzip"), role="headers")
    with pytest.raises(ConfigError, match="always gzip") as caught:
        BlockGzipFormat(sink_config("block_gzip", s3__compression__type="zstd"))
    assert caught.value.key == "s3.compression.type"
    with pytest.raises(ConfigError, match="out of range for gzip"):
        BlockGzipFormat(sink_config("block_gzip", s3__compression__level="12"))
    with pytest.raises(ConfigError, match="compressed_block_size"):
        sink_config("block_gzip", compressed_block_size="0")


def test_deviantart_property_names_are_accepted():
    raw = {
        "name": "t",
        "topics": "orders",
        "flush.size": "3",
        "format.class": "block_gzip",
        "s3.bucket": "da-bucket",
        "s3.prefix": "da/prefix",
        "s3.endpoint": "http://127.0.0.1:9000",
        "s3.path_style": "false",
        "compressed_block_size": "1024",
        "local.buffer.dir": "/tmp/buffer",
        "connector.class": "com.deviantart.kafka_connect_s3.S3SinkConnector",
    }
    from kafka_s3.core.config.sink import SINK

    config = SINK.parse(raw)
    assert config["s3.bucket.name"] == "da-bucket"
    assert config["topics.dir"] == "da/prefix"
    assert config["store.url"] == "http://127.0.0.1:9000"
    assert config["s3.path.style.access.enabled"] is False
    assert config["compressed_block_size"] == 1024
    assert not [w for w in config.warnings if "not a known" in w]
    assert any("local.buffer.dir" in w for w in config.warnings)


# ------------------------------------------------------------------------ DeviantArt's own writer (issue 15 item 9)
def deviantart_format(block_size: int) -> BlockGzipFormat:
    return block_format(block_size, connector__class="com.deviantart.kafka_connect_s3.S3SinkConnector")


@pytest.mark.issue(15, item=9)
def test_deviantart_closes_a_block_before_the_line_that_would_pass_the_size():
    """DA BlockGZIPFileWriter.write: ``if (rawBytesWritten + str.length() > chunkThreshold) finishChunk()`` before
    writing; here 10-unit lines and a 25-unit block hold two lines each (ours would hold three)."""
    data, index = write(deviantart_format(25), [records(TEN[:5])])

    assert members(data, index) == [b"value-000\nvalue-001\n", b"value-002\nvalue-003\n", b"value-004\n"]
    assert [(c["num_records"], c["first_record_offset"]) for c in index["chunks"]] == [(2, 1200), (2, 1202), (1, 1204)]


@pytest.mark.issue(15, item=9)
def test_an_oversize_first_line_leaves_an_empty_block_as_deviantarts_does():
    data, index = write(deviantart_format(5), [records([b"longer than five"])])

    assert members(data, index) == [b"", b"longer than five\n"]
    assert [(c["num_records"], c["byte_length_uncompressed"]) for c in index["chunks"]] == [(0, 0), (1, 17)]


@pytest.mark.issue(15, item=9)
def test_deviantart_counts_utf16_units_and_adds_no_second_newline():
    """Java's String.length(): é is one unit (two UTF-8 bytes), an emoji two units (four bytes); a line that already
    ends with a newline gets none more (``if (!str.endsWith("\\n")) str += "\\n"``)."""
    data, index = write(deviantart_format(1000), [records(["é".encode(), "😀".encode(), b"done\n"])])

    assert gzip.decompress(data) == "é\n😀\ndone\n".encode()
    assert index["chunks"][0]["byte_length_uncompressed"] == 2 + 3 + 5


@pytest.mark.issue(15, item=9)
def test_deviantart_index_is_json_simples_order_compact_without_newline():
    sink = WriteOnlySink()
    writer = deviantart_format(1000).writer(sink, CTX)
    writer.write(records([b"a"]), None)
    writer.close()
    member = len(sink.getvalue())

    assert writer.index() == (
        b'{"chunks":[{"byte_length_uncompressed":2,"num_records":1,"byte_length":%d,"byte_offset":0,'
        b'"first_record_offset":1200}]}' % member
    )
