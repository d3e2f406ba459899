"""Issue 17 item 6: ``restore --schemas`` against the project's registry (a real HTTP server): each subject as the
target's mode for it allows — IMPORT keeps the source's ids and versions, READWRITE registers (the target assigns
ids), READONLY is refused — and an id the target gives another schema fails the import, named."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from kafka_s3.core.schemas import SavedSchemas, SubjectVersion
from kafka_s3.io.schema_registry.subjects import SchemaRegistryError, import_subjects, predict_ids
from tools.schema_registry import SchemaRegistryServer


def avro(name: str) -> str:
    return json.dumps({"type": "record", "name": name, "fields": [{"name": "a", "type": "string"}]})


SAVED = SavedSchemas(
    "orders",
    0,
    {
        "orders-key": (SubjectVersion(1, 30, avro("Key")),),
        "orders-value": (SubjectVersion(1, 40, avro("V1")), SubjectVersion(4, 41, avro("V2"))),
    },
    {"": "BACKWARD"},
)


def test_import_subjects_follows_each_subjects_target_mode() -> None:
    with SchemaRegistryServer() as server:
        client = SchemaRegistryClient({"url": server.url})
        client.update_mode("orders-value", "IMPORT")  # the operator's choice, on the empty subject only

        planned = predict_ids(client, SAVED)
        assert planned.modes == {"orders-key": "READWRITE", "orders-value": "IMPORT"}
        assert planned.ids == {30: None, 40: 40, 41: 41} and planned.conflicts == {}

        done = import_subjects(client, SAVED)
        assert done.ids == {30: 1, 40: 40, 41: 41}
        assert [(v, client.get_version("orders-value", v).schema_id) for v in client.get_versions("orders-value")] == [
            (1, 40),
            (4, 41),
        ]
        assert client.get_compatibility("orders-value") == "BACKWARD"
        assert predict_ids(client, SAVED).ids == {30: 1, 40: 40, 41: 41}  # a second run changes nothing
        assert import_subjects(client, SAVED).ids == {30: 1, 40: 40, 41: 41}


def test_import_refuses_an_id_held_by_another_schema_and_readonly_subjects() -> None:
    with SchemaRegistryServer() as server:
        client = SchemaRegistryClient({"url": server.url})
        client.update_global_mode("IMPORT")
        client._rest_client.post("subjects/other-value/versions", body={"schema": avro("Other"), "id": 41})

        planned = predict_ids(client, SAVED)
        assert planned.conflicts == {"orders-value": [41]}
        with pytest.raises(SchemaRegistryError) as refused:
            import_subjects(client, SAVED)
        message = str(refused.value)
        assert "cannot import version 4 (id 41) of subject 'orders-value' into the target registry" in message
        assert "nothing was written" in message
        assert client.get_subjects() == ["other-value"]

        client.update_mode("orders-key", "READONLY")
        with pytest.raises(SchemaRegistryError, match="subject 'orders-key' is READONLY in the target registry"):
            import_subjects(client, SAVED)
        assert client.get_subjects() == ["other-value"]
        client.update_global_mode("READWRITE")
        client.register_schema("new-value", Schema(avro("New"), "AVRO"))
        assert client.get_version("new-value", 1).schema_id == 42  # after the imported ids
