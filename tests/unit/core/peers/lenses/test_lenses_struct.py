"""Issue 15 item 6 (B3): a Lenses sink configuration's ``STOREAS AVRO``/``PARQUET`` objects: the schema and records
Lenses' sink writes, checked against facts read in Lenses' source, never against our own writer.

LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/src/main/scala/io/lenses/streamreactor/connect/cloud/
common/``; SR = confluentinc/schema-registry ``avro-data/.../AvroData.java``; AK = apache/kafka ``connect/``.

- ``sink/transformers/EnvelopeWithSchemaTransformer``: ``envelopeSchema`` (key, value, headers, metadata, in that
  order; key/value left out without a schema; ``headersSchema``: headers sorted by name, each ``toOptional``, no
  headers → no field), ``MetadataSchema`` (``SchemaBuilder.struct().field("timestamp", INT64_SCHEMA).optional()…``:
  the struct is optional, its four fields required), ``toOptional`` (a struct keeps its fields but not its name, an
  INT64 Timestamp becomes a plain ``OPTIONAL_INT64_SCHEMA``, Date/Time/Decimal keep their logical name);
- ``sink/CloudSinkTask.put`` + ``sink/conversion/ValueToSinkDataConverter``: the converters' schemas
  (StringConverter ``OPTIONAL_STRING_SCHEMA``, ByteArrayConverter ``OPTIONAL_BYTES_SCHEMA``); header values typed by
  AK ``storage/SimpleHeaderConverter.toConnectHeader`` → ``data/Values.parseString`` (``byteValueExact``,
  ``shortValueExact``, ``intValueExact``, ``longValueExact``, then ``FLOAT32`` when finite and ``scale() != 0``,
  then ``FLOAT64``);
- ``sink/conversion/ToAvroDataConverter``: AvroData (SR ``fromConnectSchema``: unnamed structs
  ``io.confluent.connect.avro.ConnectDefault`` then ``ConnectDefault2``… (``getNameOrDefault``, outer first), an
  optional schema ``["null", T]`` with field default null (``addAvroRecordField``), ``connect.type`` for int8/int16,
  ``connect.name`` for named schemas); ``convertSchema(None)``: "Schema-less data is not supported for Avro/Parquet";
- ``formats/writer/AvroFormatWriter``: codec from ``connect.s3.compression.codec`` (UNCOMPRESSED → ``nullCodec``;
  DEFLATE/XZ/ZSTD need a level), ``fileWriter.flush()`` after each ``append`` → one record per block; Java's
  ``DataFileWriter`` keeps its metadata in a ``java.util.HashMap``: ``avro.schema`` before ``avro.codec`` (checked on
  the JVM);
- ``formats/writer/ParquetFormatWriter``: ``AvroParquetWriter`` (parquet-avro ``AvroSchemaConverter.convert``: the root
  must be a record), ``writer.model.name=avro``, ``parquet.avro.schema``;
- ``config/CompressionCodecSettings``: ``connect.s3.compression.codec`` defaults to UNCOMPRESSED.
"""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow.parquet as pq
import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.converters.connect_schema import DATE, DECIMAL, TIMESTAMP, ConnectSchema
from kafka_s3.core.errors import ConfigError, DataError
from kafka_s3.core.formats import REGISTRY
from kafka_s3.core.formats.avro_container import MAGIC
from kafka_s3.core.formats.base import FileContext
from kafka_s3.core.peers.lenses.config import split_statements
from kafka_s3.core.peers.lenses.struct_rows import converters_of
from kafka_s3.core.peers.lenses.struct_schemas import header_schema_and_value, to_optional
from kafka_s3.core.records import make_batch

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
STRING = "org.apache.kafka.connect.storage.StringConverter"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
JSON = "org.apache.kafka.connect.json.JsonConverter"
T0 = 1_577_849_400_000
METADATA = (
    '{"name":"metadata","type":["null",{"type":"record","name":"%s","fields":[{"name":"timestamp","type":"long"},'
    '{"name":"topic","type":"string"},{"name":"partition","type":"int"},{"name":"offset","type":"long"}]}],'
    '"default":null}'
)


def _config(store_as: str, envelope: bool, value: str = STRING, key: str = STRING, **extra: str):
    properties = "PROPERTIES('store.envelope'=true)" if envelope else ""
    raw = {
        "name": "lenses",
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": f"INSERT INTO b:p SELECT * FROM t STOREAS {store_as} {properties}",
        "key.converter": key,
        "value.converter": value,
        **extra,
    }
    return SINK.parse(split_statements(raw)[0])


def _write(config, records) -> bytes:
    fmt = REGISTRY.resolve(config["format.class"])(config, "value", None, config["store.envelope"])
    sink = io.BytesIO()
    writer = fmt.writer(sink, FileContext("t", 0, records[0]["offset"], "k"))
    writer.write(make_batch(records), None)
    writer.close()
    return sink.getvalue()


def _avro(body: bytes) -> tuple[dict, list, list[int]]:
    reader = fastavro.block_reader(io.BytesIO(body))
    blocks = list(reader)
    return reader.metadata, [d for b in blocks for d in b], [b.num_records for b in blocks]


# --------------------------------------------------------------------------------------------- configuration
@pytest.mark.parametrize(("store_as", "format_class"), [("AVRO", "lenses_avro"), ("PARQUET", "lenses_parquet")])
def test_lenses_sink_storeas_avro_parquet_writes_lenses_layout_without_fallback_warning(store_as, format_class):
    config = _config(store_as, True)
    assert config["format.class"] == format_class
    assert config.warnings == []
    # with a keys sidecar Lenses' layout cannot hold the backup: it still falls back, and says so
    fallback = _config(store_as, True, **{"store.kafka.keys": "true"})
    assert fallback["format.class"] == store_as.lower()
    assert any("Confluent's layout" in w for w in fallback.warnings)


def test_lenses_compression_codec_defaults_to_uncompressed_and_maps_to_the_format_codecs():
    assert _config("AVRO", True)["avro.codec"] == "null"
    assert _config("PARQUET", True)["parquet.codec"] == "none"  # not Confluent's snappy default
    assert _config("AVRO", True, **{"connect.s3.compression.codec": "SNAPPY"})["avro.codec"] == "snappy"
    deflate = _config("AVRO", True, **{"connect.s3.compression.codec": "DEFLATE", "connect.s3.compression.level": "4"})
    assert (deflate["avro.codec"], deflate["avro.deflate.level"]) == ("deflate", 4)
    assert _config("PARQUET", True, **{"connect.s3.compression.codec": "GZIP"})["parquet.codec"] == "gzip"
    with pytest.raises(ConfigError) as missing_level:
        _config("AVRO", True, **{"connect.s3.compression.codec": "DEFLATE"})
    assert missing_level.value.key == "connect.s3.compression.level"
    with pytest.raises(ConfigError) as not_avro:  # AvroFormatWriter has no GZIP case
        _config("AVRO", True, **{"connect.s3.compression.codec": "GZIP"})
    assert not_avro.value.key == "connect.s3.compression.codec"


def test_lenses_avro_parquet_refuse_schemaless_json_naming_the_converter():
    schemaless = {"value.converter.schemas.enable": "false"}
    for store_as in ("AVRO", "PARQUET"):
        config = _config(store_as, True, value=JSON, **schemaless)
        with pytest.raises(ConfigError) as refused:
            REGISTRY.resolve(config["format.class"])(config, "value", None, True)
        assert refused.value.key == "value.converter"
    # plain Parquet needs record values (parquet-avro: "Avro schema must be a record")
    config = _config("PARQUET", False)
    with pytest.raises(ConfigError) as refused:
        REGISTRY.resolve(config["format.class"])(config, "value", None, False)
    assert refused.value.key == "value.converter"


# ---------------------------------------------------------------------------------------------------- schemas
def test_to_optional_makes_schemas_optional_as_lenses_envelope_transformer_does():
    order = ConnectSchema("struct", name="com.acme.Order", version=3, fields=(("id", ConnectSchema("int32")),))
    assert to_optional(order) == ConnectSchema("struct", optional=True, fields=(("id", ConnectSchema("int32")),))
    assert to_optional(ConnectSchema("int64", name=TIMESTAMP, version=1)) == ConnectSchema("int64", optional=True)
    assert to_optional(ConnectSchema("int32", name=DATE, version=1)) == ConnectSchema(
        "int32", optional=True, name=DATE, version=1
    )
    decimal = ConnectSchema(
        "bytes", name=DECIMAL, version=1, parameters={"scale": "2", "connect.decimal.precision": "9"}
    )
    assert to_optional(decimal) == ConnectSchema(
        "bytes", optional=True, name=DECIMAL, version=1, parameters={"scale": "2"}
    )
    assert to_optional(ConnectSchema("string", name="a.Name", doc="d")) == ConnectSchema("string", optional=True)
    already = ConnectSchema("string", optional=True, name="kept")
    assert to_optional(already) is already


@pytest.mark.parametrize(
    ("text", "typ", "value"),
    [
        ("7", "int8", 7),
        ("-128", "int8", -128),
        ("128", "int16", 128),
        ("70000", "int32", 70000),
        ("5000000000", "int64", 5_000_000_000),
        ("1.0", "int8", 1),  # byteValueExact: no fractional part
        ("1e2", "int8", 100),
        ("1.5", "float", 1.5),
        ("1e39", "double", 1e39),  # beyond a float: FLOAT64
        ("true", "boolean", True),
        ("false", "boolean", False),
        ("True", "string", "True"),  # TRUE_LITERAL is "true"
        (" true ", "boolean", True),  # a single token, surrounding whitespace ignored
        ("true}", "string", "true}"),
        ("[abc", "string", "[abc"),  # not an array: Values reverts to the whole string
        ("t1", "string", "t1"),
        ("", "string", ""),
        ("5 apples", "string", "5 apples"),
    ],
)
def test_header_values_are_typed_as_connects_simple_header_converter_types_them(text, typ, value):
    schema, parsed = header_schema_and_value("h", text.encode(), "t[0] offset 0")
    assert (schema, parsed) == (ConnectSchema(typ), value)


@pytest.mark.parametrize("text", ["[1,2]", "{a:1}", "2020-01-01", "12:30:00.000Z", "99999999999999999999", "null"])
def test_headers_connect_would_type_otherwise_are_refused(text):
    with pytest.raises(DataError, match="header 'h'"):
        header_schema_and_value("h", text.encode(), "t[0] offset 0")


# ------------------------------------------------------------------------------------------------ Avro objects
def test_lenses_avro_envelope_has_lenses_schema_records_and_a_block_per_record():
    records = [
        {"key": b"k1", "value": b"apple", "offset": 4, "timestamp": T0, "headers": [("trace", b"t1"), ("n", b"7")]},
        {"key": None, "value": None, "offset": 5, "timestamp": T0 + 1, "headers": [("n", b"8"), ("trace", b"t2")]},
    ]
    body = _write(_config("AVRO", True), records)

    metadata, datums, blocks = _avro(body)
    assert body.startswith(MAGIC)
    assert list(metadata) == ["avro.schema", "avro.codec"]  # java.util.HashMap order (JVM)
    assert metadata["avro.codec"] == "null"
    headers = (
        '{"name":"headers","type":{"type":"record","name":"ConnectDefault2","fields":['
        '{"name":"n","type":["null",{"type":"int","connect.type":"int8"}],"default":null},'
        '{"name":"trace","type":["null","string"],"default":null}]}}'
    )
    assert metadata["avro.schema"] == (
        '{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro","fields":['
        '{"name":"key","type":["null","string"],"default":null},'
        '{"name":"value","type":["null","string"],"default":null},'
        + headers
        + ","
        + METADATA % "ConnectDefault3"
        + "]}"
    )
    assert datums == [
        {"key": "k1", "value": "apple", "headers": {"n": 7, "trace": "t1"},
         "metadata": {"timestamp": T0, "topic": "t", "partition": 0, "offset": 4}},
        {"key": None, "value": None, "headers": {"n": 8, "trace": "t2"},
         "metadata": {"timestamp": T0 + 1, "topic": "t", "partition": 0, "offset": 5}},
    ]  # fmt: skip
    assert blocks == [1, 1]  # flushed after every record


def test_lenses_avro_envelope_without_headers_and_bytes_key():
    records = [{"key": b"\x00\xff", "value": b"v", "offset": 0, "timestamp": T0}]
    metadata, datums, _ = _avro(_write(_config("AVRO", True, key=BYTES), records))
    assert json.loads(metadata["avro.schema"])["fields"][0] == {
        "name": "key",
        "type": ["null", "bytes"],
        "default": None,
    }
    assert [f["name"] for f in json.loads(metadata["avro.schema"])["fields"]] == ["key", "value", "metadata"]
    assert metadata["avro.schema"].endswith(METADATA % "ConnectDefault2" + "]}")  # no headers struct before it
    assert datums[0]["key"] == b"\x00\xff"


def test_lenses_avro_envelope_struct_value_loses_its_name():
    """A JsonConverter (schemas.enable=true) value named ``com.acme.Order``: ``toOptional`` rebuilds it unnamed, so
    AvroData names it ``ConnectDefault2`` (after the envelope); its fields keep their schemas."""
    envelope = {
        "schema": {
            "type": "struct",
            "name": "com.acme.Order",
            "optional": False,
            "fields": [
                {"field": "id", "type": "int32", "optional": False},
                {"field": "sku", "type": "string", "optional": True},
            ],
        },
        "payload": {"id": 1, "sku": "A1"},
    }
    records = [{"key": b"k", "value": json.dumps(envelope).encode(), "offset": 0, "timestamp": T0}]
    metadata, datums, _ = _avro(_write(_config("AVRO", True, value=JSON), records))
    value_field = json.loads(metadata["avro.schema"])["fields"][1]
    assert value_field == {
        "name": "value",
        "type": [
            "null",
            {
                "type": "record",
                "name": "ConnectDefault2",
                "fields": [
                    {"name": "id", "type": "int"},
                    {"name": "sku", "type": ["null", "string"], "default": None},
                ],
            },
        ],
        "default": None,
    }
    assert metadata["avro.schema"].endswith(METADATA % "ConnectDefault3" + "]}")
    assert datums[0]["value"] == {"id": 1, "sku": "A1"}


def test_lenses_avro_without_envelope_writes_the_value_alone():
    records = [{"key": b"k", "value": b"apple", "offset": 0, "timestamp": T0}, {"value": b"pear", "offset": 1}]
    config = _config("AVRO", False)
    converter, _ = converters_of(config, None)
    fmt = REGISTRY.resolve(config["format.class"])(config, "value", converter, False)
    batch = make_batch(records)
    sink = io.BytesIO()
    writer = fmt.writer(sink, FileContext("t", 0, 0, "k"))
    writer.write(batch, converter.to_logical("t", batch.column("value")).runs[0][1])
    writer.close()
    metadata, datums, blocks = _avro(sink.getvalue())
    assert metadata["avro.schema"] == '["null","string"]'  # StringConverter's OPTIONAL_STRING_SCHEMA
    assert (datums, blocks) == (["apple", "pear"], [1, 1])


def test_lenses_envelope_refuses_a_record_without_timestamp_and_a_null_header():
    with pytest.raises(DataError, match="offset 3"):  # MetadataSchema.timestamp is a required int64
        _write(_config("AVRO", True), [{"key": b"k", "value": b"v", "offset": 3}])
    with pytest.raises(DataError, match="header 'h'"):
        _write(_config("AVRO", True), [{"value": b"v", "offset": 0, "timestamp": T0, "headers": [("h", None)]}])


def test_lenses_envelope_schema_changes_with_header_names_and_types():
    """Where the envelope's schema changes, Lenses starts a new object (AvroFormatWriter.rolloverFileOnSchemaChange):
    the format tells the rotation where."""
    config = _config("PARQUET", True)
    fmt = REGISTRY.resolve(config["format.class"])(config, "value", None, True)
    records = [
        {"value": b"a", "offset": 0, "timestamp": T0, "headers": [("n", b"1")]},
        {"value": b"b", "offset": 1, "timestamp": T0, "headers": [("n", b"2")]},
        {"value": b"c", "offset": 2, "timestamp": T0, "headers": [("n", b"300")]},  # int16
        {"value": b"d", "offset": 3, "timestamp": T0, "headers": [("m", b"2")]},
        {"value": b"e", "offset": 4, "timestamp": T0},
        {"value": b"f", "offset": 5, "timestamp": T0, "headers": [("n", b"9")]},
    ]
    codes, names = fmt.row_schemas(make_batch(records))
    assert list(codes) == [0, 0, 1, 2, 3, 0]
    assert len(names) == 4


# --------------------------------------------------------------------------------------------- Parquet objects
def test_lenses_parquet_envelope_columns_metadata_and_codec():
    records = [
        {"key": b"k1", "value": b"apple", "offset": 0, "timestamp": T0, "headers": [("n", b"7"), ("f", b"1.5")]},
    ]
    body = _write(_config("PARQUET", True, key=BYTES), records)
    parquet = pq.ParquetFile(io.BytesIO(body))
    metadata = parquet.metadata
    assert metadata.metadata[b"writer.model.name"] == b"avro"
    avro = json.loads(metadata.metadata[b"parquet.avro.schema"])
    assert [f["name"] for f in avro["fields"]] == ["key", "value", "headers", "metadata"]
    assert avro["fields"][2]["type"]["fields"] == [
        {"name": "f", "type": ["null", "float"], "default": None},
        {"name": "n", "type": ["null", {"type": "int", "connect.type": "int8"}], "default": None},
    ]
    assert metadata.row_group(0).column(0).compression == "UNCOMPRESSED"
    schema = parquet.schema
    # parquet-avro: ["null", T] optional, a record a group; an Avro int (Connect int8 too) an INT32
    assert schema.column(0).max_definition_level == 1  # key: optional binary
    n = next(i for i in range(len(schema)) if schema.column(i).path == "headers.n")
    assert schema.column(n).physical_type == "INT32" and schema.column(n).logical_type.type == "NONE"
    timestamp = next(i for i in range(len(schema)) if schema.column(i).path == "metadata.timestamp")
    assert schema.column(timestamp).max_definition_level == 1  # required inside the optional metadata group
    assert parquet.read().to_pylist() == [
        {"key": b"k1", "value": "apple", "headers": {"f": 1.5, "n": 7},
         "metadata": {"timestamp": T0, "topic": "t", "partition": 0, "offset": 0}}
    ]  # fmt: skip


def test_lenses_parquet_without_envelope_writes_the_record_as_columns():
    """Plain Parquet: the value's record is the file's root (parquet-avro), its fields the columns; the schema is
    the value's own (named: AvroData keeps ``connect.name``)."""
    envelope = {
        "schema": {
            "type": "struct",
            "name": "com.acme.Order",
            "optional": False,
            "fields": [
                {"field": "id", "type": "int32", "optional": False},
                {"field": "sku", "type": "string", "optional": True},
            ],
        },
        "payload": {"id": 1, "sku": None},
    }
    config = _config("PARQUET", False, value=JSON)
    converter, _ = converters_of(config, None)
    fmt = REGISTRY.resolve(config["format.class"])(config, "value", converter, False)
    batch = make_batch([{"value": json.dumps(envelope).encode(), "offset": 0, "timestamp": T0}])
    values = converter.to_logical("t", batch.column("value")).runs[0][1]
    sink = io.BytesIO()
    writer = fmt.writer(sink, FileContext("t", 0, 0, "k"))
    writer.write(batch, values)
    writer.close()
    parquet = pq.ParquetFile(io.BytesIO(sink.getvalue()))
    assert json.loads(parquet.metadata.metadata[b"parquet.avro.schema"]) == {
        "type": "record",
        "name": "Order",
        "namespace": "com.acme",
        "fields": [{"name": "id", "type": "int"}, {"name": "sku", "type": ["null", "string"], "default": None}],
        "connect.name": "com.acme.Order",
    }
    assert parquet.read().to_pylist() == [{"id": 1, "sku": None}]
    assert parquet.schema.column(0).max_definition_level == 0  # id: required


def test_lenses_envelope_leaves_out_a_null_struct_value_and_rolls_there():
    """JsonConverter (schemas.enable=true) gives a null value no schema (``SchemaAndValue.NULL``): LS
    ``CloudSinkTask.put`` makes it ``NullSinkData(None)`` and ``envelopeSchema`` leaves the ``value`` field out, a
    schema change (a new object); a StringConverter null key keeps ``OPTIONAL_STRING_SCHEMA``."""
    struct = {
        "schema": {
            "type": "struct",
            "optional": False,
            "fields": [{"field": "id", "type": "int32", "optional": False}],
        },
        "payload": {"id": 1},
    }
    records = [
        {"key": b"k", "value": json.dumps(struct).encode(), "offset": 0, "timestamp": T0},
        {"key": None, "value": None, "offset": 1, "timestamp": T0},
    ]
    config = _config("AVRO", True, value=JSON)
    fmt = REGISTRY.resolve(config["format.class"])(config, "value", None, True)
    codes, names = fmt.row_schemas(make_batch(records))
    assert (list(codes), len(names)) == ([0, 1], 2)
    metadata, datums, _ = _avro(_write(config, records[1:]))
    assert [f["name"] for f in json.loads(metadata["avro.schema"])["fields"]] == ["key", "metadata"]
    assert datums == [{"key": None, "metadata": {"timestamp": T0, "topic": "t", "partition": 0, "offset": 1}}]


def test_lenses_avro_snappy_blocks_are_avro_snappy_and_partitionby_keeps_lenses_directories():
    """``connect.s3.compression.codec=SNAPPY``: ``CodecFactory.snappyCodec()`` (Avro's snappy: the raw block and its
    CRC-32), read back by fastavro; with ``PARTITIONBY`` the statement keeps Lenses' layout and its ``name=value``
    directories (LS ``config/PartitionSelection.apply``: KeysAndValues by default)."""
    config = _config("AVRO", True, **{"connect.s3.compression.codec": "SNAPPY"})
    records = [{"key": b"k", "value": b"v" * 100, "offset": 0, "timestamp": T0}]
    metadata, datums, blocks = _avro(_write(config, records))
    assert (metadata["avro.codec"], datums[0]["value"], blocks) == ("snappy", "v" * 100, [1])
    raw = {
        "name": "lenses",
        "connector.class": LENSES_SINK,
        "connect.s3.kcql": "INSERT INTO b:p SELECT * FROM t PARTITIONBY _key STOREAS PARQUET "
        "PROPERTIES('store.envelope'=true)",
        "key.converter": STRING,
        "value.converter": STRING,
    }
    partitioned = SINK.parse(split_statements(raw)[0])
    assert (partitioned["format.class"], partitioned["partition.path.style"]) == ("lenses_parquet", "KeysAndValues")
    assert partitioned.warnings == []
