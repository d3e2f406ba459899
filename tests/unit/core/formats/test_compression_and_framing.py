"""Stream compression (gzip, zstd), Avro block codecs, and the framing helpers the formats share."""

import bz2
import gzip
import io
import itertools
import lzma
import subprocess
import zlib

import numpy as np
import pyarrow as pa
import pytest
from backports import zstd
from hypothesis import given
from hypothesis import strategies as st

from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.formats.compression import (
    SLICE_BYTES,
    CompressingSink,
    avro_block_compressor,
    decompressed,
    stream_settings,
)
from kafka_s3.core.formats.framing import SizeGrouper, joined, split, split_arrays
from tests.support.formats import WriteOnlySink, sink_config

DATA = b"".join(b"line %d \xc3\xa9\n" % i for i in range(5000))


def compress(data: bytes, compression: str, level: int = -1, pieces: int = 7) -> bytes:
    sink = WriteOnlySink()
    out = CompressingSink(sink, compression, level)
    step = max(len(data) // pieces, 1)
    for start in range(0, len(data), step):
        out.write(data[start : start + step])
    out.finish()
    return sink.getvalue()


def decompress(data: bytes, compression: str) -> bytes:
    return b"".join(decompressed(io.BytesIO(data), compression, "obj"))


def test_gzip_is_deterministic_has_no_name_or_time_and_gunzips(tmp_path):
    first, second = compress(DATA, "gzip", pieces=3), compress(DATA, "gzip", pieces=11)
    assert first == second
    assert first[:4] == b"\x1f\x8b\x08\x00"  # deflate, no FNAME/FEXTRA/FCOMMENT flags
    assert first[4:8] == b"\x00\x00\x00\x00"  # mtime 0
    path = tmp_path / "obj.bin.gz"
    path.write_bytes(first)
    subprocess.run(["gzip", "-d", str(path)], check=True)
    assert (tmp_path / "obj.bin").read_bytes() == DATA


def test_compression_level_is_applied():
    assert len(compress(DATA, "gzip", 1)) > len(compress(DATA, "gzip", 9))
    assert compress(DATA, "zstd", 1) != compress(DATA, "zstd", 19)


@pytest.mark.parametrize("compression", ["gzip", "zstd", "none"])
def test_streams_round_trip(compression):
    assert decompress(compress(DATA, compression), compression) == DATA


def test_zstd_stream_is_a_standard_frame():
    assert zstd.decompress(compress(DATA, "zstd")) == DATA


def test_concatenated_gzip_members_read_as_one_stream():
    assert decompress(compress(b"a\n", "gzip") + compress(b"b\n", "gzip"), "gzip") == b"a\nb\n"


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_truncated_stream_names_object_and_byte(compression):
    data = compress(DATA, compression)
    with pytest.raises(FormatError, match="truncated") as error:
        decompress(data[: len(data) // 2], compression)
    assert error.value.object_key == "obj"
    assert error.value.position == f"byte {len(data) // 2}"
    assert str(error.value).endswith(f"in obj at byte {len(data) // 2}")


def test_corrupt_gzip_names_object_and_byte():
    data = bytearray(compress(DATA, "gzip"))
    data[3] = 0xFF  # reserved flag bits set: not a valid gzip header
    with pytest.raises(FormatError, match="corrupt gzip") as error:
        decompress(bytes(data), "gzip")
    assert error.value.position == "byte 0"


def test_level_ranges_per_algorithm():
    with pytest.raises(ConfigError, match="gzip"):
        stream_settings(sink_config("json", s3__compression__type="gzip", s3__compression__level="10"))
    with pytest.raises(ConfigError, match="zstd"):
        stream_settings(sink_config("json", s3__compression__type="zstd", s3__compression__level="0"))
    assert stream_settings(sink_config("json", s3__compression__type="zstd", s3__compression__level="22")) == (
        "zstd",
        22,
    )


@pytest.mark.parametrize(
    "codec, decompress_block",
    [
        ("null", lambda block: block),
        ("deflate", lambda block: zlib.decompress(block, -15)),
        ("bzip2", bz2.decompress),
        ("xz", lzma.decompress),
        ("zstandard", zstd.decompress),
    ],
)
def test_avro_block_codecs(codec, decompress_block):
    assert decompress_block(avro_block_compressor(codec)(DATA)) == DATA


def test_avro_snappy_block_ends_with_big_endian_crc32():
    import cramjam

    block = avro_block_compressor("snappy")(DATA)
    assert bytes(cramjam.snappy.decompress_raw(block[:-4])) == DATA
    assert block[-4:] == zlib.crc32(DATA).to_bytes(4, "big")


# ---------------------------------------------------------------------------------------------------- framing
@pytest.mark.parametrize(
    "chunks, separator, expected",
    [
        ([b"a\nb\n"], b"\n", [b"a", b"b"]),
        ([b"a\n\nb"], b"\n", [b"a", b"", b"b"]),  # an empty record, and a tail without separator
        ([b"a|", b"|b||", b"||"], b"||", [b"a", b"b", b""]),  # a separator split across chunks
        ([], b"\n", []),
    ],
)
def test_split(chunks, separator, expected):
    assert list(split(chunks, separator)) == expected


def test_joined_appends_separator_after_every_row_and_is_zero_copy_without_one():
    rows = pa.array([b"a", b"", b"bc"], pa.large_binary())
    assert bytes(joined(rows, b"\r\n")) == b"a\r\n\r\nbc\r\n"
    view = joined(rows.slice(1))
    assert bytes(view) == b"bc"
    assert np.frombuffer(view, np.uint8).ctypes.data == rows.buffers()[2].address + 1


@given(
    st.lists(st.integers(0, 300), max_size=200),
    st.lists(st.integers(1, 50), min_size=1, max_size=10),
    st.integers(1, 1000),
)
def test_size_groups_do_not_depend_on_batching(sizes, batch_lengths, threshold):
    def group_ends(batches):
        grouper, ends, seen = SizeGrouper(threshold), [], 0
        for batch in batches:
            ends += [seen + end for end in grouper.cuts(np.array(batch, dtype=np.int64))]
            seen += len(batch)
        return ends

    batches, start = [], 0
    for length in batch_lengths * (len(sizes) + 1):
        if start >= len(sizes):
            break
        batches.append(sizes[start : start + length])
        start += length
    expected = group_ends([sizes])
    assert group_ends(batches) == expected
    groups = list(itertools.pairwise([0, *expected]))
    assert all(sum(sizes[a:b]) >= threshold for a, b in groups)
    assert all(sum(sizes[a : b - 1]) < threshold for a, b in groups)


@pytest.mark.parametrize("level", [-1, 1, 6, 9])
def test_gzip_streams_depend_only_on_their_bytes_not_on_the_write_sizes(level):
    # ISA-L (the default level) gives other bytes for other input cuts unless fed fixed slices; zlib never does.
    data = bytes(range(256)) * (SLICE_BYTES // 100) + b"tail"  # a few slices and a remainder

    def compress(step: int) -> bytes:
        out = io.BytesIO()
        sink = CompressingSink(out, "gzip", level)
        for i in range(0, len(data), step):
            sink.write(data[i : i + step])
        sink.finish()
        return out.getvalue()

    first = compress(4096)
    assert first == compress(99_991) == compress(len(data)) == compress(7)
    assert first[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00" + first[8:10]  # no name, mtime 0
    assert gzip.decompress(first) == data
    assert subprocess.run(["gzip", "-dc"], input=first, capture_output=True, check=True).stdout == data


def test_an_empty_gzip_stream_is_a_valid_empty_file():
    out = io.BytesIO()
    CompressingSink(out, "gzip").finish()
    assert gzip.decompress(out.getvalue()) == b""


@pytest.mark.parametrize("level", [-1, 6])
def test_avro_deflate_blocks_are_raw_deflate(level):
    data = b"avro block " * 5000
    block = avro_block_compressor("deflate", level)(data)
    assert zlib.decompress(block, -15) == data


@given(
    records=st.lists(st.binary(max_size=40), max_size=60),
    separator=st.sampled_from([b"\n", b"\x00", b"|", b"\r\n", b"--"]),
    cuts=st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=10),
    target=st.integers(min_value=1, max_value=200),
    tail=st.booleans(),
)
def test_split_arrays_gives_the_records_split_gives_whatever_the_chunks(records, separator, cuts, target, tail):
    records = [r.replace(separator[:1], b"") for r in records]  # a record never holds its separator
    stream = b"".join(r + separator for r in records)
    if tail and records and records[-1]:
        stream = stream[: -len(separator)]  # the last record without its separator
    chunks, position = [], 0
    for size in itertools.cycle(cuts):
        if position >= len(stream):
            break
        chunks.append(stream[position : position + size])
        position += size
    arrays = list(split_arrays(iter(chunks), separator, target))
    assert [r for a in arrays for r in a.to_pylist()] == list(split(iter(chunks), separator))
    assert all(a.type == pa.large_binary() for a in arrays)


def test_a_multi_byte_separator_cut_between_chunks_never_misaligns_records():
    # "\x00", then an empty record: "\x00----". Read in chunks that end inside the second separator ("\x00---" then
    # "-"), the last "--" of the first chunk is not a separator: cutting there made a record "-" out of nothing.
    chunks = [b"\x00---", b"-"]
    arrays = list(split_arrays(iter(chunks), b"--", 1))
    assert [r for a in arrays for r in a.to_pylist()] == [b"\x00", b""]
