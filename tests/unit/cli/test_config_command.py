"""Issue 16 item 7, as a user sees it: the real ``kafka-s3`` command in a subprocess (no Kafka, S3 or Spark needed).

Unknown keys get "did you mean", ``config show`` prints effective values, ``config validate`` rejects what a run
would reject (naming the key), one file serves backup and restore, and a planted secret never reaches any output.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BASE = {"name": "n", "topics": "t", "flush.size": "3", "s3.bucket.name": "b", "format.class": "json"}


def run_cli(args: list[str], env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def write(tmp_path: Path, lines: list[str], name: str = "job.properties") -> str:
    path = tmp_path / name
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def props(**extra: str) -> list[str]:
    return [f"{k}={v}" for k, v in {**BASE, **extra}.items()]


def assert_clean(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stdout + result.stderr, result.stderr


# ---------------------------------------------------------------------------------------------------- did you mean
def test_unknown_key_suggests_the_close_known_key(tmp_path):
    path = write(tmp_path, [*props(), "flush.szie=5", "frobnicate.widgets=1"])
    result = run_cli(["config", "validate", "-c", path])
    assert result.returncode == 0, result.stderr
    assert_clean(result)
    lines = result.stderr.splitlines()
    typo = [line for line in lines if "flush.szie" in line]
    assert len(typo) == 1 and "did you mean 'flush.size'?" in typo[0], result.stderr
    far = [line for line in lines if "frobnicate.widgets" in line]
    assert len(far) == 1 and "did you mean" not in far[0], result.stderr


def test_a_misspelt_sink_or_source_key_is_warned_with_the_close_known_key():
    from kafka_s3.core.config.sink import SINK
    from kafka_s3.core.config.source import SOURCE

    assert any(
        "did you mean 'rotate.interval.ms'?" in w for w in SINK.parse({**BASE, "rotate.intervall.ms": "5"}).warnings
    )
    restore = SOURCE.parse({**BASE, "exactly.once.suport": "required"})
    assert any("did you mean 'exactly.once.support'?" in w for w in restore.warnings), restore.warnings


# ------------------------------------------------------------------------------------------- one file, both sides
def test_one_file_serves_backup_and_restore(tmp_path):
    restore_keys = {
        "topic.rename": "t:t2",
        "behavior.on.error": "log",
        "exactly.once.support": "required",
        "topic.creation.enable": "true",
        "restore.transaction.records": "10",
        "restore.allow.same.topic": "true",
        "s3.poll.interval.ms": "1000",
    }
    path = write(tmp_path, props(**restore_keys))
    for side in ("sink", "source"):
        result = run_cli(["config", "validate", "-c", path, "--connector", side])
        assert result.returncode == 0, result.stderr
        assert_clean(result)
        assert "not a known" not in result.stderr, (side, result.stderr)
        assert "warning" not in result.stdout, (side, result.stdout)


# --------------------------------------------------------------------------------------------- what a run rejects
def test_invalid_topics_regex_is_rejected_naming_the_key(tmp_path):
    lines = [line for line in props() if not line.startswith("topics=")] + ["topics.regex=ab[c"]
    result = run_cli(["config", "validate", "-c", write(tmp_path, lines)])
    assert result.returncode == 2, result.stdout + result.stderr
    assert_clean(result)
    errors = [line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error")]
    assert len(errors) == 1, result.stderr
    assert "topics.regex" in errors[0] and "unterminated character set" in errors[0], errors
    assert "valid" not in result.stdout


TIME_BASED = {
    "partitioner.class": "TimeBasedPartitioner",
    "partition.duration.ms": "3600000",
    "locale": "en-US",
    "timezone": "UTC",
    "timestamp.extractor": "Record",
}


@pytest.mark.parametrize("pattern", ["'year'=YYYY/'month=MM", "'year'=YYYY/'month'=MM/'", "YYYY'''"])
def test_path_format_with_an_unterminated_quote_is_rejected(tmp_path, pattern):
    path = write(tmp_path, props(**TIME_BASED, **{"path.format": pattern}))
    result = run_cli(["config", "validate", "-c", path])
    assert result.returncode == 2, result.stdout + result.stderr
    assert_clean(result)
    assert "path.format" in result.stderr and "unterminated quote" in result.stderr, result.stderr


@pytest.mark.parametrize("pattern", ["'year'=YYYY/'month'=MM", "'it''s'/YYYY", "YYYY''MM"])
def test_path_format_with_closed_quotes_stays_valid(tmp_path, pattern):
    path = write(tmp_path, props(**TIME_BASED, **{"path.format": pattern}))
    result = run_cli(["config", "validate", "-c", path])
    assert result.returncode == 0, result.stderr


def test_duplicate_key_warns_and_the_last_wins(tmp_path):
    path = write(tmp_path, ["# a comment", *props(), "rotate.interval.ms=1000", "flush.size=7"])
    result = run_cli(["config", "validate", "-c", path])
    assert result.returncode == 0, result.stderr
    assert_clean(result)
    warning = [line for line in result.stderr.splitlines() if "flush.size" in line]
    assert len(warning) == 1, result.stderr
    assert "lines 4 and 8" in warning[0] and "last" in warning[0] and "job.properties" in warning[0], warning
    shown = run_cli(["config", "show", "-c", path, "--json"])
    assert json.loads(shown.stdout)["flush.size"] == "7"


def test_duplicate_secret_key_warning_does_not_show_values(tmp_path):
    path = write(
        tmp_path,
        [
            *props(**{"aws.access.key.id": "AKIA1"}),
            "aws.secret.access.key=FIRST-SECRET-1",
            "aws.secret.access.key=LAST-SECRET-2",
        ],
    )
    result = run_cli(["config", "validate", "-c", path])
    assert result.returncode == 0 and "aws.secret.access.key" in result.stderr, result.stderr
    assert "FIRST-SECRET-1" not in result.stderr + result.stdout
    assert "LAST-SECRET-2" not in result.stderr + result.stdout


def test_a_file_that_is_not_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "latin1.properties"
    path.write_bytes("\n".join(props()).encode() + "\ntopics.dir=caf\u00e9\n".encode("latin-1"))
    for command in (["config", "validate"], ["config", "show"], ["backup", "--once"]):
        result = run_cli([*command, "-c", str(path)])
        assert result.returncode == 2, (command, result.stderr)
        assert_clean(result)
        assert "latin1.properties" in result.stderr and "line 6" in result.stderr, result.stderr
        assert "UTF-8" in result.stderr, result.stderr


def test_a_provider_file_that_is_not_utf8_names_file_and_line(tmp_path):
    secrets = tmp_path / "secrets.properties"
    secrets.write_bytes(b"a=1\nkey=caf\xe9\n")
    path = write(tmp_path, props(**{"aws.secret.access.key": f"${{file:{secrets}:key}}"}))
    result = run_cli(["config", "validate", "-c", path])
    assert result.returncode == 2, result.stderr
    assert_clean(result)
    assert "secrets.properties" in result.stderr and "line 2" in result.stderr and "UTF-8" in result.stderr


# ---------------------------------------------------------------------------------------------------- config show
def test_config_show_prints_effective_values(tmp_path):
    path = write(
        tmp_path,
        props(**{"s3.bucket.name": "${env:ITEM7_BUCKET}", "aws.secret.access.key": "${env:ITEM7_SECRET}"}),
    )
    result = run_cli(
        ["config", "show", "-c", path], env={"ITEM7_BUCKET": "resolved-bucket", "ITEM7_SECRET": "s3cr3t-X"}
    )
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert "resolved-bucket" in rows["s3.bucket.name"] and "(default)" not in rows["s3.bucket.name"]
    assert "[hidden]" in rows["aws.secret.access.key"] and "s3cr3t-X" not in result.stdout + result.stderr
    assert rows["rotate.interval.ms"].endswith("(default)"), rows["rotate.interval.ms"]
    assert rows["flush.size"].split()[1] == "3" and "(default)" not in rows["flush.size"]


def test_config_show_json_marks_defaults(tmp_path):
    result = run_cli(["config", "show", "-c", write(tmp_path, props()), "--json", "--defaults"])
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["flush.size"] == {"value": "3", "default": False}
    assert doc["rotate.interval.ms"]["default"] is True


# ---------------------------------------------------------------------------------------------------- secrets
PLANTED = "PLANTED-s3cr3t-9f2"
SSE_KEY = base64.b64encode(b"PLANTED-SSE-KEY-0123456789abcdef").decode()


def planted(tmp_path: Path, **extra: str) -> str:
    return write(
        tmp_path,
        props(
            **{
                "bootstrap.servers": "127.0.0.1:1",
                "service.timeout.ms": "1500",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'username="alice" password="{PLANTED}-jaas";',
                "aws.access.key.id": "AKIAEXAMPLE",
                "aws.secret.access.key": f"{PLANTED}-aws",
                "store.url": f"http://minio:{PLANTED}-url@127.0.0.1:1",
                "value.converter": "io.confluent.connect.avro.AvroConverter",
                "value.converter.schema.registry.url": f"https://reg:{PLANTED}-registry@127.0.0.1:1",
                "consumer.override.ssl.key.password": f"{PLANTED}-keypass",
                "my.plugin.client.secret": f"{PLANTED}-other",
                "s3.sse.customer.key": SSE_KEY,
                **extra,
            }
        ),
        name=f"planted-{len(list(tmp_path.iterdir()))}.properties",
    )


def assert_no_secret(result: subprocess.CompletedProcess, what: str) -> None:
    text = result.stdout + result.stderr
    assert PLANTED not in text, (what, text)
    assert SSE_KEY not in text and "PLANTED-SSE" not in text, (what, text)


def test_a_planted_secret_reaches_no_output(tmp_path):
    path = planted(tmp_path)
    outputs = {
        "config show": run_cli(["config", "show", "-c", path]),
        "config show --json": run_cli(["config", "show", "-c", path, "--json"]),
        "config validate": run_cli(["config", "validate", "-c", path]),
        "config validate, bad key": run_cli(["config", "validate", "-c", planted(tmp_path, **{"flush.size": "x"})]),
        "a secret's own bad value": run_cli(
            ["config", "validate", "-c", planted(tmp_path, **{"s3.sse.customer.key": f"{PLANTED}-not-base64"})]
        ),
        "an unresolvable provider": run_cli(
            ["config", "validate", "-c", planted(tmp_path, **{"store.url": f"http://u:{PLANTED}@h:1/${{env:NOPE}}"})]
        ),
        "failing backup": run_cli(["backup", "--once", "--no-progress", "-c", path]),
        "failing backup --debug": run_cli(["--debug", "backup", "--once", "--no-progress", "-c", path]),
        "failing status": run_cli(["status", "-c", path]),
        "failing restore": run_cli(["restore", "--dry-run", "-c", path]),
    }
    for what, result in outputs.items():
        assert_no_secret(result, what)
    assert outputs["config show"].returncode == 0 and "AKIAEXAMPLE" in outputs["config show"].stdout
    assert "http://minio:[hidden]@127.0.0.1:1" in outputs["config show"].stdout
    assert "sasl.jaas.config" in outputs["config show"].stdout
    for what in ("failing backup", "failing backup --debug", "failing status", "failing restore"):
        result = outputs[what]
        assert result.returncode != 0, (what, result.stderr)
        assert "127.0.0.1:1" in result.stderr, (what, result.stderr)  # it failed reaching a service, not on its config
    assert outputs["config validate, bad key"].returncode == 2
    assert "s3.sse.customer.key" in outputs["a secret's own bad value"].stderr


def test_redact_text_hides_passwords_in_urls_and_jaas_lines_and_nothing_else():
    from kafka_s3.core.config.model import redact_text

    assert redact_text("see https://user:pa55@host:9/x and s3://k:v@b") == (
        "see https://user:[hidden]@host:9/x and s3://k:[hidden]@b"
    )
    assert redact_text('x required username="u" password="p w";') == 'x required username="u" password="[hidden]";'
    assert redact_text("http://host:8080/path@x") == "http://host:8080/path@x"  # no user info: unchanged


def test_an_error_about_a_secret_value_does_not_carry_it():
    from kafka_s3.core.config.model import Prop, Type
    from kafka_s3.core.errors import ConfigError

    with pytest.raises(ConfigError) as error:
        Prop("x.password", Type.INT, "0").parse("hunter2-PLANTED")
    assert "hunter2-PLANTED" not in str(error.value) and "x.password" in str(error.value)
    assert error.value.key == "x.password"


def test_duplicate_key_in_rest_json_warns_and_the_last_wins(tmp_path):
    path = tmp_path / "job.json"
    body = ", ".join(f'"{k}": "{v}"' for k, v in BASE.items())
    path.write_text(f'{{"name": "n", "config": {{{body}, "flush.size": "9"}}}}')
    result = run_cli(["config", "validate", "-c", str(path)])
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if "flush.size" in line]
    assert len(warning) == 1 and "2 times" in warning[0] and "last" in warning[0], result.stderr
    assert json.loads(run_cli(["config", "show", "-c", str(path), "--json"]).stdout)["flush.size"] == "9"
