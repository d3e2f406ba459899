"""Issue 30, target 4: Avro and JSON envelope objects decode with compiled readers (Polars, pyarrow), record for record
and skip for skip what the Python readers give.

The reference is the same reader with the compiled decoders declining everything: the Python paths as they were
(the column walk and fastavro for Avro, ``orjson`` per line for JSON). Valid objects, and objects corrupted at random
(bytes of the uncompressed block data or of the lines replaced, inserted or removed), must read the same: the same
records in the same order, the same skips at the same places, or the same error.
"""

import io
import random

import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_s3.core.formats import avro as avro_module
from kafka_s3.core.formats import avro_envelope, compression
from kafka_s3.core.formats import json as json_module
from kafka_s3.core.formats.avro import AvroFormat
from kafka_s3.core.formats.avro_encoding import varint
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.formats.compiled_envelope import CompiledDecodeError, json_lines_batch
from kafka_s3.core.formats.json import JsonFormat
from kafka_s3.core.records import RECORD_SCHEMA, make_batch
from tests.support.formats import CTX, sink_config, write_object
from tests.unit.core.formats.test_envelope_columnar import _container, _record, records_strategy

pytestmark = pytest.mark.issue(30)


def fuzz(examples: int):
    """Hypothesis settings of these tests: no deadline (Polars' first import), ``monkeypatch`` reset by each example."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )


def avro_envelope_format(codec: str = "null") -> AvroFormat:
    return AvroFormat(sink_config("avro", store__envelope="true", avro__codec=codec), envelope=True)


def json_envelope_format(compression: str = "none") -> JsonFormat:
    return JsonFormat(sink_config("json", store__envelope="true", s3__compression__type=compression), envelope=True)


def events(fmt, data: bytes, skipping: bool = True) -> list:
    """What a reader gives for ``data``, in order: each record (as a dict) and each skip, and the error it raised."""
    skips: list = []
    ctx = FileContext(CTX.topic, CTX.partition, CTX.start_offset, CTX.object_key, skips if skipping else None)
    out: list = []
    seen = 0
    try:
        for batch in fmt.read(io.BytesIO(data), ctx):
            assert batch.schema == RECORD_SCHEMA
            out += [("skip", s) for s in skips[seen:]]
            seen = len(skips)
            out += [("record", row) for row in batch.to_pylist()]
    except Exception as exc:  # FormatError, or what the Python readers let through (ArrowInvalid...)
        out.append(("error", type(exc).__name__, str(exc)))
    return out + [("skip", s) for s in skips[seen:]]


def python_only(monkeypatch, fmt, data: bytes, skipping: bool = True) -> list:
    """The events of the Python readers alone: the compiled decoders decline every block and line."""

    def decline(*args, **kwargs):
        raise CompiledDecodeError("declined for the reference")

    with monkeypatch.context() as patch:
        patch.setattr(avro_module, "avro_blocks_batch", decline, raising=False)
        patch.setattr(json_module, "json_lines_batch", decline, raising=False)
        return events(fmt, data, skipping)


def corrupted(data: bytes, start: int, seed: int, alphabet: bytes) -> bytes:
    """``data`` with a few bytes after ``start`` replaced, inserted or removed (from ``alphabet``, or any byte)."""
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(start, len(out))
        byte = rng.choice(alphabet) if alphabet and rng.random() < 0.8 else rng.randrange(256)
        action = rng.random()
        if action < 0.6:
            out[at] = byte
        elif action < 0.8:
            out.insert(at, byte)
        elif len(out) > start + 1:
            del out[at]
    return bytes(out)


# -------------------------------------------------------------------------------------------------------------- Avro
def test_avro_envelope_objects_decode_without_the_python_block_walk(monkeypatch):
    """The Avro envelope's blocks are decoded by Polars, not walked varint by varint in Python (46 % of an
    exactly-once restore's task time before)."""
    fmt = avro_envelope_format("deflate")
    records = make_batch([{"offset": i, "key": b"k", "value": b"v" * i, "headers": [("h", b"1")]} for i in range(500)])
    data = write_object(fmt, [(records, None)])
    expected = python_only(monkeypatch, fmt, data)

    def walk(*args, **kwargs):
        raise AssertionError("a block walked in Python")

    monkeypatch.setattr(avro_envelope, "_decode", walk)
    assert events(fmt, data) == expected


@fuzz(60)
@given(rows=records_strategy, codec=st.sampled_from(["null", "deflate", "snappy", "zstandard"]), cut=st.integers(1, 40))
def test_avro_envelope_compiled_reader_gives_what_the_python_readers_give(monkeypatch, rows, codec, cut):
    fmt = avro_envelope_format(codec)
    records = make_batch(rows)
    data = write_object(fmt, [(records.slice(0, cut), None), (records.slice(cut), None)])
    assert events(fmt, data) == python_only(monkeypatch, fmt, data)


AVRO_SIGNIFICANT = bytes([0x00, 0x01, 0x02, 0x03, 0x04, 0x7F, 0x80, 0xFF, 0xC3, 0xA9, 0xED, 0xA0])


@fuzz(120)
@given(rows=records_strategy, seed=st.integers(0, 2**32), skipping=st.booleans())
def test_avro_envelope_corrupted_blocks_read_as_the_python_readers_read_them(monkeypatch, rows, seed, skipping):
    """Random corruption of the uncompressed blocks (varints, union indexes, lengths, UTF-8, sync markers): the same
    records, skips and errors."""
    fmt = avro_envelope_format("null")
    records = make_batch(rows)
    data = write_object(fmt, [(records.slice(0, 3), None), (records.slice(3), None)])
    start = data.index(CTX.sync_marker()) + 16  # the blocks, after the header
    bad = corrupted(data, start, seed, AVRO_SIGNIFICANT)
    assert events(fmt, bad, skipping) == python_only(monkeypatch, fmt, bad, skipping)


@pytest.mark.parametrize(
    "block",
    [
        pytest.param(_record(1, b"\x00")[:2] + varint(2**31) + _record(1, b"\x00")[3:], id="partition-beyond-int32"),
        pytest.param(_record(1, b"\x00", timestamp=b"\x02" + varint(253_402_300_800_000)), id="timestamp-past-9999"),
        pytest.param(_record(1, b"\x00") + b"\x00\x00", id="bytes-left-over"),
        pytest.param(_record(1, b"\x00", timestamp=b"\x80\x00"), id="overlong-union-index"),
    ],
)
def test_avro_envelope_values_fastavro_reads_or_refuses_are_read_or_refused_alike(monkeypatch, block):
    """An int beyond int32 (Polars would wrap it), a timestamp beyond the year 9999, bytes after the last record and
    an over-long union index: each read exactly as the Python readers read it."""
    data = _container([(1, _record(0, b"\x00")), (1, block), (1, _record(2, b"\x00"))])
    for skipping in (True, False):
        assert events(avro_envelope_format(), data, skipping) == python_only(
            monkeypatch, avro_envelope_format(), data, skipping
        )


# -------------------------------------------------------------------------------------------------------------- JSON
def test_json_envelope_objects_decode_without_orjson_per_line(monkeypatch):
    """The JSON envelope's lines are parsed by pyarrow's JSON reader and their base64 decoded by Polars, not one
    ``orjson.loads`` per line and one ``a2b_base64`` per value (61 % of an exactly-once restore's task time)."""
    fmt = json_envelope_format("gzip")
    records = make_batch([{"offset": i, "key": b"k", "value": b"v" * i, "headers": [("h", b"1")]} for i in range(500)])
    data = write_object(fmt, [(records, None)])
    expected = python_only(monkeypatch, fmt, data)

    class NoLoads:
        dumps = staticmethod(orjson.dumps)

        @staticmethod
        def loads(*args, **kwargs):
            raise AssertionError("a line parsed by orjson.loads")

    monkeypatch.setattr(json_module, "orjson", NoLoads)
    assert events(fmt, data) == expected


@fuzz(60)
@given(rows=records_strategy, compression=st.sampled_from(["none", "gzip"]), cut=st.integers(1, 40))
def test_json_envelope_compiled_reader_gives_what_the_python_readers_give(monkeypatch, rows, compression, cut):
    fmt = json_envelope_format(compression)
    records = make_batch(rows)
    data = write_object(fmt, [(records.slice(0, cut), None), (records.slice(cut), None)])
    assert events(fmt, data) == python_only(monkeypatch, fmt, data)


JSON_SIGNIFICANT = b'{}[]":,\n\r \t\\/0123456789-+.eEnulltruefalseQUJD=xyz_\xc3\xa9\xff'


@fuzz(150)
@given(rows=records_strategy, seed=st.integers(0, 2**32), skipping=st.booleans())
def test_json_envelope_corrupted_lines_read_as_the_python_readers_read_them(monkeypatch, rows, seed, skipping):
    """Random corruption of the lines (structure, numbers, escapes, base64, blank lines, non-UTF-8 bytes): the same
    records, skips and errors."""
    fmt = json_envelope_format()
    data = write_object(fmt, [(make_batch(rows), None)])
    bad = corrupted(data, 0, seed, JSON_SIGNIFICANT)
    assert events(fmt, bad, skipping) == python_only(monkeypatch, fmt, bad, skipping)


GOOD_LINE = (
    b'{"topic":"t","partition":0,"offset":1,"timestamp":5,"timestampType":0,"key":"QQ==","value":null,'
    b'"headers":[{"key":"h","value":"QQ=="}]}'
)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(b"null", id="null-line"),  # pyarrow's JSON reader crashes on a file of only a null line
        pytest.param(b"", id="blank-line"),  # pyarrow skips it; the line reader reports it
        pytest.param(GOOD_LINE + b" " + GOOD_LINE, id="two-objects"),
        pytest.param(GOOD_LINE.replace(b'"topic":"t"', b'"topic":"a","topic":"t"'), id="duplicate-key"),
        pytest.param(GOOD_LINE.replace(b"}]}", b'}],"x":' + b"[" * 1100 + b"]" * 1100 + b"}"), id="deep-nesting"),
        pytest.param(GOOD_LINE.replace(b'"value":"QQ=="', b'"value":"QR=="'), id="base64-padding-bits"),
        pytest.param(GOOD_LINE.replace(b'"value":"QQ=="', b'"key":"h"'), id="header-without-value"),
        pytest.param(GOOD_LINE.replace(b'"partition":0', b'"partition":1.0'), id="float-partition"),
        pytest.param(GOOD_LINE.replace(b'"topic":"t"', b'"topic":"\xff"'), id="not-utf8"),
        pytest.param(GOOD_LINE.replace(b'"headers":[{"key":"h","value":"QQ=="}]', b'"headers":0'), id="falsy-headers"),
    ],
)
def test_json_envelope_lines_pyarrow_reads_otherwise_are_read_as_the_python_readers_read_them(monkeypatch, line):
    data = b"\n".join([GOOD_LINE, line, GOOD_LINE.replace(b'"offset":1', b'"offset":3')]) + b"\n"
    for skipping in (True, False):
        fmt = json_envelope_format()
        assert events(fmt, data, skipping) == python_only(monkeypatch, fmt, data, skipping)


@pytest.mark.parametrize("line", [b"null", b" null", b"", GOOD_LINE + b"\n\n" + GOOD_LINE])
def test_json_lines_the_compiled_reader_must_not_parse_are_declined(line):
    with pytest.raises(CompiledDecodeError):
        json_lines_batch(line + b"\n")


def test_json_envelope_lines_keep_their_numbers_across_segments(monkeypatch):
    """A bad line after many good ones (several compiled segments) is reported at its own line number."""
    monkeypatch.setattr(json_module, "SEGMENT_BYTES", 4096)
    monkeypatch.setattr(compression, "READ_CHUNK", 4096)
    lines = [GOOD_LINE.replace(b'"offset":1', f'"offset":{i}'.encode()) for i in range(200)]
    lines[150] = b"{not json"
    skips: list = []
    ctx = FileContext(CTX.topic, CTX.partition, CTX.start_offset, CTX.object_key, skips)
    batches = list(json_envelope_format().read(io.BytesIO(b"\n".join(lines) + b"\n"), ctx))
    offsets = pa.Table.from_batches(batches).column("offset").to_pylist()
    assert offsets == [i for i in range(200) if i != 150]
    assert [s.position for s in skips] == ["line 151"]
    assert len(batches) > 2
