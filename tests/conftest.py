"""Shared fixtures.

Integration fixtures start the project's own services on first use (``kafka_s3.dev.services``), or use the external
Kafka / S3 named by ``KAFKA_BOOTSTRAP_SERVERS`` / ``AWS_ENDPOINT_URL_S3`` (+ ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``) when those are set. Unit tests never touch them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def services():
    """Connection settings of the running services; also exported to os.environ for subprocesses."""
    from kafka_s3.dev import services as dev

    os.environ.setdefault("KAFKA_S3_SERVICES_DIR", str(ROOT / ".services"))
    settings = dev.ensure_up(quiet=True)
    os.environ.update(settings.environ())
    return settings


@pytest.fixture(scope="session")
def s3_env(services):
    return {
        "endpoint_url": services.s3_endpoint,
        "access_key": services.access_key,
        "secret_key": services.secret_key,
        "region": services.region,
    }


@pytest.fixture(scope="session")
def s3_client(s3_env):
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=s3_env["endpoint_url"],
        aws_access_key_id=s3_env["access_key"],
        aws_secret_access_key=s3_env["secret_key"],
        region_name=s3_env["region"],
    )


def _remove_bucket(client, bucket: str) -> None:
    """Empty and delete a test bucket: SeaweedFS gives every bucket volumes of its own, and slots run out."""
    for upload in client.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
        client.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
    client.delete_bucket(Bucket=bucket)


@pytest.fixture
def fresh_bucket(s3_client):
    """A new, empty bucket (names are unique per test), removed after the test."""
    name = "t-" + uuid.uuid4().hex[:16]
    s3_client.create_bucket(Bucket=name)
    yield name
    with contextlib.suppress(Exception):  # a test may have removed it itself
        _remove_bucket(s3_client, name)


@pytest.fixture
def remove_bucket(s3_client):
    """``remove_bucket(name)``: empty and delete a bucket a test created itself."""
    return lambda bucket: _remove_bucket(s3_client, bucket)


@pytest.fixture(scope="session")
def kafka_bootstrap(services) -> str:
    return services.kafka_bootstrap


@pytest.fixture
def fresh_topic(kafka_bootstrap):
    """Factory: ``fresh_topic(partitions=1) -> name`` creating a unique topic that keeps records forever."""
    from kafka_s3.io.kafka.admin import Admin

    admin = Admin({"bootstrap.servers": kafka_bootstrap})

    def make(partitions: int = 1, prefix: str = "t") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        admin.create_topic(name, partitions, config={"retention.ms": "-1"})
        return name

    return make


@pytest.fixture(scope="session")
def spark(services):
    """One SparkSession for the whole run (local[2]), as Spark start-up costs seconds."""
    from kafka_s3.spark.session import build_session

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = build_session("local[2]", "kafka-s3 tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def engine(spark):
    """The pipelines' engine on the shared session."""
    from kafka_s3.spark.engine import SparkEngine

    return SparkEngine(session=spark)


# ----------------------------------------------------------------------------------------- secured Kafka (issue 13)
_DESELECTED_SECURE: list[str] = []


def pytest_collection_modifyitems(config, items):
    """Tests marked ``secure_kafka`` need a secured Apache Kafka: an external one (``KAFKA_S3_SECURE_BOOTSTRAP``...)
    or one started from the Apache Kafka distribution. Without either they are deselected, and the terminal summary
    says so and why (never a silent skip)."""
    from kafka_s3.dev.secure_kafka import secure_kafka_unavailable

    marked = [item for item in items if item.get_closest_marker("secure_kafka")]
    why = secure_kafka_unavailable() if marked else None
    if not why:
        return
    config.hook.pytest_deselected(items=marked)
    items[:] = [item for item in items if not item.get_closest_marker("secure_kafka")]
    _DESELECTED_SECURE.append(f"DESELECTED {len(marked)} secured-Kafka test(s): {why}")


def pytest_terminal_summary(terminalreporter):
    for line in _DESELECTED_SECURE:
        terminalreporter.write_sep("!", line, yellow=True, bold=True)
