"""Issue 28 item 5, as a user sees it: ``kafka-s3 status`` and ``kafka-s3 groups`` tell the truth, and an error about
a service names where that service is. The real command in a subprocess, against the real Kafka broker, S3 server
and Schema Registry; the backups they look at run in-process on the shared Spark session (a few records each)."""

from __future__ import annotations

import json

import pytest

from kafka_s3.core.errors import KafkaError, StoreError
from kafka_s3.io.kafka.admin import Admin
from tests.integration.cli.test_operator_errors import assert_clean, closed_port
from tests.support.restore import records, run_cli, write_properties

pytestmark = pytest.mark.integration

ENVELOPE = {"format.class": "json", "store.envelope": "true"}
STRING = "org.apache.kafka.connect.storage.StringConverter"
TOMBSTONES_IN_SIDECARS = {  # Confluent's plain layout: a tombstone is a record of the keys and headers sidecars
    "format.class": "json",
    "value.converter": STRING,
    "key.converter": STRING,
    "store.kafka.keys": "true",
    "store.kafka.headers": "true",
    "behavior.on.null.values": "write",
}


def dotted(properties: dict[str, str]) -> dict[str, str]:
    return {k.replace(".", "__"): v for k, v in properties.items()}


def data_key(topic: str, partition: int, start: int) -> str:
    return f"topics/{topic}/partition={partition}/{topic}+{partition}+{start:010d}.json"


def status_rows(path: str) -> dict[int, dict]:
    result = run_cli(["status", "--config", path, "--json"], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return {row["partition"]: row for row in json.loads(result.stdout)}


# ------------------------------------------------------------------------------------------ status without the bucket
@pytest.mark.issue(28, item=5)
def test_status_with_the_object_store_unreachable_shows_kafkas_side_and_names_the_endpoint(
    make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path
):
    """docs/security.md: status reads Kafka for the group's offsets and the log end, the bucket for its committed end
    and last object. With the store unreachable the Kafka side is still shown, and the one error line says which
    store could not be read (exit 3); it printed nothing but the error."""
    topic = fresh_topic(2)
    produce(topic, records(2, 3))
    backup(fresh_bucket, topic, ENVELOPE)
    produce(topic, [{"partition": 0, "value": b'{"n": 9}'}])
    endpoint = f"http://127.0.0.1:{closed_port()}"
    raw, _ = make_config(fresh_bucket, topic, **dotted(ENVELOPE), store__url=endpoint)
    path = str(write_properties(tmp_path / "unreachable-store.properties", raw))

    result = run_cli(["status", "--config", path], timeout=120)
    assert result.returncode == StoreError.exit_code, result.stderr[-3000:]
    assert_clean(result.stderr)
    error = next(line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error:"))
    assert endpoint in error and "Kafka's side only" in error, error
    for partition, end in ((0, 4), (1, 3)):  # committed, end, lag from Kafka; the bucket's end unknown
        line = next(line for line in result.stdout.splitlines() if f"│ {topic} │ {partition} " in line)
        cells = [c.strip() for c in line.split("│") if c.strip()]
        assert cells[:5] == [topic, str(partition), "3", str(end), str(end - 3)], cells
        assert cells[-2:] == ["-", "group"], cells


# ---------------------------------------------------------------------------------------- the last object is data
@pytest.mark.issue(28, item=5)
def test_status_last_object_is_the_last_data_object_not_a_tombstones_sidecar(
    make_config, fresh_bucket, fresh_topic, produce, backup, kafka_bootstrap, tmp_path
):
    """Plain mode keeps tombstones in ``.keys``/``.headers`` sidecars (the ``tombstone`` directory): partition 0's
    newest chunk (offsets 3..5) holds a value and two tombstones, partition 1's only tombstones. The last object is
    the newest value object: ``…+3.json`` and ``…+0.json``; it showed ``tombstone/…+4.keys.avro``."""
    topic = fresh_topic(2)
    tombstones = {0: {4, 5}, 1: {3, 4, 5}}
    produce(
        topic,
        [
            {
                "partition": p,
                "key": f"k{i}".encode(),
                "value": None if i in tombstones[p] else f"v{i}".encode(),
                "headers": [("h", b"1")],
            }
            for p in (0, 1)
            for i in range(6)
        ],
    )
    backup(fresh_bucket, topic, {**TOMBSTONES_IN_SIDECARS, "flush.size": "3"})
    raw, _ = make_config(fresh_bucket, topic, **dotted(TOMBSTONES_IN_SIDECARS))
    path = str(write_properties(tmp_path / "plain.properties", raw))
    expected = {0: data_key(topic, 0, 3), 1: data_key(topic, 1, 0)}

    rows = status_rows(path)
    assert {p: (r["last_object"], r["view"]) for p, r in rows.items()} == {p: (k, "group") for p, k in expected.items()}

    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    admin.delete_group(f"connect-{raw['name']}")
    rows = status_rows(path)  # the bucket's view: its chunk manifests
    assert {p: (r["last_object"], r["view"]) for p, r in rows.items()} == {
        p: (k, "bucket") for p, k in expected.items()
    }


# ------------------------------------------------------------------------------------- groups: applications only
@pytest.mark.issue(28, item=5)
def test_groups_lists_only_application_groups_not_other_kafka_s3_backups(
    make_config, fresh_bucket, fresh_topic, produce, backup, kafka_bootstrap, tmp_path
):
    """Two backups of one topic (names ``first`` and ``second``, each under its own ``topics.dir``) and one
    application group: the second backup's snapshot sees the first's group ``connect-first-…`` commit on the topic.
    ``groups`` lists the application's group alone; it listed ``connect-first-…`` as a group to translate."""
    topic, target = fresh_topic(1), fresh_topic(1)
    produce(topic, records(1, 6))
    application = f"app-{topic}"
    Admin({"bootstrap.servers": kafka_bootstrap}).commit_group_offsets(application, {(topic, 0): 4})
    first, second = f"first-{topic}", f"second-{topic}"
    backup(fresh_bucket, topic, {**ENVELOPE, "name": first, "topics.dir": "first"})
    backup(fresh_bucket, topic, {**ENVELOPE, "name": second, "topics.dir": "second"})
    raw, _ = make_config(
        fresh_bucket,
        topic,
        source=True,
        **dotted(ENVELOPE),
        name=second,
        topics__dir="second",
        topic__rename=f"{topic}:{target}",
    )
    path = str(write_properties(tmp_path / "second.properties", raw))

    listed = run_cli(["groups", "--config", path, "--json"], timeout=180)
    assert listed.returncode == 0, listed.stderr[-3000:]
    doc = json.loads(listed.stdout)
    assert doc["topics"][topic]["groups"] == {application: {"0": 4}}, doc
    assert {t["group"] for t in doc["translations"]} <= {application}, doc
    assert "connect-" not in listed.stdout, listed.stdout


# ------------------------------------------------------------------------------- every service error names where
@pytest.mark.issue(28, item=5)
def test_a_schema_registry_refusing_connections_is_named_by_its_url(
    make_config, fresh_bucket, fresh_topic, produce, backup, schema_registry, tmp_path
):
    """``restore --dry-run --schemas`` asks the target registry which ids the saved subjects would get: refused
    connections end it with exit 4 and the registry's URL in the one error line."""
    from confluent_kafka.schema_registry import Schema

    topic = fresh_topic(1)
    produce(topic, records(1, 2))
    schema = {"type": "record", "name": "Value", "fields": [{"name": "n", "type": "long"}]}
    schema_registry.client().register_schema(f"{topic}-value", Schema(json.dumps(schema), "AVRO"))
    backup(fresh_bucket, topic, {**ENVELOPE, "schemas.registry.url": schema_registry.url})
    url = f"http://127.0.0.1:{closed_port()}"
    raw, _ = make_config(
        fresh_bucket,
        topic,
        source=True,
        **dotted(ENVELOPE),
        topic__rename=f"{topic}:{fresh_topic(1)}",
        schemas__registry__url=url,
        service__timeout__ms="3000",
    )
    path = str(write_properties(tmp_path / "refusing-registry.properties", raw))
    result = run_cli(["restore", "--dry-run", "--schemas", "--config", path], timeout=120)
    assert result.returncode == KafkaError.exit_code, (result.stdout[-2000:], result.stderr[-3000:])
    assert_clean(result.stderr)
    error = next(line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error:"))
    assert url in error and "refused" in error.lower(), error


@pytest.mark.issue(28, item=5)
def test_status_with_kafka_refusing_connections_names_the_bootstrap_servers(make_config, fresh_bucket, tmp_path):
    bootstrap = f"127.0.0.1:{closed_port()}"
    raw, _ = make_config(fresh_bucket, "orders", bootstrap__servers=bootstrap, service__timeout__ms="2000")
    result = run_cli(["status", "--config", str(write_properties(tmp_path / "dead-kafka.properties", raw))])
    assert result.returncode == KafkaError.exit_code, result.stderr[-3000:]
    assert_clean(result.stderr)
    error = next(line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error:"))
    assert bootstrap in error and "Connection refused" in error, error
