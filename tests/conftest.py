"""Shared fixtures.

Integration fixtures start the project's own services on first use (``tools.services``), or use the external
Kafka / S3 named by ``KAFKA_BOOTSTRAP_SERVERS`` / ``AWS_ENDPOINT_URL_S3`` (+ ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``) when those are set. Unit tests never touch them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _kafka_under_test() -> tuple[str | None, str]:
    """Which Kafka the integration tests talk to, and a line saying so (and why) for pytest's header. Unless a broker
    is external (``KAFKA_BOOTSTRAP_SERVERS``) or one is chosen (``KAFKA_S3_DEV_KAFKA``), the suite runs against Apache
    Kafka when a distribution and Java 17+ are available, else against noida-db."""
    from tools import services as dev

    external = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    apache_missing = dev.apache_unavailable()
    if external:
        return None, f"kafka: external broker at {external} (KAFKA_BOOTSTRAP_SERVERS)"
    chosen = os.environ.get("KAFKA_S3_DEV_KAFKA")
    if chosen:
        return chosen, f"kafka: {chosen} (KAFKA_S3_DEV_KAFKA={chosen})"
    if apache_missing:
        return "noida", f"kafka: noida-db, as Apache Kafka is not available: {apache_missing}"
    return "apache", f"kafka: Apache Kafka from {dev.kafka_home()}"


def pytest_configure(config):
    # one seed for the run's randomized fault schedules, chosen before pytest-xdist starts its workers: each worker
    # collects the same schedules (a seed per worker would make their collections differ, which xdist refuses)
    os.environ.setdefault("KAFKA_S3_CHAOS_SEED", str(int(time.time())))
    # Spark in-process, as each test was written for (its own JVM, killed with its command by the crash tests), and
    # never the user's own Spark server: the server's tests (tests/integration/spark/test_spark_server.py) opt in
    # with a state directory of their own. Every CLI subprocess inherits this.
    os.environ["KAFKA_S3_SPARK_SERVER"] = "0"
    kind, line = _kafka_under_test()
    if kind:
        os.environ["KAFKA_S3_DEV_KAFKA"] = kind  # read by the services fixture (tools.services)
    config._kafka_s3_header = line


def pytest_report_header(config):
    return [config._kafka_s3_header]


def pytest_collection_modifyitems(config, items):
    """Tests that need Apache Kafka are deselected when it cannot be had, and the run says so at its start and its
    end — never a silent skip: ``apache_kafka`` tests start brokers of their own from a distribution;
    ``secure_kafka`` tests need a secured Apache Kafka (an external one, ``KAFKA_S3_SECURE_BOOTSTRAP``..., or one
    started from the distribution)."""
    from tools import services as dev
    from tools.secure_kafka import secure_kafka_unavailable

    config._kafka_s3_not_run = []
    for marker, unavailable, what in (
        ("apache_kafka", dev.apache_unavailable, "apache-kafka"),
        ("secure_kafka", secure_kafka_unavailable, "secured-Kafka"),
    ):
        chosen = [item for item in items if item.get_closest_marker(marker)]
        reason = unavailable() if chosen else None
        if not reason:
            continue
        config.hook.pytest_deselected(items=chosen)
        items[:] = [item for item in items if not item.get_closest_marker(marker)]
        line = f"{what} tests not run ({len(chosen)}): {reason}"
        config._kafka_s3_not_run.append(line)
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter:
            reporter.write_line(line, yellow=True, bold=True)
    if hasattr(config, "workeroutput"):  # an xdist worker: its controller prints the summary
        config.workeroutput["kafka_s3_not_run"] = config._kafka_s3_not_run


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist's controller collects nothing itself: it takes the not-run lines from its workers for the summary."""
    said = node.config.__dict__.setdefault("_kafka_s3_not_run", [])
    said.extend(line for line in getattr(node, "workeroutput", {}).get("kafka_s3_not_run", []) if line not in said)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for line in getattr(config, "_kafka_s3_not_run", []):
        terminalreporter.write_sep("=", line, yellow=True, bold=True)


@pytest.fixture(autouse=True)
def _logging_as_it_was():
    """A test that runs the CLI in-process (``main([...])``) sets up logging for a command: root handlers, the
    ``kafka_s3`` logger's level (WARNING for ``read`` and ``--quiet``), redacting stdout/stderr. That is right for the
    process a command owns and wrong for the next test, whose ``caplog`` would then see no INFO line: put it back."""
    root, ours = logging.getLogger(), logging.getLogger("kafka_s3")
    handlers, root_level, our_level = list(root.handlers), root.level, ours.level
    stdout, stderr = sys.stdout, sys.stderr
    yield
    root.handlers[:] = handlers
    root.setLevel(root_level)
    ours.setLevel(our_level)
    sys.stdout, sys.stderr = stdout, stderr


@pytest.fixture(scope="session")
def services():
    """Connection settings of the running services; also exported to os.environ for subprocesses."""
    from tools import services as dev

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
