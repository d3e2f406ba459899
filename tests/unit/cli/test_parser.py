"""The command line's spellings: one per idea on every command that takes it; the old ones are hidden aliases that
still work, warn on stderr naming the new spelling and end as the new spelling does (issue 27, marked on each test)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_s3.cli.parser import Deprecated, build_parser
from kafka_s3.cli.reference import commands

pytestmark = pytest.mark.issue(27)

CONFIG = ["-c", "job.properties"]

READ = ["read", *CONFIG, "--offset", "0:1"]
# (an old spelling, the same with the new one, the warning the old one prints on stderr)
ALIASES = [
    (["restore", *CONFIG, "--verify-deep"], ["restore", *CONFIG, "--deep"], "--verify-deep is deprecated; use --deep"),
    ([*READ, "--topics", "t"], [*READ, "--topic", "t"], "--topics is deprecated; use --topic"),
    ([*READ, "--format", "json"], [*READ, "--json"], "--format json is deprecated; use --json"),
    ([*READ, "--format", "raw"], [*READ, "--raw"], "--format raw is deprecated; use --raw"),
    ([*READ, "--format", "table"], READ, "--format table is deprecated; leave it out (it is the default)"),
    (
        ["groups", *CONFIG, "--regex", "a.*"],
        ["groups", *CONFIG, "--consumer-groups", "a.*"],
        "--regex is deprecated; use --consumer-groups",
    ),
]


def parsed(argv: list[str]) -> dict[str, object]:
    found = vars(build_parser().parse_args(argv))
    found.pop("func")
    return found


def visible(parser: argparse.ArgumentParser) -> set[str]:
    return {
        name
        for action in parser._actions
        if action.help is not argparse.SUPPRESS and not isinstance(action, Deprecated)
        for name in action.option_strings
    }


def every_command() -> dict[str, argparse.ArgumentParser]:
    return {p.prog.removeprefix("kafka-s3 "): p for p, _ in commands(build_parser())}


@pytest.mark.parametrize(("old", "new", "warning"), ALIASES)
def test_an_old_spelling_parses_as_the_new_one_and_warns_naming_it(old, new, warning, capsys):
    assert parsed(old) == parsed(new)
    assert capsys.readouterr().err.splitlines() == [f"kafka-s3: warning: {warning}"]


def test_the_new_spellings_print_no_warning(capsys):
    for _, new, _ in ALIASES:
        parsed(new)
    assert capsys.readouterr().err == ""


# The commands that take a configuration: all but those of the user's Spark server (kafka-s3 server start|stop|status)
CONFIGURED = {name for name in every_command() if not name.startswith("server ")}


@pytest.mark.parametrize(
    ("idea", "spelling", "on"),
    [
        ("topic", "--topic", CONFIGURED - {"bucket create"}),
        ("Kafka cluster", "--bootstrap-server", CONFIGURED),
        ("Kafka client property", "-X", CONFIGURED),
        ("decode every record", "--deep", {"restore", "verify"}),
        ("which consumer groups", "--consumer-groups", {"restore", "groups"}),
        ("machine-readable output", "--json", {"read", "verify", "status", "groups", "config show", "server status"}),
        ("run once", "--once", {"backup", "restore"}),
        ("follow", "--follow", {"backup", "restore"}),
        ("configuration file", "--config", CONFIGURED),
        ("overrides", "--set", CONFIGURED),
    ],
)
def test_each_idea_has_one_spelling_on_every_command_that_takes_it(idea, spelling, on):
    found = {name for name, parser in every_command().items() if spelling in visible(parser)}
    assert on <= found, f"{idea}: {spelling} missing on {sorted(on - found)}"


def test_no_two_visible_spellings_share_a_destination_across_the_commands():
    """A destination is one idea: the commands that take it all spell it the same way (hidden aliases aside)."""
    spellings: dict[str, set[str]] = {}
    for parser in [build_parser(), *every_command().values()]:
        for action in parser._actions:
            if action.option_strings and action.help is not argparse.SUPPRESS and not isinstance(action, Deprecated):
                spellings.setdefault(action.dest, set()).add(tuple(action.option_strings))
    assert {dest: names for dest, names in spellings.items() if len(names) > 1} == {}


def test_old_spellings_are_hidden_from_help_and_usage():
    for name, parser in every_command().items():
        shown = parser.format_help()
        for old in ("--verify-deep", "--topics", "--format", "--regex"):
            assert old not in shown, f"{name} --help shows {old.strip()}"


def test_every_old_spelling_names_an_option_of_its_own_command():
    for name, parser in every_command().items():
        for action in parser._actions:
            if isinstance(action, Deprecated):
                for _, new in action.replacements():
                    assert new is None or new in visible(parser), (name, action.option_strings, new)


def test_backup_follows_and_restore_runs_once_by_default_and_either_flag_flips_them():
    backup, restore = parsed(["backup", *CONFIG]), parsed(["restore", *CONFIG])
    assert not backup["once"] and not backup["follow"]  # the command: following unless --once
    assert not restore["once"] and not restore["follow"]  # the command: once unless --follow
    assert parsed(["backup", *CONFIG, "--once"])["once"] and parsed(["restore", *CONFIG, "--follow"])["follow"]
    assert parsed(["restore", *CONFIG, "--once"])["once"]


@pytest.mark.parametrize("command", ["backup", "restore"])
def test_once_and_follow_together_are_refused(command, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, *CONFIG, "--once", "--follow"])
    assert exited.value.code == 2 and "not allowed with argument" in capsys.readouterr().err


def test_read_json_and_raw_are_one_choice(capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["read", *CONFIG, "--offset", "0:1", "--json", "--raw"])
    assert exited.value.code == 2


def test_an_unknown_value_of_an_old_spelling_is_refused_as_before(capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["read", *CONFIG, "--offset", "0:1", "--format", "xml"])
    assert exited.value.code == 2 and "invalid choice: 'xml'" in capsys.readouterr().err


def test_groups_consumer_groups_alone_means_every_group():
    assert parsed(["groups", *CONFIG])["consumer_groups"] == ".*"
    assert parsed(["groups", *CONFIG, "--consumer-groups"])["consumer_groups"] == ".*"


@pytest.mark.issue(28, item=3)
def test_read_takes_kcats_short_flags_each_repeatable():
    found = parsed(["read", "-c", "f", "-b", "h:9092", "-X", "a=1", "-X", "b=2", "-t", "x", "-t", "y,z", "-p", "0"])
    assert found["bootstrap_server"] == "h:9092" and found["client_properties"] == ["a=1", "b=2"]
    assert found["topic"] == ["x", "y,z"] and found["partition"] == [0] and found["offset"] == "beginning"
    several = parsed(["read", "-c", "f", "-p", "0", "-p", "2", "-o", "-10", "-v"])
    assert (several["partition"], several["offset"], several["verbose"]) == ([0, 2], "-10", True)


def run_console_script(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The installed ``kafka-s3`` console script (beside this interpreter), as a user runs it."""
    script = Path(sys.executable).with_name("kafka-s3")
    return subprocess.run(
        [str(script), *args], capture_output=True, text=True, timeout=120, env=dict(os.environ), check=False
    )


def test_an_old_spelling_still_works_and_warns(tmp_path):
    """``restore --verify-deep`` in the real command: the warning names ``--deep`` on stderr, and the run ends as the
    new spelling's does (here: the configuration error, exit 2, before any service is needed)."""
    config = tmp_path / "restore.properties"
    config.write_text("name=n\ntopics=t\ns3.bucket.name=b\nformat.class=nonsense\n")
    old = run_console_script(["restore", "-c", str(config), "--verify-deep", "--no-progress"])
    new = run_console_script(["restore", "-c", str(config), "--deep", "--no-progress"])
    assert old.returncode == new.returncode == 2, old.stderr
    assert old.stderr.splitlines()[0] == "kafka-s3: warning: --verify-deep is deprecated; use --deep", old.stderr
    assert old.stderr.splitlines()[1:] == new.stderr.splitlines(), (old.stderr, new.stderr)
    assert old.stdout == new.stdout
    assert "deprecated" not in new.stderr
