"""Which objects of a backup a read needs: the one planner of every reader.

A read asks for some topics, partitions, offsets and record times (a :class:`Selection`); each object of a source
partition covers a span of offsets (from its name, and its manifest or its successor's start) and, when its manifest
recorded them, a span of record times. An object is read only when its spans meet the selection; an object whose
spans are not known is always read. The ``kafka-s3`` DataFrame reader (filters Spark pushes down), ``kafka-s3 read``
and bounded restores (``--from-offset``/``--until-offset``, ``--from-timestamp``/``--until-timestamp``) all plan
through :func:`select_objects`. Pure: no store, no Spark.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.pipelines.read.discovery import BackupObject
from kafka_s3.pipelines.read.options import Bounds

LOW = -(2**63)
HIGH = 2**63  # exclusive: above every int64
Span = tuple[int, int]  # [low, high)


@dataclass(frozen=True)
class Ranges:
    """A set of integers as sorted, disjoint, non-adjacent half-open spans ``[low, high)``."""

    spans: tuple[Span, ...] = ((LOW, HIGH),)

    @classmethod
    def of(cls, spans: Iterable[Span]) -> Ranges:
        """The union of ``spans`` (empty ones dropped), normalised."""
        out: list[list[int]] = []
        for low, high in sorted(s for s in spans if s[0] < s[1]):
            if out and low <= out[-1][1]:
                out[-1][1] = max(out[-1][1], high)
            else:
                out.append([low, high])
        return cls(tuple((low, high) for low, high in out))

    @classmethod
    def values(cls, values: Iterable[int]) -> Ranges:
        return cls.of((v, v + 1) for v in values)

    @classmethod
    def between(cls, low: int | None = None, high: int | None = None) -> Ranges:
        """``[low, high)``, either end open when ``None``."""
        return cls.of([(LOW if low is None else low, HIGH if high is None else high)])

    @property
    def unbounded(self) -> bool:
        return self.spans == ((LOW, HIGH),)

    @property
    def empty(self) -> bool:
        return not self.spans

    def __and__(self, other: Ranges) -> Ranges:
        out: list[Span] = []
        i = j = 0
        a, b = self.spans, other.spans
        while i < len(a) and j < len(b):
            low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
            if low < high:
                out.append((low, high))
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return Ranges(tuple(out))

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int) and any(low <= value < high for low, high in self.spans)

    def meets(self, low: int, high: int) -> bool:
        """Whether ``[low, high)`` holds a member."""
        return low < high and any(s_low < high and low < s_high for s_low, s_high in self.spans)

    def hull(self) -> tuple[int | None, int | None]:
        """``(first, end)`` of the smallest ``[first, end)`` holding every member, ``None`` for an open end."""
        if not self.spans:
            return 0, 0
        low, high = self.spans[0][0], self.spans[-1][1]
        return (None if low == LOW else low), (None if high == HIGH else high)

    def mask(self, column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
        """True where the (integer) column's value is a member; nulls are not."""
        conditions = []
        for low, high in self.spans:
            parts = []
            if low != LOW:
                parts.append(pc.greater_equal(column, low))
            if high != HIGH:
                parts.append(pc.less(column, high))
            if not parts:
                return pc.fill_null(pc.is_valid(column), False)
            conditions.append(parts[0] if len(parts) == 1 else pc.and_(parts[0], parts[1]))
        if not conditions:
            return pa.array([False] * len(column), pa.bool_())
        mask = conditions[0]
        for condition in conditions[1:]:
            mask = pc.or_(mask, condition)
        return pc.fill_null(mask, False)


ALL = Ranges()


@dataclass(frozen=True)
class Selection:
    """What a read asks for: topics (``None``: all), partitions, offsets and record times (microseconds since the
    epoch, as the ``timestamp`` column holds them)."""

    topics: frozenset[str] | None = None
    partitions: Ranges = ALL
    offsets: Ranges = ALL
    times_us: Ranges = ALL

    @classmethod
    def of_bounds(cls, bounds: Bounds) -> Selection:
        """The offsets and times of a restore's or reader's bounds (timestamps in milliseconds)."""
        low, high = bounds.from_timestamp, bounds.until_timestamp
        return cls(
            offsets=Ranges.between(bounds.from_offset, bounds.until_offset),
            times_us=Ranges.between(None if low is None else low * 1000, None if high is None else high * 1000),
        )

    def __and__(self, other: Selection) -> Selection:
        if self.topics is None or other.topics is None:
            topics = self.topics if other.topics is None else other.topics
        else:
            topics = self.topics & other.topics
        return Selection(
            topics, self.partitions & other.partitions, self.offsets & other.offsets, self.times_us & other.times_us
        )

    @property
    def nothing(self) -> bool:
        return (
            (self.topics is not None and not self.topics)
            or self.partitions.empty
            or self.offsets.empty
            or self.times_us.empty
        )

    def wants(self, topic: str, partition: int) -> bool:
        return not self.nothing and (self.topics is None or topic in self.topics) and partition in self.partitions

    def offset_bounds(self) -> Bounds:
        """The smallest offset bounds holding every offset asked for (what a block index can narrow)."""
        first, end = self.offsets.hull()
        return Bounds(None if first is None or first <= 0 else first, end)


def offset_span(objects: Sequence[BackupObject], i: int, contiguous: bool) -> Span:
    """Offsets ``[first, end)`` object ``i`` of a partition (sorted by start) may hold.

    ``contiguous``: the objects sit in one directory and never overlap, so an object ends where the next one starts.
    Otherwise the end is the last offset its manifest recorded, or open when none did (objects of another tool).
    Derived offsets (plain formats) are ``start + row``, never past either end."""
    obj = objects[i]
    ends = []
    if obj.last_offset is not None:
        ends.append(obj.last_offset + 1)
    if contiguous and i + 1 < len(objects):
        ends.append(objects[i + 1].start)
    return obj.start, min(ends) if ends else HIGH


def time_span_us(obj: BackupObject) -> Span | None:
    """Record times ``[first, end)`` in microseconds the manifest recorded for the object, or ``None`` (unknown:
    objects of another tool, backups before timestamp ranges were recorded, records without timestamps)."""
    if obj.first_timestamp is None or obj.last_timestamp is None:
        return None
    return obj.first_timestamp * 1000, (obj.last_timestamp + 1) * 1000


def select_objects(objects: Sequence[BackupObject], selection: Selection, contiguous: bool) -> list[BackupObject]:
    """The objects of one source partition (sorted by start offset) that may hold records of ``selection``: those
    whose offset span meets its offsets and whose time span (when known) meets its times."""
    if selection.nothing:
        return []
    out = []
    for i, obj in enumerate(objects):
        if not selection.offsets.meets(*offset_span(objects, i, contiguous)):
            continue
        times = time_span_us(obj)
        if times is not None and not selection.times_us.meets(*times):
            continue
        out.append(obj)
    return out
