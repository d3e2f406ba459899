"""When files close: Confluent's rotation rules, decided on whole record batches.

Confluent's S3 sink keeps, per topic-partition, a set of open files (one per encoded partition) that all commit
together ("a chunk"), and checks for every record, in this order:

1. schema change: the record's schema differs from the one its file was opened with → commit, then write it;
2. time: ``rotate.interval.ms`` (time-based partitioners only) — the record's time is ``interval`` or more past the
   chunk's first record, or it belongs to another encoded partition → commit, then write it; ``rotate.schedule.
   interval.ms`` — the wall clock passed the next scheduled rotation → commit, then write it (the schedule counts
   from local midnight, as Confluent's; with ``rotate.schedule.anchor=open`` it counts from the moment the chunk
   opened, as Lenses' ``Interval`` condition counts from its file's opening);
3. write the record; if the chunk now holds ``flush.size`` records (or ``rotate.size.bytes``, ours) → commit.

Everything except the wall-clock schedule depends only on the records, which is what makes backups exactly-once.
This module is pure: it turns a batch plus the carried :class:`ChunkState` into :class:`Segment` s.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kafka_s3.core.errors import ConversionError

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config

DAY_MS = 86_400_000
#: ``rotate.schedule.anchor``: Confluent's schedule (multiples of the interval from local midnight) or Lenses' (the
#: interval since the chunk opened)
ANCHORS = ("day", "open")


@dataclass(frozen=True)
class RotationPolicy:
    flush_size: int
    rotate_interval_ms: int = -1  # effective only when the partitioner supplies record times
    rotate_schedule_interval_ms: int = -1
    rotate_size_bytes: int = -1
    timezone: dt.tzinfo | None = None
    rotate_schedule_anchor: str = "day"  # one of ANCHORS

    @classmethod
    def from_config(cls, config: Config) -> RotationPolicy:
        from kafka_s3.core.timezones import zone_info

        tz = config.get("timezone") or ""
        return cls(
            flush_size=config["flush.size"],
            rotate_interval_ms=config["rotate.interval.ms"],
            rotate_schedule_interval_ms=config["rotate.schedule.interval.ms"],
            rotate_size_bytes=config["rotate.size.bytes"],
            timezone=zone_info(tz) if tz else None,
            rotate_schedule_anchor=config["rotate.schedule.anchor"],
        )

    @property
    def deterministic(self) -> bool:
        return self.rotate_schedule_interval_ms <= 0

    @property
    def since_open(self) -> bool:
        """The schedule counts from the chunk's opening (Lenses' ``Interval``), not from local midnight."""
        return self.rotate_schedule_anchor == "open"

    def next_scheduled_rotation(self, now_ms: int) -> int:
        """When a chunk open at ``now_ms`` is due, as epoch ms: the next multiple of the schedule interval counted
        from local midnight (Confluent's ``DateTimeUtils.getNextTimeAdjustedByDay``), or, anchored at the opening,
        one interval later (Lenses' ``CommitPolicyConditions.Interval``: due once ``now >= opened + interval``)."""
        interval = self.rotate_schedule_interval_ms
        if self.since_open:
            return now_ms + interval
        tz = self.timezone or dt.UTC
        now = dt.datetime.fromtimestamp(now_ms / 1000, tz)
        midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
        start_of_day = int(midnight.timestamp() * 1000)
        since = now_ms - start_of_day
        candidate = start_of_day + (since // interval + 1) * interval
        next_midnight = int((midnight + dt.timedelta(days=1)).replace(tzinfo=tz).timestamp() * 1000)
        return min(candidate, next_midnight)


@dataclass
class ChunkState:
    """What Confluent's TopicPartitionWriter remembers about the open chunk."""

    count: int = 0
    size: int = 0
    base_timestamp: int | None = None
    current_partition: str | None = None
    schemas: dict[str, str] = field(default_factory=dict)  # encoded partition -> schema fingerprint
    next_scheduled: int | None = None

    def reset(self) -> None:
        self.count = 0
        self.size = 0
        self.base_timestamp = None
        self.current_partition = None
        self.schemas = {}


@dataclass(frozen=True)
class Segment:
    """Rows ``[start, end)`` of the batch go to the open chunk; the chunk commits after them when ``close``."""

    start: int
    end: int
    close: bool
    opened: int | None = None  # first offset of the chunk these rows open (None: they continue an open chunk)


def _interval_crossed(
    timestamps: np.ndarray, partitions: np.ndarray, base: int, interval: int, current: int
) -> Callable[[int, int], np.ndarray]:
    """Rows of ``[lo, hi)`` that ``rotate.interval.ms`` closes the open file before: too far in time from its first
    record, or of another encoded partition."""
    return lambda lo, hi: (timestamps[lo:hi] - base >= interval) | (partitions[lo:hi] != current)


def _first_true(predicate: Callable[[int, int], np.ndarray], lo: int, hi: int) -> int | None:
    """Index of the first row in ``[lo, hi)`` where ``predicate`` holds, looking in growing windows so the cost is
    proportional to how far the answer is (chunks are usually short compared with batches)."""
    width = 64
    while lo < hi:
        stop = min(hi, lo + width)
        hits = predicate(lo, stop)
        if hits.any():
            return lo + int(np.argmax(hits))
        lo = stop
        width *= 4
    return None


class Rotator:
    """Splits consecutive batches of one topic-partition into chunk segments.

    ``forced_end``: reproduce an existing chunk ending at that offset — no rule applies until it, and the chunk
    commits exactly after the last record at or below it (used to re-create a chunk already in the bucket).
    """

    def __init__(
        self,
        policy: RotationPolicy,
        forced_end: int | None = None,
        on_open: Callable[[int], int | None] | None = None,
        opened_at_ms: int | None = None,
        open_until: int | None = None,
        schema_rolls: Callable[[str, str], bool] | None = None,
    ):
        self.policy = policy
        self.state = ChunkState()
        self.forced_end = forced_end
        # Whether a record of schema ``incoming`` rolls a file of schema ``current`` (fingerprints): any difference
        # (schema.compatibility=NONE) unless told otherwise (kafka_s3.core.schema_evolution.SchemaJudge.rolls).
        self.schema_rolls = schema_rolls or (lambda current, incoming: current != incoming)
        # Called with the first offset of every new chunk; may return an offset to force the chunk to end at
        # (the writer uses it to replay a chunk whose manifest is already in the bucket).
        self.on_open = on_open
        # A chunk left open by an earlier cycle and re-read now: the wall time it was first open (its scheduled
        # rotation counts from then, not from this task's start) and the offset its records reached then (those
        # records were already in it: a due rotation commits the chunk after them, never inside them).
        self.opened_at_ms = opened_at_ms
        self.open_until = open_until

    def _scheduled_due(self, now_ms: int) -> bool:
        policy, st = self.policy, self.state
        if policy.rotate_schedule_interval_ms <= 0 or self.forced_end is not None:
            return False
        if st.next_scheduled is None:
            since = now_ms if self.opened_at_ms is None else min(self.opened_at_ms, now_ms)
            st.next_scheduled = policy.next_scheduled_rotation(since)
        return now_ms >= st.next_scheduled

    def close_if_due(self, now_ms: int) -> bool:
        """Scheduled rotation with no record to process (Confluent's ``commitOnTimeIfNoData``)."""
        if self.state.count > 0 and self._scheduled_due(now_ms):
            self.state.reset()
            self.opened_at_ms = self.open_until = None
            # anchored at the opening, the next chunk's schedule starts when it opens
            self.state.next_scheduled = None if self.policy.since_open else self.policy.next_scheduled_rotation(now_ms)
            return True
        return False

    def split(
        self,
        offsets: np.ndarray,
        partitions: np.ndarray,
        dictionary: list[str],
        timestamps: np.ndarray | None,
        sizes: np.ndarray,
        schemas: np.ndarray | None,
        schema_names: list[str] | None,
        now_ms: int,
    ) -> list[Segment]:
        """Segments for one batch (rows in offset order).

        ``partitions`` are int codes into ``dictionary`` (encoded partition strings); ``timestamps`` the record times
        for ``rotate.interval.ms`` (``None`` when the partitioner is not time based); ``sizes`` bytes per record;
        ``schemas`` int codes into ``schema_names`` (schema fingerprints; ``""`` for rows that fit any schema),
        ``None`` when the batch has one schema (then ``schema_names`` holds it, or is ``None`` for schemaless data).
        """
        n = len(offsets)
        segments: list[Segment] = []
        st, policy = self.state, self.policy
        # keyed by str | None: the open chunk's current_partition is looked up as it is (-1 when unknown)
        codes: dict[str | None, int] = {name: code for code, name in enumerate(dictionary)}
        due = self._scheduled_due(now_ms)  # the wall clock is read once per batch, as Confluent reads it per put()
        i = 0
        while i < n:
            if self.forced_end is not None:
                stop = int(np.searchsorted(offsets, self.forced_end, side="right"))
                reached = stop < n or (stop > i and int(offsets[stop - 1]) == self.forced_end)
                if stop > i or reached:
                    opened = int(offsets[i]) if st.count == 0 and stop > i else None
                    segments.append(Segment(i, max(stop, i), reached, opened))
                    st.count += max(stop, i) - i
                if reached:
                    self.forced_end = None
                    st.reset()
                i = max(stop, i)
                continue
            if st.count == 0 and self.on_open is not None:
                self.forced_end = self.on_open(int(offsets[i]))
                if self.forced_end is not None:
                    continue
            if st.count == 0:
                st.base_timestamp = int(timestamps[i]) if timestamps is not None else None
                st.current_partition = dictionary[partitions[i]]
                if policy.since_open and policy.rotate_schedule_interval_ms > 0:
                    # The chunk opens now (or opened when an earlier cycle first saw it): its schedule starts here.
                    st.next_scheduled = None
                    due = self._scheduled_due(now_ms)
            first_checked = i + 1 if st.count == 0 else i  # a chunk's first record never rotates it
            # flush.size (and rotate.size.bytes): commit *after* the record that fills the chunk.
            end = min(n, i + (policy.flush_size - st.count))
            close = i + (policy.flush_size - st.count) <= n
            if policy.rotate_size_bytes > 0:
                cumulative = np.cumsum(sizes[i:end])
                filled = int(np.searchsorted(cumulative, policy.rotate_size_bytes - st.size, side="left"))
                if filled < end - i:
                    end, close = i + filled + 1, True
            # Scheduled rotation: commit *before* the first record processed while it is due (records an earlier
            # cycle already had in the open chunk are not new: they stay in it).
            if due and first_checked < end:
                cut = first_checked
                if self.open_until is not None:
                    cut = max(cut, int(np.searchsorted(offsets, self.open_until, side="left")))
                if cut < end:
                    end, close = cut, True
            # rotate.interval.ms: commit *before* a record too far in time or of another encoded partition.
            if policy.rotate_interval_ms > 0 and timestamps is not None and first_checked < end:
                assert st.base_timestamp is not None  # set from ``timestamps`` when the chunk opened
                hit = _first_true(
                    _interval_crossed(
                        timestamps,
                        partitions,
                        st.base_timestamp,
                        policy.rotate_interval_ms,
                        codes.get(st.current_partition, -1),
                    ),
                    first_checked,
                    end,
                )
                if hit is not None:
                    end, close = hit, True
            # Schema change: commit *before* a record whose schema differs from its file's.
            if schema_names:
                if schemas is None and (
                    schema_names[0] == "" or all(v == schema_names[0] for v in st.schemas.values())
                ):
                    if schema_names[0]:  # one schema everywhere: nothing can change
                        for code in np.unique(partitions[i:end]):
                            st.schemas.setdefault(dictionary[code], schema_names[0])
                else:
                    row_schemas = schemas if schemas is not None else np.zeros(n, dtype=np.int64)
                    hit = self._schema_change(i, end, partitions, dictionary, row_schemas, schema_names)
                    if hit is not None:
                        end, close = hit, True
            segments.append(Segment(i, end, close, int(offsets[i]) if st.count == 0 and end > i else None))
            st.count += end - i
            if policy.rotate_size_bytes > 0:
                st.size += int(sizes[i:end].sum())
            if end > i:
                st.current_partition = dictionary[partitions[end - 1]]
            if close:
                st.reset()
                self.opened_at_ms = self.open_until = None
                if policy.rotate_schedule_interval_ms > 0:
                    # Every commit restarts the schedule, as Confluent's updateRotationTimers does (anchored at the
                    # opening: when the next chunk opens).
                    st.next_scheduled = None if policy.since_open else policy.next_scheduled_rotation(now_ms)
                    due = False
            i = end
        return segments

    def _schema_change(
        self,
        i: int,
        end: int,
        partitions: np.ndarray,
        dictionary: list[str],
        schemas: np.ndarray,
        schema_names: list[str],
    ) -> int | None:
        """First row in ``[i, end)`` whose schema rolls the file of its encoded partition in the chunk.

        A decision depends only on the pair (encoded partition, schema) while the chunk is open, so each pair is
        judged once, at its first row, in row order.
        """
        st = self.state
        if end <= i:
            return None
        width = len(schema_names)
        pairs = partitions[i:end].astype(np.int64) * width + schemas[i:end]
        unique, first = np.unique(pairs, return_index=True)
        for k in np.argsort(first, kind="stable"):
            row, code = i + int(first[k]), int(unique[k])
            part, schema = dictionary[code // width], schema_names[code % width]
            if not schema:
                continue  # schema-less rows (tombstones) fit any file
            current = st.schemas.get(part)
            if current is None:
                st.schemas[part] = schema
            elif current != schema and st.count + (row - i) > 0:
                try:
                    if self.schema_rolls(current, schema):
                        return row
                except ConversionError as exc:  # e.g. versions needed to compare the schemas: name the record
                    exc.row = row
                    raise
        return None
