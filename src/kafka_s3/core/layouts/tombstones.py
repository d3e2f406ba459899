"""Where the tombstones of ``behavior.on.null.values=write`` go back among a partition's values.

Confluent's sink (CS ``util/TombstoneSupportedPartitioner.encodePartition``) sends a null-valued record to the encoded
partition ``tombstone.encoded.partition``, where ``format/KeyValueHeaderRecordWriterProvider`` writes only its key
and headers sidecars. A partition's records are then split over two object sequences — the values'
(``…/partition=0/t+0+<first>.json``) and the tombstones' (``…/tombstone/t+0+<first>.keys.avro``) — each named by its
first offset only, both cut at the same commits (``flush.size`` counts every record, ``TopicPartitionWriter``).

:func:`interleave` merges them back into one offset-ordered sequence. A tombstone file's offsets come from our chunk
manifest when it recorded them (exact), else from the names and record counts alone: an offset that starts a file
is that file's; any other offset belongs to whichever of the two open files still has records left. When both still
have records, the names do not tell which record came first, and the restore refuses rather than guess (a tombstone
placed after a value of its key would delete what it should not).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_s3.core.errors import FormatError

VALUES, TOMBSTONES = 0, 1


@dataclass(frozen=True)
class Run:
    """Rows ``[row, row + count)`` of one file (``kind``: :data:`VALUES` or :data:`TOMBSTONES`; ``file``: its index
    in the list given to :func:`interleave`)."""

    kind: int
    file: int
    row: int
    count: int


@dataclass(frozen=True)
class Merged:
    """Contiguous offsets ``[start, start + records)`` read from runs of both files, in offset order. It begins with
    the first record of a file (``runs[0].row == 0``), whose name it takes."""

    start: int
    runs: tuple[Run, ...]

    @property
    def records(self) -> int:
        return sum(r.count for r in self.runs)


@dataclass(frozen=True)
class Source:
    """One file of either sequence: its first offset (from its name), its records, and, when known, every offset."""

    start: int
    records: int
    key: str
    offsets: tuple[int, ...] | None = None


def interleave(values: Sequence[Source], tombstones: Sequence[Source], where: str) -> list[Merged]:
    """The merged objects of a partition whose values are ``values`` (one directory) and whose tombstones are
    ``tombstones``, both sorted by start. A new merged object starts at each value file and after each gap (offsets
    no file holds); raises :class:`FormatError` naming ``where`` and the files when the order cannot be told."""
    files = [(VALUES, i, s) for i, s in enumerate(values) if s.records] + [
        (TOMBSTONES, i, s) for i, s in enumerate(tombstones) if s.records
    ]
    if not files:
        return []
    starts: dict[int, tuple[int, int, Source]] = {}
    for file_kind, i, src in files:
        if src.start in starts:
            other = starts[src.start][2]
            raise FormatError(f"{where}: {src.key} and {other.key} both start at offset {src.start}", src.key)
        starts[src.start] = (file_kind, i, src)
    explicit = all(s.offsets is not None for s in tombstones if s.records)
    tombstone_offsets = {o for s in tombstones if s.offsets is not None for o in s.offsets}
    total = sum(src.records for _, _, src in files)
    ordered = sorted(starts)
    open_file: list[tuple[int, Source] | None] = [None, None]  # per kind: (index, file)
    left = [0, 0]  # per kind: records of the open file not placed yet
    row = [0, 0]
    merged: list[Merged] = []
    runs: list[Run] = []
    first = previous = -1
    placed = 0
    offset = ordered[0]
    while placed < total:
        kind: int | None
        if offset in starts:
            starting, i, src = starts[offset]
            if left[starting]:
                current = open_file[starting]
                assert current is not None
                raise FormatError(
                    f"{where}: {src.key} starts at offset {offset} but {current[1].key} still has {left[starting]} "
                    "records: their counts do not fit their names",
                    src.key,
                )
            open_file[starting], left[starting], row[starting] = (i, src), src.records, 0
            kind = starting
        elif explicit:
            kind = TOMBSTONES if offset in tombstone_offsets else (VALUES if left[VALUES] else None)
        elif left[VALUES] and left[TOMBSTONES]:
            v, t = open_file[VALUES], open_file[TOMBSTONES]
            assert v is not None and t is not None
            raise FormatError(
                f"{where}: offset {offset} may be a value of {v[1].key} or a tombstone of {t[1].key}: object names "
                "and record counts do not tell which came first (Confluent's sink keeps no offsets), so the restore "
                "refuses to guess. Restore these offsets without the tombstones (remove the tombstone directory's "
                "objects from the restore), or back the topic up with store.envelope=true",
                t[1].key,
            )
        else:
            kind = VALUES if left[VALUES] else (TOMBSTONES if left[TOMBSTONES] else None)
        if kind is None or not left[kind]:
            later = [s for s in ordered if s > offset]
            if not later:
                raise FormatError(f"{where}: records left over after offset {offset}: counts do not fit names", None)
            offset = later[0]  # offsets no file holds (compaction, transaction markers)
            continue
        current = open_file[kind]
        assert current is not None
        index = current[0]
        new_object = offset != previous + 1 or (kind == VALUES and row[kind] == 0)
        if new_object and runs:
            merged.append(Merged(first, tuple(runs)))
            runs = []
        if not runs:
            first = offset
        if runs and runs[-1].kind == kind and runs[-1].file == index:
            last = runs[-1]
            runs[-1] = Run(kind, index, last.row, last.count + 1)
        else:
            runs.append(Run(kind, index, row[kind], 1))
        row[kind] += 1
        left[kind] -= 1
        placed += 1
        previous = offset
        offset += 1
    if runs:
        merged.append(Merged(first, tuple(runs)))
    return merged
