"""Schema-aware backups with a Schema Registry reached by URL (the suite's own registry server, or the one named by
``SCHEMA_REGISTRY_URL``): AvroConverter values with three schema versions under every ``schema.compatibility``,
restored to new topics in the wire format; JsonConverter schemas to Avro and Parquet; envelope backups restoring
raw bytes without any registry."""

from __future__ import annotations

import io
import json

import fastavro
import pyarrow.parquet as pq
import pytest

from kafka_s3.core.errors import BackupFailed
from kafka_s3.core.records import to_dicts
from kafka_s3.io.kafka.reader import read_range
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.restore.driver import Restore
from tests.support.avro_versions import VERSIONS, read_as, record, register_versions, unwire, wire
from tests.support.backup import data_keys, get
from tests.support.integration import stable_end_offsets

pytestmark = pytest.mark.integration

# v1, v2, v3 in turn, then one record of each again (late producers still on older versions)
SEQUENCE = [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 2, 3]
# (first offset, last offset, schema version of the file) per mode, as the seeds describe them
FILES = {
    # every schema change rolls the file
    "NONE": [(0, 3, 1), (4, 7, 2), (8, 11, 3), (12, 12, 1), (13, 13, 2), (14, 14, 3)],
    # a newer version rolls; older records are projected to the latest (v1/v2 → v3 at offsets 12, 13)
    "BACKWARD": [(0, 3, 1), (4, 7, 2), (8, 14, 3)],
    "FULL": [(0, 3, 1), (4, 7, 2), (8, 14, 3)],
    # newer records are projected to the oldest (v2 → v1); v3's promoted long cannot be read as v1's int (rolls);
    # an older version rolls (offset 12); the v2 record after it is projected to v1 again
    "FORWARD": [(0, 7, 1), (8, 11, 3), (12, 13, 1), (14, 14, 3)],
}
EXTENSIONS = {"avro": ".avro", "parquet": ".snappy.parquet"}


def _props(properties: dict) -> dict:
    return {k.replace(".", "__"): v for k, v in properties.items()}


def produce_versions(produce, schema_registry, topic: str, sequence=SEQUENCE) -> list[bytes]:
    """Register v1..v3 under the topic's subject and produce ``record(version, offset)`` in the wire format."""
    ids = register_versions(schema_registry.client(), f"{topic}-value")
    values = [wire(ids[v], v, record(v, o)) for o, v in enumerate(sequence)]
    produce(topic, [{"value": v, "key": f"k{o}".encode()} for o, v in enumerate(values)])
    return values


def read_file(fmt: str, body: bytes) -> tuple[dict, list[dict]]:
    """(writer schema, records) of an Avro or Parquet object, by independent readers."""
    if fmt == "avro":
        reader = fastavro.reader(io.BytesIO(body))
        return json.loads(reader.metadata["avro.schema"]), list(reader)
    table = pq.read_table(io.BytesIO(body))
    return json.loads(table.schema.metadata[b"parquet.avro.schema"]), table.to_pylist()


def read_all(bootstrap: str, topic: str) -> list[dict]:
    end = stable_end_offsets(bootstrap, [(topic, 0)])[(topic, 0)]
    return to_dicts(list(read_range({"bootstrap.servers": bootstrap}, topic, 0, 0, end)))


def backup_config(make_config, bucket, topic, schema_registry, **properties):
    return make_config(
        bucket, topic, **_props({"flush.size": "100", **schema_registry.converter_settings(), **properties})
    )


@pytest.mark.parametrize(
    "fmt, mode",
    [
        ("avro", "NONE"),
        ("avro", "BACKWARD"),
        ("avro", "FORWARD"),
        ("avro", "FULL"),
        ("parquet", "BACKWARD"),
        ("parquet", "FORWARD"),
    ],
)
def test_three_schema_versions_roll_and_project_as_each_mode_says(
    fmt, mode, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, schema_registry
):
    topic = fresh_topic(1)
    produce_versions(produce, schema_registry, topic)
    _, config = backup_config(
        make_config, fresh_bucket, topic, schema_registry, **{"format.class": fmt, "schema.compatibility": mode}
    )

    summary = Backup(config, engine=engine).run_once()

    files = FILES[mode]
    directory = f"topics/{topic}/partition=0"
    keys = [f"{directory}/{topic}+0+{first:010d}{EXTENSIONS[fmt]}" for first, _, _ in files]
    assert data_keys(s3_client, fresh_bucket, topic) == sorted(keys)
    assert summary.objects == len(files) and summary.records == len(SEQUENCE)
    for key, (first, last, version) in zip(keys, files, strict=True):
        schema, rows = read_file(fmt, get(s3_client, fresh_bucket, key))
        assert schema == VERSIONS[version]  # the registered writer schema, kept as it is
        # each record as written, or read with the file's schema (Avro's resolution, by fastavro)
        assert rows == [read_as(record(SEQUENCE[o], o), SEQUENCE[o], version) for o in range(first, last + 1)]


@pytest.mark.parametrize(
    "fmt, mode",
    [
        ("avro", "NONE"),
        ("parquet", "NONE"),
        ("avro", "BACKWARD"),
        ("avro", "FULL"),
        ("avro", "FORWARD"),
        ("parquet", "FORWARD"),
    ],
)
def test_restore_re_encodes_in_the_wire_format_under_the_target_subject(
    fmt, mode, engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, schema_registry
):
    topic, target = fresh_topic(1), fresh_topic(1, prefix="restored")
    produce_versions(produce, schema_registry, topic)
    properties = {
        "format.class": fmt,
        "schema.compatibility": mode,
        "flush.size": "100",
        "store.kafka.keys": "true",
        **schema_registry.converter_settings(),
    }
    _, sink = make_config(fresh_bucket, topic, **_props(properties))
    Backup(sink, engine=engine).run_once()
    _, source = make_config(
        fresh_bucket, topic, source=True, **_props({**properties, "topic.rename": f"{topic}:{target}"})
    )

    summary = Restore(source, engine=engine).run()

    assert summary.records == len(SEQUENCE)
    restored = read_all(kafka_bootstrap, target)
    client = schema_registry.client()
    file_version = {o: v for first, last, v in FILES[mode] for o in range(first, last + 1)}
    decoded = [unwire(client, r["value"]) for r in restored]
    assert [r["key"] for r in restored] == [f"k{o}".encode() for o in range(len(SEQUENCE))]
    # the same records (as the backup holds them: projected to the file's schema under BACKWARD)
    assert [rec for _, rec in decoded] == [read_as(record(v, o), v, file_version[o]) for o, v in enumerate(SEQUENCE)]
    assert [schema for schema, _ in decoded] == [VERSIONS[file_version[o]] for o in range(len(SEQUENCE))]
    # registered under the target topic's subject (TopicNameStrategy), in the order the files' versions came
    subject = client.get_versions(f"{target}-value")
    assert [json.loads(client.get_version(f"{target}-value", v).schema.schema_str) for v in subject] == [
        VERSIONS[v] for v in dict.fromkeys(version for _, _, version in FILES[mode])
    ]


def test_interleaved_schema_versions_do_not_give_a_file_per_record(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, schema_registry
):
    """Two producers on v1 and v2 interleaved (Confluent's small-files complaint): 60 records, flush.size=20."""
    counts = {}
    for mode in ("NONE", "BACKWARD", "FORWARD"):
        topic = fresh_topic(1)
        produce_versions(produce, schema_registry, topic, [1, 2] * 30)
        _, config = backup_config(
            make_config,
            fresh_bucket,
            topic,
            schema_registry,
            **{"format.class": "avro", "flush.size": "20", "schema.compatibility": mode},
        )
        Backup(config, engine=engine).run_once()
        counts[mode] = len(data_keys(s3_client, fresh_bucket, topic))
    # NONE rolls at every change, as the seeds require; projection keeps files whole (BACKWARD: the first v1 record
    # alone, then v2 files of 20 records with the v1 ones projected; FORWARD: v1 files of 20 records).
    assert counts == {"NONE": 60, "BACKWARD": 4, "FORWARD": 3}


CONNECT_V1 = {
    "type": "struct",
    "name": "shop.Item",
    "version": 1,
    "optional": False,
    "fields": [
        {"field": "sku", "type": "string", "optional": False},
        {"field": "qty", "type": "int16", "optional": False},
        {
            "field": "price",
            "type": "bytes",
            "name": "org.apache.kafka.connect.data.Decimal",
            "version": 1,
            "parameters": {"scale": "2", "connect.decimal.precision": "8"},
            "optional": False,
        },
    ],
}
CONNECT_V2 = {
    **CONNECT_V1,
    "version": 2,
    "fields": CONNECT_V1["fields"] + [{"field": "color", "type": "string", "optional": True, "default": "none"}],
}


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_json_with_schemas_backs_up_with_the_declared_schema(
    fmt, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client
):
    topic = fresh_topic(1)
    price = (1999).to_bytes(2, "big", signed=True)
    import base64

    def value(schema, n, **extra):
        payload = {"sku": f"s{n}", "qty": n, "price": base64.b64encode(price).decode(), **extra}
        return json.dumps({"schema": schema, "payload": payload}).encode()

    values = [value(CONNECT_V1, 0), value(CONNECT_V2, 1, color="red"), value(CONNECT_V1, 2)]
    produce(topic, [{"value": v} for v in values])
    _, config = make_config(
        fresh_bucket,
        topic,
        **_props(
            {
                "format.class": fmt,
                "flush.size": "10",
                "schema.compatibility": "BACKWARD",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "true",
            }
        ),
    )

    Backup(config, engine=engine).run_once()

    keys = data_keys(s3_client, fresh_bucket, topic)
    assert [k.rsplit("+", 1)[1] for k in keys] == [f"0000000000{EXTENSIONS[fmt]}", f"0000000001{EXTENSIONS[fmt]}"]
    first_schema, first_rows = read_file(fmt, get(s3_client, fresh_bucket, keys[0]))
    schema, rows = read_file(fmt, get(s3_client, fresh_bucket, keys[1]))
    assert first_schema["name"] == "Item" and first_schema["namespace"] == "shop"
    # AvroData with connect.meta.data=true, as Confluent's sink writes it (issue 15 item 3): connect.* properties.
    assert (schema["connect.name"], schema["connect.version"]) == ("shop.Item", 2)
    assert [(f["name"], f["type"]) for f in schema["fields"]] == [
        ("sku", "string"),
        ("qty", {"type": "int", "connect.type": "int16"}),
        (
            "price",
            {
                "type": "bytes",
                "logicalType": "decimal",
                "precision": 8,
                "scale": 2,
                "connect.version": 1,
                "connect.parameters": {"scale": "2", "connect.decimal.precision": "8"},
                "connect.name": "org.apache.kafka.connect.data.Decimal",
            },
        ),
        ("color", [{"type": "string", "connect.default": "none"}, "null"]),
    ]
    # v2 rolled the file (newer); the later v1 record is projected to v2: the added field takes its default
    from decimal import Decimal

    assert first_rows == [{"sku": "s0", "qty": 0, "price": Decimal("19.99")}]
    assert rows == [
        {"sku": "s1", "qty": 1, "price": Decimal("19.99"), "color": "red"},
        {"sku": "s2", "qty": 2, "price": Decimal("19.99"), "color": "none"},
    ]
    if fmt == "parquet":
        table = pq.read_table(io.BytesIO(get(s3_client, fresh_bucket, keys[1])))
        assert [str(t) for t in table.schema.types] == ["string", "int16", "decimal128(8, 2)", "string"]


def test_envelope_backups_restore_raw_bytes_without_any_registry(
    engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    """AvroConverter configured with a registry nobody answers: an envelope backup never decodes values, so even
    bytes that are not in the wire format (or name unknown schema ids) come back byte for byte. The registry's
    subjects could not be saved, which --once says (exit 4) after backing the records up."""
    from kafka_s3.pipelines.backup.history import PartsNotSaved

    topic, target = fresh_topic(1), fresh_topic(1, prefix="restored")
    values = [wire(424242, 1, record(1, 0)), b"not avro at all", None, wire(7, 3, record(3, 3))]
    produce(topic, [{"value": v, "key": b"k"} for v in values])
    properties = {
        "format.class": "avro",
        "store.envelope": "true",
        "schema.compatibility": "BACKWARD",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter.schema.registry.url": "http://127.0.0.1:9",
    }
    _, sink = make_config(fresh_bucket, topic, **_props(properties))
    with pytest.raises(PartsNotSaved, match=f"backed up \\({len(values)} records") as unsaved:
        Backup(sink, engine=engine).run_once()
    assert unsaved.value.exit_code == 4 and "http://127.0.0.1:9" in str(unsaved.value)
    _, source = make_config(
        fresh_bucket, topic, source=True, **_props({**properties, "topic.rename": f"{topic}:{target}"})
    )
    Restore(source, engine=engine).run()
    assert [r["value"] for r in read_all(kafka_bootstrap, target)] == values


def test_a_schema_id_the_registry_does_not_know_fails_naming_the_record(
    engine, make_config, fresh_bucket, fresh_topic, produce, schema_registry
):
    topic = fresh_topic(1)
    ids = register_versions(schema_registry.client(), f"{topic}-value")
    unknown = max(ids.values()) + 100_000
    produce(topic, [{"value": wire(ids[1], 1, record(1, 0))}, {"value": wire(unknown, 1, record(1, 1))}])
    _, config = backup_config(make_config, fresh_bucket, topic, schema_registry, **{"format.class": "avro"})
    with pytest.raises(BackupFailed) as failure:
        Backup(config, engine=engine).run_once()
    message = str(failure.value)
    assert f"{topic}[0]" in message and "offset 1" in message
    assert f"schema id {unknown} cannot be resolved in the Schema Registry at {schema_registry.url}" in message


KEY_SCHEMA = {
    "type": "record",
    "name": "OrderKey",
    "namespace": "shop",
    "fields": [{"name": "region", "type": "string"}, {"name": "id", "type": "long"}],
}


def test_avro_keys_back_up_to_a_keys_sidecar_and_restore_in_the_wire_format(
    engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, s3_client, schema_registry
):
    from confluent_kafka.schema_registry import Schema

    topic, target = fresh_topic(1), fresh_topic(1, prefix="restored")
    client = schema_registry.client()
    key_id = client.register_schema(f"{topic}-key", Schema(json.dumps(KEY_SCHEMA, separators=(",", ":")), "AVRO"))
    value_ids = register_versions(client, f"{topic}-value")

    def key(n: int) -> bytes:
        body = io.BytesIO()
        fastavro.schemaless_writer(body, fastavro.parse_schema(KEY_SCHEMA), {"region": f"r{n % 2}", "id": n})
        return b"\x00" + key_id.to_bytes(4, "big") + body.getvalue()

    produce(topic, [{"key": key(n), "value": wire(value_ids[1], 1, record(1, n))} for n in range(4)])
    properties = {
        **schema_registry.converter_settings("key"),
        **schema_registry.converter_settings(),
        "format.class": "avro",
        "store.kafka.keys": "true",
        "keys.format.class": "avro",
        "flush.size": "10",
    }
    _, sink = make_config(fresh_bucket, topic, **_props(properties))
    Backup(sink, engine=engine).run_once()

    sidecar = next(k for k in data_keys(s3_client, fresh_bucket, topic) if k.endswith(".keys.avro"))
    schema, keys = read_file("avro", get(s3_client, fresh_bucket, sidecar))
    assert schema == KEY_SCHEMA  # the keys' registered schema, kept
    assert keys == [{"region": f"r{n % 2}", "id": n} for n in range(4)]

    _, source = make_config(
        fresh_bucket, topic, source=True, **_props({**properties, "topic.rename": f"{topic}:{target}"})
    )
    assert Restore(source, engine=engine).run().records == 4
    restored = read_all(kafka_bootstrap, target)
    assert [unwire(client, r["key"]) for r in restored] == [
        (KEY_SCHEMA, {"region": f"r{n % 2}", "id": n}) for n in range(4)
    ]
    assert [unwire(client, r["value"])[1] for r in restored] == [record(1, n) for n in range(4)]
    assert [
        json.loads(client.get_version(f"{target}-key", v).schema.schema_str)
        for v in client.get_versions(f"{target}-key")
    ] == [KEY_SCHEMA]
