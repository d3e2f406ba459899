"""What part of a backup to read: offset and time bounds, and the restore's options that give them.

Shared by the restore, the ``kafka-s3`` DataFrame reader and ``kafka-s3 read``, so that every reader parses
``PARTITION:OFFSET`` lists and timestamps the same way.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.errors import ConfigError

TP = tuple[str, int]


@dataclass(frozen=True)
class Bounds:
    """Offsets ``[from_offset, until_offset)`` and timestamps ``[from_timestamp, until_timestamp)`` (ms)."""

    from_offset: int | None = None
    until_offset: int | None = None
    from_timestamp: int | None = None
    until_timestamp: int | None = None

    @property
    def by_time(self) -> bool:
        return self.from_timestamp is not None or self.until_timestamp is not None

    def mask(self, batch: pa.RecordBatch) -> pa.Array | None:
        conditions = []
        offsets = batch.column("offset")
        if self.from_offset is not None:
            conditions.append(pc.greater_equal(offsets, self.from_offset))
        if self.until_offset is not None:
            conditions.append(pc.less(offsets, self.until_offset))
        if self.by_time:
            ts = pc.divide(batch.column("timestamp").cast(pa.int64()), 1000)
            if self.from_timestamp is not None:
                conditions.append(pc.fill_null(pc.greater_equal(ts, self.from_timestamp), False))
            if self.until_timestamp is not None:
                conditions.append(pc.fill_null(pc.less(ts, self.until_timestamp), False))
        if not conditions:
            return None
        mask = conditions[0]
        for c in conditions[1:]:
            mask = pc.and_(mask, c)
        return mask


def parse_time(text: str, option: str = "timestamp") -> int:
    """Epoch milliseconds from an integer or an ISO-8601 timestamp (UTC when no offset is given); ``option`` names
    the flag in the error."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{option}: not a timestamp: {text!r} (use epoch ms or ISO-8601 like 2024-05-01T12:00:00Z)", key=option
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def parse_offsets(text: str | None, option: str) -> dict[tuple[str | None, int], int]:
    """``P:O,...`` or ``TOPIC:P:O,...`` → {(topic or None, partition): offset}."""
    out: dict[tuple[str | None, int], int] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        parts = item.rsplit(":", 2)
        try:
            if len(parts) == 3:
                out[(parts[0], int(parts[1]))] = int(parts[2])
            elif len(parts) == 2:
                out[(None, int(parts[0]))] = int(parts[1])
            else:
                raise ValueError
        except ValueError:
            raise ConfigError(f"{option}: expected PARTITION:OFFSET or TOPIC:PARTITION:OFFSET, got {item!r}") from None
        if any(number < 0 for (_, partition), offset in out.items() for number in (partition, offset)):
            raise ConfigError(f"{option}: partitions and offsets are not negative, got {item!r}", key=option)
    return out


START_FORMS = (
    "beginning, end, an offset, -N (N records before the end), s@TIME (the first record at or after TIME: epoch ms "
    "or ISO-8601) or PARTITION:OFFSET[,...]"
)


@dataclass(frozen=True)
class Start:
    """Where a read begins in each partition, in kcat's ``-o`` forms: ``beginning``; ``end`` (nothing: the end of
    what the backup holds); ``offset`` ``value``; ``from_end``: ``value`` records before the end; ``time``: the first
    record at or after ``value`` (epoch ms); ``positions``: an offset per partition (``PARTITION:OFFSET,...``, or
    ``TOPIC:PARTITION:OFFSET``), which also chooses the partitions read."""

    kind: Literal["beginning", "end", "offset", "from_end", "time", "positions"]
    value: int = 0
    positions: tuple[tuple[tuple[str | None, int], int], ...] = ()

    def offset_of(self, tp: TP) -> int | None:
        """``positions``: the offset given for ``tp`` (by topic and partition, or by partition alone), else None."""
        table = dict(self.positions)
        return table.get(tp, table.get((None, tp[1])))

    def partitions(self, topic: str) -> list[int]:
        """``positions``: the partitions of ``topic`` given an offset."""
        return sorted({p for (t, p), _ in self.positions if t in (None, topic)})


def parse_start(text: str | int, option: str = "--offset") -> Start:
    """kcat's offset forms (``beginning``, ``end``, ``N``, ``-N``, ``s@<epoch ms or ISO-8601>``; Kafka's ``earliest``
    and ``latest`` are ``beginning`` and ``end``) and ``PARTITION:OFFSET[,...]`` → :class:`Start`; ``option`` names
    the flag in the error."""
    if isinstance(text, int):
        return Start("offset", text) if text >= 0 else Start("from_end", -text)
    said = text.strip()
    if said.lower() in ("beginning", "earliest"):
        return Start("beginning")
    if said.lower() in ("end", "latest"):
        return Start("end")
    if said.startswith("s@"):
        return Start("time", parse_time(said[2:], option))
    if said.isdigit():
        return Start("offset", int(said))
    if said.startswith("-") and said[1:].isdigit():
        return Start("from_end", int(said[1:]))
    if ":" in said:
        positions = parse_offsets(said, option)
        if positions:
            return Start("positions", positions=tuple(positions.items()))
    raise ConfigError(f"{option}: expected {START_FORMS}; got {text!r}", key=option)


@dataclass
class RestoreOptions:
    topics: list[str] | None = None
    from_timestamp: int | None = None
    until_timestamp: int | None = None
    from_offsets: dict[tuple[str | None, int], int] = field(default_factory=dict)  # as parse_offsets gives them
    until_offsets: dict[tuple[str | None, int], int] = field(default_factory=dict)
    allow_gaps: bool = False  # restore what the bucket holds when objects are missing (each skip is listed)
    verify_deep: bool = False  # decode every object before producing anything
    restart: bool = False  # restore from the start even where progress of another restore exists
    append: bool = False  # restore into a target holding records that no restore's progress accounts for
    schemas: bool = False  # register the saved Schema Registry subjects in the target registry first
    as_of_snapshot: int | None = None  # an Iceberg table's snapshot to restore (time travel)
    as_of_timestamp: int | None = None  # an Iceberg table's newest snapshot at or before this time (ms)

    def check_bounds(self) -> None:
        """Bounds that cannot select any record are errors, not empty restores (``until`` is exclusive)."""
        if self.as_of_snapshot is not None and self.as_of_timestamp is not None:
            raise ConfigError(
                "--as-of-snapshot and --as-of-timestamp both choose the table's snapshot: give one",
                key="--as-of-snapshot",
            )
        start, until = self.from_timestamp, self.until_timestamp
        if start is not None and until is not None and until <= start:
            raise ConfigError(
                f"--until-timestamp ({until} ms) is not after --from-timestamp ({start} ms): no record can be selected",
                key="--until-timestamp",
            )
        for (topic, partition), end in sorted(self.until_offsets.items(), key=str):
            for (from_topic, from_partition), first in self.from_offsets.items():
                if from_partition != partition or (
                    topic is not None and from_topic is not None and topic != from_topic
                ):
                    continue
                if end <= first:
                    where = f"{topic}:{partition}" if topic is not None else f"partition {partition}"
                    raise ConfigError(
                        f"--until-offset {end} is not above --from-offset {first} for {where}: no record can be "
                        "selected",
                        key="--until-offset",
                    )

    def bounds(self, tp: TP) -> Bounds:
        def pick(table: dict[tuple[str | None, int], int]) -> int | None:
            return table.get(tp, table.get((None, tp[1])))

        return Bounds(pick(self.from_offsets), pick(self.until_offsets), self.from_timestamp, self.until_timestamp)
