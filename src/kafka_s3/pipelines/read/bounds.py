"""Restore bounds that cannot select what they say, told before anything happens.

A bound naming a partition or topic the backup does not hold would otherwise be ignored (and everything restored);
a start offset past the backup's end or a time window outside every record's time would restore nothing and create
an empty target. Each is a :class:`~kafka_s3.core.errors.ConfigError` naming the flag and what the backup holds.
Record times come from the chunk manifests; without them (another tool's objects) the window is not judged here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from kafka_s3.core.errors import ConfigError
from kafka_s3.pipelines.read.discovery import SourcePartition
from kafka_s3.pipelines.read.options import RestoreOptions

TP = tuple[str, int]
SECONDS_BELOW = 100_000_000_000  # a "millisecond" time below this is before 1973: probably seconds


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _partitions(partitions: Mapping[TP, SourcePartition], topic: str) -> str:
    held = sorted(p for t, p in partitions if t == topic)
    return f"{topic} holds partition(s) {', '.join(map(str, held))}"


def refuse_empty_bounds(
    options: RestoreOptions, partitions: Mapping[TP, SourcePartition], following: bool = False
) -> None:
    """Raise when a bound of ``options`` names no partition of ``partitions`` (the backup's), or selects none of its
    records. ``following``: records may still come, so bounds beyond what is there now are not judged."""
    topics = sorted({t for t, _ in partitions})
    for flag, table in (("--from-offset", options.from_offsets), ("--until-offset", options.until_offsets)):
        for (topic, partition), offset in sorted(table.items(), key=str):
            spec = f"{topic}:{partition}:{offset}" if topic is not None else f"{partition}:{offset}"
            if topic is not None and topic not in topics:
                raise ConfigError(
                    f"{flag} {spec}: topic {topic!r} is not in the backup (it holds {', '.join(topics) or 'nothing'})",
                    key=flag,
                )
            named = [topic] if topic is not None else topics
            held = [partitions[(t, partition)] for t in named if (t, partition) in partitions]
            if not held:
                raise ConfigError(
                    f"{flag} {spec}: partition {partition} is not in the backup ("
                    + "; ".join(_partitions(partitions, t) for t in named)
                    + ")",
                    key=flag,
                )
            if flag == "--from-offset" and not following:
                ends = [(part, _last_offset(part)) for part in held]
                if all(end is not None and offset > end for _, end in ends):
                    holds = "; ".join(f"{part.topic}[{part.partition}] holds offsets up to {end}" for part, end in ends)
                    raise ConfigError(f"{flag} {spec} is past the backup's end: {holds}", key=flag)
    if not following:
        _refuse_empty_window(options, partitions)


def _last_offset(part: SourcePartition) -> int | None:
    """The partition's last backed-up offset, as the manifests recorded it (None: not known)."""
    ends = [o.last_offset for o in part.objects]
    return None if not ends or any(e is None for e in ends) else max(e for e in ends if e is not None)


def _refuse_empty_window(options: RestoreOptions, partitions: Mapping[TP, SourcePartition]) -> None:
    start, until = options.from_timestamp, options.until_timestamp
    if start is None and until is None:
        return
    spans = [(o.first_timestamp, o.last_timestamp) for part in partitions.values() for o in part.objects]
    if not spans or any(a is None or b is None for a, b in spans):
        return  # record times unknown (another tool's objects, older manifests): judged while reading
    known = [(a, b) for a, b in spans if a is not None and b is not None]
    if any((start is None or b >= start) and (until is None or a < until) for a, b in known):
        return
    low, high = min(a for a, _ in known), max(b for _, b in known)
    flag, value = ("--until-timestamp", until) if until is not None and until <= low else ("--from-timestamp", start)
    assert value is not None  # one of the two bounds excludes every record
    hint = ""
    if 0 < value < SECONDS_BELOW:
        hint = f"; {value} looks like seconds: as milliseconds that is {value * 1000} ({_iso(value * 1000)})"
    raise ConfigError(
        f"{flag} {_iso(value)} ({value} ms): no backed-up record falls in the window asked for; the backup's records "
        f"span {_iso(low)} .. {_iso(high)}{hint}",
        key=flag,
    )
