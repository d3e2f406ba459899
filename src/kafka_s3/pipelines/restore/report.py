"""What a restore plan lets one tell before anything is read: record estimates made from object names and sizes, and
objects large enough to hold records the producer would refuse. (How a plan is worded is the CLI's: cli/render.py.)"""

from __future__ import annotations

from collections.abc import Sequence

from kafka_s3.pipelines.read.discovery import BackupObject
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
