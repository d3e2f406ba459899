"""Issue 18 item 4, the parts of Spark Connect support that need no server: which URL a command uses, the shared
session's id, progress from the server's reports, the CLI options, and a fast refusal of an unreachable server."""

from __future__ import annotations

import json
import socket
import time
from types import SimpleNamespace

import pytest

from kafka_s3.cli.parser import build_parser
from kafka_s3.core.errors import ConfigError
from kafka_s3.spark import session as spark_session
from kafka_s3.spark.engine import ConnectProgress, SparkEngine, route_address


def test_remote_url_is_remote_then_an_sc_master_then_spark_remote_unless_a_master(monkeypatch):
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert spark_session.remote_url() is None
    assert spark_session.remote_url("local[2]") is None
    assert spark_session.remote_url(None, "sc://a:1") == "sc://a:1"
    assert spark_session.remote_url("sc://b:2") == "sc://b:2"  # --master sc://... is a Connect URL too
    monkeypatch.setenv("SPARK_REMOTE", "sc://env:3")
    assert spark_session.remote_url() == "sc://env:3"
    assert spark_session.remote_url("local[2]") is None  # an explicit master wins over the environment
    assert spark_session.remote_url(None, "sc://a:1") == "sc://a:1"


def test_url_parameters_are_added_once():
    assert spark_session._with_param("sc://h:1", "user_agent", "x") == "sc://h:1/;user_agent=x"
    assert spark_session._with_param("sc://h:1/", "user_agent", "x") == "sc://h:1/;user_agent=x"
    assert spark_session._with_param("sc://h:1/;token=t", "session_id", "s") == "sc://h:1/;token=t;session_id=s"
    assert spark_session._with_param("sc://h:1/;session_id=mine", "session_id", "s") == "sc://h:1/;session_id=mine"
    assert spark_session._with_param("sc://h:1", "session_id", None) == "sc://h:1"
    assert spark_session._user_agent("kafka-s3 backup") == "kafka-s3_backup"


def test_shared_session_id_is_kept_per_server_and_renewed(monkeypatch, tmp_path):
    path = tmp_path / "sessions.json"
    monkeypatch.setenv("KAFKA_S3_CONNECT_SESSIONS", str(path))
    first = spark_session._session_id("sc://h:1")
    assert first and spark_session._session_id("sc://h:1/;token=t") == first  # same server, same session
    other = spark_session._session_id("sc://h:2")
    assert other and other != first
    renewed = spark_session._session_id("sc://h:1", renew=True)
    assert renewed not in (None, first)
    assert json.loads(path.read_text()) == {"sc://h:1": renewed, "sc://h:2": other}
    assert spark_session._session_id("sc://h:1/;session_id=mine") is None  # the URL names its own


def test_unreachable_server_is_refused_at_once_naming_it():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        started = time.monotonic()
        with pytest.raises(ConfigError) as error:
            spark_session.build_remote_session(f"sc://127.0.0.1:{port}")
    assert time.monotonic() - started < 5
    assert f"sc://127.0.0.1:{port}" in str(error.value) and error.value.key == "--remote"
    with pytest.raises(ConfigError, match="sc://host:port"):
        spark_session.build_remote_session("http://127.0.0.1:1")


def test_connect_progress_totals_running_operations_and_drops_finished_ones():
    progress = ConnectProgress()
    assert progress.totals() is None
    stage = SimpleNamespace
    progress([stage(num_tasks=4, num_completed_tasks=1)], 3, "op1", False)
    progress([stage(num_tasks=2, num_completed_tasks=2)], 0, "op2", False)
    assert progress.totals() == (3, 6)
    progress([stage(num_tasks=4, num_completed_tasks=4)], 0, "op1", True)
    assert progress.totals() == (2, 2)


def test_route_address_of_a_loopback_server_is_a_loopback_address():
    assert route_address("sc://127.0.0.1:15002") == "127.0.0.1"
    assert route_address("sc://localhost") in ("127.0.0.1", "::1")


def test_every_spark_command_takes_remote_and_refuses_it_beside_master(monkeypatch):
    parser = build_parser()
    for command in ("backup", "restore", "verify", "groups"):
        args = parser.parse_args([command, "--remote", "sc://h:1", "--config", "x.properties"])
        assert args.remote == "sc://h:1" and args.master is None
    with pytest.raises(SystemExit):
        parser.parse_args(["backup", "--remote", "sc://h:1", "--master", "local[1]", "--config", "x.properties"])
    engine = SparkEngine(remote="sc://h:1")
    assert engine.remote == "sc://h:1" and engine.task_progress() is None and not engine.is_remote


def test_dev_services_export_the_connect_server_they_started():
    from tools import services

    settings = services.Settings("127.0.0.1:1", None, None, None, "us-east-1")
    assert "SPARK_REMOTE" not in settings.environ()
    settings.spark_remote = "sc://127.0.0.1:21502"
    assert settings.environ()["SPARK_REMOTE"] == "sc://127.0.0.1:21502"
    command = services.spark_connect_command(21502)
    assert command[command.index("--class") + 1] == services.SPARK_CONNECT_CLASS
    assert "spark.connect.grpc.binding.port=21502" in command
    assert any(c.startswith("spark.pyspark.python=") for c in command)  # its workers can import kafka-s3
