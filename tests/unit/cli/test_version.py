"""``kafka-s3 --version`` as a user runs it: what kafka-s3 is and what it runs on, without a command or services."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafka_s3 import __version__


def version(*flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", *flags],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        check=False,
    )


@pytest.mark.issue(28, item=2)
@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_names_kafka_s3_and_what_it_runs_on(flag):
    done = version(flag)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"kafka-s3 {__version__}"
    names = [line.split(":", 1)[0] for line in lines[1:]]
    assert names == ["Python", "pyspark", "pyarrow", "confluent-kafka", "librdkafka", "Java"]


@pytest.mark.issue(28, item=2)
def test_version_says_when_java_home_holds_no_java():
    done = version("--version", JAVA_HOME="/nonexistent")
    assert done.returncode == 0, done.stderr
    assert "Java: not found (JAVA_HOME=/nonexistent holds no bin/java)" in done.stdout
