"""``kafka-s3 ls`` and ``kafka-s3 info``: what a bucket holds (rendering only: :func:`kafka_s3.api.ls` and
:func:`kafka_s3.api.info` find and describe the backups)."""

from __future__ import annotations

import argparse
import json
from io import StringIO

from rich.console import Console
from rich.table import Table

from kafka_s3 import api
from kafka_s3.cli.commands.options import overrides, topic_names


def cmd_ls(args: argparse.Namespace) -> int:
    entries = api.ls(args.location, config=args.config, topics=topic_names(args), overrides=overrides(args))
    if args.json:
        print(json.dumps({"backups": [e.to_dict() for e in entries]}, indent=2))
    else:
        print("\n\n".join(render_entry(e) for e in entries))
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    details = api.info(args.location, config=args.config, topics=topic_names(args), overrides=overrides(args))
    print(json.dumps(details.to_dict(), indent=2) if args.json else render_details(details))
    return 0


def _console(out: StringIO) -> Console:
    return Console(file=out, width=200, highlight=False)


def _or_dash(value: object) -> str:
    return "-" if value is None else str(value)


def render_entry(entry: api.BackupEntry) -> str:
    """A backup's heading (where, name, layout, format, topics, totals), then a table of its partitions."""
    out = StringIO()
    console = _console(out)
    whole = {True: ", whole records (store.envelope=true)", False: ", values only", None: ""}[entry.envelope]
    lines = [
        f"{entry.url}" + (f"  (backup {entry.name})" if entry.name else ""),
        f"  layout: {entry.layout_title}",
        f"  format: {entry.format or 'unknown'}{whole}",
        f"  topics: {', '.join(entry.topics)}; {entry.objects} objects, {entry.bytes} bytes",
    ]
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)
    table = Table()
    columns = ("topic", "partition", "first offset", "last offset", "first time", "last time", "pruned start")
    for column in (*columns, "objects", "bytes"):
        table.add_column(column, justify="left" if column in ("topic", "first time", "last time") else "right")
    for part in entry.partitions:
        doc = part.to_dict()
        last = _or_dash(part.last_offset)
        if part.last_offset is None and part.last_object_offset is not None:
            last = f"≥ {part.last_object_offset}"  # no manifest: the newest object's name holds its first offset
        table.add_row(
            part.topic,
            str(part.partition),
            _or_dash(part.first_offset),
            last,
            _or_dash(doc["first_time"]),
            _or_dash(doc["last_time"]),
            _or_dash(part.pruned_start),
            str(part.objects),
            str(part.bytes),
        )
    console.print(table)
    return out.getvalue().rstrip("\n")


def render_details(details: api.BackupDetails) -> str:
    """What ``ls`` says of the backup, then its snapshots, last cycle, unfinished chunks and compaction state."""
    doc = details.to_dict()
    lines = [render_entry(details.entry)]
    lines.append(f"  last cycle: {doc['last_cycle'] or 'none'}")
    unfinished = [
        f"{p.topic}[{p.partition}] from offset {start}"
        for p in details.entry.partitions
        for start in p.unfinished_chunks
    ]
    lines.append(
        "  unfinished chunks: "
        + (f"{len(unfinished)} ({'; '.join(unfinished)})" if unfinished else "none (every chunk committed)")
    )
    lines.append(f"  compaction: {details.compaction}")
    if not details.snapshots:
        lines.append("  snapshots: none")
    for topic, kinds in sorted(details.snapshots.items()):
        for kind, times in kinds.items():
            said = doc["snapshots"][topic][kind]
            span = said[0] if len(said) == 1 else f"{said[0]} .. {said[-1]}"
            lines.append(f"  snapshots of {topic}: {kind.replace('_', ' ')}: {len(times)} ({span})")
    return "\n".join(lines)
