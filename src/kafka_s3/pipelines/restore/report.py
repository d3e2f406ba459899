"""The restore's words: the dry-run plan report and record estimates made from object names and sizes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from kafka_s3.pipelines.read.discovery import BackupObject, Problem
from kafka_s3.pipelines.read.options import Bounds
from kafka_s3.pipelines.restore.driver import RestorePlanSet


def estimate_records(objects: Sequence[BackupObject]) -> int | None:
    """Records of a partition's objects estimated from their names and sizes alone: object ``i`` of one directory
    holds offsets ``[start_i, start_i+1)``, and the last one as many as its size makes at the others' bytes per record
    (unknown with a single object)."""
    if len(objects) < 2:
        return None
    span = objects[-1].start - objects[0].start
    head_bytes = sum(o.size for o in objects[:-1])
    last = round(objects[-1].size * span / head_bytes) if span > 0 and head_bytes > 0 else 1
    return span + max(1, last)


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


def oversized(plan_set: RestorePlanSet, limit: int) -> list[str]:
    """Warnings for objects whose size shows records the producer may refuse (``message.max.bytes``): certainly when
    the bytes per record of its chunk manifest exceed the limit, possibly when the whole object does. Read from
    names, sizes and manifests only: no object is fetched."""
    warnings = []
    for plan in plan_set.plans:
        for obj in plan.objects:
            if obj.size <= limit:
                continue
            if obj.records and obj.size / obj.records > limit:
                what = f"holds a record over the producer's message.max.bytes ({limit})"
            else:
                known = f"{obj.records} records, " if obj.records else ""
                what = f"may hold a record over the producer's message.max.bytes ({limit}): {known}{obj.size} bytes"
            warnings.append(
                f"{obj.key} ({plan.source_topic}[{plan.source_partition}] from offset {obj.start}) {what}; a record "
                f"over it stops the restore: raise producer.override.message.max.bytes and the max.message.bytes of "
                f"target topic {plan.target_topic}"
            )
    return warnings


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
    lines = []
    total_objects = total_bytes = total_records = unknown = 0
    for plan in plan_set.plans:
        part = plan_set.partitions[(plan.source_topic, plan.source_partition)]
        objects = list(plan.objects)
        size = sum(o.size for o in objects)
        records = estimate_records(objects)
        have = plan_set.target_partitions.get(plan.target_topic)
        if have is None:
            count = plan_set.creation_partitions.get(plan.target_topic)
            check = f"missing, will be created with {_plural(count, 'partition')}" if count else "MISSING"
        elif have > plan.target_partition:
            check = f"ok ({have} partitions)"
        else:
            check = f"TOO FEW PARTITIONS (has {have}, needs {plan.target_partition + 1})"
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
