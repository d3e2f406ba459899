"""AvroConverter: the Schema Registry wire format decoded to typed Arrow values and written back, against
confluent-kafka's in-memory registry (``mock://``)."""

from __future__ import annotations

import json
import struct
import uuid

import fastavro
import pyarrow as pa
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference

from kafka_s3.core.converters import REGISTRY
from kafka_s3.core.errors import ConfigError, ConversionError
from kafka_s3.io.schema_registry.client import SchemaRegistryUnavailable, registry_client
from kafka_s3.io.schema_registry.converter import AvroConverter
from tests.support.avro_versions import (
    RICH,
    V1,
    V2,
    V3,
    encoded,
    record,
    register_versions,
    rich_record,
    wire,
)


@pytest.fixture
def registry():
    """A fresh in-memory registry: ``(url, client)``; converters configured with the URL share the client."""
    url = f"mock://unit-{uuid.uuid4().hex}"
    return url, registry_client({"url": url})


def converter(url: str, is_key: bool = False, **settings) -> AvroConverter:
    return AvroConverter({"schema.registry.url": url, **{k.replace("__", "."): v for k, v in settings.items()}}, is_key)


def test_confluent_class_name_resolves_to_the_avro_converter():
    assert REGISTRY.resolve("io.confluent.connect.avro.AvroConverter") is AvroConverter


def test_wire_format_decodes_to_typed_runs_with_registry_versions(registry):
    url, client = registry
    ids = register_versions(client, "orders-value")
    values = [wire(ids[1], 1, record(1, 0)), None, wire(ids[1], 1, record(1, 2)), wire(ids[3], 3, record(3, 3))]
    converted = converter(url).to_logical("orders", pa.array(values, pa.binary()))
    (start_a, a), (start_b, b) = converted.runs
    assert (start_a, start_b) == (0, 3)
    assert a.array.to_pylist() == [record(1, 0), None, record(1, 2)]
    assert b.array.to_pylist() == [record(3, 3)]
    assert (a.schema.version, b.schema.version) == (1, 3)
    assert a.schema.avro == V1 and b.schema.avro == V3 and a.schema.name == "shop.Order"
    assert b.schema.arrow.field("quantity").type == pa.int64()


def test_every_avro_type_becomes_its_arrow_type_and_is_written_back_byte_for_byte(registry):
    url, client = registry
    schema_id = client.register_schema("payments-value", Schema(json.dumps(RICH, separators=(",", ":")), "AVRO"))
    values = [encoded(RICH, schema_id, rich_record(n)) for n in range(10)]
    conv = converter(url)
    ((_, run),) = conv.to_logical("payments", pa.array(values, pa.binary())).runs
    arrow = run.schema.arrow
    expected_types = {
        "id": pa.string(),
        "amount": pa.decimal128(12, 2),
        "fee": pa.decimal128(10, 3),
        "at": pa.timestamp("ms", tz="UTC"),
        "at_us": pa.timestamp("us", tz="UTC"),
        "local": pa.timestamp("ms"),
        "day": pa.date32(),
        "time": pa.time32("ms"),
        "time_us": pa.time64("us"),
        "status": pa.string(),
        "digest": pa.binary(4),
        "tags": pa.list_(pa.field("item", pa.string(), nullable=False)),
        "memo": pa.string(),
        "ratio": pa.float32(),
        "flag": pa.bool_(),
        "raw": pa.binary(),
        "count": pa.int32(),
    }
    for name, typ in expected_types.items():
        assert arrow.field(name).type == typ, name
    assert arrow.field("memo").nullable and not arrow.field("id").nullable
    detail = arrow.field("detail").type
    assert [f.name for f in detail] == ["long", "string", "Party", "Status"]  # Confluent's union member names
    rows = run.array.to_pylist()
    assert rows[1]["detail"] == {"long": 7, "string": None, "Party": None, "Status": None}
    assert rows[3]["detail"]["Party"] == {"name": "d3", "iban": None} and rows[4]["detail"]["Status"] == "VOID"
    assert rows[0]["detail"] is None and rows[2]["detail"]["string"] == "text2"
    assert rows[1]["limits"] == [("day", 100.5), ("night", None)]
    # Written back (restore) to the same registry: the same schema id, the same bytes
    assert conv.from_logical("payments", run).to_pylist() == values


def test_tombstones_stay_null_and_a_batch_of_only_tombstones_has_no_schema(registry):
    url, client = registry
    ids = register_versions(client, "t-value")
    conv = converter(url)
    only = conv.to_logical("t", pa.array([None, None], pa.binary()))
    assert len(only.runs) == 1 and only.runs[0][1].schema.avro == "null"
    ((_, run),) = conv.to_logical("t", pa.array([None, wire(ids[2], 2, record(2, 1))], pa.binary())).runs
    assert conv.from_logical("t", run).to_pylist() == [None, wire(ids[2], 2, record(2, 1))]


def test_unknown_schema_id_is_an_error_naming_the_row(registry):
    url, client = registry
    ids = register_versions(client, "t-value")
    values = [wire(ids[1], 1, record(1, 0)), wire(4242, 1, record(1, 1))]
    with pytest.raises(ConversionError, match="schema id 4242 cannot be resolved in the Schema Registry") as error:
        converter(url).to_logical("t", pa.array(values, pa.binary()))
    assert error.value.row == 1


def test_unknown_schema_id_in_a_backup_names_topic_partition_and_offset(registry, tmp_path):
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.core.records import make_batch
    from kafka_s3.io.stores.spec import StoreSpec
    from kafka_s3.pipelines.backup.partition import PartitionBackup
    from kafka_s3.pipelines.backup.plugins import BackupPlugins

    url, client = registry
    ids = register_versions(client, "orders-value")
    config = SINK.parse(
        {
            "name": "n",
            "topics": "orders",
            "flush.size": "2",
            "s3.bucket.name": "b",
            "format.class": "avro",
            "store.url": tmp_path.as_uri(),
            "value.converter": "AvroConverter",
            "value.converter.schema.registry.url": url,
        }
    )
    store = StoreSpec.from_config(config, environ={}).open()
    store.create_bucket()
    writer = PartitionBackup(BackupPlugins.from_config(config), store, "orders", 5)
    values = [wire(ids[1], 1, record(1, 0)), wire(77, 1, record(1, 1))]
    with pytest.raises(
        ConversionError,
        match=r"orders\[5\] offset 31: cannot convert the record value: value of topic "
        r"orders: schema id 77 cannot be resolved",
    ):
        writer.write(
            make_batch(
                [{"topic": "orders", "partition": 5, "offset": 30 + i, "value": v} for i, v in enumerate(values)]
            )
        )


@pytest.mark.parametrize(
    "value, message",
    [
        (b"\x01\x00\x00\x00\x01\x02", "Unknown magic byte"),
        (b"\x00\x00", "Unknown magic byte"),
        (b"\x00\x00\x00\x00\x01", "cannot decode its Avro data"),
    ],
)
def test_values_not_in_the_wire_format_are_errors(registry, value, message):
    url, client = registry
    register_versions(client, "t-value")
    with pytest.raises(ConversionError, match=message) as error:
        converter(url).to_logical("t", pa.array([None, value], pa.binary()))
    assert error.value.row == 1


def test_schemas_are_fetched_once_per_id(registry):
    url, client = registry
    ids = register_versions(client, "t-value")
    calls = []
    for name in ("get_schema", "lookup_schema"):
        original = getattr(client, name)
        setattr(client, name, lambda *a, _o=original, _n=name, **k: calls.append(_n) or _o(*a, **k))
    try:
        conv = converter(url)
        for _ in range(3):
            conv.to_logical("t", pa.array([wire(ids[v], v, record(v, v)) for v in (1, 2, 1, 3)], pa.binary()))
    finally:
        for name in ("get_schema", "lookup_schema"):
            del client.__dict__[name]
    assert sorted(calls) == ["get_schema"] * 3 + ["lookup_schema"] * 3


def test_a_schema_not_registered_under_the_topic_subject_has_no_version(registry):
    url, client = registry
    schema_id = client.register_schema("elsewhere-value", Schema(json.dumps(V2), "AVRO"))
    ((_, run),) = converter(url).to_logical("t", pa.array([wire(schema_id, 2, record(2, 0))], pa.binary())).runs
    assert run.schema.version is None
    ((_, by_record),) = (
        converter(url, value__subject__name__strategy="io.confluent.kafka.serializers.subject.RecordNameStrategy")
        .to_logical("t", pa.array([wire(schema_id, 2, record(2, 0))], pa.binary()))
        .runs
    )
    assert by_record.schema.version is None
    client.register_schema("shop.Order", Schema(json.dumps(V2), "AVRO"))
    ((_, named),) = (
        converter(url, value__subject__name__strategy="RecordNameStrategy")
        .to_logical("t", pa.array([wire(schema_id, 2, record(2, 0))], pa.binary()))
        .runs
    )
    assert named.schema.version == 1


def test_schema_references_are_inlined_into_a_self_contained_writer_schema(registry):
    url, client = registry
    party = {"type": "record", "name": "Party", "namespace": "bank", "fields": [{"name": "name", "type": "string"}]}
    client.register_schema("bank.Party", Schema(json.dumps(party), "AVRO"))
    transfer = {
        "type": "record",
        "name": "Transfer",
        "namespace": "bank",
        "fields": [{"name": "from", "type": "Party"}, {"name": "to", "type": "bank.Party"}],
    }
    schema_id = client.register_schema(
        "transfers-value", Schema(json.dumps(transfer), "AVRO", [SchemaReference("bank.Party", "bank.Party", 1)])
    )
    full = {**transfer, "fields": [{"name": "from", "type": party}, {"name": "to", "type": "bank.Party"}]}
    datum = {"from": {"name": "a"}, "to": {"name": "b"}}
    ((_, run),) = converter(url).to_logical("transfers", pa.array([encoded(full, schema_id, datum)], pa.binary())).runs
    assert run.schema.avro["fields"][0]["type"] == party and run.schema.avro["fields"][1]["type"] == "bank.Party"
    fastavro.parse_schema(run.schema.avro)  # valid on its own (an Avro object's header)
    assert run.array.to_pylist() == [datum]


# ------------------------------------------------------------------------------------------------ restores
def test_restores_register_under_the_target_topics_subject(registry):
    url, client = registry
    ids = register_versions(client, "orders-value")
    source = converter(url)
    ((_, run),) = source.to_logical("orders", pa.array([wire(ids[3], 3, record(3, 1))], pa.binary())).runs
    target = converter(url)
    target.route = lambda topic: f"copy_of_{topic}"
    restored = target.from_logical("orders", run).to_pylist()
    registered = client.get_latest_version("copy_of_orders-value")
    assert restored == [wire(registered.schema_id, 3, record(3, 1))]
    assert json.loads(registered.schema.schema_str) == V3
    by_record = converter(url, value__subject__name__strategy="TopicRecordNameStrategy")
    by_record.route = lambda topic: "t2"
    by_record.from_logical("orders", run)
    assert client.get_latest_version("t2-shop.Order").version == 1
    keys = converter(url, is_key=True)
    keys.from_logical("orders", run)
    assert client.get_latest_version("orders-key").version == 1


def test_without_auto_registration_the_schema_must_already_be_registered(registry):
    url, client = registry
    ids = register_versions(client, "orders-value")
    ((_, run),) = converter(url).to_logical("orders", pa.array([wire(ids[1], 1, record(1, 1))], pa.binary())).runs
    strict = converter(url, auto__register__schemas="false")
    with pytest.raises(ConversionError, match="cannot find the schema under subject other-value"):
        strict.route = lambda topic: "other"
        strict.from_logical("orders", run)


def test_use_latest_version_projects_values_to_the_subjects_latest_schema(registry):
    url, client = registry
    ids = register_versions(client, "orders-value")
    ((_, run),) = converter(url).to_logical("orders", pa.array([wire(ids[1], 1, record(1, 4)), None], pa.binary())).runs
    latest = converter(url, use__latest__version="true").from_logical("orders", run).to_pylist()
    assert latest == [wire(ids[3], 3, {"id": 4, "customer": "c4", "quantity": 4, "channel": "web"}), None]


def test_raw_values_are_written_as_avro_primitives(registry):
    from kafka_s3.core.converters.base import Logical

    url, client = registry
    out = converter(url).from_logical("t", Logical("string", pa.array(["é", None])))
    schema_id = client.get_latest_version("t-value").schema_id
    assert json.loads(client.get_schema(schema_id).schema_str) == "string"
    assert out.to_pylist() == [b"\x00" + struct.pack(">I", schema_id) + b"\x04\xc3\xa9", None]
    with pytest.raises(ConversionError, match="schemaless JSON values hold no Avro schema"):
        converter(url).from_logical("t", Logical("json", pa.array([b"{}"])))


# ------------------------------------------------------------------------------------------------ settings
def test_the_registry_url_is_required():
    with pytest.raises(ConfigError, match='Missing required configuration "value.converter.schema.registry.url"'):
        AvroConverter({}, False)
    with pytest.raises(ConfigError, match="key.converter.schema.registry.url"):
        AvroConverter({"schemas.enable": "true"}, True)


def test_an_unreachable_registry_is_an_outage_not_a_bad_record():
    conv = converter("http://127.0.0.1:9", max__retries="0")
    with pytest.raises(
        SchemaRegistryUnavailable, match="schema id 1 cannot be resolved in the Schema Registry at http://127.0.0.1:9"
    ):
        conv.to_logical("t", pa.array([wire(1, 1, record(1, 0))], pa.binary()))


def test_bad_settings_name_their_key():
    with pytest.raises(ConfigError, match="value.converter.value.subject.name.strategy"):
        converter("mock://x", value__subject__name__strategy="Nope")
    with pytest.raises(ConfigError, match="value.converter.auto.register.schemas"):
        converter("mock://x", auto__register__schemas="yes")
