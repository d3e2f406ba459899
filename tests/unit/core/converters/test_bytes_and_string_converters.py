"""ByteArrayConverter and StringConverter: raw bytes and text in Arrow, and back."""

import pyarrow as pa
import pytest

from kafka_s3.core.converters import REGISTRY
from kafka_s3.core.converters.base import Logical, ValueSchema
from kafka_s3.core.converters.bytearray import ByteArrayConverter
from kafka_s3.core.converters.string import StringConverter
from kafka_s3.core.errors import ConfigError, ConversionError


def test_registry_resolves_connect_class_names():
    assert REGISTRY.resolve("org.apache.kafka.connect.converters.ByteArrayConverter") is ByteArrayConverter
    assert REGISTRY.resolve("org.apache.kafka.connect.storage.StringConverter") is StringConverter


def test_bytearray_to_logical_is_one_zero_copy_run():
    data = pa.array([b"a", None, b"", b"\xff"], pa.binary())
    converted = ByteArrayConverter({}, is_key=False).to_logical("t", data)
    assert len(converted.runs) == 1
    start, values = converted.runs[0]
    assert start == 0 and values.kind == "bytes"
    assert values.array.buffers()[2].address == data.buffers()[2].address  # the same memory, not a copy


def test_bytearray_from_logical_accepts_bytes_text_and_json():
    converter = ByteArrayConverter({}, is_key=False)
    assert converter.from_logical("t", Logical("bytes", pa.array([b"x", None]))).to_pylist() == [b"x", None]
    assert converter.from_logical("t", Logical("string", pa.array(["é", None]))).to_pylist() == ["é".encode(), None]
    assert converter.from_logical("t", Logical("json", pa.array([b'{"a":1}']))).to_pylist() == [b'{"a":1}']


def test_bytearray_refuses_typed_values_and_says_what_to_use():
    typed = Logical(
        "struct", pa.array([{"a": 1}]), ValueSchema({"type": "record"}, pa.struct([("a", pa.int64())]), "f")
    )
    with pytest.raises(ConversionError, match="JsonConverter"):
        ByteArrayConverter({}, is_key=False).from_logical("t", typed)


def test_string_decodes_utf8_and_keeps_nulls():
    data = pa.array(["héllo".encode(), None, b""], pa.binary())
    ((_, values),) = StringConverter({}, is_key=False).to_logical("t", data).runs
    assert values.kind == "string"
    assert values.array.to_pylist() == ["héllo", None, ""]


def test_string_names_the_row_of_invalid_utf8():
    data = pa.array([b"ok", b"fine", b"\xff\xfe bad"], pa.binary())
    with pytest.raises(ConversionError, match="not valid utf-8") as error:
        StringConverter({}, is_key=False).to_logical("t", data)
    assert error.value.row == 2


def test_string_honours_converter_encoding_both_ways():
    converter = StringConverter({"converter.encoding": "ISO-8859-1"}, is_key=False)
    ((_, values),) = converter.to_logical("t", pa.array([b"caf\xe9", None])).runs
    assert values.array.to_pylist() == ["café", None]
    assert converter.from_logical("t", values).to_pylist() == [b"caf\xe9", None]


def test_string_rejects_unknown_encoding_naming_the_key():
    with pytest.raises(ConfigError) as error:
        StringConverter({"converter.encoding": "klingon"}, is_key=True)
    assert error.value.key == "key.converter.converter.encoding"


def test_string_from_logical_encodes_text_and_passes_bytes():
    converter = StringConverter({}, is_key=False)
    assert converter.from_logical("t", Logical("string", pa.array(["ü", None]))).to_pylist() == ["ü".encode(), None]
    assert converter.from_logical("t", Logical("bytes", pa.array([b"\x00"]))).to_pylist() == [b"\x00"]
