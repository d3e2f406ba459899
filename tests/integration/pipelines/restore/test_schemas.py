"""Issue 17 items 3 and 6: the backup saves the topics' Schema Registry subjects (every version, id, type,
references, compatibility); after the registry is lost, ``restore --schemas`` writes them into the new registry:
under their own ids when the operator put it in IMPORT mode (payloads untouched), else registered normally — the
registry assigns other ids — and the ids inside the restored wire-format payloads rewritten. Either way Confluent's
Avro deserializer decodes every restored value."""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.schemas import SavedSchemas
from kafka_s3.pipelines.read.options import RestoreOptions
from tests.support.avro_versions import V1, VERSIONS, record, register_versions, wire
from tests.support.restore import read_topic
from tools.schema_registry import SchemaRegistryServer

pytestmark = pytest.mark.integration

ENVELOPE = {"format.class": "avro", "store.envelope": "true"}
SEQUENCE = [1, 1, 2, 2, 3, 3, 1, 3]


def test_schemas_restored_into_an_emptied_registry_decode_with_confluents_deserializer(
    schema_registry, fresh_topic, produce, backup, restorer, fresh_bucket, s3_client, kafka_bootstrap
):
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = fresh_topic(1)
    source_ids = register_versions(schema_registry.client(), f"{topic}-value")
    values = [wire(source_ids[v], v, record(v, n)) for n, v in enumerate(SEQUENCE)]
    produce(topic, [{"value": value, "key": f"k{n}".encode()} for n, value in enumerate(values)])
    backup(fresh_bucket, topic, {**ENVELOPE, "schemas.registry.url": schema_registry.url})

    prefix = f"topics/_kafka-s3/avro/{topic}/schemas/"
    keys = [o["Key"] for o in s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix=prefix)["Contents"]]
    assert len(keys) == 1 and keys[0].endswith(".schemas"), keys
    saved = SavedSchemas.from_bytes(s3_client.get_object(Bucket=fresh_bucket, Key=keys[0])["Body"].read())
    assert [(v.version, v.id) for v in saved.subjects[f"{topic}-value"]] == [
        (1, source_ids[1]),
        (2, source_ids[2]),
        (3, source_ids[3]),
    ]

    with SchemaRegistryServer() as target_registry:  # the registry after the disaster: empty
        client = SchemaRegistryClient({"url": target_registry.url})
        for n in range(5):  # other schemas take the first ids: the restored ones get others
            other = {**V1, "name": f"Other{n}"}
            client.register_schema(f"other-{n}", Schema(json.dumps(other), "AVRO"))
        target = fresh_topic(1)
        restore = restorer(
            fresh_bucket,
            topic,
            {**ENVELOPE, "topic.rename": f"{topic}:{target}", "schemas.registry.url": target_registry.url},
            RestoreOptions(schemas=True),
        )
        planned = restore.schemas_plan(restore.plan())  # what --dry-run --schemas prints
        assert "0 id(s) preserved" in planned and "3 version(s) not in the target registry yet" in planned, planned
        assert f"{topic}-value: target mode READWRITE, registered (ids the target assigns)" in planned, planned
        assert restore.run().records == len(values)
        assert restore.current_plan is not None and "rewrites" in restore.current_plan.schema_note
        target_ids = {
            v.id: client.lookup_schema(f"{topic}-value", Schema(v.schema, "AVRO")).schema_id
            for v in saved.subjects[f"{topic}-value"]
        }
        assert all(old != new for old, new in target_ids.items()), target_ids
        replanned = restore.schemas_plan(restore.plan())
        moved = ", ".join(f"{old}->{new}" for old, new in sorted(target_ids.items()))
        assert f"rewritten in payloads: {moved}" in replanned, replanned

        deserialize = AvroDeserializer(SchemaRegistryClient({"url": target_registry.url}))
        restored = read_topic(kafka_bootstrap, target)[0]
        context = SerializationContext(target, MessageField.VALUE)
        decoded = [deserialize(r["value"], context) for r in restored]
        assert decoded == [record(v, n) for n, v in enumerate(SEQUENCE)]
        assert [r["value"][5:] for r in restored] == [v[5:] for v in values]  # only the ids changed


def test_schemas_imported_into_a_registry_in_import_mode_keep_their_ids(
    schema_registry, fresh_topic, produce, backup, restorer, fresh_bucket, kafka_bootstrap
):
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    source = schema_registry.client()
    topic = fresh_topic(1)
    for n in range(5):  # ids a fresh registry would not give: the restored ones must be the source's own
        source.register_schema(f"{topic}-filler-{n}", Schema(json.dumps({**V1, "name": f"Filler{n}"}), "AVRO"))
    namespace = f"shop.{topic.replace('-', '_')}"  # schemas of this test only (ids of their own)
    source_ids = {
        v: source.register_schema(f"{topic}-value", Schema(json.dumps({**s, "namespace": namespace}), "AVRO"))
        for v, s in VERSIONS.items()
    }
    assert min(source_ids.values()) > 5, source_ids
    values = [wire(source_ids[v], v, record(v, n)) for n, v in enumerate(SEQUENCE)]
    produce(topic, [{"value": value, "key": f"k{n}".encode()} for n, value in enumerate(values)])
    backup(fresh_bucket, topic, {**ENVELOPE, "schemas.registry.url": schema_registry.url})

    with SchemaRegistryServer() as target_registry:  # the registry after the disaster: empty, put in IMPORT mode
        client = SchemaRegistryClient({"url": target_registry.url})
        client.update_global_mode("IMPORT")
        target = fresh_topic(1)
        restore = restorer(
            fresh_bucket,
            topic,
            {**ENVELOPE, "topic.rename": f"{topic}:{target}", "schemas.registry.url": target_registry.url},
            RestoreOptions(schemas=True),
        )
        planned = restore.schemas_plan(restore.plan())  # what --dry-run --schemas prints
        assert "3 id(s) preserved" in planned and "rewritten" not in planned, planned
        assert f"{topic}-value: target mode IMPORT, imported under the source's ids and versions" in planned, planned
        assert restore.run().records == len(values)
        assert restore.current_plan is not None and "ids preserved" in restore.current_plan.schema_note

        assert client.get_global_mode() == "IMPORT"  # the operator's to switch back
        client.update_global_mode("READWRITE")
        for number, schema_id in source_ids.items():
            registered = client.get_version(f"{topic}-value", number)
            assert (registered.version, registered.schema_id) == (number, schema_id)
        replanned = restore.schemas_plan(restore.plan())
        assert "3 id(s) preserved" in replanned and "rewritten" not in replanned, replanned

        restored = read_topic(kafka_bootstrap, target)[0]
        assert [r["value"] for r in restored] == values  # payload bytes untouched
        deserialize = AvroDeserializer(SchemaRegistryClient({"url": target_registry.url}))
        context = SerializationContext(target, MessageField.VALUE)
        assert [deserialize(r["value"], context) for r in restored] == [record(v, n) for n, v in enumerate(SEQUENCE)]
        assert sorted(client.get_subjects()) == [f"{topic}-value"]
