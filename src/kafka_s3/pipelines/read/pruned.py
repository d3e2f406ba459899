"""A read that asks for records ``kafka-s3 prune`` removed: a clear error naming the first offset and time the backup
still holds, never a silently shorter read.

A partition's recorded start (:mod:`kafka_s3.core.prune`) is its new beginning: reading from the beginning starts
there, and the checks take nothing below it for missing. But an explicit offset below it, or a start time before the
first record kept, asks for records that are gone on purpose: restores (``--from-offset``, ``--from-timestamp``),
``kafka-s3 read`` (``-o OFFSET``, ``-o s@TIME``) and the DataFrame reader refuse it.

A prune that runs while a restore reads removes objects the restore planned: the read of one then fails "no such
object", and :func:`pruned_meanwhile` tells that apart from a missing object (the partition's recorded start is now
above it), so the error says a prune happened and where the backup starts now.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kafka_s3.core.errors import ConfigError, PrunedWhileRestoring, StoreError
from kafka_s3.core.manifest import ManifestStore, PartitionManifests
from kafka_s3.core.prune import PrunedStart, iso, record_start
from kafka_s3.pipelines.read.options import Bounds

TP = tuple[str, int]


@dataclass(frozen=True)
class Start:
    """Where a pruned partition begins now: its recorded start, and the first kept record's time (ms) when known."""

    pruned: PrunedStart
    first_time: int | None

    def describe(self) -> str:
        when = f" ({iso(self.first_time)})" if self.first_time is not None else ""
        return f"the first restorable offset is {self.pruned.offset}{when}"


def pruned_starts(manifests: Mapping[str, Mapping[int, PartitionManifests]]) -> dict[TP, Start]:
    """The partitions with a recorded start, from the manifests a survey loaded."""
    out = {}
    for topic, by_partition in manifests.items():
        for partition, held in by_partition.items():
            if held.pruned is None:
                continue
            first = held.chunks[0] if held.chunks else None
            times = [f.first_timestamp for f in first.files if f.kind == "data"] if first else []
            known = bool(times) and None not in times
            out[(topic, partition)] = Start(held.pruned, min(t for t in times if t is not None) if known else None)
    return out


def refuse_offset(starts: Mapping[TP, Start], tp: TP, offset: int, flag: str, spec: str = "") -> None:
    """Raise when ``offset`` of ``tp`` lies below its recorded start."""
    start = starts.get(tp)
    if start is None or offset >= start.pruned.offset:
        return
    raise ConfigError(
        f"{flag} {spec or offset}: offset {offset} of {tp[0]}[{tp[1]}] was pruned ({start.pruned.describe()} by "
        f"kafka-s3 prune): {start.describe()}",
        key=flag,
    )


def refuse_time(starts: Mapping[TP, Start], tps: list[TP], at: int, flag: str) -> None:
    """Raise when a read from time ``at`` of ``tps`` would need records a prune removed: ``at`` is before the first
    kept record of a pruned partition."""
    for tp in sorted(tps):
        start = starts.get(tp)
        if start is None or start.first_time is None or at >= start.first_time:
            continue
        raise ConfigError(
            f"{flag} {iso(at)} ({at} ms): {tp[0]}[{tp[1]}]'s records before {iso(start.first_time)} were pruned "
            f"({start.pruned.describe()} by kafka-s3 prune): {start.describe()}",
            key=flag,
        )


def refuse_pruned_bounds(
    starts: Mapping[TP, Start],
    tps: list[TP],
    from_offsets: Mapping[tuple[str | None, int], int],
    from_timestamp: int | None,
) -> None:
    """A restore's start bounds (``--from-offset``, ``--from-timestamp``) against the partitions' recorded starts."""
    for (topic, partition), offset in sorted(from_offsets.items(), key=str):
        spec = f"{topic}:{partition}:{offset}" if topic is not None else f"{partition}:{offset}"
        for tp in tps:
            if tp[1] == partition and (topic is None or tp[0] == topic):
                refuse_offset(starts, tp, offset, "--from-offset", spec)
    if from_timestamp is not None:
        refuse_time(starts, tps, from_timestamp, "--from-timestamp")


def refuse_reader_bounds(starts: Mapping[TP, Start], bounds: Mapping[TP, Bounds]) -> None:
    """The DataFrame reader's starting bounds (``startingOffsets``, ``startingTimestamp``/``...ByTimestamp``)."""
    for tp, bound in sorted(bounds.items()):
        if bound.from_offset is not None:
            refuse_offset(starts, tp, bound.from_offset, "startingOffsets", f"{tp[0]}[{tp[1]}]={bound.from_offset}")
        if bound.from_timestamp is not None:
            refuse_time(starts, [tp], bound.from_timestamp, "startingTimestamp")


def recorded_start(manifests: ManifestStore, topic: str, partition: int) -> PrunedStart | None:
    """The partition's recorded start as the bucket holds it now (one listing of its manifest directory)."""
    best: PrunedStart | None = None
    for info in manifests.store.list(manifests.prefix(topic, partition)):
        start = record_start(info.key.rsplit(manifests.delim, 1)[-1])
        if start is not None and (best is None or start > best.offset):
            best = PrunedStart(start, info.last_modified)
    return best


def pruned_meanwhile(
    error: StoreError, planned: Mapping[TP, Sequence[tuple[str, int]]], manifests: ManifestStore
) -> PrunedWhileRestoring | None:
    """``error`` (a read that found no object) told as a prune's doing when the missing object, one of ``planned``
    (per partition, the planned objects' ``(key, first offset)``), now lies below its partition's recorded start;
    ``None`` otherwise."""
    said = str(error)
    if "no such object" not in said:
        return None
    for (topic, partition), objects in sorted(planned.items()):
        for key, first in objects:
            if f"/{key}:" not in said:
                continue
            start = recorded_start(manifests, topic, partition)
            if start is None or first >= start.offset:
                return None
            return PrunedWhileRestoring(
                f"{said}: kafka-s3 prune removed it after this restore planned it: {topic}[{partition}] was "
                f"{start.describe()}, the backup now starts at offset {start.offset}. Run the restore again: it "
                "starts there (restore --follow plans again by itself)"
            )
    return None
