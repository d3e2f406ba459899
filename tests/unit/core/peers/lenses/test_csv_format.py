"""Issue 15 item 8: CSV as Lenses writes and reads it.

Expected bytes follow LS (lensesio/stream-reactor) ``formats/writer/CsvFormatWriter`` — opencsv's ``CSVWriter``
defaults: every field quoted with ``"``, quotes doubled, ``,`` between fields, ``\\n`` after each row, a null field
empty; ``writeHeaders`` (STOREAS CSV_WITHHEADERS) puts the schema's field names first — and its test
``CsvFormatWriterTest`` ("allow all primitive types": ``"teststring","true","testBytes","32.0","64.02","8","16","32",
"64"``). Reading follows LS ``formats/reader/CsvFormatStreamReader``: each line a string value, the header line
skipped.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pytest

from kafka_s3.core.converters.base import Logical
from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.peers.lenses.csv import CsvFormat, CsvWithHeadersFormat, java_double
from kafka_s3.core.records import make_batch, to_dicts

USERS = pa.StructArray.from_arrays(
    [
        pa.array(["sam", "laura", "tom"]),
        pa.array(["mr", "ms", None]),
        pa.array([100.43, 429.06, 395.44]),
    ],
    names=["name", "title", "salary"],
)
CTX = FileContext("users", 0, 0, "topics/users/partition=0/users+0+0000000000.csv")


def _write(fmt, values: pa.StructArray, offsets=None) -> tuple[bytes, int]:
    offsets = offsets or list(range(len(values)))
    sink = io.BytesIO()
    writer = fmt.writer(sink, CTX)
    writer.write(make_batch([{"offset": o, "topic": "users"} for o in offsets]), Logical("struct", values))
    writer.close()
    return sink.getvalue(), writer.ambiguous()


def test_csv_with_headers_bytes_as_lenses_writes_them():
    data, ambiguous = _write(CsvWithHeadersFormat(None), USERS)  # type: ignore[arg-type]
    assert data == b'"name","title","salary"\n"sam","mr","100.43"\n"laura","ms","429.06"\n"tom",,"395.44"\n'
    assert ambiguous == 0


def test_csv_without_headers_and_every_primitive_type():
    values = pa.StructArray.from_arrays(
        [
            pa.array(["teststring"]),
            pa.array([True]),
            pa.array([b"testBytes"]),
            pa.array([32.0], pa.float32()),
            pa.array([64.02]),
            pa.array([8], pa.int8()),
            pa.array([16], pa.int16()),
            pa.array([32], pa.int32()),
            pa.array([64], pa.int64()),
        ],
        names=["mystring", "mybool", "mybytes", "myfloat32", "myfloat64", "myint8", "myint16", "myint32", "myint64"],
    )
    data, _ = _write(CsvFormat(None), values)  # type: ignore[arg-type]
    assert data == b'"teststring","true","testBytes","32.0","64.02","8","16","32","64"\n'


def test_quotes_are_doubled_and_line_breaks_counted_ambiguous():
    values = pa.StructArray.from_arrays([pa.array(['say "hi"', "two\nlines"])], names=["text"])
    data, ambiguous = _write(CsvFormat(None), values)  # type: ignore[arg-type]
    assert data == b'"say ""hi"""\n"two\nlines"\n'
    assert ambiguous == 1


@pytest.mark.parametrize(
    "value, text",
    [(100.43, "100.43"), (1.0, "1.0"), (1e-05, "1.0E-5"), (12345678.9, "1.23456789E7"), (-2.5e-10, "-2.5E-10")],
)
def test_doubles_as_java_writes_them(value, text):
    assert java_double(value) == text


def test_non_primitive_and_non_struct_values_are_errors():
    nested = pa.StructArray.from_arrays([pa.array([[1, 2]])], names=["list"])
    with pytest.raises(FormatError, match="offset 0: Non-primitive values not supported"):
        _write(CsvFormat(None), nested)  # type: ignore[arg-type]
    writer = CsvFormat(None).writer(io.BytesIO(), CTX)  # type: ignore[arg-type]
    with pytest.raises(FormatError, match="CSV needs struct values with a schema"):
        writer.write(make_batch([{"offset": 5, "value": b"x"}]), Logical("string", pa.array(["x"])))
    with pytest.raises(ConfigError, match="store.envelope"):
        CsvFormat(None, "value", None, True)  # type: ignore[arg-type]


def test_read_lines_as_values_skipping_the_header_row():
    data = b'"name","title"\n"sam","mr"\n"tom",\n'
    with_headers = to_dicts(list(CsvWithHeadersFormat(None).read(io.BytesIO(data), CTX)))  # type: ignore[arg-type]
    assert [(r["value"], r["offset"]) for r in with_headers] == [(b'"sam","mr"', 0), (b'"tom",', 1)]
    plain = to_dicts(list(CsvFormat(None).read(io.BytesIO(data), CTX)))  # type: ignore[arg-type]
    assert [r["value"] for r in plain] == [b'"name","title"', b'"sam","mr"', b'"tom",']
    with pytest.raises(FormatError, match="no column headers"):
        list(CsvWithHeadersFormat(None).read(io.BytesIO(b""), CTX))  # type: ignore[arg-type]
