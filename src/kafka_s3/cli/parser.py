"""The ``kafka-s3`` command line: its commands, flags and help texts (what each command does is in
:mod:`kafka_s3.cli.commands`)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

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
cmd_config_show = command("configuration", "cmd_config_show")
cmd_config_validate = command("configuration", "cmd_config_validate")
cmd_bucket_create = command("configuration", "cmd_bucket_create")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-s3",
        description="Back Kafka topics up to S3-compatible storage and restore them, on Spark.",
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

    def common(p: argparse.ArgumentParser, master: bool = False) -> None:
        p.add_argument("--config", "-c", required=True, help=".properties or Connect REST JSON file")
        p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a property (repeatable)")
        if master:
            where = p.add_mutually_exclusive_group()
            where.add_argument("--master", help="Spark master URL (default local[*]; e.g. spark://host:7077)")
            where.add_argument(
                "--remote",
                metavar="sc://HOST:PORT",
                help="run the jobs on a Spark Connect server (default $SPARK_REMOTE when no --master is given)",
            )

    backup = sub.add_parser("backup", help="back topics up to the object store")
    common(backup, master=True)
    mode = backup.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="back up to the current end of the topics, then exit")
    mode.add_argument("--follow", action="store_true", help="run forever in cycles (default)")
    backup.add_argument("--no-progress", action="store_true", help="no progress bar")
    backup.set_defaults(func=cmd_backup)

    restore = sub.add_parser("restore", help="restore backed-up topics into Kafka")
    common(restore, master=True)
    restore.add_argument("--follow", action="store_true", help="keep restoring objects written later")
    restore.add_argument("--dry-run", action="store_true", help="print the plan and the target checks, produce nothing")
    restore.add_argument("--topics", help="restore only these source topics (comma-separated)")
    restore.add_argument("--from-timestamp", help="only records at or after this time (epoch ms or ISO-8601)")
    restore.add_argument("--until-timestamp", help="only records before this time (epoch ms or ISO-8601)")
    restore.add_argument("--from-offset", help="PARTITION:OFFSET[,...] (or TOPIC:PARTITION:OFFSET): first offset")
    restore.add_argument("--until-offset", help="PARTITION:OFFSET[,...]: stop before this offset")
    restore.add_argument("--no-progress", action="store_true", help="no progress bar")
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
        "--verify-deep", action="store_true", help="decode every object before producing anything (reads it all twice)"
    )
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
    common(read)
    read.add_argument("--offset", required=True, metavar="P:O", help="partition and offset of the first record")
    read.add_argument("--count", type=int, default=1, help="number of records to print (default 1)")
    read.add_argument("--topic", help="the topic (default: the configuration's or the bucket's only topic)")
    read.add_argument("--base64", action="store_true", help="print keys, values and headers as base64 (binary data)")
    read.add_argument(
        "--format",
        choices=["table", "json", "raw"],
        default="table",
        help="table: partition, offset, time, key, value, headers (default); json: an object per line; raw: values",
    )
    read.set_defaults(func=cmd_read)

    check = sub.add_parser(
        "verify", help="check that the bucket holds the whole backup (coverage, overlaps, sizes, sidecar counts)"
    )
    common(check, master=True)
    check.add_argument("--topics", help="only these topics (comma-separated)")
    check.add_argument("--deep", action="store_true", help="also decode every record (Spark tasks), check counts")
    check.add_argument("--json", action="store_true", help="machine-readable report")
    check.set_defaults(func=cmd_verify)

    status = sub.add_parser("status", help="per partition: committed offset, end offset, lag, last object")
    common(status)
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_status)

    groups = sub.add_parser(
        "groups", help="consumer groups a backup recorded, its snapshots and, after a restore, their translations"
    )
    common(groups, master=True)
    groups.add_argument("--regex", default=".*", help="only groups fully matching this regular expression")
    groups.add_argument("--json", action="store_true")
    groups.set_defaults(func=cmd_groups)

    config = sub.add_parser("config", help="inspect a configuration")
    config_sub = config.add_subparsers(dest="config_command", required=True)
    for name, func, help_text in (
        ("show", cmd_config_show, "print the resolved configuration (defaults marked, secrets hidden)"),
        ("validate", cmd_config_validate, "check a configuration without running anything"),
    ):
        p = config_sub.add_parser(name, help=help_text)
        common(p)
        p.add_argument("--connector", choices=["sink", "source"], help="force the connector type")
        if name == "show":
            p.add_argument("--json", action="store_true")
            p.add_argument(
                "--defaults",
                action="store_true",
                help='with --json: each key as {"value": ..., "default": true|false}',
            )
        p.set_defaults(func=func)

    bucket = sub.add_parser("bucket", help="bucket helpers")
    bucket_sub = bucket.add_subparsers(dest="bucket_command", required=True)
    create = bucket_sub.add_parser("create", help="create a bucket (backups never create buckets themselves)")
    create.add_argument("name")
    create.add_argument("--config", "-c", help="take the store settings from this file")
    create.add_argument("--set", action="append", metavar="KEY=VALUE")
    create.set_defaults(func=cmd_bucket_create)
    return parser
