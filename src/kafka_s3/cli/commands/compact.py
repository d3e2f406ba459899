"""``kafka-s3 compact``: which small chunks are merged (``--dry-run``: would be), and into what (rendering only:
:func:`kafka_s3.api.compact` decides and acts)."""

from __future__ import annotations

import argparse
import json
from io import StringIO

from rich.console import Console
from rich.table import Table

from kafka_s3 import api
from kafka_s3.cli.commands.options import overrides, spark, topic_names


def cmd_compact(args: argparse.Namespace) -> int:
    report = api.compact(
        args.config,
        target_bytes=args.target_bytes,
        target_records=args.target_records,
        topics=topic_names(args) or None,
        partitions=args.partition,
        dry_run=args.dry_run,
        overrides=overrides(args),
        **spark(args),
    )
    print(json.dumps(report.to_dict(), indent=2) if args.json else render_compact_report(report))
    return 0


def render_compact_report(report: api.CompactReport) -> str:
    """Per group: the chunks merged (or to merge), their offsets, records, objects and bytes, and what they became;
    then the totals, and how to act on a dry run."""
    done = report.executed
    title = f"compact {report.name} ({'merged' if done else 'dry run'}: up to {report.target.describe()})"
    table = Table(title=title)
    columns = ("topic", "partition", "offsets", "chunks", "records", "objects", "bytes", "merged into")
    for column in columns:
        table.add_column(column, justify="left" if column in ("topic", "merged into") else "right")
    for group in report.groups:
        into = f"{group.merged} chunk(s), {group.merged_objects} object(s)" if group.merged else "-"
        table.add_row(
            group.topic,
            str(group.partition),
            f"{group.first}..{group.last}",
            str(group.chunks),
            str(group.records),
            str(group.objects),
            str(group.bytes),
            into + (" (an interrupted compaction, finished)" if group.resumed and done else ""),
        )
    out = StringIO()
    console = Console(file=out, width=200, highlight=False)

    def say(text: str) -> None:
        console.print(text, markup=False, soft_wrap=True)

    if not report.groups:
        say(
            f"nothing to compact: no two consecutive committed chunks older than the newest one fit in "
            f"{report.target.describe()}"
        )
    else:
        console.print(table)
    if report.leftovers:
        say(f"{report.leftovers} staged file(s) an interrupted compaction left {'removed' if done else 'to remove'}")
    for note in report.notes:
        say(f"note: {note}")
    if report.groups:
        verb = "merged" if done else "would merge"
        say(
            f"{verb} {report.chunks} chunk(s) ({report.objects} objects, {report.records} records) into "
            f"{len(report.groups)} group(s)" + (f": {report.merged_objects} object(s) now" if done else "")
        )
        if not done:
            say("nothing was changed (--dry-run)")
    return out.getvalue().rstrip("\n")
