"""Issue 15 items 6/7: Lenses' ``STOREAS TEXT`` and ``STOREAS BYTES`` objects, written and read as Lenses does.

Expected bytes are written here from LS (lensesio/stream-reactor, ``kafka-connect-cloud-common``) source, never taken
from our writer:

- ``formats/writer/TextFormatWriter.write``: ``PrimitiveSinkData.safeValue.toString.getBytes`` then
  ``LineSeparatorUtil.LineSeparatorBytes`` (``System.lineSeparator``: ``\\n``); ``formats/writer/SinkData
  .StringSinkData.safeValue`` replaces ``\\n`` with ``\\\\n``; a non-primitive value (Map, byte[]) or a null value
  throws ``FormatWriterException`` ("Text format is only for output of kafka string values");
- ``formats/writer/BytesFormatWriter.write``: the first record's byte[] alone; ``NullSinkData`` → an empty array; a
  second write → ``IllegalStateException`` ("can only write a single record for BYTES type");
- ``formats/reader/TextStreamReader`` (``scala.io.Source.getLines``: ``\\n``, ``\\r\\n`` and ``\\r`` end lines) with
  ``converters/TextConverter`` (a STRING value, no key); ``formats/reader/BytesStreamFileReader`` (the whole object,
  one row) with ``converters/BytesOutputRowConverter`` (a BYTES value, no key).
"""

from __future__ import annotations

import io

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import DataError, FormatError
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.peers.lenses.text import LensesBytesFormat, LensesTextFormat
from kafka_s3.core.records import make_batch, to_dicts

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
BYTE_ARRAY = "org.apache.kafka.connect.converters.ByteArrayConverter"
CTX = FileContext("t", 0, 0, "p/t/0/000000000002_1_3.text", last_offset=2)


def _config(kcql: str, converter: str):
    raw = {"name": "lenses", "connector.class": LENSES_SINK, "connect.s3.kcql": kcql, "value.converter": converter}
    if converter == JSON:
        raw["value.converter.schemas.enable"] = "false"
    return SINK.parse(raw)


def _write(fmt, values: list[bytes | None]) -> tuple[bytes, int]:
    sink = io.BytesIO()
    writer = fmt.writer(sink, CTX)
    writer.write(make_batch([{"offset": o, "value": v} for o, v in enumerate(values)]), None)
    writer.close()
    return sink.getvalue(), writer.ambiguous()


def _text(converter: str = STRING) -> LensesTextFormat:
    config = _config("INSERT INTO b:p SELECT * FROM t STOREAS TEXT", converter)
    return LensesTextFormat(config)


def test_lenses_text_writes_each_string_value_and_a_newline():
    data, ambiguous = _write(_text(), [b"hello", "caf\u00e9 \\n".encode(), b"", b"two\nlines"])
    # StringSinkData.safeValue: a real line break becomes backslash-n; an existing backslash-n stays as it is
    assert data == "hello\ncaf\u00e9 \\n\n\ntwo\\nlines\n".encode()
    assert ambiguous == 1  # "two\nlines" reads back as "two\\nlines"


def test_lenses_text_json_primitives_as_java_prints_them():
    """JsonConverter (schemas.enable=false) gives the sink String/Long/Double/Boolean: ``toString`` of each."""
    data, _ = _write(_text(JSON), [b'"quoted"', b"42", b"-7", b"1.5", b"1e2", b"1e-5", b"true", b"false"])
    assert data == b"quoted\n42\n-7\n1.5\n100.0\n1.0E-5\ntrue\nfalse\n"
    # Checked on the JVM (Jackson 2.18 with Kafka JsonConverter's USE_BIG_DECIMAL_FOR_FLOATS and exact BigDecimals,
    # then doubleValue() and Double.toString): -0.0 → 0.0, 123456789.123 → 1.23456789123E8, 1E400 → Infinity
    data, _ = _write(_text(JSON), [b"-0.0", b"-0", b"123456789.123", b"1E400", b"-1E400"])
    assert data == b"0.0\n0\n1.23456789123E8\nInfinity\n-Infinity\n"


@pytest.mark.parametrize(
    ("converter", "value", "problem"),
    [
        (STRING, None, "null value (tombstone)"),
        (JSON, b'{"a":1}', "JSON dict"),
        (JSON, b"[1]", "JSON list"),
        (JSON, b"null", "JSON null"),
        (JSON, b"NaN", "not JSON"),
        (STRING, b"\xff", "not UTF-8"),
    ],
)
def test_lenses_text_fails_where_lenses_fails_naming_the_record(converter, value, problem):
    with pytest.raises(DataError) as caught:
        _write(_text(converter), [b'"fine"' if converter == JSON else b"fine", value])
    assert "topic t partition 0 offset 1" in str(caught.value) and problem in str(caught.value)


def _bytes() -> LensesBytesFormat:
    config = _config("INSERT INTO b:p SELECT * FROM t STOREAS BYTES PROPERTIES('flush.count'=1)", BYTE_ARRAY)
    return LensesBytesFormat(config)


def test_lenses_bytes_writes_one_value_alone():
    assert _write(_bytes(), [b"\x00\xff\n raw"]) == (b"\x00\xff\n raw", 0)
    assert _write(_bytes(), [None]) == (b"", 1)  # NullSinkData → empty object, read back as an empty value
    with pytest.raises(DataError) as caught:
        _write(_bytes(), [b"a", b"b"])
    assert "offset 1" in str(caught.value) and "'flush.count'=1" in str(caught.value)


def _read(fmt, data: bytes, ctx: FileContext = CTX) -> list[dict]:
    return [r for batch in fmt.read(io.BytesIO(data), ctx) for r in to_dicts(batch)]


def test_lenses_text_reads_lines_as_values_counting_offsets_back_from_the_name():
    """A golden TEXT object as TextFormatWriter writes it: values then ``\\n``; Source.getLines ends lines at
    ``\\n``, ``\\r\\n`` and ``\\r``; offsets count back from the name's last offset (2)."""
    rows = _read(LensesTextFormat(None), b"a\r\nb \\n\nc")  # type: ignore[arg-type]
    assert [(r["key"], r["value"], r["offset"], r["headers"]) for r in rows] == [
        (None, b"a", 0, []),
        (None, b"b \\n", 1, []),
        (None, b"c", 2, []),
    ]
    assert [r["value"] for r in _read(LensesTextFormat(None), b"x\ry\n\n")] == [b"x", b"y", b""]  # type: ignore[arg-type]
    assert _read(LensesTextFormat(None), b"") == []  # type: ignore[arg-type]


def test_lenses_text_not_utf8_is_an_error_naming_the_object_and_line():
    with pytest.raises(FormatError) as caught:
        _read(LensesTextFormat(None), b"ok\n\xff\n")  # type: ignore[arg-type]
    assert "line 2" in str(caught.value) and CTX.object_key in str(caught.value)


def test_lenses_bytes_reads_the_whole_object_as_one_value():
    ctx = FileContext("t", 0, 0, "p/t/0/000000000007_1_1.bytes", last_offset=7)
    assert [(r["key"], r["value"], r["offset"]) for r in _read(LensesBytesFormat(None), b"\x00\n\xff", ctx)] == [  # type: ignore[arg-type]
        (None, b"\x00\n\xff", 7)
    ]
    assert [r["value"] for r in _read(LensesBytesFormat(None), b"", ctx)] == [b""]  # type: ignore[arg-type]
