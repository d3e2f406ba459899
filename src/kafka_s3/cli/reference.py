"""The command-line reference (``docs/cli.md``), generated from the parser.

``python -m kafka_s3.cli.reference`` prints it; ``--write docs/cli.md`` rewrites the file (``make docs`` regenerates
it and ``docs/configuration.md``). A unit test fails when the file is out of date, so the reference can never drift
from the parser.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

from kafka_s3.cli.parser import Deprecated, build_parser

# kcat and kafka-console-consumer invocations beside kafka-s3's (docs/cli.md shows them as a table)
KCAT = [
    (
        "`kcat -C -b B -t T -p 0 -o -10 -e`",
        "`kafka-s3 read -c FILE -b B -t T -p 0 -o -10`",
    ),
    (
        "`kcat -C -b B -t T -o beginning -e`",
        "`kafka-s3 read -c FILE -t T -o beginning`",
    ),
    (
        "`kcat -C -b B -t T -p 2 -o 1200 -c 5 -e`",
        "`kafka-s3 read -c FILE -t T -p 2 -o 1200 --count 5`",
    ),
    (
        "`kcat -C -b B -t T -o s@1700000000000 -e`",
        "`kafka-s3 read -c FILE -t T -o s@1700000000000` (or `-o s@2023-11-14T22:13:20Z`)",
    ),
    (
        "`kcat -C -b B -t T -o end -e`",
        "`kafka-s3 read -c FILE -t T -o end` (nothing: the backup's end)",
    ),
    (
        "`kcat -b B -G GROUP T1 T2` (kcat's `-C` reads one topic)",
        "`kafka-s3 read -c FILE -t T1 -t T2 -o -1`",
    ),
    (
        "`kcat -C -b B -t T -J -e`",
        "`kafka-s3 read -c FILE -t T --json`",
    ),
    (
        "`kcat -C -b B -t T -f '%s\\n' -e`",
        "`kafka-s3 read -c FILE -t T --raw`",
    ),
    (
        "`kafka-console-consumer --bootstrap-server B --topic T --from-beginning --property print.key=true`",
        "`kafka-s3 read -c FILE -b B -t T -o beginning` (the table shows keys, timestamps and headers)",
    ),
    (
        "`kafka-console-consumer --bootstrap-server B --topic T --partition 0 --offset 42 --max-messages 5`",
        "`kafka-s3 read -c FILE -t T -p 0 -o 42 --count 5`",
    ),
    (
        "`kafka-console-consumer ... --consumer-property client.id=ID`",
        "`-X client.id=ID`",
    ),
    (
        "`kcat -b B -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN -X sasl.username=U ...`",
        "`kafka-s3 status -c FILE -b B -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN -X sasl.username=U ...`",
    ),
]


def kcat_table() -> str:
    return "\n".join(
        ["| kcat / kafka-console-consumer | kafka-s3 |", "|---|---|", *(f"| {a} | {b} |" for a, b in KCAT)]
    )


HEADER = (
    """# Command-line reference

<!-- Generated from the parser by `make docs` (`python -m kafka_s3.cli.reference --write docs/cli.md`); a unit test
fails when it is stale. Do not edit by hand. -->

Every `kafka-s3` command, its synopsis and every option with its default. One idea has one spelling on every command
that takes it: `--config`/`-c` and `--set` (the configuration file and its overrides), `-b`/`--bootstrap-server` and
`-X` (the Kafka cluster and a client property, over the file's: [as kcat](#coming-from-kcat-or-kafka-console-consumer)),
`-t`/`--topic` (a topic, repeatable), `--deep` (decode every record), `--consumer-groups` (which consumer groups),
`--json` (machine-readable output), `--once`/`--follow`, `--no-progress`, `--master`/`--remote` (where Spark runs).
Older spellings still work and print a warning naming the new one: [deprecated spellings](#deprecated-spellings). Exit
codes: [operations.md](operations.md#exit-codes).

## Running once or following

`backup` follows by default and `restore` runs once by default, because they stand in for different things.

- **`kafka-s3 backup` follows** (`--follow` says so explicitly): it replaces a Kafka Connect S3 sink, a long-running
  service that copies records as they arrive. Run under a supervisor (systemd, Kubernetes), it backs the topics up in
  cycles (`cycle.interval.ms` apart) until it is stopped. `--once` backs up to the current end of the topics and
  exits: a scheduled job, a last backup before a migration, a test.
- **`kafka-s3 restore` runs once** (`--once` says so explicitly): a restore is a disaster-recovery operation with an
  end. It restores what the bucket holds, prints what it did, translates the consumer groups when asked, and exits
  with a code the next step of a runbook can check. `--follow` keeps restoring the objects a running backup writes
  later (a warm standby cluster).

## Coming from kcat or kafka-console-consumer

`kafka-s3 read` reads a backup as kcat (`-C`) and kafka-console-consumer read a topic, with their flags where the idea
is the same: `-t` topic, `-p` partition, `-o` offset in kcat's forms (`beginning`, `end`, an offset, `-N` = N records
before the end, `s@<epoch ms or ISO-8601>` = the first record at or after that time). It reads the bucket, not the
cluster, and always stops at the end of what the backup holds (kcat's `-e` is implied). Without `-p` it reads every
partition the backup holds, one after the other; `--count N` is at most N records of each (kcat's `-c` is the
configuration file here). A tombstone's value prints as `null` in every format.

"""
    + kcat_table()
    + """

On every command `-b` and `-X` go over the configuration file (and `-b` over `$KAFKA_BOOTSTRAP_SERVERS`). kafka-s3 runs
several Kafka clients, so `-X KEY=VALUE` is placed as the file would place it: a connection property
(`security.protocol`, `sasl.*`, `ssl.*`, `client.id`, `client.rack`) for every client; `consumer.KEY`, `producer.KEY`
or `admin.KEY` for one kind; any other librdkafka property for each client librdkafka applies it to (`-X linger.ms=5`:
the producers; `-X debug=broker`: all). A property librdkafka does not know, or a value it refuses, is an error naming
it before anything runs. Connector properties (`flush.size`, `s3.*`) go to `--set`. `-t` on `restore`, `verify` and
`read` chooses among the backup's topics; on `backup`, `status`, `groups` and `config` it replaces the file's `topics`
(or `topics.regex`). `read -o PARTITION:OFFSET[,...]` (the older form, still taken) reads those partitions and prints
one record of each unless given `--count`. `read` is quiet: `-v` also logs the bucket's layout and format.

The global options go before the command: `kafka-s3 --log-format json backup -c FILE`.

"""
)

NOTES = {
    "kafka-s3 backup": "Follows the topics until stopped unless given `--once` ([why](#running-once-or-following)).",
    "kafka-s3 restore": "Runs once unless given `--follow` ([why](#running-once-or-following)).",
}

WIDTH = 116  # synopses wrap as argparse wraps them on a terminal this wide


def commands(parser: argparse.ArgumentParser) -> Iterator[tuple[argparse.ArgumentParser, str]]:
    """Every command (``config show``, not ``config``) and its one-line help, in the parser's order."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, child in action.choices.items():
            if any(isinstance(a, argparse._SubParsersAction) for a in child._actions):
                yield from commands(child)
            else:
                yield child, helps.get(name, "")


def synopsis(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    return formatter.format_help().strip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if isinstance(action.metavar, str):
        name = action.metavar
    elif action.choices is not None:
        name = "{" + ",".join(str(c) for c in action.choices) + "}"
    else:
        name = action.dest.upper()
    return f"`[{name}]`" if action.nargs == "?" else f"`{name}`"


def _default(action: argparse.Action) -> str:
    if action.required:
        return "required"
    if action.nargs == 0 or action.default is None or action.default is argparse.SUPPRESS:
        return ""
    return f"`{action.default}`"


def _visible(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in parser._actions
        if a.help is not argparse.SUPPRESS
        and not isinstance(a, argparse._HelpAction | argparse._SubParsersAction | Deprecated)
    ]


def options_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| option | value | default | description |", "|---|---|---|---|"]
    for action in _visible(parser):
        names = ", ".join(f"`{name}`" for name in action.option_strings) or f"`{action.metavar or action.dest}`"
        value = "" if not action.option_strings else _value(action)
        others = [
            other.option_strings[0]
            for group in parser._mutually_exclusive_groups
            if action in group._group_actions
            for other in group._group_actions
            if other is not action and other.option_strings
        ]
        text = (action.help or "") + ("; not with " + ", ".join(f"`{o}`" for o in others) if others else "")
        rows.append(f"| {names} | {value} | {_default(action)} | {_cell(text)} |")
    return rows


def deprecated_table(parser: argparse.ArgumentParser) -> list[str]:
    """The hidden old spellings: what each was, on which commands, and what replaces it."""
    where: dict[tuple[str, str | None], list[str]] = {}
    for command, _ in [(parser, ""), *commands(parser)]:
        for action in command._actions:
            if isinstance(action, Deprecated):
                for old, new in action.replacements():
                    where.setdefault((old, new), []).append(command.prog.removeprefix("kafka-s3 "))
    rows = ["| old spelling | command | use instead |", "|---|---|---|"]
    for (old, new), names in where.items():
        instead = f"`{new}`" if new else "nothing (it is the default)"
        rows.append(f"| `{old}` | {', '.join(f'`{n}`' for n in names)} | {instead} |")
    return rows


def render() -> str:
    parser = build_parser()
    lines = ["## Global options", "", "```", synopsis(parser), "```", "", *options_table(parser), ""]
    for command, help_text in commands(parser):
        lines += [f"## {command.prog}", "", help_text[:1].upper() + help_text[1:] + "."]
        if command.prog in NOTES:
            lines += ["", NOTES[command.prog]]
        lines += ["", "```", synopsis(command), "```", "", *options_table(command), ""]
    lines += [
        "## Deprecated spellings",
        "",
        "Hidden from `--help`, each still works: it prints `kafka-s3: warning: OLD is deprecated; use NEW` on stderr,",
        "then does exactly what the new spelling does (the same output, the same exit code).",
        "",
        *deprecated_table(parser),
    ]
    return "\n".join(lines).rstrip() + "\n"


def document() -> str:
    """The whole ``docs/cli.md`` page."""
    return HEADER + render()


def write(path: Path) -> bool:
    """Write the page; returns whether it changed."""
    new = document()
    changed = not path.exists() or path.read_text() != new
    path.write_text(new)
    return changed


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write":
        print("updated" if write(Path(sys.argv[2])) else "up to date")
    else:
        print(document())
