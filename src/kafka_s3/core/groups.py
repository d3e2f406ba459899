"""Consumer groups across a disaster: the backup's snapshots of their committed offsets, and the restore's map from
source offsets to target offsets that translates them.

**Snapshots.** Each backup cycle records the committed offsets of the consumer groups reading the backed-up topics,
one small immutable object per topic and snapshot, ``<manifest root>/<topic>/consumer-groups/<at ms>.offsets`` next
to the chunk manifests (``.offsets``: no metadata object ends in a data format's extension). A snapshot is written
only when the offsets changed since the last one the backup wrote, and is never rewritten: a point-in-time restore
picks the newest snapshot at or before its time.

**Offset map.** Restored offsets never equal the source's: the target may already hold records, the source has gaps
(compaction, transaction markers) and an exactly-once restore adds a marker per transaction. The restore records,
from the producer's delivery reports, ranges of consecutive source offsets restored to consecutive target offsets
(a constant delta). A group's committed source offset ``o`` (the next record it would read) then translates to the
target offset of the first restored record at or after ``o``; past the restored records, to the target's end. A
group whose offset ``kafka-s3 prune`` removed (below the backup's recorded start) resumes at the restore's first
record, the start's: said, with the group, partition, its offset and the start, never mapped silently.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from typing import Any

from kafka_s3.core.errors import FormatError
from kafka_s3.core.snapshots import Series, pick

GROUPS_DIR = "consumer-groups"
SNAPSHOT_EXTENSION = ".offsets"


@dataclass(frozen=True)
class GroupSnapshot:
    """The committed offsets (next offset to read) of every recorded group on one topic at time ``at`` (epoch ms)."""

    topic: str
    at: int
    groups: dict[str, dict[int, int]] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        doc = {
            "topic": self.topic,
            "at": self.at,
            "groups": {g: {str(p): o for p, o in sorted(ps.items())} for g, ps in sorted(self.groups.items())},
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes, key: str = "") -> GroupSnapshot:
        try:
            doc = json.loads(data)
            groups = {str(g): {int(p): int(o) for p, o in ps.items()} for g, ps in doc["groups"].items()}
            return cls(str(doc["topic"]), int(doc["at"]), groups)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise FormatError(f"unreadable consumer-group snapshot: {exc}", object_key=key) from None

    def same_offsets(self, other: GroupSnapshot | None) -> bool:
        return other is not None and other.topic == self.topic and other.groups == self.groups


SERIES = Series(GROUPS_DIR, SNAPSHOT_EXTENSION, GroupSnapshot.from_bytes)
pick_snapshot = pick  # the newest snapshot at or before a time


# ------------------------------------------------------------------------------------------------ offset map
Range = tuple[int, int, int]  # (first source offset, last source offset, target offset of the first)


@dataclass
class OffsetMap:
    """Ranges of consecutive source offsets restored to consecutive target offsets, in source order."""

    ranges: list[Range] = field(default_factory=list)

    def add(self, source: int, target: int) -> None:
        """One delivered record (in delivery order, which is production order for one partition)."""
        if self.ranges:
            first, last, target_first = self.ranges[-1]
            if source == last + 1 and target == target_first + (source - first):
                self.ranges[-1] = (first, source, target_first)
                return
        self.ranges.append((source, source, target))

    def extend(self, ranges: list[Range]) -> None:
        """Later ranges supersede what the map says from their first source offset on (a restore that went back:
        at-least-once redelivery after a crash)."""
        if not ranges:
            return
        start = ranges[0][0]
        kept: list[Range] = []
        for first, last, target in self.ranges:
            if first >= start:
                break
            kept.append((first, min(last, start - 1), target))
        self.ranges = kept + [(int(a), int(b), int(c)) for a, b, c in ranges]

    def translate(self, source: int) -> int | None:
        """Target offset of the first restored record at or after ``source`` (``None``: none is at or after it)."""
        starts = [r[0] for r in self.ranges]
        i = bisect.bisect_right(starts, source) - 1
        if i >= 0:
            first, last, target = self.ranges[i]
            if source <= last:
                return target + (source - first)
        following = i + 1
        if following < len(self.ranges):
            return self.ranges[following][2]
        return None

    @property
    def first_source(self) -> int | None:
        return self.ranges[0][0] if self.ranges else None

    @property
    def last_source(self) -> int | None:
        return self.ranges[-1][1] if self.ranges else None


@dataclass(frozen=True)
class Translation:
    """One group's partition: where it was in the source and where it resumes in the target."""

    group: str
    source_topic: str
    source_partition: int
    source_offset: int
    target_topic: str
    target_partition: int
    target_offset: int | None  # None: not known yet (a dry run before the partition was restored)
    how: str  # "record" | "after" (past the restored range: the target's end) | "pending"
    pruned_start: int | None = None  # the backup's start, when the group's offset lies below it (kafka-s3 prune)

    def line(self) -> str:
        target = "?" if self.target_offset is None else str(self.target_offset)
        note = {"after": "past the restored records: the target's end", "pending": "not restored yet"}
        notes = [note[self.how]] if self.how in note else []
        if self.pruned_start is not None:
            notes.append(f"offset {self.source_offset} was pruned: the backup starts at offset {self.pruned_start}")
        return (
            f"group {self.group}: {self.source_topic}[{self.source_partition}] {self.source_offset} -> "
            f"{self.target_topic}[{self.target_partition}] {target}" + (f" ({'; '.join(notes)})" if notes else "")
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "source_topic": self.source_topic,
            "source_partition": self.source_partition,
            "source_offset": self.source_offset,
            "target_topic": self.target_topic,
            "target_partition": self.target_partition,
            "target_offset": self.target_offset,
            "how": self.how,
            "pruned_start": self.pruned_start,
        }


def translate_offset(offsets: OffsetMap, source: int, target_end: int | None) -> tuple[int | None, str]:
    """``(target offset, how)`` for a group committed at ``source``: the first restored record at or after it, else
    the target's end (``None`` when not known)."""
    found = offsets.translate(source)
    if found is not None:
        return found, "record"
    return target_end, "after" if target_end is not None else "pending"
