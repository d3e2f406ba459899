"""Issue 28 item 5: with ``--log-format json`` every line on stderr is a JSON object — a usage error, a line another
program of the process tree prints, the final error — without starting any service."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kafka_s3.cli.json_stderr import asked_for


def kafka_s3(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", *args], capture_output=True, text=True, timeout=120, check=False
    )


def records(stderr: str) -> list[dict[str, object]]:
    docs = [json.loads(line) for line in stderr.splitlines()]  # a line that is not JSON fails here
    assert docs and all({"time", "level", "logger", "message"} <= set(doc) for doc in docs), stderr
    return docs


@pytest.mark.issue(28, item=5)
def test_a_usage_error_in_json_mode_is_json_lines_ending_in_the_error():
    done = kafka_s3("--log-format", "json", "backup", "--no-such-flag")
    assert done.returncode == 2
    last = records(done.stderr)[-1]
    assert (last["level"], last["logger"]) == ("ERROR", "kafka_s3.cli")
    assert "--config/-c" in str(last["message"])


@pytest.mark.issue(28, item=5)
def test_the_final_error_in_json_mode_is_one_record_with_its_exit_code(tmp_path):
    missing = tmp_path / "missing.properties"
    done = kafka_s3("--log-format=json", "config", "validate", "-c", str(missing))
    assert done.returncode == 2
    (error,) = records(done.stderr)
    assert error["level"] == "ERROR" and error["exit_code"] == 2 and str(missing) in str(error["message"])


def test_json_mode_is_seen_before_parsing_in_both_spellings():
    assert asked_for(["--log-format", "json", "backup"]) and asked_for(["--log-format=json", "status"])
    assert not asked_for(["--log-format", "text", "backup"]) and not asked_for(["--log-format"])
