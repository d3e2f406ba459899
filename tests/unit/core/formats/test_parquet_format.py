"""ParquetFormat: column layout per role, codecs, row groups, reference readers, errors."""

import io

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_s3.core.converters.base import Logical
from kafka_s3.core.converters.bytearray import ByteArrayConverter
from kafka_s3.core.converters.json import JsonConverter
from kafka_s3.core.converters.string import StringConverter
from kafka_s3.core.errors import ConfigError, ConversionError, FormatError
from kafka_s3.core.formats.parquet import ParquetFormat, row_sizes
from kafka_s3.core.records import HEADERS_TYPE, RECORD_SCHEMA, make_batch, to_dicts
from tests.support.formats import (
    CTX,
    WriteOnlySink,
    read_object,
    sample_records,
    sink_config,
    write_object,
)

CODECS = {"none": "UNCOMPRESSED", "snappy": "SNAPPY", "gzip": "GZIP", "zstd": "ZSTD", "lz4": "LZ4"}


def parquet_format(converter=None, role="value", envelope=False, **options):
    return ParquetFormat(sink_config("parquet", **options), role=role, converter=converter, envelope=envelope)


def write_converted(fmt, records, column="value"):
    runs = fmt.converter.to_logical("orders", records.column(column)).runs
    return write_object(fmt, [(records.slice(start, len(values)), values) for start, values in runs])


@pytest.mark.parametrize("codec, parquet_name", CODECS.items())
def test_codec_is_used_for_every_column(codec, parquet_name):
    data = write_object(parquet_format(envelope=True, parquet__codec=codec), [(sample_records(4), None)])
    metadata = pq.ParquetFile(io.BytesIO(data)).metadata
    group = metadata.row_group(0)
    assert {group.column(i).compression for i in range(group.num_columns)} == {parquet_name}


def test_raw_values_are_one_value_column_keys_one_key_column_headers_one_headers_column():
    records = sample_records(4)
    values = pq.read_table(io.BytesIO(write_converted(parquet_format(ByteArrayConverter({}, False)), records)))
    assert values.column_names == ["value"] and values.schema.field("value").type == pa.binary()
    assert values.column("value").to_pylist() == records.column("value").to_pylist()
    texts = pq.read_table(io.BytesIO(write_converted(parquet_format(StringConverter({}, False)), records)))
    assert texts.schema.field("value").type == pa.string()
    keys = pq.read_table(
        io.BytesIO(write_converted(parquet_format(ByteArrayConverter({}, True), role="keys"), records, "key"))
    )
    assert keys.column_names == ["key"] and keys.column("key").to_pylist() == records.column("key").to_pylist()
    headers = pq.read_table(io.BytesIO(write_object(parquet_format(role="headers"), [(records, None)])))
    assert headers.column_names == ["headers"] and headers.schema.field("headers").type == HEADERS_TYPE


def test_envelope_uses_the_record_schema_columns():
    table = pq.read_table(io.BytesIO(write_object(parquet_format(envelope=True), [(sample_records(3), None)])))
    assert table.schema.remove_metadata() == RECORD_SCHEMA


def test_row_groups_close_at_the_configured_size_whatever_the_batching():
    fmt = parquet_format(ByteArrayConverter({}, False), parquet__row__group__bytes="2048")
    records = make_batch([{"offset": i, "value": b"v" * 100} for i in range(100)])
    whole = write_converted(fmt, records)
    sizes = [pq.ParquetFile(io.BytesIO(whole)).metadata.row_group(i).num_rows for i in range(5)]
    assert sizes == [21, 21, 21, 21, 16]  # 21 x 100 bytes first reaches 2048
    batched = write_object(
        fmt,
        [
            (records.slice(start, size), Logical("bytes", records.column("value").slice(start, size)))
            for start, size in [(0, 7), (7, 50), (57, 43)]
        ],
    )
    assert batched == whole


def test_row_sizes_count_nested_data():
    array = pa.array(
        [{"s": "abc", "l": [1, 2]}, {"s": None, "l": []}], pa.struct([("s", pa.string()), ("l", pa.list_(pa.int64()))])
    )
    assert row_sizes(array).tolist() == [3 + 16, 0]


def test_schemaless_json_is_refused_with_the_fix():
    with pytest.raises(ConfigError, match="schemas.enable=true"):
        parquet_format(JsonConverter({"schemas.enable": "false"}, False))


def test_schemaless_json_values_are_refused_at_write_time_too():
    fmt = parquet_format(JsonConverter({}, False))  # schemas enabled, but a record carried "schema": null
    with pytest.raises(ConversionError, match="stores typed values"):
        write_object(fmt, [(sample_records(1), Logical("json", pa.array([b"{}"])))])


def test_null_record_with_required_fields_is_refused_naming_the_row():
    schema = {"type": "struct", "fields": [{"type": "int32", "field": "n"}], "optional": True}
    records = make_batch([{"offset": 0, "value": orjson.dumps({"schema": schema, "payload": {"n": 1}})}, {"offset": 1}])
    with pytest.raises(ConversionError, match="required fields") as error:
        write_converted(parquet_format(JsonConverter({}, False), behavior__on__null__values="write"), records)
    assert error.value.row == 1


def test_schema_change_within_one_object_is_refused():
    writer = parquet_format(ByteArrayConverter({}, False)).writer(WriteOnlySink(), CTX)
    records = sample_records(2)
    writer.write(records, Logical("bytes", pa.array([b"a", b"b"])))
    with pytest.raises(ConversionError, match="schema changed"):
        writer.write(records, Logical("string", pa.array(["a", "b"])))


def test_duckdb_reads_envelope_objects(tmp_path):
    path = tmp_path / f"orders+3+0000001200{parquet_format().extension}"
    path.write_bytes(write_object(parquet_format(envelope=True), [(sample_records(6), None)]))
    rows = duckdb.sql(f"select \"offset\", key, value, len(headers) from '{path}' order by 1").fetchall()
    expected = [(r["offset"], r["key"], r["value"], len(r["headers"])) for r in to_dicts(sample_records(6))]
    assert rows == expected


def test_not_a_parquet_file():
    with pytest.raises(FormatError, match="not a readable Parquet file") as error:
        read_object(parquet_format(envelope=True), b"Obj\x01 not parquet")
    assert (error.value.object_key, error.value.position) == (CTX.object_key, "footer")


def test_corrupt_row_group_names_object_and_group():
    fmt = parquet_format(ByteArrayConverter({}, False), parquet__row__group__bytes="1024")
    records = make_batch([{"offset": i, "value": bytes([i % 251]) * 400} for i in range(12)])
    data = bytearray(write_converted(fmt, records))
    metadata = pq.ParquetFile(io.BytesIO(bytes(data))).metadata
    second = metadata.row_group(1).column(0)
    start = second.dictionary_page_offset or second.data_page_offset
    data[start : start + 8] = b"\xff" * 8  # the page header of the second row group
    with pytest.raises(FormatError, match="corrupt Parquet data") as error:
        read_object(fmt, bytes(data))
    assert error.value.position == "row group 2"
    assert str(error.value).endswith(f"in {CTX.object_key} at row group 2")


def test_values_restore_through_the_converter():
    records = sample_records(5)
    fmt = parquet_format(StringConverter({}, False), behavior__on__null__values="write")
    assert [r["value"] for r in to_dicts(read_object(fmt, write_converted(fmt, records)))] == records.column(
        "value"
    ).to_pylist()
