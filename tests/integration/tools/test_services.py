"""The project's own services: idempotent start, stop by PID, env file, external services respected."""

from __future__ import annotations

import pytest

from tests.support.integration import free_port_pair
from tools import services as dev
from tools.kafka_broker import kafka_healthy

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
    assert kafka_healthy(first.kafka_bootstrap)
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


@pytest.mark.issue(13, item=1)
@pytest.mark.apache_kafka
def test_apache_kafka_services_come_up_once_report_status_and_env_and_go_down(tmp_path, monkeypatch):
    """``KAFKA_S3_DEV_KAFKA=apache``: the services start Apache Kafka instead of noida-db (private ports and state)."""
    monkeypatch.setenv("KAFKA_S3_SERVICES_DIR", str(tmp_path / "services"))
    port = free_port_pair()
    environ = {
        "KAFKA_S3_DEV_KAFKA": "apache",
        "KAFKA_S3_DEV_KAFKA_PORT": str(port),
        "KAFKA_S3_EXTERNAL_S3": "1",  # the S3 side is covered above
    }
    try:
        first = dev.ensure_up(environ, quiet=True)
        pid = dev.apache_pid()
        assert first.kafka_bootstrap == f"127.0.0.1:{port}" and first.kafka_kind == "apache"
        assert kafka_healthy(first.kafka_bootstrap) and dev._alive(pid) and dev.kafka_pid() is None
        assert dev.ensure_up(environ, quiet=True) == first and dev.apache_pid() == pid  # idempotent
        assert f"running pid {pid} (Apache Kafka from " in dev.status()
        env_file = (tmp_path / "services" / "env").read_text()
        assert f"export KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:{port}" in env_file
        assert "export KAFKA_S3_DEV_KAFKA=apache" in env_file
    finally:
        dev.down()
    assert not dev._alive(pid)
    assert dev.status().startswith("kafka: stopped")


@pytest.mark.issue(13, item=1)
def test_apache_kafka_without_a_distribution_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_S3_SERVICES_DIR", str(tmp_path / "services"))
    environ = {
        "KAFKA_S3_DEV_KAFKA": "apache",
        "KAFKA_S3_KAFKA_HOME": str(tmp_path / "nowhere"),
        "KAFKA_S3_EXTERNAL_S3": "1",
    }
    with pytest.raises(SystemExit, match=rf"KAFKA_S3_DEV_KAFKA=apache: no Kafka distribution at {tmp_path}/nowhere"):
        dev.ensure_up(environ, quiet=True)
    with pytest.raises(SystemExit, match="KAFKA_S3_DEV_KAFKA=kraft: must be one of noida, apache"):
        dev.ensure_up({"KAFKA_S3_DEV_KAFKA": "kraft", "KAFKA_S3_EXTERNAL_S3": "1"}, quiet=True)
