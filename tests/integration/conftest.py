"""Fixtures shared by the integration tests: configurations bound to the live services, a producer of test records,
a backup to run and restores of it to build. Plain helpers live in ``tests.support`` (``tests.support.integration``
and others)."""

from __future__ import annotations

import os

import pytest
from confluent_kafka import Producer

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE


@pytest.fixture
def make_config(s3_env, kafka_bootstrap):
    """``make_config(bucket, topics, source=False, **properties)`` → (raw dict, parsed config) bound to the live
    services: a sink (backup) configuration, or a source (restore) one with ``source=True``. Property names use
    ``__`` for dots (``flush__size=3``)."""

    def make(bucket: str, topics: str | list[str], source: bool = False, **properties):
        raw = {
            "name": f"it-{bucket}",
            "topics": topics if isinstance(topics, str) else ",".join(topics),
            "flush.size": "3",
            "s3.bucket.name": bucket,
            "store.url": s3_env["endpoint_url"],
            "s3.region": s3_env["region"],
            "aws.access.key.id": s3_env["access_key"],
            "aws.secret.access.key": s3_env["secret_key"],
            "bootstrap.servers": kafka_bootstrap,
            "format.class": "json",
        }
        raw.update({k.replace("__", "."): str(v) for k, v in properties.items()})
        return raw, (SOURCE if source else SINK).parse(raw)

    return make


@pytest.fixture
def produce(kafka_bootstrap):
    """``produce(topic, records)`` with records as dicts: value, key, partition, headers, timestamp."""

    def send(topic: str, records):
        producer = Producer(
            {
                "bootstrap.servers": kafka_bootstrap,
                "enable.idempotence": True,
                "linger.ms": 5,
                "queue.buffering.max.messages": 1_000_000,
            }
        )
        for i, r in enumerate(records):
            kwargs = {k: r[k] for k in ("key", "headers", "timestamp") if r.get(k) is not None}
            while True:
                try:
                    producer.produce(topic, value=r.get("value"), partition=r.get("partition", 0), **kwargs)
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 10000 == 0:
                producer.poll(0)
        producer.flush()

    return send


class RegistryUnderTest:
    """A Schema Registry the tests reach by URL: the suite's own server, or an external one."""

    def __init__(self, url: str, user_info: str | None = None):
        self.url = url
        self.user_info = user_info

    def converter_settings(self, role: str = "value") -> dict[str, str]:
        """The ``<role>.converter.*`` properties of an AvroConverter using this registry."""
        settings = {
            f"{role}.converter": "io.confluent.connect.avro.AvroConverter",
            f"{role}.converter.schema.registry.url": self.url,
        }
        if self.user_info:
            settings[f"{role}.converter.basic.auth.credentials.source"] = "USER_INFO"
            settings[f"{role}.converter.basic.auth.user.info"] = self.user_info
        return settings

    def client(self):
        from confluent_kafka.schema_registry import SchemaRegistryClient

        return SchemaRegistryClient(
            {"url": self.url, **({"basic.auth.user.info": self.user_info} if self.user_info else {})}
        )


@pytest.fixture(scope="session")
def schema_registry():
    """The Schema Registry of the integration tests: ``SCHEMA_REGISTRY_URL`` (with ``SCHEMA_REGISTRY_USER_INFO`` for
    basic auth) when set, else a minimal registry server started for the run (``tools.schema_registry``)."""
    url = os.environ.get("SCHEMA_REGISTRY_URL")
    if url:
        yield RegistryUnderTest(url, os.environ.get("SCHEMA_REGISTRY_USER_INFO") or None)
        return
    from tools.schema_registry import SchemaRegistryServer

    with SchemaRegistryServer() as server:
        yield RegistryUnderTest(server.url)


def _dotted(properties: dict) -> dict:
    return {k.replace(".", "__"): v for k, v in properties.items()}


@pytest.fixture
def backup(engine, make_config):
    """``backup(bucket, topic, properties)`` → the backup summary (``Backup.run_once`` with dotted properties)."""
    from kafka_s3.pipelines.backup.driver import Backup

    def run(bucket: str, topic: str | list[str], properties: dict | None = None):
        _, sink = make_config(bucket, topic, **_dotted(properties or {}))
        return Backup(sink, engine=engine).run_once()

    return run


@pytest.fixture
def restorer(engine, make_config):
    """``restorer(bucket, topic, properties, options=None)`` → a :class:`Restore` of that backup on the shared
    session (``properties`` dotted, e.g. ``{"topic.rename": "a:b"}``)."""
    from kafka_s3.pipelines.read.options import RestoreOptions
    from kafka_s3.pipelines.restore.driver import Restore

    def make(
        bucket: str, topic: str | list[str], properties: dict | None = None, options: RestoreOptions | None = None
    ) -> Restore:
        _, source = make_config(bucket, topic, source=True, **_dotted(properties or {}))
        return Restore(source, engine, options)

    return make
