"""What the CLI prints: summaries, the status and verify tables, the dry-run plan, the records ``read`` returns.

Rendering only: every value comes from what the Python API (:mod:`kafka_s3.api`) returned.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterator, Mapping, Sequence
from io import StringIO
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from kafka_s3.api import (
        BackupSummary,
        Bounds,
        FileSpan,
        Problem,
        RestorePlanSet,
        RestoreSummary,
        TablesSummary,
        VerifyReport,
    )


# ------------------------------------------------------------------------------------------------ summaries
def print_backup_summary(summary: BackupSummary) -> None:
    table = Table(title="backup summary")
    for column in ("topic", "partition", "committed offset", "target"):
        table.add_column(column, justify="right" if column != "topic" else "left")
    for (topic, partition), offset in sorted(summary.committed.items()):
        table.add_row(topic, str(partition), str(offset), str(summary.targets.get((topic, partition), "")))
    console = Console()
    console.print(table)
    console.print(
        f"{summary.records} records in {summary.objects} objects ({summary.bytes / 1e6:.1f} MB), "
        f"{len(summary.cycles)} cycle(s)"
    )


def print_tables_summary(summary: TablesSummary) -> None:
    """A backup into Iceberg tables: each table's position (the next offset its snapshot records) against the end
    the run backed up to, then what was committed."""
    table = Table(title="backup summary")
    for column in ("table", "topic", "partition", "committed offset", "target"):
        table.add_column(column, justify="right" if column in ("partition", "committed offset", "target") else "left")
    for one in summary.tables:
        for (topic, partition), offset in sorted(one.committed.items()):
            target = one.targets.get((topic, partition), "")
            table.add_row(one.table, topic, str(partition), str(offset), str(target))
    console = Console()
    console.print(table)
    console.print(
        f"{summary.records} records in {summary.files} data files ({summary.bytes / 1e6:.1f} MB), "
        f"{summary.snapshots} snapshot(s)",
        highlight=False,
    )
    if summary.dropped_files:
        console.print(
            f"{summary.dropped_files} data file(s) left out: another backup of the table committed their offsets "
            "first (orphans, removed by prune)",
            style="yellow",
            highlight=False,
        )


def print_restore_summary(summary: RestoreSummary) -> None:
    table = Table(title="restore summary")
    for column in ("source", "target", "objects", "records", "source offsets", "target offsets"):
        table.add_column(column)
    for r in summary.results:
        table.add_row(
            f"{r.source_topic}[{r.source_partition}]",
            f"{r.target_topic}[{r.target_partition}]",
            str(r.objects),
            str(r.records),
            f"{r.first_source_offset}..{r.last_source_offset}" if r.records else "-",
            f"{r.first_target_offset}..{r.last_target_offset}" if r.records else "-",
        )
    console = Console()
    console.print(table)
    for problem in summary.problems:
        console.print(str(problem), style="yellow", markup=False, highlight=False, soft_wrap=True)
    total = skipped_total(summary.problems)
    if total:
        console.print(total, style="yellow", markup=False, highlight=False)
    for gap in summary.gaps:
        console.print(f"[yellow]missing[/yellow] {escape(str(gap))}", highlight=False, soft_wrap=True)
    for finding in summary.skipped:
        console.print(
            f"[yellow]skipped (--allow-gaps)[/yellow] {escape(str(finding))}", highlight=False, soft_wrap=True
        )
    if summary.layout:
        console.print(summary.layout, markup=False, highlight=False, soft_wrap=True)
    if summary.timestamps:
        console.print(summary.timestamps, markup=False, highlight=False, soft_wrap=True)
    console.print(f"{summary.records} records restored in {summary.seconds:.1f}s")


def age_text(seconds: int | None) -> str:
    """``42s``, ``5m 3s``, ``2h 4m``, ``3d 2h``: how long ago, to the precision an operator reads."""
    if seconds is None:
        return "-"
    for unit, size, sub, sub_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if seconds >= size:
            return f"{seconds // size}{unit} {seconds % size // sub_size}{sub}"
    return f"{seconds}s"


def backup_start_text(row: dict[str, Any]) -> str:
    """Where a restore of the partition begins once kafka-s3 prune removed its oldest chunks: the first restorable
    offset, and its record's time when the prune recorded it (``-``: never pruned, the backup starts at its first
    chunk)."""
    start = row.get("pruned_start")
    if start is None:
        return "-"
    when = row.get("pruned_start_time")
    return f"{start} ({when})" if when else str(start)


def render_status(rows: list[dict[str, Any]]) -> str:
    """Per partition: Kafka's side (committed offset of the group, log end, lag) and the bucket's (its committed end
    from the chunk manifests, its start once pruned); the last object and how long ago it was committed. ``view``
    says which side the lag and last object come from: ``group``, or ``bucket`` when the group has no offset."""
    table = Table(title=f"backup status (group {rows[0]['group']})" if rows else "backup status")
    for column in (
        "topic",
        "partition",
        "committed",
        "end",
        "lag",
        "last object",
        "last commit (UTC)",
        "age",
        "bucket end",
        "backup start",
        "view",
    ):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["topic"],
            str(r["partition"]),
            "-" if r["committed"] is None else str(r["committed"]),
            str(r["end"]),
            "-" if r["lag"] is None else str(r["lag"]),
            r["last_object"] or "-",
            r["last_commit"] or "-",
            age_text(r.get("last_commit_age_s")),
            "-" if r.get("bucket_committed") is None else str(r["bucket_committed"]),
            backup_start_text(r),
            r.get("view") or "-",
        )
    out = StringIO()
    console = Console(file=out, width=240)
    console.print(table)
    gone = sorted({r["group"] for r in rows if r["committed"] is None})
    if gone and rows:
        bucket_rows = sum(1 for r in rows if r.get("view") == "bucket")
        console.print(
            f"group {', '.join(gone)} has no committed offset for {sum(1 for r in rows if r['committed'] is None)} "
            f"partition(s): {bucket_rows} shown from the bucket's chunk manifests (where a backup would resume)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return out.getvalue()


def render_verify_report(report: VerifyReport) -> str:
    """Per source partition: objects, records, offsets and problems; then every finding, one per line."""
    table = Table(title="backup verify" + (" (deep)" if report.deep else ""))
    for column in ("topic", "partition", "objects", "records", "offsets", "manifests", "problems"):
        table.add_column(column)
    for check in report.checks.values():
        table.add_row(
            check.topic,
            str(check.partition),
            str(check.objects),
            "?" if check.records is None else str(check.records),
            f"{'?' if check.first is None else check.first}..{'?' if check.last is None else check.last}",
            "yes" if check.verified else "no",
            str(len(check.blocking)) if check.blocking else "-",
        )
    out = StringIO()
    console = Console(file=out, width=160, highlight=False)
    console.print(table)
    for check in report.checks.values():
        for finding in check.findings:
            console.print(f"{'PROBLEM' if finding.blocking else 'note'}: {escape(str(finding))}", soft_wrap=True)
    for note in report.notes:
        console.print(f"note: {escape(note)}", soft_wrap=True)
    if report.layout:
        console.print(report.layout, markup=False, soft_wrap=True)
    console.print(report.verdict, markup=False, soft_wrap=True)
    return out.getvalue().rstrip("\n")


# ------------------------------------------------------------------------------------------------ restore plans
def skipped_total(problems: Sequence[Problem]) -> str | None:
    """One line counting what ``behavior.on.error=ignore|log`` skipped: records (by position), and objects or rests
    of objects whose number of records is unknown."""
    if not problems:
        return None
    records = sum(p.records for p in problems if p.records is not None)
    counted = sum(1 for p in problems if p.records is not None)
    whole = len(problems) - counted
    parts = []
    if counted:
        parts.append(f"{_plural(records, 'record')} at {_plural(counted, 'position')}")
    if whole:
        them = "them" if whole != 1 else "it"
        parts.append(f"{_plural(whole, 'object')} (or what was left of {them}) whose records could not be counted")
    return "skipped: " + " and ".join(parts) + " (behavior.on.error)"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _bounds_text(bounds: Bounds) -> str:
    parts = []
    if bounds.from_offset is not None or bounds.until_offset is not None:
        parts.append(
            f"offsets [{bounds.from_offset if bounds.from_offset is not None else ''}, "
            f"{bounds.until_offset if bounds.until_offset is not None else ''})"
        )
    if bounds.by_time:

        def iso(ms: int | None) -> str:
            return "" if ms is None else dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat()

        parts.append(f"time [{iso(bounds.from_timestamp)}, {iso(bounds.until_timestamp)})")
    return "; only " + " and ".join(parts) if parts else ""


def describe_plan(plan_set: RestorePlanSet) -> str:
    """The ``--dry-run`` report: per source partition its target, objects, bytes, offsets and record estimate, and the
    target topic check; then totals, skipped objects, and what would stop the restore."""
    from kafka_s3.api import estimate_records

    lines = []
    total_objects = total_bytes = total_records = unknown = 0
    for plan in plan_set.plans:
        part = plan_set.partitions[(plan.source_topic, plan.source_partition)]
        objects = list(plan.objects)
        size = sum(o.size for o in objects)
        records = estimate_records(objects)
        check = _target_check(plan_set, plan.target_topic, plan.target_partition)
        directories = len(part.directories)
        lines.append(
            f"{plan.source_topic}[{plan.source_partition}] -> {plan.target_topic}[{plan.target_partition}]: "
            f"{len(objects)} object{'s' if len(objects) != 1 else ''}, {size} bytes ({size / 1e6:.2f} MB), "
            f"offsets from {objects[0].start if objects else None}, "
            f"{'~' + str(records) if records is not None else 'unknown'} records, "
            f"{directories} director{'y' if directories == 1 else 'ies'}{_bounds_text(plan.bounds)}; target: {check}"
        )
        total_objects += len(objects)
        total_bytes += size
        if records is None:
            unknown += 1
        else:
            total_records += records
    lines.extend(str(problem) for problem in plan_set.problems)
    for finding in plan_set.findings:
        lines.append(f"{'PROBLEM' if finding.blocking else 'note'}: {finding}")
    if not plan_set.plans:
        lines.append("nothing to restore")
    else:
        topics = {p.source_topic for p in plan_set.plans}
        lines.append(
            f"total: {len(topics)} topic{'s' if len(topics) != 1 else ''}, {len(plan_set.plans)} partition"
            f"{'s' if len(plan_set.plans) != 1 else ''}, {total_objects} objects, {total_bytes} bytes "
            f"({total_bytes / 1e6:.2f} MB), ~{total_records} records"
            + (f" (+ {unknown} single-object partition{'s' if unknown != 1 else ''} not estimated)" if unknown else "")
        )
    if plan_set.layout:
        lines.append(plan_set.layout)
    if plan_set.plans and plan_set.timestamps:
        lines.append(plan_set.timestamps)
    lines.extend(f"warning: {warning}" for warning in plan_set.warnings)
    lines.extend(f"the restore would fail: {reason}" for reason in plan_set.blockers)
    lines.append("dry run: nothing was produced")
    return "\n".join(lines)


def _target_check(plan_set: RestorePlanSet, topic: str, partition: int) -> str:
    """What a dry run says of the target partition a plan writes to."""
    have = plan_set.target_partitions.get(topic)
    if have is None:
        count = plan_set.creation_partitions.get(topic)
        return f"missing, will be created with {_plural(count, 'partition')}" if count else "MISSING"
    if have > partition:
        return f"ok ({have} partitions)"
    return f"TOO FEW PARTITIONS (has {have}, needs {partition + 1})"


def describe_table_plan(plan_set: RestorePlanSet, files: Mapping[tuple[str, int], Sequence[FileSpan]]) -> str:
    """The ``--dry-run`` report of a restore from Iceberg tables: per partition its target, the data files its scan
    planned, their bytes, offsets and rows (bounds cut some), and the target topic check; then what would stop it."""
    lines = []
    for plan in plan_set.plans:
        spans = files.get((plan.source_topic, plan.source_partition), ())
        check = _target_check(plan_set, plan.target_topic, plan.target_partition)
        first = min((s.first_offset for s in spans), default=None)
        last = max((s.last_offset for s in spans), default=None)
        size = sum(s.size for s in spans)
        lines.append(
            f"{plan.source_topic}[{plan.source_partition}] -> {plan.target_topic}[{plan.target_partition}]: "
            f"{_plural(len(spans), 'data file')}, {size} bytes, offsets {first}..{last}, "
            f"{sum(s.records for s in spans)} rows in those files{_bounds_text(plan.bounds)}; target: {check}"
        )
    if not plan_set.plans:
        lines.append("nothing to restore")
    if plan_set.layout:
        lines.append(plan_set.layout)
    lines.extend(f"warning: {warning}" for warning in plan_set.warnings)
    lines.extend(f"the restore would fail: {reason}" for reason in plan_set.blockers)
    lines.append("dry run: nothing was produced")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ read
FORMATS = ("table", "json", "raw")


def gaps(records: list[dict[str, Any]], start: int) -> Iterator[tuple[int, tuple[int, int]]]:
    """``(index, (first, last))`` for every run of offsets missing before ``records[index]``, from ``start`` on."""
    expected = start
    for index, record in enumerate(records):
        if record["offset"] > expected:
            yield index, (expected, record["offset"] - 1)
        expected = record["offset"] + 1


def gap_text(topic: str, partition: int, first: int, last: int) -> str:
    span = f"offset {first}" if first == last else f"offsets {first}..{last}"
    return (
        f"gap: {topic}[{partition}] {span} not in the backup (compacted away, transaction markers, or a missing "
        "object: kafka-s3 verify tells which)"
    )


def _text(data: bytes | None, as_base64: bool) -> str | None:
    if data is None:
        return None
    if as_base64:
        return base64.b64encode(data).decode("ascii")
    return data.decode("utf-8", errors="backslashreplace")


def _json_bytes(data: bytes | None, as_base64: bool) -> Any:
    """A string when the bytes are UTF-8 (and base64 is not asked for), else ``{"base64": ...}``."""
    if data is None:
        return None
    if not as_base64:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return {"base64": base64.b64encode(data).decode("ascii")}


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def render(
    records: list[dict[str, Any]],
    topic: str,
    partition: int,
    start: int,
    fmt: str,
    as_base64: bool,
    header: bool = True,
    with_topic: bool = False,
) -> tuple[list[str], list[str]]:
    """The lines for stdout and the lines for stderr of records of one partition from offset ``start`` on. The
    table (its ``header`` line, a ``topic`` column ``with_topic``) says where a gap is in line; JSON lines and raw
    values keep stdout to records only and say it on stderr. A tombstone's value is ``null`` in every format."""
    out: list[str] = []
    notes: list[str] = []
    missing = dict(gaps(records, start))
    if fmt == "table":
        rows: list[tuple[str, ...]] = [(*(("topic",) if with_topic else ()), "partition", "offset")]
        rows[0] += ("timestamp (UTC)", "key", "value")
        gap_rows: dict[int, str] = {}
        for index, record in enumerate(records):
            if index in missing:
                gap_rows[len(rows)] = gap_text(topic, partition, *missing[index])
            headers = ", ".join(f"{k}={_text(v, as_base64)}" for k, v in record["headers"])
            value = "null" if record["value"] is None else _text(record["value"], as_base64) or ""
            rows.append(
                ((topic,) if with_topic else ())
                + (
                    str(partition),
                    str(record["offset"]),
                    _time(record["timestamp"]),
                    _text(record["key"], as_base64) or "-",
                    value + (f"  headers: {headers}" if headers else ""),
                )
            )
        last = len(rows[0]) - 1  # the value: as long as it is
        widths = [max(len(row[i]) for row in rows) for i in range(last)]
        right = {1, 2} if with_topic else {0, 1}  # partition and offset
        for number, row in enumerate(rows):
            if number == 0 and not header:
                continue
            if number in gap_rows:
                out.append(gap_rows[number])
            cells = [row[i].rjust(widths[i]) if i in right else row[i].ljust(widths[i]) for i in range(last)]
            out.append("  ".join([*cells, row[last]]).rstrip())
        return out, notes
    for index, record in enumerate(records):
        if index in missing:
            notes.append(gap_text(topic, partition, *missing[index]))
        if fmt == "json":
            doc = {
                "topic": topic,
                "partition": partition,
                "offset": record["offset"],
                "timestamp": record["timestamp"],
                "key": _json_bytes(record["key"], as_base64),
                "value": _json_bytes(record["value"], as_base64),
                "headers": [[k, _json_bytes(v, as_base64)] for k, v in record["headers"]],
            }
            out.append(json.dumps(doc, ensure_ascii=False))
        else:
            out.append("null" if record["value"] is None else _text(record["value"], as_base64) or "")
    return out, notes
