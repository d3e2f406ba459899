"""ByteArrayFormat: raw bytes plus separator per record, as Confluent's connector writes them."""

import subprocess

import pytest

from kafka_s3.core.config.loader import read_properties_text
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.converters.json import JsonConverter
from kafka_s3.core.converters.string import StringConverter
from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.formats.bytearray import ByteArrayFormat
from kafka_s3.core.records import make_batch
from tests.support.formats import read_object, sample_records, sink_config, write_object


def raw_records(*values):
    return make_batch([{"offset": i, "key": b"key%d" % i, "value": v} for i, v in enumerate(values)])


BASE = {"name": "t", "topics": "orders", "flush.size": "3", "s3.bucket.name": "b", "format.class": "bytearray"}


def write_raw(fmt, records):
    return write_object(fmt, [(records, None)])


def test_each_value_is_followed_by_a_newline_including_the_last():
    fmt = ByteArrayFormat(sink_config("bytearray"))
    assert write_raw(fmt, raw_records(b"a", b"", b"\x00\xff")) == b"a\n\n\x00\xff\n"


def test_raw_bytes_are_written_whatever_the_converter():
    fmt = ByteArrayFormat(sink_config("bytearray"), converter=JsonConverter({}, is_key=False))
    assert write_raw(fmt, raw_records(b'{"not": "a connect envelope"}')) == b'{"not": "a connect envelope"}\n'


def test_null_value_is_an_empty_record():
    fmt = ByteArrayFormat(sink_config("bytearray", behavior__on__null__values="write"))
    assert write_raw(fmt, raw_records(None, b"x")) == b"\nx\n"


def test_keys_role_writes_raw_keys():
    fmt = ByteArrayFormat(sink_config("bytearray"), role="keys", converter=StringConverter({}, is_key=True))
    assert write_raw(fmt, raw_records(b"a", b"b")) == b"key0\nkey1\n"


@pytest.mark.issue(15, item=3)
@pytest.mark.parametrize(
    "raw, separator",
    [
        ("\r\n", b"\r\n"),
        (" ", b" "),  # the raw setting: the typed value is stripped to ""
        ("\\n", b"\\n"),  # a backslash and an n: no unescaping
        ("\\t|\\\\", b"\\t|\\\\"),
        ("\x00", b"\x00"),
        ("é", "é".encode()),
        ("--", b"--"),
    ],
)
def test_separator_is_the_raw_setting_verbatim(raw, separator):
    """Confluent's S3SinkConnectorConfig.getFormatByteArrayLineSeparator returns originalsStrings()'s value as is and
    ByteArrayRecordWriterProvider writes its bytes after every record (unescapeJava was removed in 99a64999)."""
    fmt = ByteArrayFormat(sink_config("bytearray", format__bytearray__separator=raw))
    assert fmt.separator == separator
    assert write_raw(fmt, raw_records(b"a", b"b")) == b"a" + separator + b"b" + separator


@pytest.mark.issue(15, item=3)
def test_separator_escapes_are_the_properties_files_only():
    """``\\n`` in a .properties file is a newline (java.util.Properties' escaping); ``\\\\n`` stays a backslash and
    an n, as Confluent writes it."""
    newline = SINK.parse({**BASE, **read_properties_text("format.bytearray.separator=\\r\\n\n")})
    literal = SINK.parse({**BASE, **read_properties_text("format.bytearray.separator=\\\\n\n")})

    assert ByteArrayFormat(newline).separator == b"\r\n"
    assert ByteArrayFormat(literal).separator == b"\\n"


def test_reader_splits_on_separator_and_keeps_a_tail_without_one():
    fmt = ByteArrayFormat(sink_config("bytearray", format__bytearray__separator="||"))
    (batch,) = read_object(fmt, b"a||||b||tail")
    assert batch.column("value").to_pylist() == [b"a", b"", b"b", b"tail"]


def test_keys_object_reads_into_the_key_column():
    fmt = ByteArrayFormat(sink_config("bytearray"), role="keys")
    (batch,) = read_object(fmt, b"k1\nk2\n")
    assert batch.column("key").to_pylist() == [b"k1", b"k2"]
    assert batch.column("value").null_count == 2


def test_gzip_object_decompresses_with_gzip_tool(tmp_path):
    fmt = ByteArrayFormat(sink_config("bytearray", s3__compression__type="gzip"))
    records = sample_records(5)
    path = tmp_path / f"orders+3+0000001200{fmt.extension}"
    path.write_bytes(write_raw(fmt, records))
    assert path.name.endswith(".bin.gz")
    subprocess.run(["gzip", "-d", str(path)], check=True)
    expected = b"".join((v or b"") + b"\n" for v in records.column("value").to_pylist())
    assert (tmp_path / "orders+3+0000001200.bin").read_bytes() == expected


def test_truncated_gzip_raises_format_error():
    fmt = ByteArrayFormat(sink_config("bytearray", s3__compression__type="gzip"))
    data = write_raw(fmt, sample_records(50))
    with pytest.raises(FormatError, match="truncated gzip"):
        read_object(fmt, data[: len(data) - 4])


def test_headers_role_is_refused_with_alternatives():
    with pytest.raises(ConfigError, match="headers.format.class=avro") as error:
        ByteArrayFormat(sink_config("bytearray"), role="headers")
    assert error.value.key == "headers.format.class"


def test_envelope_mode_is_refused_with_alternatives():
    with pytest.raises(ConfigError, match="store.envelope") as error:
        ByteArrayFormat(sink_config("bytearray"), envelope=True)
    assert error.value.key == "format.class"


def test_empty_separator_writes_but_cannot_be_read_back():
    fmt = ByteArrayFormat(sink_config("bytearray", format__bytearray__separator=""))
    assert write_raw(fmt, raw_records(b"a", b"b")) == b"ab"
    with pytest.raises(ConfigError, match="cannot be split"):
        read_object(fmt, b"ab")


# ---------------------------------------------------------------------------------------------------- issue 14, item 5
def ambiguous_after(fmt, *batches) -> int:
    from tests.support.formats import CTX, WriteOnlySink

    writer = fmt.writer(WriteOnlySink(), CTX)
    for records in batches:
        writer.write(records, None)
    writer.close()
    return writer.ambiguous()


@pytest.mark.issue(14, item=5)
def test_writer_counts_values_that_cannot_be_restored_one_by_one():
    fmt = ByteArrayFormat(sink_config("bytearray", behavior__on__null__values="write"))
    # b"b\nc" and b"e\n" split into two records, a tombstone comes back as an empty value; b"" is fine.
    assert ambiguous_after(fmt, raw_records(b"a", b"b\nc", None), raw_records(b"", b"d", b"e\n")) == 3
    assert ambiguous_after(fmt, raw_records(b"a", b"", b"x")) == 0


@pytest.mark.issue(14, item=5)
def test_a_value_ending_in_part_of_a_longer_separator_is_counted():
    fmt = ByteArrayFormat(sink_config("bytearray", format__bytearray__separator="--"))
    # "a-" + "--" reads back as "a" then "-": the separator is found one byte early.
    assert ambiguous_after(fmt, raw_records(b"a-", b"b", b"c--d", b"-e")) == 2


@pytest.mark.issue(14, item=5)
def test_keys_sidecar_counts_keys_holding_the_separator():
    fmt = ByteArrayFormat(sink_config("bytearray"), role="keys")
    records = make_batch([{"offset": i, "key": k, "value": b"v"} for i, k in enumerate([b"a", b"b\n", None])])
    assert ambiguous_after(fmt, records) == 1
