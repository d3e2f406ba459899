"""Issue 28 item 2 (a first run that explains itself) and item 5's ``--log-format json``, as a new user meets them:
the real ``kafka-s3`` command in a subprocess against the real Kafka broker and S3 server, on a machine whose Java
is missing, too old, or not where ``JAVA_HOME`` says. The command must say so in one line, exit with the documented
code, and leave the bucket as it found it; in ``--log-format json`` every line on stderr is a JSON object."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_s3.core.errors import JavaUnavailable
from tests.support.integration import list_keys, write_properties

pytestmark = pytest.mark.integration

JAVA_11_VERSION = """\
openjdk version "11.0.22" 2024-01-16
OpenJDK Runtime Environment (build 11.0.22+7-post-Debian-1deb11u1)
OpenJDK 64-Bit Server VM (build 11.0.22+7-post-Debian-1deb11u1, mixed mode, sharing)
"""


def path_without_java(tmp_path: Path) -> str:
    """``$PATH`` with every ``java`` hidden: a directory holding one is replaced by a copy made of symbolic links to
    everything else in it (``spark-class`` still finds bash, dirname...)."""
    entries = []
    for index, directory in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        if directory and (Path(directory) / "java").exists():
            shadow = tmp_path / f"path-{index}"
            shadow.mkdir()
            for item in Path(directory).iterdir():
                if item.name != "java":
                    (shadow / item.name).symlink_to(item)
            directory = str(shadow)
        entries.append(directory)
    return os.pathsep.join(entries)


def fake_java_11(tmp_path: Path) -> str:
    """A directory holding a ``java`` that answers ``-version`` as Java 11 does (and fails at anything else)."""
    directory = tmp_path / "java-11" / "bin"
    directory.mkdir(parents=True)
    script = directory / "java"
    script.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{JAVA_11_VERSION}EOF\n[ \"$1\" = -version ] || exit 1\n")
    script.chmod(0o755)
    return str(directory)


def run_kafka_s3(args: list[str], env: dict[str, str | None]) -> subprocess.CompletedProcess[str]:
    """``kafka-s3 ARGS`` with ``env`` applied to the services' environment (a None value unsets the variable)."""
    environ = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    for key, value in env.items():
        if value is None:
            environ.pop(key, None)
        else:
            environ[key] = value
    return subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", *args], capture_output=True, text=True, env=environ, timeout=300
    )


def java_situations(tmp_path: Path) -> dict[str, tuple[dict[str, str | None], str]]:
    """Each broken Java of a first run: the environment, and what the one error line says was found."""
    return {
        "no java": (
            {"JAVA_HOME": None, "PATH": path_without_java(tmp_path)},
            "found none (JAVA_HOME is not set, no java on the PATH)",
        ),
        "JAVA_HOME without java": (
            {"JAVA_HOME": "/nonexistent"},
            "found none (JAVA_HOME=/nonexistent holds no bin/java)",
        ),
        "java 11": (
            {"JAVA_HOME": None, "PATH": fake_java_11(tmp_path) + os.pathsep + os.environ["PATH"]},
            'found Java 11 (openjdk version "11.0.22"',
        ),
    }


@pytest.fixture
def backup_file(make_config, fresh_bucket, fresh_topic, produce, tmp_path):
    """A backup configuration of a fresh topic holding 6 records, into an empty bucket: (file, bucket)."""
    topic = fresh_topic(1)
    produce(topic, [{"value": b'{"i":%d}' % i} for i in range(6)])
    raw, _ = make_config(fresh_bucket, topic, flush__size="3", topic__rename=f"{topic}:{topic}-restored")
    return str(write_properties(tmp_path / "backup.properties", raw)), fresh_bucket


def assert_one_java_line(result: subprocess.CompletedProcess[str], found: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == JavaUnavailable.exit_code, result.stderr[-4000:]
    assert len(lines) == 1, result.stderr[-4000:]
    assert lines[0].startswith("kafka-s3: error: Spark needs Java 17 or newer; " + found), lines[0]
    assert "install" in lines[0] and "--remote" in lines[0], lines[0]


@pytest.mark.issue(28, item=2)
@pytest.mark.parametrize("situation", ["no java", "JAVA_HOME without java", "java 11"])
def test_backup_without_a_fit_java_says_so_in_one_line_and_writes_nothing(backup_file, s3_client, tmp_path, situation):
    props, bucket = backup_file
    env, found = java_situations(tmp_path)[situation]
    result = run_kafka_s3(["backup", "--once", "--no-progress", "-c", props], env)
    assert_one_java_line(result, found)
    assert list_keys(s3_client, bucket) == []


@pytest.mark.issue(28, item=2)
def test_restore_and_deep_verify_without_java_say_so_before_touching_anything(backup_file, s3_client, tmp_path):
    """The commands that start Spark check Java first; those that do not (a dry run) still work without it."""
    props, bucket = backup_file
    env, found = java_situations(tmp_path)["no java"]
    assert_one_java_line(run_kafka_s3(["restore", "--no-progress", "-c", props], env), found)
    assert_one_java_line(run_kafka_s3(["verify", "--deep", "-c", props], env), found)
    dry = run_kafka_s3(["restore", "--dry-run", "-c", props], env)
    assert "Java" not in dry.stderr, dry.stderr[-4000:]
    assert list_keys(s3_client, bucket) == []


@pytest.mark.issue(28, item=2)
def test_spark_connect_needs_no_local_java(backup_file, tmp_path):
    """With ``--remote sc://...`` the JVM runs on the server: no Java check here (an unreachable server is the
    error, naming its URL)."""
    props, _ = backup_file
    env, _ = java_situations(tmp_path)["no java"]
    url = "sc://127.0.0.1:1"
    result = run_kafka_s3(["backup", "--once", "--no-progress", "--remote", url, "-c", props], env)
    assert result.returncode == 2, result.stderr[-4000:]
    assert "Java" not in result.stderr, result.stderr[-4000:]
    assert f"Spark Connect server {url} is not reachable" in result.stderr, result.stderr[-4000:]


def json_lines(stderr: str) -> list[dict[str, object]]:
    """Every line of ``stderr`` as a JSON object (a line that is not one fails the test, naming it)."""
    docs = []
    for line in stderr.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            raise AssertionError(f"not JSON on stderr: {line!r}\n{stderr[-4000:]}") from None
        assert isinstance(doc, dict), line
        assert {"time", "level", "logger", "message"} <= set(doc), line
        docs.append(doc)
    return docs


@pytest.mark.issue(28, item=5)
def test_log_format_json_makes_every_stderr_line_json_in_a_run_that_starts_spark(backup_file):
    props, _ = backup_file
    done = run_kafka_s3(["--log-format", "json", "backup", "--once", "--no-progress", "-c", props], {})
    assert done.returncode == 0, done.stderr[-4000:]
    lines = json_lines(done.stderr)
    committed = [line for line in lines if str(line["message"]).startswith("committed ")]
    assert [(c["records"], c["first_offset"], c["last_offset"]) for c in committed] == [(3, 0, 2), (3, 3, 5)]
    cycles = [line for line in lines if line.get("cycle") and "records" in line and "seconds" in line]
    assert sum(int(str(c["records"])) for c in cycles) == 6


@pytest.mark.issue(28, item=5)
def test_log_format_json_makes_the_final_error_a_json_object(backup_file, tmp_path):
    props, _ = backup_file
    env, found = java_situations(tmp_path)["JAVA_HOME without java"]
    failed = run_kafka_s3(["--log-format", "json", "backup", "--once", "-c", props], env)
    assert failed.returncode == JavaUnavailable.exit_code, failed.stderr[-4000:]
    (error,) = json_lines(failed.stderr)
    assert error["level"] == "ERROR" and error["exit_code"] == JavaUnavailable.exit_code, error
    assert str(error["message"]).startswith("Spark needs Java 17 or newer; " + found), error
