"""Issue 28 item 3: Kafka's ``-b`` and kcat's ``-X`` and ``-t`` override the configuration file on the commands, as
``config show`` and ``config validate`` print and judge the result (the real command in a subprocess; no Kafka, S3
or Spark needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_s3.api import client_overrides

pytestmark = pytest.mark.issue(28, item=3)

FILE = ["name=n", "topics.regex=orders-.*", "flush.size=3", "s3.bucket.name=b", "format.class=json"]


def run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KAFKA_BOOTSTRAP_SERVERS": "env-host:9092"},
        check=False,
    )


@pytest.fixture
def config_file(tmp_path: Path) -> str:
    path = tmp_path / "job.properties"
    path.write_text("".join(f"{line}\n" for line in [*FILE, "bootstrap.servers=file-host:9092"]))
    return str(path)


def test_client_property_flag_gives_connection_properties_to_every_client_and_others_to_the_clients_they_apply_to():
    assert client_overrides(
        {
            "security.protocol": "SASL_SSL",
            "client.id": "me",
            "fetch.max.bytes": "2000000",  # a consumer property
            "linger.ms": "5",  # a producer property (librdkafka runs admin clients as producers)
            "debug": "broker",  # every client's
            "consumer.isolation.level": "read_committed",  # one client, as the file names it
        }
    ) == {
        "security.protocol": "SASL_SSL",
        "client.id": "me",
        "consumer.override.fetch.max.bytes": "2000000",
        "producer.override.linger.ms": "5",
        "admin.override.linger.ms": "5",
        "consumer.override.debug": "broker",
        "producer.override.debug": "broker",
        "admin.override.debug": "broker",
        "consumer.isolation.level": "read_committed",
    }


def test_bootstrap_topic_and_client_property_flags_override_the_file(config_file):
    args = ["config", "show", "-c", config_file, "--json", "-b", "flag-host:9092", "-t", "a", "-t", "b"]
    result = run_cli([*args, "-X", "client.id=cli", "-X", "debug=broker"])
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["bootstrap.servers"] == "flag-host:9092" and shown["topics"] == "a,b", shown
    assert not shown.get("topics.regex"), shown  # -t replaces topics.regex too: one of them is set
    assert shown["client.id"] == "cli" and shown["admin.override.debug"] == "broker", shown


@pytest.mark.parametrize(
    ("flag", "key"), [("socket.timeout.ms=soon", "socket.timeout.ms"), ("no.such.property=1", "no.such.property")]
)
def test_a_client_property_librdkafka_refuses_is_a_configuration_error_naming_the_key(config_file, flag, key):
    result = run_cli(["config", "validate", "-c", config_file, "-X", flag])
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("kafka-s3: error: invalid Kafka client property") and key in result.stderr


def test_client_property_flag_needs_key_equals_value(config_file):
    result = run_cli(["config", "validate", "-c", config_file, "-X", "security.protocol"])
    assert result.returncode == 2 and "-X expects key=value, got 'security.protocol'" in result.stderr, result.stderr
