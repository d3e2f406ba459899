"""Which offsets of one topic-partition a table's data files hold, from their statistics alone: the files grouped into
runs whose offset ranges overlap (a time-partitioned table splits a partition whose record times go back and forth
into files whose offsets interleave: those are read together and merged), and the first offset missing among them.

A missing offset is told only where the table says the source's offsets were contiguous: every run holds as many
records as its range spans (no offset absent inside it: neither compaction nor a transaction's marker), so a hole
between two runs, or between the last run and the position the snapshot recorded, is a row lost from the table
(a data file deleted from it), not an offset Kafka never gave a record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

OFFSET_FIELD_ID = 5
PARTITION_FIELD_ID = 4
TIMESTAMP_FIELD_ID = 6


@dataclass(frozen=True)
class FileSpan:
    """One data file of a topic-partition: where it is, its size and records, and its lowest and highest offsets."""

    path: str
    size: int
    records: int
    first_offset: int
    last_offset: int


def decode_long(raw: bytes) -> int:
    """An Iceberg ``long`` (or ``timestamptz``) bound: 8 bytes, little-endian, signed."""
    return int.from_bytes(raw, "little", signed=True)


def decode_int(raw: bytes) -> int:
    """An Iceberg ``int`` bound: 4 bytes, little-endian, signed."""
    return int.from_bytes(raw, "little", signed=True)


def bound(bounds: Mapping[int, bytes] | None, field_id: int, width: int = 8) -> int | None:
    """The decoded bound of ``field_id`` (``None`` when the file carries none)."""
    raw = (bounds or {}).get(field_id)
    if raw is None:
        return None
    return decode_long(raw) if width == 8 else decode_int(raw)


def runs(spans: Iterable[FileSpan]) -> list[list[FileSpan]]:
    """``spans`` in offset order, grouped into runs of files whose offset ranges overlap (most runs are one file)."""
    out: list[list[FileSpan]] = []
    reach = -1
    for span in sorted(spans, key=lambda s: (s.first_offset, s.last_offset, s.path)):
        if out and span.first_offset <= reach:
            out[-1].append(span)
            reach = max(reach, span.last_offset)
        else:
            out.append([span])
            reach = span.last_offset
    return out


def dense(run: Sequence[FileSpan]) -> bool:
    """Whether a run holds every offset of its range (as many records as offsets)."""
    first = min(s.first_offset for s in run)
    last = max(s.last_offset for s in run)
    return sum(s.records for s in run) == last - first + 1


def first_missing(spans: Iterable[FileSpan], until: int | None, start: int | None = None) -> int | None:
    """The first offset missing among ``spans`` below ``until`` (the next offset the table's snapshot records for the
    partition, or the restore's upper bound; ``None``: no end to compare with), when every run is dense; ``None``
    when nothing is missing or the source's own offsets were not contiguous. ``start``, the offset of the partition's
    first record backed up, is missing when no file begins there, dense or not (it is a record's own offset)."""
    grouped = runs(spans)
    head = min(s.first_offset for s in grouped[0]) if grouped else None
    if start is not None and (until is None or start < until) and (head is None or head > start):
        return start
    if not grouped or not all(dense(run) for run in grouped):
        return None
    reach = None
    for run in grouped:
        first = min(s.first_offset for s in run)
        if reach is not None and first > reach + 1:
            return reach + 1
        reach = max(s.last_offset for s in run)
    if until is not None and reach is not None and reach + 1 < until:
        return reach + 1
    return None
