"""The ``kafka-s3`` command line: its commands, flags and help texts (what each command does is in
:mod:`kafka_s3.cli.commands`).

One idea, one spelling, on every command that takes it: ``--config``/``-c``, ``--set``, Kafka's own
``--bootstrap-server``/``-b``, ``-X`` (a client property, as kcat's), ``--topic``/``-t``, ``--deep``,
``--consumer-groups``, ``--json``, ``--once``/``--follow``, ``--no-progress``, ``--master``/``--remote``. An old
spelling stays accepted as a hidden alias (:class:`Deprecated`): it warns on stderr, naming the new one, and then does
exactly what the new one does. ``docs/cli.md`` is generated from this parser (:mod:`kafka_s3.cli.reference`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafka_s3.core import logs

Command = Callable[[argparse.Namespace], int]


def command(module: str, name: str) -> Command:
    """The command ``name`` of ``kafka_s3.cli.commands.<module>``, imported when it runs: ``--help`` and a bad flag
    answer without loading the pipelines (pyarrow, numpy)."""

    def run(args: argparse.Namespace) -> int:
        found: Command = getattr(importlib.import_module(f"kafka_s3.cli.commands.{module}"), name)
        return found(args)

    return run


cmd_backup = command("backup", "cmd_backup")
cmd_restore = command("restore", "cmd_restore")
cmd_read = command("inspect", "cmd_read")
cmd_verify = command("inspect", "cmd_verify")
cmd_status = command("inspect", "cmd_status")
cmd_groups = command("inspect", "cmd_groups")
cmd_prune = command("prune", "cmd_prune")
cmd_compact = command("compact", "cmd_compact")
cmd_ls = command("catalogue", "cmd_ls")
cmd_info = command("catalogue", "cmd_info")
cmd_config_show = command("configuration", "cmd_config_show")
cmd_config_validate = command("configuration", "cmd_config_validate")
cmd_bucket_create = command("configuration", "cmd_bucket_create")
cmd_server_start = command("server", "cmd_server_start")
cmd_server_stop = command("server", "cmd_server_stop")
cmd_server_status = command("server", "cmd_server_status")


class Version(argparse.Action):
    """``--version``/``-V``: kafka-s3's version, then what it runs on (Python, pyspark, pyarrow, confluent-kafka and
    librdkafka, the Java runtime Spark would start), one per line; exits 0 without a command."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from kafka_s3 import api

        found = api.versions()
        lines = [f"kafka-s3 {found.pop('kafka-s3')}"] + [f"{name}: {value}" for name, value in found.items()]
        print("\n".join(lines))
        parser.exit(0)


class Deprecated(argparse.Action):
    """An old spelling that still works: hidden from ``--help`` and the usage line, it prints
    ``kafka-s3: warning: OLD is deprecated; use NEW`` on stderr, then does what the new spelling does (the new
    option's own action runs, so the two cannot drift apart).

    ``use`` is the new spelling, or (an old option taking a value) each value's new spelling: ``None`` where the
    value was the default anyway (``read --format table``)."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, use: str | Mapping[str, str | None], **kwargs: Any
    ) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS, **kwargs)
        self.use = use

    def replacements(self) -> list[tuple[str, str | None]]:
        """(old spelling, new spelling or None: leave it out), as the warning and ``docs/cli.md`` say them."""
        old = self.option_strings[0]
        if isinstance(self.use, str):
            return [(old, self.use)]
        return [(f"{old} {value}", new) for value, new in self.use.items()]

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        said = option_string or self.option_strings[0]
        if isinstance(self.use, str):
            new: str | None = self.use
        else:
            new = self.use[str(values)]
            said = f"{said} {values}"
        advice = f"use {new}" if new else "leave it out (it is the default)"
        print(f"kafka-s3: warning: {said} is deprecated; {advice}", file=sys.stderr)
        if new:
            target = parser._option_string_actions[new]
            target(parser, namespace, [] if target.nargs == 0 else values, new)


def deprecated(p: argparse.ArgumentParser, old: str, use: str | Mapping[str, str | None]) -> None:
    """Accept ``old`` on ``p`` as a hidden alias of ``use`` (the options it names must be on ``p`` already)."""
    if isinstance(use, str):
        takes_value = p._option_string_actions[use].nargs != 0
        p.add_argument(old, action=Deprecated, dest=argparse.SUPPRESS, use=use, nargs=None if takes_value else 0)
    else:
        assert all(new is None or new in p._option_string_actions for new in use.values()), use
        p.add_argument(old, action=Deprecated, dest=argparse.SUPPRESS, use=use, choices=list(use))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-s3",
        description="Back Kafka topics up to S3-compatible storage and restore them, on Spark.",
    )
    parser.add_argument(
        "-V", "--version", action=Version, help="print the versions of kafka-s3 and what it runs on, and exit"
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks and debug logs")
    parser.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only")
    parser.add_argument(
        "--log-format",
        choices=logs.LOG_FORMATS,
        default="text",
        help="text lines (default) or one JSON object per line (time, level, logger, message, fields)",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def configuration(p: argparse.ArgumentParser, required: bool = True, what: str = "") -> None:
        """``--config``/``-c`` and ``--set``: the configuration file and its overrides; Kafka's ``-b`` and kcat's
        ``-X`` over the file's client settings: on every command."""
        p.add_argument(
            "--config", "-c", required=required, metavar="FILE", help=what or ".properties or Connect REST JSON file"
        )
        p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a property (repeatable)")
        p.add_argument(
            "-b",
            "--bootstrap-server",
            metavar="HOST:PORT[,...]",
            help="the Kafka cluster, over the file's bootstrap.servers and $KAFKA_BOOTSTRAP_SERVERS",
        )
        p.add_argument(
            "-X",
            action="append",
            dest="client_properties",
            metavar="KEY=VALUE",
            help="a Kafka client (librdkafka) property, as kcat's -X, over the file's (repeatable): connection "
            "properties (security.protocol, sasl.*, ssl.*, client.id) for every client, consumer.KEY, producer.KEY "
            "or admin.KEY for one, any other for each client it applies to",
        )

    def spark(p: argparse.ArgumentParser) -> None:
        """``--master`` / ``--remote``: where the commands that run Spark jobs run them."""
        where = p.add_mutually_exclusive_group()
        where.add_argument(
            "--master",
            metavar="URL",
            help="Spark master URL (e.g. local[*], spark://host:7077; default: the user's Spark server, see "
            "kafka-s3 server)",
        )
        where.add_argument(
            "--remote",
            metavar="sc://HOST:PORT",
            help="run the jobs on a Spark Connect server (default $SPARK_REMOTE when no --master is given)",
        )

    def topics(p: argparse.ArgumentParser, help_text: str, chooses: bool = True) -> None:
        """``-t/--topic`` (repeatable; ``--topics A,B`` is its old spelling). ``chooses``: the command chooses among
        the topics of the backup; otherwise ``-t`` overrides the configuration's ``topics``."""
        p.add_argument("-t", "--topic", action="append", metavar="TOPIC", help=f"{help_text} (repeatable)")
        deprecated(p, "--topics", "--topic")
        p.set_defaults(topic_overrides_config=not chooses)

    def as_json(p: argparse._ActionsContainer, help_text: str = "machine-readable output (JSON)") -> None:
        p.add_argument("--json", action="store_true", help=help_text)

    def progress(p: argparse._ActionsContainer) -> None:
        p.add_argument("--no-progress", action="store_true", help="no progress bar")

    def metrics_port(p: argparse._ActionsContainer) -> None:
        p.add_argument(
            "--metrics-port",
            type=int,
            metavar="PORT",
            help="with --follow: serve Prometheus metrics on http://<metrics.bind.address>:PORT/metrics and /healthz "
            "(sets metrics.port)",
        )

    backup = sub.add_parser("backup", help="back topics up to the object store")
    configuration(backup)
    topics(backup, "back up this topic, instead of the file's topics or topics.regex", chooses=False)
    spark(backup)
    mode = backup.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="back up to the current end of the topics, then exit")
    mode.add_argument("--follow", action="store_true", help="run forever in cycles (default)")
    progress(backup)
    metrics_port(backup)
    backup.set_defaults(func=cmd_backup)

    restore = sub.add_parser("restore", help="restore backed-up topics into Kafka")
    configuration(restore)
    spark(restore)
    mode = restore.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="restore what the bucket holds now, then exit (default)")
    mode.add_argument("--follow", action="store_true", help="keep restoring objects written later")
    metrics_port(restore)
    restore.add_argument("--dry-run", action="store_true", help="print the plan and the target checks, produce nothing")
    topics(restore, "restore only this source topic")
    restore.add_argument(
        "--from-timestamp", metavar="TIME", help="only records at or after this time (epoch ms or ISO-8601)"
    )
    restore.add_argument(
        "--until-timestamp", metavar="TIME", help="only records before this time (epoch ms or ISO-8601)"
    )
    restore.add_argument(
        "--from-offset", metavar="OFFSETS", help="PARTITION:OFFSET[,...] (or TOPIC:PARTITION:OFFSET): first offset"
    )
    restore.add_argument("--until-offset", metavar="OFFSETS", help="PARTITION:OFFSET[,...]: stop before this offset")
    as_of = restore.add_mutually_exclusive_group()
    as_of.add_argument(
        "--as-of-snapshot", metavar="ID", type=int, help="an Iceberg table: restore the rows of this snapshot"
    )
    as_of.add_argument(
        "--as-of-timestamp",
        metavar="TIME",
        help="an Iceberg table: restore the rows of its newest snapshot at or before this time (epoch ms or ISO-8601)",
    )
    progress(restore)
    restore.add_argument(
        "--allow-gaps",
        action="store_true",
        help="restore what the bucket holds when objects are missing or damaged (each skipped range is listed)",
    )
    restore.add_argument(
        "--restart",
        action="store_true",
        help="restore from the start where the target holds progress of another restore (other bucket, bounds, "
        "or a re-created target topic)",
    )
    restore.add_argument(
        "--append",
        action="store_true",
        help="restore into target partitions that already hold records no restore's progress accounts for (they "
        "stay; the backup's records are added after them)",
    )
    restore.add_argument(
        "--deep", action="store_true", help="decode every object before producing anything (reads it all twice)"
    )
    deprecated(restore, "--verify-deep", "--deep")
    restore.add_argument(
        "--schemas",
        action="store_true",
        help="first register the backup's saved Schema Registry subjects in schemas.registry.url, rewriting schema "
        "ids in restored payloads where the target assigns other ids (use it on every run of that restore)",
    )
    restore.add_argument(
        "--consumer-groups",
        nargs="?",
        const=".*",
        metavar="REGEX",
        help="after the restore, commit the recorded consumer groups (all, or those fully matching REGEX) at the "
        "target offsets their source offsets translate to; with --dry-run, print that plan",
    )
    restore.set_defaults(func=cmd_restore)

    read = sub.add_parser(
        "read", help="print records of a backup from an offset (block_gzip: fetches only the block holding it)"
    )
    configuration(read)
    topics(read, "read this topic (default: the configuration's or the bucket's only topic)")
    read.add_argument(
        "-p",
        "--partition",
        action="append",
        type=int,
        metavar="N",
        help="read this partition (repeatable; default: every partition the backup holds)",
    )
    read.add_argument(
        "-o",
        "--offset",
        default="beginning",
        metavar="OFFSET",
        help="where each partition's read begins, as kcat's -o: beginning, end, an offset, -N (N records before the "
        "end), s@TIME (the first record at or after TIME: epoch ms or ISO-8601); or PARTITION:OFFSET[,...] (these "
        "partitions)",
    )
    read.add_argument(
        "--count",
        type=int,
        metavar="N",
        help="at most N records of each partition (default: to the end of the backup; 1 with PARTITION:OFFSET)",
    )
    read.add_argument(
        "-v", "--verbose", action="store_true", help="also log what was found (the bucket's layout and format)"
    )
    read.add_argument("--base64", action="store_true", help="print keys, values and headers as base64 (binary data)")
    output = read.add_mutually_exclusive_group()
    as_json(output, "one JSON object per record (machine-readable), instead of the table")
    output.add_argument("--raw", action="store_true", help="the values only, one per line, instead of the table")
    deprecated(read, "--format", {"table": None, "json": "--json", "raw": "--raw"})
    read.set_defaults(func=cmd_read)

    check = sub.add_parser(
        "verify", help="check that the bucket holds the whole backup (coverage, overlaps, sizes, sidecar counts)"
    )
    configuration(check)
    spark(check)
    topics(check, "only this topic")
    check.add_argument("--deep", action="store_true", help="also decode every record (Spark tasks), check counts")
    as_json(check)
    check.set_defaults(func=cmd_verify)

    status = sub.add_parser("status", help="per partition: committed offset, end offset, lag, last object")
    configuration(status)
    topics(status, "this topic, instead of the file's topics or topics.regex", chooses=False)
    output = status.add_mutually_exclusive_group()
    as_json(output)
    output.add_argument(
        "--prometheus",
        action="store_true",
        help="the lag and last-commit gauges in Prometheus' text format (for node_exporter's textfile collector)",
    )
    status.set_defaults(func=cmd_status)

    groups = sub.add_parser(
        "groups", help="consumer groups a backup recorded, its snapshots and, after a restore, their translations"
    )
    configuration(groups)
    topics(groups, "this topic, instead of the file's topics", chooses=False)
    spark(groups)
    groups.add_argument(
        "--consumer-groups",
        nargs="?",
        const=".*",
        default=".*",
        metavar="REGEX",
        help="only the groups fully matching REGEX (default: all)",
    )
    deprecated(groups, "--regex", "--consumer-groups")
    as_json(groups)
    groups.set_defaults(func=cmd_groups)

    prune = sub.add_parser(
        "prune",
        help="remove a backup's oldest chunks (retention): plan by default, --execute to remove; recorded in the "
        "bucket, so verify, restore and read start after them",
    )
    configuration(prune)
    prune.add_argument(
        "-t", "--topic", action="append", metavar="TOPIC", help="only this topic (repeatable; default: every topic)"
    )  # (no --topics: a new command has no old spelling)
    prune.add_argument(
        "-p", "--partition", action="append", type=int, metavar="N", help="only this partition (repeatable)"
    )
    prune.add_argument(
        "--before", metavar="TIME", help="remove chunks whose records are all older than TIME (epoch ms or ISO-8601)"
    )
    prune.add_argument(
        "--older-than",
        metavar="DURATION",
        help="remove chunks whose records are all older than DURATION ago (30d, 12h, 90m, 1w, or ms)",
    )
    prune.add_argument(
        "--max-total-bytes",
        metavar="SIZE",
        help="per partition, as Kafka's retention.bytes: remove the oldest chunks until the rest hold at most SIZE "
        "(bytes, or 500MiB, 20GB)",
    )
    prune.add_argument(
        "--execute", action="store_true", help="remove what the plan says (default: print the plan, remove nothing)"
    )
    prune.add_argument(
        "--force", action="store_true", help="remove even when the backup looks live (a commit within 3 cycles)"
    )
    as_json(prune)
    prune.set_defaults(func=cmd_prune)

    compacting = sub.add_parser(
        "compact",
        help="merge a backup's small committed chunks into bigger objects (a Spark job), older than its newest "
        "committed chunk; crash-safe: the originals are deleted only once the merged chunk is recorded",
    )
    configuration(compacting)
    compacting.add_argument(
        "-t", "--topic", action="append", metavar="TOPIC", help="only this topic (repeatable; default: every topic)"
    )
    compacting.add_argument(
        "-p", "--partition", action="append", type=int, metavar="N", help="only this partition (repeatable)"
    )
    compacting.add_argument(
        "--target-bytes",
        metavar="SIZE",
        help="merged objects of up to SIZE (bytes, or 64MiB, 1GB; default compact.target.bytes)",
    )
    compacting.add_argument(
        "--target-records",
        type=int,
        metavar="N",
        help="merged objects of up to N records (default compact.target.records: no limit)",
    )
    compacting.add_argument("--dry-run", action="store_true", help="show which chunks would be merged, change nothing")
    spark(compacting)
    as_json(compacting)
    compacting.set_defaults(func=cmd_compact)

    ls = sub.add_parser(
        "ls",
        help="list every backup in a bucket: layout, format, topics, per partition offsets, times, pruned start, "
        "objects and bytes (S3 access only)",
    )
    ls.add_argument(
        "location",
        nargs="?",
        metavar="s3://BUCKET[/PREFIX]",
        help="where to look (default: the bucket of --config); the endpoint and credentials come from --config, "
        "else the AWS environment (AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, ...)",
    )
    configuration(ls, required=False, what="the bucket (without a location) and the store settings of this file")
    ls.add_argument(
        "-t",
        "--topic",
        action="append",
        metavar="TOPIC",
        help="only the backups of this topic, and only its partitions (repeatable; default: every topic)",
    )
    as_json(ls)
    ls.set_defaults(func=cmd_ls)

    info = sub.add_parser(
        "info",
        help="one backup in depth: what ls says, plus the snapshots it holds, its last cycle, unfinished chunks and "
        "compaction state (S3 access only)",
    )
    info.add_argument(
        "location",
        nargs="?",
        metavar="s3://BUCKET/PREFIX",
        help="the backup's topics.dir (default: the bucket and topics.dir of --config)",
    )
    configuration(info, required=False, what="the backup (without a location) and the store settings of this file")
    info.add_argument(
        "-t", "--topic", action="append", metavar="TOPIC", help="only this topic (repeatable; default: every topic)"
    )
    as_json(info)
    info.set_defaults(func=cmd_info)

    config = sub.add_parser("config", help="inspect a configuration")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    for name, func, help_text in (
        ("show", cmd_config_show, "print the resolved configuration (defaults marked, secrets hidden)"),
        ("validate", cmd_config_validate, "check a configuration without running anything"),
    ):
        p = config_sub.add_parser(name, help=help_text)
        configuration(p)
        topics(p, "this topic, instead of the file's topics or topics.regex", chooses=False)
        p.add_argument("--connector", choices=["sink", "source"], help="force the connector type")
        if name == "show":
            as_json(p)
            p.add_argument(
                "--defaults",
                action="store_true",
                help='with --json: each key as {"value": ..., "default": true|false}',
            )
        p.set_defaults(func=func)

    bucket = sub.add_parser("bucket", help="bucket helpers")
    bucket_sub = bucket.add_subparsers(dest="bucket_command", required=True)
    create = bucket_sub.add_parser("create", help="create a bucket (backups never create buckets themselves)")
    create.add_argument("name", metavar="NAME", help="the bucket's name")
    configuration(create, required=False, what="take the store settings from this file")
    create.set_defaults(func=cmd_bucket_create)

    server = sub.add_parser(
        "server",
        help="the Spark server that commands without --master or --remote run their jobs on (started on first use, "
        "stopped after $KAFKA_S3_SPARK_SERVER_IDLE_TIMEOUT without a command, default 30m; "
        "KAFKA_S3_SPARK_SERVER=0 runs Spark in-process instead)",
    )
    server_sub = server.add_subparsers(dest="server_command", required=True)
    server_sub.add_parser("start", help="start it now and wait until it is ready").set_defaults(func=cmd_server_start)
    server_sub.add_parser("stop", help="stop it (its JVM and Python workers)").set_defaults(func=cmd_server_stop)
    server_status = server_sub.add_parser("status", help="where it runs, since when, its log file, its version")
    as_json(server_status)
    server_status.set_defaults(func=cmd_server_status)
    return parser
