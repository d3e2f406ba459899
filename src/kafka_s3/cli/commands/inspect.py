"""``kafka-s3 verify``, ``read``, ``status`` and ``groups``: what a backup holds, and where it stands."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys

from kafka_s3 import api
from kafka_s3.cli.commands.options import overrides, spark
from kafka_s3.core.errors import BackupIncomplete, ConfigError


def cmd_verify(args: argparse.Namespace) -> int:
    from kafka_s3.cli.render import render_verify_report

    topics = [t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None
    reports = [
        api.verify(config, topics=topics, deep=args.deep, **spark(args))
        for config in api.configurations(args.config, "source", overrides(args))
    ]
    if args.json:
        docs = [r.to_dict() for r in reports]
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=2))
    else:
        for report in reports:
            print(render_verify_report(report))
    return 0 if all(report.whole for report in reports) else BackupIncomplete.exit_code


def parse_position(text: str) -> tuple[int, int]:
    """``PARTITION:OFFSET`` → ``(partition, offset)``."""
    partition, sep, offset = text.strip().partition(":")
    if not sep or not partition.isdigit() or not offset.isdigit():
        raise ConfigError(f"--offset: expected PARTITION:OFFSET (e.g. 0:1200), got {text!r}")
    return int(partition), int(offset)


def cmd_read(args: argparse.Namespace) -> int:
    from kafka_s3.cli.render import render

    partition, offset = parse_position(args.offset)
    if args.count < 1:
        raise ConfigError(f"--count must be at least 1, got {args.count}")
    named = [t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else []
    if len(named) > 1:
        raise ConfigError(f"read prints the records of one topic: --topics names {len(named)} ({args.topics})")
    chosen = named[0] if named else None
    configs = api.configurations(args.config, "source", overrides(args))
    if len(configs) > 1 and not chosen:
        raise ConfigError("the file has several KCQL statements: choose one with --topics")
    records = api.read(
        args.config, partition=partition, offset=offset, count=args.count, topic=chosen, overrides=overrides(args)
    )
    topic = records[0]["topic"] or chosen or ""
    shown = "json" if args.json else "raw" if args.raw else "table"
    out, notes = render(records, topic, partition, offset, shown, args.base64)
    for line in out:
        print(line)
    sys.stdout.flush()
    for note in notes:
        print(note, file=sys.stderr)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from kafka_s3.cli.render import render_status

    rows = api.status(args.config, overrides=overrides(args))
    print(json.dumps(rows, indent=2) if args.json else render_status(rows))
    return 0


def cmd_groups(args: argparse.Namespace) -> int:
    """The consumer groups a backup recorded (every snapshot's time, the newest one's offsets) and, where a restore
    of it recorded its offset map in the target cluster, where each group would resume there."""
    report = api.groups(args.config, regex=args.consumer_groups, overrides=overrides(args), **spark(args))

    def iso(ms: int) -> str:
        return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    doc: dict[str, object] = {"topics": {}}
    lines = []
    for topic, times in sorted(report.snapshots.items()):
        newest = report.newest.get(topic, {})
        doc["topics"][topic] = {  # type: ignore[index]
            "snapshots": times,
            "groups": {g: {str(p): o for p, o in ps.items()} for g, ps in newest.items()},
        }
        lines.append(
            f"{topic}: {len(times)} consumer-group snapshot(s)" + (f", newest {iso(times[-1])}" if times else "")
        )
        lines.extend(f"  snapshot {iso(at)} ({at})" for at in times)
        for group, offsets in sorted(newest.items()):
            lines.append(f"  group {group}: " + ", ".join(f"[{p}] {o}" for p, o in sorted(offsets.items())))
    translated = report.translations
    doc["translations"] = [t.to_dict() for t in translated.translations]
    if translated.translations:
        lines.append(f"translations into the target cluster (restore {report.restore}):")
        lines.extend(f"  {t.line()}" for t in translated.translations)
    doc["denied"] = translated.denied
    lines.extend(
        f"group {g}: restore --consumer-groups would be refused: {why}" for g, why in translated.denied.items()
    )
    print(json.dumps(doc, indent=2) if args.json else "\n".join(lines))
    return 0
