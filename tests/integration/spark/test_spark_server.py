"""Issue 30 item 2: plain commands (no ``--master``, no ``--remote``) run on the user's Spark server, started when
the first one ends and reused by the next; it stops when idle or asked to, and a server that is gone, of another
version or unable to start is replaced or bypassed, saying so — the command itself always runs.

Every test has a state directory of its own (``KAFKA_S3_SPARK_SERVER_DIR``; the rest of the suite runs Spark
in-process) and the CLI as a subprocess against the real services. Backups of an empty topic run no Spark job: they
only choose their server, which is what most of these tests look at."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.spark.test_spark_connect import expected_rows, read_back, sent_records
from tests.support.integration import run_cli, write_properties

pytestmark = [pytest.mark.integration, pytest.mark.issue(30, item=2)]


@pytest.fixture
def server_env(tmp_path):
    """Plain commands on a server of this test's own; whatever it leaves running is stopped."""
    env = {
        "KAFKA_S3_SPARK_SERVER": "1",
        "KAFKA_S3_SPARK_SERVER_DIR": str(tmp_path / "server"),
        "KAFKA_S3_CONNECT_SESSIONS": str(tmp_path / "sessions.json"),
    }
    yield env
    with contextlib.suppress(OSError, ValueError, KeyError):
        pid = state(env)["pid"]
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while running(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if running(pid):
            os.killpg(pid, signal.SIGKILL)


def state(env: dict[str, str]) -> dict:
    return json.loads((Path(env["KAFKA_S3_SPARK_SERVER_DIR"]) / "state.json").read_text())


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def wait_until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what} within {timeout:.0f}s"
        time.sleep(0.25)


def ready(env: dict[str, str]) -> bool:
    try:
        return bool(state(env)["ready"])
    except (OSError, ValueError):
        return False


def status(env: dict[str, str]) -> dict:
    result = run_cli(["server", "status", "--json"], env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(json.loads(result.stdout))


def test_the_first_plain_command_starts_a_server_the_next_runs_on_it_record_exact_and_it_stops_when_idle(
    server_env, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, tmp_path
):
    env = {**server_env, "KAFKA_S3_SPARK_SERVER_IDLE_TIMEOUT": "30s"}
    topic = fresh_topic(1)
    records = sent_records(1, 4)
    produce(topic, records)
    target = f"{topic}-restored"
    raw, _ = make_config(fresh_bucket, topic, format__class="parquet", store__envelope="true")
    backup = run_cli(
        ["backup", "--once", "--no-progress", "-c", str(write_properties(tmp_path / "b.properties", raw))], env=env
    )
    assert backup.returncode == 0, backup.stderr[-3000:]
    assert "starting a Spark server for the next commands" in backup.stderr
    assert "Spark Connect" not in backup.stderr  # the first command ran in-process, as without a server
    assert "4 records in" in backup.stdout
    started = state(env)
    wait_until(lambda: ready(env), 240, "the server ready")

    raw, _ = make_config(
        fresh_bucket,
        topic,
        source=True,
        format__class="parquet",
        store__envelope="true",
        topic__rename=f"{topic}:{target}",
        topic__creation__enable="true",
        topic__creation__default__retention__ms="-1",
    )
    restore = run_cli(
        ["restore", "--no-progress", "-c", str(write_properties(tmp_path / "r.properties", raw))], env=env
    )
    assert restore.returncode == 0, restore.stderr[-3000:]
    assert f"(Spark Connect sc://127.0.0.1:{started['port']})" in restore.stderr  # on the server
    assert read_back(kafka_bootstrap, target) == expected_rows(records, 1)
    shown = status(env)
    assert (shown["running"], shown["pid"], shown["url"]) == (True, started["pid"], f"sc://127.0.0.1:{started['port']}")
    assert shown["log"] == started["log"] and shown["version"].startswith("kafka-s3 ")

    wait_until(lambda: not running(started["pid"]), 120, "the idle server stopped itself")
    log = Path(started["log"]).read_text()
    assert "idle for 30s: stopping" in log
    assert re.search(
        r"ready on sc://\S+ after [\d.]+s \(Spark Connect answering after [\d.]+s, its Python workers warm", log
    )
    assert status(env) == {"running": False}


def test_a_server_of_another_version_is_restarted_a_killed_one_replaced_and_stop_stops_it_each_said(
    server_env, make_config, fresh_bucket, fresh_topic, tmp_path
):
    raw, _ = make_config(fresh_bucket, fresh_topic(1))
    backup = ["backup", "--once", "--no-progress", "-c", str(write_properties(tmp_path / "b.properties", raw))]
    first = run_cli(backup, env=server_env)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "starting a Spark server for the next commands" in first.stderr
    old = state(server_env)

    stale = {**old, "version": "kafka-s3 0.0.1 (code 000000000000), pyspark 3.5.0, Python /old/bin/python"}
    (Path(server_env["KAFKA_S3_SPARK_SERVER_DIR"]) / "state.json").write_text(json.dumps(stale))
    second = run_cli(backup, env=server_env)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "runs with other settings (version kafka-s3 0.0.1 (code 000000000000)" in second.stderr
    assert "stopped, a new one starts when this command ends" in second.stderr
    restarted = state(server_env)
    assert restarted["pid"] != old["pid"] and not running(old["pid"])

    os.killpg(restarted["pid"], signal.SIGKILL)  # the server, its JVM and its workers, with no chance to clean up
    wait_until(lambda: not running(restarted["pid"]), 30, "the killed server gone")
    third = run_cli(backup, env=server_env)
    assert third.returncode == 0, third.stderr[-3000:]
    assert f"(pid {restarted['pid']}, log {restarted['log']}) is not running: a new one starts when" in third.stderr
    replaced = state(server_env)
    assert replaced["pid"] != restarted["pid"] and running(replaced["pid"])

    stop = run_cli(["server", "stop"], env=server_env)
    assert stop.returncode == 0, stop.stderr[-3000:]
    assert f"stopped the Spark server sc://127.0.0.1:{replaced['port']} (pid {replaced['pid']}" in stop.stdout
    assert not running(replaced["pid"])
    assert status(server_env) == {"running": False}


def test_a_server_that_cannot_start_is_reported_with_its_log_and_the_next_command_says_so(
    server_env, make_config, fresh_bucket, fresh_topic, tmp_path
):
    failed = run_cli(["server", "start"], env={**server_env, "JAVA_HOME": str(tmp_path / "no-java")})
    assert failed.returncode == 1, failed.stderr[-3000:]
    assert "the Spark server failed to start (log " in failed.stderr
    assert "no-java" in failed.stderr  # the tail of its log: spark-submit naming the Java it could not run

    raw, _ = make_config(fresh_bucket, fresh_topic(1))
    backup = run_cli(
        ["backup", "--once", "--no-progress", "-c", str(write_properties(tmp_path / "b.properties", raw))],
        env=server_env,
    )
    assert backup.returncode == 0, backup.stderr[-3000:]
    assert "ended with exit code" in backup.stderr and "no-java" in backup.stderr
    assert "a new one starts when this command ends" in backup.stderr


def test_the_opt_out_and_an_explicit_master_run_without_the_server_and_a_dead_ones_state_is_no_server(
    server_env, make_config, fresh_bucket, fresh_topic, tmp_path
):
    raw, _ = make_config(fresh_bucket, fresh_topic(1))
    backup = ["backup", "--once", "--no-progress", "-c", str(write_properties(tmp_path / "b.properties", raw))]
    for args, env in (
        (backup, {**server_env, "KAFKA_S3_SPARK_SERVER": "0"}),
        ([*backup, "--master", "local[*]"], server_env),
    ):
        result = run_cli(args, env=env)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Spark server" not in result.stderr
        assert not Path(server_env["KAFKA_S3_SPARK_SERVER_DIR"]).exists()  # never started, never looked for

    dead = subprocess.Popen(["true"])
    dead.wait()
    where = Path(server_env["KAFKA_S3_SPARK_SERVER_DIR"])
    where.mkdir()
    (where / "state.json").write_text(
        json.dumps(
            {
                "format": 1,
                "pid": dead.pid,
                "port": 1,
                "started": time.time(),
                "version": "kafka-s3 0",
                "log": str(where / "server.log"),
                "idle_timeout_s": 60,
                "ready": True,
            }
        )
    )
    said = run_cli(["server", "status"], env=server_env)
    assert said.returncode == 0 and said.stdout.startswith("no Spark server is running"), said.stdout
    assert not (where / "state.json").exists()
