"""docs/cli.md is generated from the parser and must be up to date (as docs/configuration.md is from the
property definitions)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_s3.cli.parser import build_parser
from kafka_s3.cli.reference import commands, document, render

pytestmark = pytest.mark.issue(27)

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "cli.md"


def test_docs_cli_md_is_generated_from_the_parser_and_current():
    assert REFERENCE.read_text() == document(), (
        "docs/cli.md is stale (the parser changed): run `make docs` to regenerate it "
        "(or .venv/bin/python -m kafka_s3.cli.reference --write docs/cli.md)"
    )


def test_the_reference_lists_every_command_and_every_visible_option():
    rendered = render()
    for parser, _ in commands(build_parser()):
        assert f"## {parser.prog}\n" in rendered, parser.prog
        for action in parser._actions:
            if action.help != "==SUPPRESS==" and action.option_strings and action.dest != "help":
                assert f"`{action.option_strings[0]}`" in rendered, (parser.prog, action.option_strings)


def test_the_reference_lists_each_old_spelling_with_its_replacement():
    rendered = render()
    deprecated = rendered[rendered.index("## Deprecated spellings") :]
    for row in (
        "| `--verify-deep` | `restore` | `--deep` |",
        "| `--topics` | `backup`, `restore`, `read`, `verify`, `status`, `groups`, `config show`, `config validate` | "
        "`--topic` |",
        "| `--format json` | `read` | `--json` |",
        "| `--format raw` | `read` | `--raw` |",
        "| `--regex` | `groups` | `--consumer-groups` |",
    ):
        assert row in deprecated, row


@pytest.mark.issue(28, item=3)
def test_the_reference_maps_kcat_and_kafka_console_consumer_onto_kafka_s3():
    text = document()
    assert "## Coming from kcat or kafka-console-consumer" in text
    assert "| `kcat -C -b B -t T -p 0 -o -10 -e` | `kafka-s3 read -c FILE -b B -t T -p 0 -o -10` |" in text
    assert "`kafka-console-consumer --bootstrap-server B --topic T --from-beginning" in text


def test_the_reference_says_why_backup_follows_and_restore_runs_once():
    text = document()
    assert "## Running once or following" in text
    assert "Kafka Connect S3 sink" in text and "disaster-recovery operation with an" in text
