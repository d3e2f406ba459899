"""JsonFormat: Confluent-compatible lines, every value kind, reference readers, and corrupt input."""

import base64
import gzip
import subprocess

import duckdb
import orjson
import pyarrow as pa
import pytest

from kafka_s3.core.converters.base import Logical
from kafka_s3.core.converters.bytearray import ByteArrayConverter
from kafka_s3.core.converters.json import JsonConverter
from kafka_s3.core.converters.string import StringConverter
from kafka_s3.core.errors import FormatError
from kafka_s3.core.formats.json import JsonFormat
from kafka_s3.core.records import make_batch, to_dicts
from tests.support.formats import CTX, read_object, sample_records, sink_config, write_object


def json_format(converter=None, role="value", envelope=False, **options):
    return JsonFormat(sink_config("json", **options), role=role, converter=converter, envelope=envelope)


def write_values(fmt, raw_values):
    records = make_batch([{"offset": i, "value": v} for i, v in enumerate(raw_values)])
    ((_, values),) = fmt.converter.to_logical("t", records.column("value")).runs
    return write_object(fmt, [(records, values)])


def test_schemaless_json_values_are_compact_lines_each_ending_with_newline():
    fmt = json_format(JsonConverter({"schemas.enable": "false"}, is_key=False))
    data = write_values(fmt, [b'{ "a": 1, "b": [true, null] }', b'"caf\xc3\xa9"', b" 42 "])
    assert data == b'{"a":1,"b":[true,null]}\n"caf\xc3\xa9"\n42\n'


def test_raw_bytes_render_as_base64_strings_and_text_unescaped():
    assert write_values(json_format(ByteArrayConverter({}, False)), [b"\x00\xff", b""]) == b'"AP8="\n""\n'
    assert write_values(json_format(StringConverter({}, False)), ['é\n"'.encode()]) == '"é\\n\\""\n'.encode()


def test_null_values_are_null_lines():
    fmt = json_format(ByteArrayConverter({}, False), behavior__on__null__values="write")
    assert write_values(fmt, [None, b"a"]) == b'null\n"YQ=="\n'


def test_typed_values_render_as_connect_json_objects():
    schema = {
        "type": "struct",
        "fields": [
            {"type": "bytes", "optional": False, "field": "raw"},
            {
                "type": "bytes",
                "name": "org.apache.kafka.connect.data.Decimal",
                "parameters": {"scale": "1"},
                "field": "d",
            },
            {"type": "int32", "name": "org.apache.kafka.connect.data.Date", "field": "day"},
            {"type": "int32", "name": "org.apache.kafka.connect.data.Time", "field": "t"},
            {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "field": "ts"},
            {"type": "map", "keys": {"type": "int8"}, "values": {"type": "string"}, "field": "m"},
        ],
    }
    payload = {"raw": "AAE=", "d": "/w==", "day": 3, "t": 1000, "ts": 1700000000123, "m": [[1, "x"]]}
    fmt = json_format(JsonConverter({}, False))
    data = write_values(fmt, [orjson.dumps({"schema": schema, "payload": payload})])
    assert data == b'{"raw":"AAE=","d":"/w==","day":3,"t":1000,"ts":1700000000123,"m":[[1,"x"]]}\n'


def test_keys_and_headers_roles():
    records = sample_records(2)
    keys = json_format(ByteArrayConverter({}, True), role="keys")
    ((_, key_values),) = keys.converter.to_logical("t", records.column("key")).runs
    assert write_object(keys, [(records, key_values)]) == b'null\n"azE="\n'
    headers = json_format(role="headers")
    assert write_object(headers, [(records, None)]) == (
        b'[]\n[{"key":"h","value":"MQ=="},{"key":"h","value":null},{"key":"x","value":"AA=="}]\n'
    )


def test_envelope_line_has_fixed_field_order():
    fmt = json_format(envelope=True)
    records = make_batch(
        [
            {
                "offset": 7,
                "partition": 2,
                "topic": "t",
                "key": b"k",
                "value": None,
                "timestamp": 5,
                "timestampType": 1,
                "headers": [("h", None)],
            }
        ]
    )
    assert write_object(fmt, [(records, None)]) == (
        b'{"topic":"t","partition":2,"offset":7,"timestamp":5,"timestampType":1,"key":"aw==","value":null,'
        b'"headers":[{"key":"h","value":null}]}\n'
    )


def test_gzip_object_is_gzip_and_decompresses_with_gzip_tool(tmp_path):
    fmt = json_format(envelope=True, s3__compression__type="gzip")
    data = write_object(fmt, [(sample_records(4), None)])
    path = tmp_path / f"obj{fmt.extension}"
    path.write_bytes(data)
    subprocess.run(["gzip", "-d", str(path)], check=True)
    assert (tmp_path / "obj.json").read_bytes() == gzip.decompress(data)
    assert len((tmp_path / "obj.json").read_bytes().splitlines()) == 4


@pytest.mark.parametrize(
    "converter, raw, expected",
    [
        (ByteArrayConverter({}, False), [b"\x00", None], [b"\x00", None]),
        (StringConverter({}, False), ["é".encode(), None], ["é".encode(), None]),
        (JsonConverter({"schemas.enable": "false"}, False), [b'{"a": 1}', None], [b'{"a":1}', None]),
    ],
)
def test_values_read_back_through_the_converter(converter, raw, expected):
    fmt = json_format(converter, behavior__on__null__values="write")
    rows = to_dicts(read_object(fmt, write_values(fmt, raw)))
    assert [row["value"] for row in rows] == expected


def test_without_converter_lines_are_read_as_base64_bytes():
    fmt = json_format()
    (batch,) = read_object(fmt, b'"YQ=="\nnull\n')
    assert batch.column("value").to_pylist() == [b"a", None]


def test_typed_values_restore_as_json_payload():
    schema = {"type": "struct", "fields": [{"type": "int64", "field": "n"}], "optional": False}
    fmt = json_format(JsonConverter({}, False))
    data = write_values(fmt, [orjson.dumps({"schema": schema, "payload": {"n": 1}})])
    assert [row["value"] for row in to_dicts(read_object(fmt, data))] == [b'{"n":1}']


def test_last_line_without_newline_still_counts():
    (batch,) = read_object(json_format(), b'"YQ=="\n"Yg=="')
    assert batch.column("value").to_pylist() == [b"a", b"b"]


@pytest.mark.parametrize(
    "fmt, data, line, message",
    [
        (json_format(), b'"YQ=="\n{"a":\n', 2, "invalid JSON line"),
        (json_format(), b'"YQ=="\n"Y!Q="\n', 2, "invalid JSON line"),
        (json_format(StringConverter({}, False)), b'"a"\n"b"\n3\n', 3, "expected a JSON string"),
        (json_format(role="headers"), b'[]\n[{"value":null}]\n', 2, "invalid JSON line"),
        (
            json_format(envelope=True),
            b'{"topic":"t","partition":0,"offset":1,"timestampType":0}\n{"topic":"t","partition":0,"timestampType":0}\n',
            2,
            "without offset",
        ),
        (
            json_format(envelope=True),
            b'{"topic":"t","partition":0,"offset":1,"timestampType":0}\n{"topic":"t","partition":0,"offset":"x","timestampType":0}\n',
            2,
            "invalid record",
        ),
    ],
)
def test_bad_lines_raise_format_error_naming_object_and_line(fmt, data, line, message):
    with pytest.raises(FormatError, match=message) as error:
        read_object(fmt, data)
    assert error.value.object_key == CTX.object_key
    assert error.value.position == f"line {line}"
    assert f"in {CTX.object_key} at line {line}" in str(error.value)


def test_truncated_gzip_object_raises_format_error():
    fmt = json_format(envelope=True, s3__compression__type="gzip")
    data = write_object(fmt, [(sample_records(20), None)])
    with pytest.raises(FormatError, match="truncated gzip") as error:
        read_object(fmt, data[:-9])
    assert error.value.object_key == CTX.object_key and error.value.position.startswith("byte ")


def test_duckdb_reads_the_json_lines(tmp_path):
    fmt = json_format(envelope=True)
    path = tmp_path / "orders.json"
    path.write_bytes(write_object(fmt, [(sample_records(6), None)]))
    query = 'select "offset", "timestamp", from_base64("value") from read_json(?, format = ?) order by 1'
    rows = duckdb.execute(query, [str(path), "newline_delimited"]).fetchall()
    expected = [(r["offset"], r["timestamp"], r["value"]) for r in to_dicts(sample_records(6))]
    assert rows == expected


def test_json_values_written_by_jsonconverter_read_in_duckdb(tmp_path):
    fmt = json_format(JsonConverter({"schemas.enable": "false"}, False))
    path = tmp_path / "values.json"
    path.write_bytes(write_values(fmt, [b'{"city": "Paris", "n": 1}', b'{"city": "Lyon", "n": 2}']))
    assert duckdb.sql(f"select city, n from read_json('{path}') order by n").fetchall() == [("Paris", 1), ("Lyon", 2)]


def test_base64_matches_standard_alphabet():
    data = write_values(json_format(ByteArrayConverter({}, False)), [bytes(range(256))])
    assert orjson.loads(data) == base64.b64encode(bytes(range(256))).decode()


def test_json_kind_values_with_nulls_join_without_copy_errors():
    fmt = json_format(JsonConverter({"schemas.enable": "false"}, False), behavior__on__null__values="write")
    records = make_batch([{"offset": 0}, {"offset": 1}])
    values = Logical("json", pa.array([None, b"[1]"], pa.binary()))
    assert write_object(fmt, [(records, values)]) == b"null\n[1]\n"
