"""The command line without services: ``config show`` never prints a secret (table or JSON), ``config validate``
names the bad key in one line, and ``--debug`` is what brings a traceback back."""

from __future__ import annotations

import json

import pytest

from kafka_s3.cli.main import main
from kafka_s3.core.errors import ConfigError, KafkaError, StoreError

SECRETS = {
    "aws.secret.access.key": "AWS-SECRET-abc123",
    "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" '
    'password="JAAS-PASSWORD-xyz";',
    "s3.sse.customer.key": "MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=",
    "value.converter.basic.auth.user.info": "user:REGISTRY-PASSWORD-42",
    "consumer.override.ssl.key.password": "KEY-PASSWORD-7",
}


def write(tmp_path, **extra) -> str:
    props = {
        "name": "n",
        "topics": "t",
        "flush.size": "3",
        "s3.bucket.name": "b",
        "format.class": "json",
        "aws.access.key.id": "AKIAEXAMPLE",
        **SECRETS,
        **extra,
    }
    path = tmp_path / "sink.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return str(path)


@pytest.mark.parametrize("as_json", [False, True])
def test_config_show_hides_every_secret(tmp_path, capsys, as_json):
    assert main(["config", "show", "-c", write(tmp_path)] + (["--json"] if as_json else [])) == 0
    out, err = capsys.readouterr()
    for secret in (
        "AWS-SECRET-abc123",
        "JAAS-PASSWORD-xyz",
        "MDEyMzQ1Njc4OTAxMjM0NTY3",
        "REGISTRY-PASSWORD-42",
        "KEY-PASSWORD-7",
    ):
        assert secret not in out + err, secret
    assert "AKIAEXAMPLE" in out  # an access key id is not a secret
    if as_json:
        json.loads(out)


def test_config_validate_names_the_bad_key_in_one_line(tmp_path, capsys):
    assert main(["config", "validate", "-c", write(tmp_path, **{"flush.size": "abc"})]) != 0
    _, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.startswith("kafka-s3: error")]
    assert len(lines) == 1 and "flush.size" in lines[0] and "abc" in lines[0], err
    assert "Traceback" not in err


def test_errors_keep_secrets_out_of_the_message(tmp_path, capsys):
    assert main(["config", "validate", "-c", write(tmp_path, **{"format.class": "AWS-SECRET-abc123"})]) != 0
    _, err = capsys.readouterr()
    assert "format.class" in err and "AWS-SECRET-abc123" not in err


def test_debug_prints_the_traceback_and_keeps_the_exit_code_of_the_error(tmp_path, capsys):
    """``--debug`` adds the trace; the exit code still says which kind of failure it was (README's table)."""
    code = main(["--debug", "config", "validate", "-c", write(tmp_path, **{"flush.size": "abc"})])
    _, err = capsys.readouterr()
    assert code == ConfigError.exit_code == 2
    assert "Traceback (most recent call last)" in err and "ConfigError" in err
    assert err.rstrip().splitlines()[-1].startswith("kafka-s3: error: ") and "flush.size" in err


@pytest.mark.parametrize(
    ("raised", "code"),
    [(StoreError("s3://b: unreachable"), 3), (KafkaError("k: refused"), 4), (ValueError("not ours"), 1)],
)
def test_debug_exit_codes_match_those_without_it(raised, code, monkeypatch, tmp_path, capsys):
    """(The No silent loss II issue, item 7: under ``--debug`` every failure exited 1.)"""
    import importlib

    cli = importlib.import_module("kafka_s3.cli.parser")  # where the commands are bound to their parsers

    def fail(args):
        raise raised

    monkeypatch.setattr(cli, "cmd_config_show", fail)
    path = write(tmp_path)
    assert main(["config", "show", "-c", path]) == code
    capsys.readouterr()
    assert main(["--debug", "config", "show", "-c", path]) == code
    _, err = capsys.readouterr()
    assert "Traceback (most recent call last)" in err and str(raised) in err


@pytest.mark.issue(16, item=3)
def test_a_python_worker_trace_is_shown_by_its_last_exception_line():
    from kafka_s3.spark.errors import root_message as _root_message

    text = (
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
        '  File "x.py", line 1, in f\n    g()\nValueError: the real cause\n\tat org.apache.spark.X(X.scala:1)\n'
    )
    message = _root_message(Exception(text))
    assert message.startswith("ValueError: the real cause") and "--debug" in message


@pytest.mark.issue(16, item=4)
@pytest.mark.parametrize(
    "flags",
    [
        ["--from-timestamp", "2000", "--until-timestamp", "1000"],
        ["--from-timestamp", "1000", "--until-timestamp", "1000"],
        ["--from-offset", "0:5", "--until-offset", "0:5"],
        ["--from-offset", "t:1:9", "--until-offset", "1:3"],
    ],
)
def test_bounds_selecting_nothing_are_config_errors(flags, tmp_path, capsys):
    from kafka_s3.cli.main import main

    path = tmp_path / "r.properties"
    path.write_text("name=r\ntopics=t\ns3.bucket.name=b\nformat.class=json\nstore.url=file:///nonexistent\n")
    assert main(["restore", "-c", str(path), *flags]) == 2
    assert "no record can be selected" in capsys.readouterr().err
