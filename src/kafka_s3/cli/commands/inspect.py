"""``kafka-s3 verify``, ``read``, ``status`` and ``groups``: what a backup holds, and where it stands."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

from kafka_s3 import api
from kafka_s3.cli.commands.options import overrides, spark, topic_names
from kafka_s3.core.errors import BackupIncomplete, ConfigError


def cmd_verify(args: argparse.Namespace) -> int:
    from kafka_s3.cli.render import render_verify_report

    reports = [
        api.verify(config, topics=topic_names(args) or None, deep=args.deep, **spark(args))
        for config in api.configurations(args.config, "source", overrides(args))
    ]
    if args.json:
        docs = [r.to_dict() for r in reports]
        print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=2))
    else:
        for report in reports:
            print(render_verify_report(report))
    return 0 if all(report.whole for report in reports) else BackupIncomplete.exit_code


def cmd_read(args: argparse.Namespace) -> int:
    """Records of a backup, partition after partition, printed as they are read (the table a page of rows at a
    time); gaps in the offsets asked for are said where they are. Quiet unless ``-v``: a read's output is the
    records."""
    from kafka_s3.cli.render import render

    if not (args.verbose or args.debug):
        logging.getLogger("kafka_s3").setLevel(logging.WARNING)
    start = api.parse_start(args.offset)
    count = args.count if args.count is not None else (1 if start.kind == "positions" else None)
    if count is not None and count < 1:
        raise ConfigError(f"--count must be at least 1, got {count}")
    named = topic_names(args)
    configs = api.configurations(args.config, "source", overrides(args))
    if len(configs) > 1 and not named:
        raise ConfigError("the file has several KCQL statements: choose one with --topic")
    found = api.records(
        args.config,
        offset=start,
        topics=named or None,
        partitions=args.partition,
        count=count,
        overrides=overrides(args),
    )
    shown = "json" if args.json else "raw" if args.raw else "table"
    following: dict[tuple[str, int], int] = {}  # per partition: the offset after its last page
    for (topic, partition), page in pages(found):
        asked = following.get((topic, partition))
        if asked is None:  # its first page: a gap before the first record counts from an offset asked for
            given = start.value if start.kind == "offset" else start.offset_of((topic, partition))
            asked = page[0]["offset"] if given is None else given
        out, notes = render(
            page, topic, partition, asked, shown, args.base64, header=not following, with_topic=len(named) > 1
        )
        following[(topic, partition)] = page[-1]["offset"] + 1
        for line in out:
            print(line)
        sys.stdout.flush()
        for note in notes:
            print(note, file=sys.stderr)
    return 0


PAGE = 500  # records rendered at a time: the table's columns are as wide as the page's widest value


def pages(records: Iterator[dict[str, Any]]) -> Iterator[tuple[tuple[str, int], list[dict[str, Any]]]]:
    """Consecutive records of one partition, up to :data:`PAGE` at a time, with their (topic, partition)."""
    page: list[dict[str, Any]] = []
    for record in records:
        if page and (len(page) >= PAGE or (record["topic"], record["partition"]) != place(page[0])):
            yield place(page[0]), page
            page = []
        page.append(record)
    if page:
        yield place(page[0]), page


def place(record: dict[str, Any]) -> tuple[str, int]:
    return str(record["topic"]), int(record["partition"])


def cmd_status(args: argparse.Namespace) -> int:
    from kafka_s3.cli.render import render_status
    from kafka_s3.core.errors import StatusWithoutBucket

    if args.prometheus:
        print(api.status_prometheus(args.config, overrides=overrides(args)), end="")
        return 0
    try:
        rows = api.status(args.config, overrides=overrides(args))
    except StatusWithoutBucket as partial:  # Kafka's side is still worth showing; then the error and its code
        print(json.dumps(partial.rows, indent=2) if args.json else render_status(partial.rows))
        raise
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
