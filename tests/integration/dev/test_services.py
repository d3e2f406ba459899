"""The project's own services: idempotent start, stop by PID, env file, external services respected."""

from __future__ import annotations

import pytest

from kafka_s3.dev import services as dev

pytestmark = pytest.mark.integration


@pytest.fixture
def private_services(tmp_path, monkeypatch):
    """A second, private instance on other ports, so the suite's shared services are never disturbed."""
    monkeypatch.setenv("KAFKA_S3_SERVICES_DIR", str(tmp_path / "services"))
    environ = {"KAFKA_S3_DEV_KAFKA_PORT": "22092", "KAFKA_S3_DEV_S3_PORT": "22333"}
    yield environ
    dev.down()


def test_up_twice_is_one_instance_and_down_stops_it(private_services, tmp_path):
    first = dev.ensure_up(private_services, quiet=True)
    pids = (dev.kafka_pid(), dev.s3_pid())
    second = dev.ensure_up(private_services, quiet=True)
    assert (dev.kafka_pid(), dev.s3_pid()) == pids and first == second
    assert first.kafka_bootstrap == "127.0.0.1:22092" and first.s3_endpoint == "http://127.0.0.1:22333"
    assert dev.kafka_healthy(first.kafka_bootstrap)
    assert dev.s3_healthy(first.s3_endpoint, first.access_key, first.secret_key)
    env_file = (tmp_path / "services" / "env").read_text()
    assert "export KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:22092" in env_file
    assert "export AWS_ENDPOINT_URL_S3=http://127.0.0.1:22333" in env_file
    dev.down()
    assert not dev._alive(pids[0]) and not dev._alive(pids[1])


def test_external_services_start_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_S3_SERVICES_DIR", str(tmp_path / "services"))
    external = {
        "KAFKA_BOOTSTRAP_SERVERS": "kafka.example:9092",
        "AWS_ENDPOINT_URL_S3": "https://s3.example",
        "AWS_ACCESS_KEY_ID": "AKIA",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_REGION": "eu-west-1",
    }
    settings = dev.ensure_up(external, quiet=True)
    assert settings.environ() == external
    assert dev.kafka_pid() is None and dev.s3_pid() is None
    assert not (tmp_path / "services" / "kafka").exists() and not (tmp_path / "services" / "s3").exists()
