"""Fixtures of the security tests: a SASL_SSL (SCRAM-SHA-512) Apache Kafka with ACLs and its principals
(``secure_kafka``, ``secure_config``), and the HTTPS SeaweedFS with least-privilege identities (``secure_s3``,
``secure_s3_config``).

The broker is started once per run from the Apache Kafka distribution (``tools.secure_kafka``) with a CA and
certificate made for the run, or is the external cluster named by ``KAFKA_S3_SECURE_BOOTSTRAP`` (see
CONTRIBUTING.md). Every Kafka test makes its own users (unique names) and grants them exactly the ACLs it needs, so
tests are independent of each other.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
from confluent_kafka import Producer

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.config.source import SOURCE
from tests.support import secure_s3 as server


@pytest.fixture(scope="session")
def secure_kafka(tmp_path_factory):
    from tools.secure_kafka import SecureKafka

    external = SecureKafka.external()
    if external is not None:
        yield external
        return
    cluster = SecureKafka.start(tmp_path_factory.mktemp("secure-kafka"))
    try:
        yield cluster
    finally:
        cluster.stop()


@dataclass
class Principal:
    user: str
    password: str


@pytest.fixture
def principal(secure_kafka):
    """``principal(role)`` → a new SCRAM user ``<role>-<random>`` with a random password and no ACL yet."""

    def make(role: str) -> Principal:
        who = Principal(f"{role}-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex)
        secure_kafka.add_user(who.user, who.password)
        return who

    return make


@pytest.fixture
def secure_topic(secure_kafka):
    """``secure_topic(partitions=1)`` → a new topic (made by the admin) that keeps records forever."""
    from kafka_s3.io.kafka.admin import Admin

    admin = Admin(secure_kafka.admin_settings)

    def make(partitions: int = 1, prefix: str = "sec") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        admin.create_topic(name, partitions, config={"retention.ms": "-1"})
        return name

    return make


@pytest.fixture
def secure_produce(secure_kafka):
    """``secure_produce(topic, records)`` as the admin: records are dicts of value, key, partition, headers."""

    def send(topic: str, records) -> None:
        producer = Producer({**secure_kafka.admin_settings, "enable.idempotence": True, "linger.ms": 5})
        for r in records:
            kwargs = {k: r[k] for k in ("key", "headers", "timestamp") if r.get(k) is not None}
            producer.produce(topic, value=r.get("value"), partition=r.get("partition", 0), **kwargs)
        assert producer.flush(30) == 0

    return send


@pytest.fixture
def secure_config(secure_kafka, s3_env):
    """``secure_config(bucket, topics, who, source=False, prefixes=("",), ca_location=False, **properties)`` → (raw,
    parsed config) of a backup (or, ``source=True``, a restore) reaching Kafka over SASL_SSL as ``who``, with the
    Confluent-style security settings under each of ``prefixes`` (``""`` for top level, ``"consumer."``,
    ``"producer."``, ``"admin."``...): a PEM truststore, or (``ca_location``) ``ssl.ca.location``."""

    def make(
        bucket: str, topics: str, who: Principal, source: bool = False, prefixes=("",), ca_location=False, **properties
    ):
        raw = {
            "name": f"sec-{bucket}",
            "topics": topics,
            "flush.size": "3",
            "s3.bucket.name": bucket,
            "store.url": s3_env["endpoint_url"],
            "s3.region": s3_env["region"],
            "aws.access.key.id": s3_env["access_key"],
            "aws.secret.access.key": s3_env["secret_key"],
            "bootstrap.servers": secure_kafka.bootstrap,
            "format.class": "json",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "false",
            "service.timeout.ms": "30000",
            "store.envelope": "true",  # keys, headers and value bytes restored exactly
        }
        for prefix in prefixes:
            raw.update(secure_kafka.client_config(who.user, who.password, prefix))
            if ca_location:  # librdkafka's own name for the CA file instead of the Java truststore settings
                del raw[f"{prefix}ssl.truststore.type"]
                raw[f"{prefix}ssl.ca.location"] = raw.pop(f"{prefix}ssl.truststore.location")
        raw.update({k.replace("__", "."): str(v) for k, v in properties.items()})
        return raw, (SOURCE if source else SINK).parse(raw)

    return make


@pytest.fixture(scope="session")
def secure_s3(tmp_path_factory):
    """The HTTPS SeaweedFS of :mod:`secure_s3`, started once for the run and stopped after it."""
    s3, proc = server.start(tmp_path_factory.mktemp("secure-s3"))
    yield s3
    server.stop(proc)


@pytest.fixture
def secure_s3_config(make_config, secure_s3):
    """``secure_s3_config(identity, topics, source=False, **properties)`` → (raw, parsed) bound to the HTTPS store as
    ``identity`` ("admin", "backup", "restore"), trusting its CA through ``s3.ssl.ca.bundle``."""

    def make(identity: str, topics, source: bool = False, **properties):
        store = {k.replace(".", "__"): v for k, v in secure_s3.settings(identity).items()}
        return make_config(secure_s3.bucket, topics, source=source, **{**store, **properties})

    return make
