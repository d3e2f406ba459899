"""Issue 30 item 2, the pure parts of the user's Spark server: which mode a command runs in, where the state lives,
what the state file records (and a torn one), what makes a server unfit for a command, the idle timeout."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_s3.core.errors import ConfigError
from kafka_s3.spark.server_state import (
    DEFAULT_IDLE_TIMEOUT_S,
    ServerIdentity,
    ServerState,
    choose_mode,
    environment_digests,
    idle_timeout,
    state_dir,
)

pytestmark = pytest.mark.issue(30, item=2)


def test_a_plain_command_runs_on_the_server_and_every_explicit_choice_keeps_its_mode():
    assert choose_mode(None, None, {}) == "server"
    assert choose_mode("local[*]", None, {}) == "classic"  # --master: in-process, as before
    assert choose_mode("spark://h:7077", None, {}) == "classic"
    assert choose_mode(None, "sc://h:1", {}) == "remote"
    assert choose_mode("sc://h:1", None, {}) == "remote"
    assert choose_mode(None, None, {"SPARK_REMOTE": "sc://h:1"}) == "remote"
    assert choose_mode("local[2]", None, {"SPARK_REMOTE": "sc://h:1"}) == "classic"
    assert choose_mode(None, None, {"KAFKA_S3_SPARK_MASTER": "local[2]"}) == "classic"


@pytest.mark.parametrize("value", ["0", "false", "No", " off "])
def test_the_opt_out_runs_spark_in_process(value):
    assert choose_mode(None, None, {"KAFKA_S3_SPARK_SERVER": value}) == "classic"
    assert choose_mode(None, None, {"KAFKA_S3_SPARK_SERVER": "1"}) == "server"


def test_the_state_lives_in_the_users_state_directory_unless_overridden():
    home = Path("/home/u")
    assert state_dir({}, home) == home / ".local/state/kafka-s3/server"
    assert state_dir({"XDG_STATE_HOME": "/x"}, home) == Path("/x/kafka-s3/server")
    assert state_dir({"XDG_STATE_HOME": "/x", "KAFKA_S3_SPARK_SERVER_DIR": "/t/s"}, home) == Path("/t/s")


def test_the_idle_timeout_takes_seconds_or_units_and_refuses_anything_else():
    assert idle_timeout({}) == DEFAULT_IDLE_TIMEOUT_S == 1800
    assert idle_timeout({"KAFKA_S3_SPARK_SERVER_IDLE_TIMEOUT": "90"}) == 90
    assert idle_timeout({"KAFKA_S3_SPARK_SERVER_IDLE_TIMEOUT": "2.5s"}) == 2.5
    assert idle_timeout({"KAFKA_S3_SPARK_SERVER_IDLE_TIMEOUT": "20m"}) == 1200
    assert idle_timeout({"KAFKA_S3_SPARK_SERVER_IDLE_TIMEOUT": "1h"}) == 3600
    for bad in ("0", "soon", "-5m", "10d"):
        with pytest.raises(ConfigError, match="KAFKA_S3_SPARK_SERVER_IDLE_TIMEOUT"):
            idle_timeout({"KAFKA_S3_SPARK_SERVER_IDLE_TIMEOUT": bad})


def test_the_state_file_round_trips_and_a_torn_or_foreign_one_is_no_server():
    state = ServerState(
        pid=42,
        port=40001,
        started=1_700_000_000.5,
        identity=ServerIdentity("kafka-s3 1 (code c), pyspark 4, Python /p", {"spark.x": "1"}, {"AWS_PROFILE": "d"}),
        log="/s/server.log",
        idle_timeout_s=600,
    )
    assert ServerState.from_json(state.to_json()) == state
    assert state.url == "sc://127.0.0.1:40001"
    ended = state.with_(ready=True, exit_code=137)
    assert ServerState.from_json(ended.to_json()) == ended
    for torn in ("", "{", "[]", '{"format": 1, "pid": 3}', state.to_json().replace('"format": 1', '"format": 99')):
        assert ServerState.from_json(torn) is None


def test_a_server_is_unfit_for_a_command_of_another_version_settings_or_worker_environment_named_without_values():
    running = ServerIdentity("kafka-s3 1", {"spark.a": "1"}, environment_digests({"AWS_PROFILE": "prod", "HOME": "/h"}))
    assert running.differences(ServerIdentity("kafka-s3 1", {"spark.a": "1"}, {**running.environment})) == []
    wanted = ServerIdentity(
        "kafka-s3 2", {"spark.a": "2", "spark.b": "1"}, environment_digests({"AWS_PROFILE": "dev", "HTTPS_PROXY": "p"})
    )
    assert running.differences(wanted) == [
        "version kafka-s3 1 (this command: kafka-s3 2)",
        "spark.a",
        "spark.b",
        "$AWS_PROFILE",
        "$HTTPS_PROXY",
    ]
    assert "prod" not in str(running.environment) and "HOME" not in running.environment
