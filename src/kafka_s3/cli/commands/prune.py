"""``kafka-s3 prune``: the plan of what retention would remove, and with ``--execute`` its removal (rendering only:
:func:`kafka_s3.api.prune` decides and acts)."""

from __future__ import annotations

import argparse
import json
from io import StringIO

from rich.console import Console
from rich.table import Table

from kafka_s3 import api
from kafka_s3.cli.commands.options import overrides, topic_names


def cmd_prune(args: argparse.Namespace) -> int:
    report = api.prune(
        args.config,
        before=args.before,
        older_than=args.older_than,
        max_total_bytes=args.max_total_bytes,
        topics=topic_names(args) or None,
        partitions=args.partition,
        execute=args.execute,
        force=args.force,
        overrides=overrides(args),
    )
    print(json.dumps(report.to_dict(), indent=2) if args.json else render_prune_report(report))
    return 0


def render_prune_report(report: api.PruneReport) -> str:
    """Per partition: the chunks removed (or to remove), their offsets, records and bytes, the new start; then what
    stays and why, the totals, and how to act on a plan."""
    done = report.executed
    table = Table(title=f"prune {report.name} ({'removed' if done else 'plan'}: {report.selectors.describe()})")
    for column in ("topic", "partition", "chunks", "offsets", "records", "bytes", "new start", "first kept record"):
        table.add_column(column, justify="left" if column in ("topic", "first kept record") else "right")
    for part in report.partitions:
        table.add_row(
            part.topic,
            str(part.partition),
            str(part.chunks),
            f"{part.first}..{part.last}" if part.chunks else "-",
            str(part.records),
            str(part.bytes),
            "-" if part.new_start is None else str(part.new_start),
            str(part.to_dict()["first_time"] or "-"),
        )
    out = StringIO()
    console = Console(file=out, width=200, highlight=False)
    console.print(table)

    def say(text: str) -> None:
        console.print(text, markup=False, soft_wrap=True)

    for part in report.partitions:
        if part.kept_because:
            say(f"{part.topic}[{part.partition}]: {part.kept_because}: kept, with every chunk after it")
        if part.leftovers:
            say(
                f"{part.topic}[{part.partition}]: {part.leftovers} object(s) an interrupted prune left below the "
                f"recorded start {'removed' if done else 'to remove'}"
            )
    for note in report.notes:
        say(f"note: {note}")
    if report.live:
        say(f"note: {report.live}" + (" (pruned anyway: --force)" if done else ""))
    verb = "removed" if done else "would remove"
    if not report.chunks and not report.leftovers and not report.snapshots:
        say(f"nothing to prune: no committed chunk of the backup holds only {report.selectors.describe()}")
        return out.getvalue().rstrip("\n")
    partitions = len({(p.topic, p.partition) for p in report.partitions if p.chunks})
    say(
        f"{verb} {report.chunks} chunk(s) of {partitions} partition(s): {report.records} records, {report.bytes} bytes "
        f"({report.bytes / 1e6:.2f} MB); {report.snapshots} snapshot record(s)"
    )
    if not done:
        say("nothing was removed: run with --execute to remove them")
    return out.getvalue().rstrip("\n")
