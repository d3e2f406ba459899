"""AvroFormat: container files readable by fastavro and the reference avro package, schemas per role, errors."""

import io

import avro.datafile
import avro.io
import fastavro
import orjson
import pyarrow as pa
import pytest

from kafka_s3.core.converters.base import Logical
from kafka_s3.core.converters.bytearray import ByteArrayConverter
from kafka_s3.core.converters.json import JsonConverter
from kafka_s3.core.converters.string import StringConverter
from kafka_s3.core.errors import ConfigError, ConversionError, FormatError
from kafka_s3.core.formats.avro import AvroFormat
from kafka_s3.core.formats.envelope import HEADERS_AVRO, KAFKA_RECORD_AVRO
from kafka_s3.core.records import make_batch, to_dicts
from tests.support.formats import (
    CTX,
    WriteOnlySink,
    read_object,
    sample_records,
    sink_config,
    write_object,
)

CODECS = ["null", "deflate", "snappy", "bzip2", "xz", "zstandard"]
REFERENCE_AVRO_CODECS = [c for c in CODECS if c != "xz"]  # the avro package has no xz codec


def avro_format(converter=None, role="value", envelope=False, **options):
    return AvroFormat(sink_config("avro", **options), role=role, converter=converter, envelope=envelope)


def write_converted(fmt, records, column="value"):
    runs = fmt.converter.to_logical("orders", records.column(column)).runs
    return write_object(fmt, [(records.slice(start, len(values)), values) for start, values in runs])


def fastavro_read(data):
    reader = fastavro.reader(io.BytesIO(data))
    return reader.writer_schema, list(reader)


def reference_read(data):
    reader = avro.datafile.DataFileReader(io.BytesIO(data), avro.io.DatumReader())
    return orjson.loads(reader.get_meta("avro.schema")), list(reader)


@pytest.mark.parametrize("codec", CODECS)
def test_envelope_reads_with_fastavro_for_every_codec(codec):
    records = sample_records(300)
    data = write_object(avro_format(envelope=True, avro__codec=codec), [(records, None)])
    assert fastavro.reader(io.BytesIO(data)).codec == codec
    _, rows = fastavro_read(data)
    assert [r["offset"] for r in rows] == list(range(1200, 1500))
    assert rows[1]["headers"] == [
        {"key": "h", "value": b"1"},
        {"key": "h", "value": None},
        {"key": "x", "value": b"\x00"},
    ]


@pytest.mark.parametrize("codec", REFERENCE_AVRO_CODECS)
def test_envelope_reads_with_the_reference_avro_package(codec):
    records = sample_records(300)
    schema, rows = reference_read(write_object(avro_format(envelope=True, avro__codec=codec), [(records, None)]))
    assert schema == KAFKA_RECORD_AVRO
    expected = to_dicts(records)
    assert [(r["offset"], r["key"], r["value"]) for r in rows] == [
        (r["offset"], r["key"], r["value"]) for r in expected
    ]


def test_raw_values_use_connect_optional_schemas_as_avrodata_writes_them():
    records = sample_records(4)
    data = write_converted(avro_format(ByteArrayConverter({}, False), behavior__on__null__values="write"), records)
    schema, rows = reference_read(data)
    assert schema == ["null", "bytes"]
    assert rows == records.column("value").to_pylist()
    data = write_converted(avro_format(StringConverter({}, False), behavior__on__null__values="write"), records)
    schema, rows = reference_read(data)
    assert schema == ["null", "string"]
    assert rows == [None if v is None else v.decode() for v in records.column("value").to_pylist()]


def test_keys_and_headers_schemas():
    records = sample_records(3)
    schema, rows = fastavro_read(
        write_converted(avro_format(ByteArrayConverter({}, True), role="keys"), records, "key")
    )
    assert rows == records.column("key").to_pylist()
    schema, rows = reference_read(write_object(avro_format(role="headers"), [(records, None)]))
    assert schema == HEADERS_AVRO
    assert rows[1] == [{"key": "h", "value": b"1"}, {"key": "h", "value": None}, {"key": "x", "value": b"\x00"}]


def test_schemaless_json_is_refused_at_configuration_time_with_the_fix():
    with pytest.raises(ConfigError, match="value.converter.schemas.enable=true") as error:
        avro_format(JsonConverter({"schemas.enable": "false"}, False))
    assert error.value.key == "format.class"
    with pytest.raises(ConfigError, match="key.converter.schemas.enable=true"):
        avro_format(JsonConverter({"schemas.enable": "false"}, True), role="keys")


def test_schemaless_json_values_are_refused_at_write_time_too():
    fmt = avro_format(JsonConverter({}, False))  # schemas enabled, but a record carried "schema": null
    with pytest.raises(ConversionError, match="stores typed values"):
        write_object(fmt, [(sample_records(1), Logical("json", pa.array([b"{}"])))])


def test_null_value_with_a_required_schema_names_the_row():
    schema = {"type": "struct", "fields": [{"type": "int32", "field": "n"}], "optional": False}
    records = make_batch([{"offset": 0, "value": orjson.dumps({"schema": schema, "payload": {"n": 1}})}, {"offset": 1}])
    fmt = avro_format(JsonConverter({}, False), behavior__on__null__values="write")
    with pytest.raises(ConversionError, match="not optional") as error:
        write_converted(fmt, records)
    assert error.value.row == 1


def test_schema_change_within_one_object_is_refused():
    fmt = avro_format(ByteArrayConverter({}, False))
    writer = fmt.writer(WriteOnlySink(), CTX)
    records = sample_records(2)
    writer.write(records, Logical("bytes", pa.array([b"a", b"b"])))
    with pytest.raises(ConversionError, match="schema changed"):
        writer.write(records, Logical("string", pa.array(["a", "b"])))


def test_blocks_are_cut_by_size_and_end_with_the_objects_sync_marker():
    records = make_batch([{"offset": i, "value": b"v" * 1000} for i in range(300)])
    data = write_converted(avro_format(ByteArrayConverter({}, False)), records)
    blocks = list(fastavro.block_reader(io.BytesIO(data)))
    assert [b.num_records for b in blocks] == [64, 64, 64, 64, 44]  # 64 x 1003 bytes reaches 64000
    assert data.count(CTX.sync_marker()) == 1 + len(blocks)
    other = write_converted(avro_format(ByteArrayConverter({}, False)), records)
    assert other == data


def test_values_restore_through_the_converter():
    records = sample_records(5)
    fmt = avro_format(StringConverter({}, False), behavior__on__null__values="write")
    rows = to_dicts(read_object(fmt, write_converted(fmt, records)))
    assert [r["value"] for r in rows] == records.column("value").to_pylist()


def test_corrupt_compressed_block_names_object_and_block():
    fmt = avro_format(envelope=True, avro__codec="deflate")
    data = bytearray(write_object(fmt, [(sample_records(3000), None)]))
    second_block = data.index(CTX.sync_marker(), data.index(CTX.sync_marker()) + 16) + 16
    data[second_block + 40] ^= 0xFF
    with pytest.raises(FormatError, match="corrupt Avro data") as error:
        read_object(fmt, bytes(data))
    assert error.value.object_key == CTX.object_key
    assert error.value.position == "block 2"
    assert str(error.value).endswith(f"in {CTX.object_key} at block 2")


def test_damaged_sync_marker_names_the_block():
    fmt = avro_format(envelope=True)
    data = bytearray(write_object(fmt, [(sample_records(3000), None)]))
    first_block_end = data.index(CTX.sync_marker(), data.index(CTX.sync_marker()) + 16)
    data[first_block_end] ^= 0xFF
    with pytest.raises(FormatError, match="sync marker") as error:
        read_object(fmt, bytes(data))
    assert error.value.position == "block 1"


def test_truncated_object_names_the_block():
    data = write_object(avro_format(envelope=True), [(sample_records(300), None)])
    with pytest.raises(FormatError, match="corrupt Avro") as error:
        read_object(avro_format(envelope=True), data[:-20])
    assert error.value.position.startswith("block ")


def test_corrupt_record_names_the_record():
    records = make_batch([{"offset": i, "value": b"abc"} for i in range(3)])
    data = bytearray(write_converted(avro_format(StringConverter({}, False)), records))
    data[data.rindex(b"abc")] = 0xFF  # not UTF-8: the third record's string cannot decode
    with pytest.raises(FormatError, match="corrupt Avro record") as error:
        read_object(avro_format(StringConverter({}, False)), bytes(data))
    assert error.value.position == "record 3"


def test_not_an_avro_file():
    with pytest.raises(FormatError, match="not a readable Avro container") as error:
        read_object(avro_format(envelope=True), b"PAR1 not avro")
    assert error.value.position == "header"


def test_reading_another_kind_of_object_is_explained():
    data = write_object(avro_format(role="headers"), [(sample_records(2), None)])
    with pytest.raises(FormatError, match="not an envelope object"):
        read_object(avro_format(envelope=True), data)


@pytest.mark.issue(15, item=3)
def test_default_codec_is_null_and_always_in_the_metadata():
    """CS AvroRecordWriterProvider calls setCodec(CodecFactory.fromString(avro.codec)) for every file, so the header
    always holds avro.codec (default "null", SC StorageSinkConnectorConfig) next to avro.schema, and nothing else."""
    records = sample_records(3)
    data = write_object(avro_format(envelope=True), [(records, None)])
    reader = avro.datafile.DataFileReader(io.BytesIO(data), avro.io.DatumReader())

    assert reader.get_meta("avro.codec") == b"null"
    assert set(reader.meta) == {"avro.schema", "avro.codec"}


@pytest.mark.issue(15, item=3)
def test_the_files_schema_keeps_avrodatas_connect_properties():
    """The avro.schema written into the file is the one AvroData gives, connect.* properties included."""
    schema = {
        "type": "struct",
        "name": "shop.Order",
        "version": 2,
        "doc": "an order",
        "fields": [{"type": "int16", "optional": False, "field": "qty"}],
    }
    raw = [orjson.dumps({"schema": schema, "payload": {"qty": q}}) for q in (1, 2)]
    records = make_batch([{"offset": i, "key": None, "value": v} for i, v in enumerate(raw)])
    written, rows = reference_read(write_converted(avro_format(JsonConverter({}, False)), records))

    assert {k: written[k] for k in ("connect.name", "connect.version", "connect.doc")} == {
        "connect.name": "shop.Order",
        "connect.version": 2,
        "connect.doc": "an order",
    }
    assert written["fields"][0]["type"] == {"type": "int", "connect.type": "int16"}
    assert rows == [{"qty": 1}, {"qty": 2}]
