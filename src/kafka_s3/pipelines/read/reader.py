"""Reading a backup: discover its objects, and stream each source partition's records back in offset order.

Shared by the restore and by the ``kafka-s3`` DataFrame reader. Discovery follows Confluent's source: only keys
under ``topics.dir`` count, keys with another extension are ignored, a key with the format's extension whose name
does not follow the layout is an error (or skipped under ``behavior.on.error=ignore|log``). Within a source
partition, objects are read by start offset across every directory; when a partition's objects sit in several
directories (field or time partitioners) and carry offsets (envelope), overlapping objects are merged by offset so
the order is exact.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.errors import BackupIncomplete, FormatError
from kafka_s3.core.formats.base import FileContext, Format, IndexedFormat, Skipped, bare_message
from kafka_s3.core.records import RECORD_SCHEMA
from kafka_s3.core.store import Store
from kafka_s3.pipelines.read.blocks import load_blocks, read_blocks, select
from kafka_s3.pipelines.read.discovery import BackupObject, Problem, SourcePartition, _note
from kafka_s3.pipelines.read.options import Bounds
from kafka_s3.pipelines.read.planning import HIGH, Ranges, Selection, offset_span, select_objects
from kafka_s3.pipelines.read.plugins import ReadPlugins

log = logging.getLogger(__name__)


@dataclass
class _Sidecar:
    """A keys or headers sidecar read whole: its role's column, one row per record of the data object (a null where
    a bad record was skipped), and which rows those are."""

    key: str
    column: pa.ChunkedArray
    bad: np.ndarray | None  # True at skipped rows; None when none was

    @property
    def num_rows(self) -> int:
        return len(self.column)


def _read_sidecar(fmt: Format, store: Store, key: str, obj: BackupObject, column: str, skips: _Skips) -> _Sidecar:
    """A sidecar's records. When bad records are skipped, each skip is noted as a problem at its record's offset, and
    :func:`read_object` drops the data records at those rows (never restored without their key or headers)."""
    found: list[Skipped] | None = None if skips.found is None else []
    ctx = FileContext(obj.name.topic, obj.name.partition, obj.start, key, found)
    pieces: list[pa.Array] = []
    bad: list[tuple[int, int]] = []  # (row, records) skipped
    row = 0
    noted = 0

    def note() -> None:
        nonlocal row, noted
        while found is not None and noted < len(found):
            skip = found[noted]
            noted += 1
            if skip.records is None:  # the rest unknown: rows cannot be aligned
                raise FormatError(skip.message, key, skip.position)
            skips.note_problem(Problem(key, skip.position, skip.message, skip.records, obj.start + row))
            bad.append((row, skip.records))
            pieces.append(pa.nulls(skip.records, RECORD_SCHEMA.field(column).type))
            row += skip.records

    with store.open(key) as source:
        for batch in fmt.read(source, ctx):
            note()
            pieces.append(batch.column(column))
            row += batch.num_rows
    note()
    mask = None
    if bad:
        mask = np.zeros(row, dtype=bool)
        for start, count in bad:
            mask[start : start + count] = True
    return _Sidecar(key, pa.chunked_array(pieces, RECORD_SCHEMA.field(column).type), mask)


def read_object(
    store: Store,
    plugins: ReadPlugins,
    obj: BackupObject,
    bounds: Bounds | None = None,
    skipped: list[Problem] | None = None,
) -> Iterator[pa.RecordBatch]:
    """One object's records, with topic/partition, offsets (stored, or derived from the start offset), and keys and
    headers from sidecars when present.

    An object with a block index (block_gzip) is read block by block with ranged GETs, only the blocks overlapping
    the offsets of ``bounds``; its offsets come from the index (see :mod:`kafka_s3.pipelines.read.blocks`). The caller
    still filters records to ``bounds``.

    ``skipped``: bad records are skipped, not errors (``behavior.on.error=ignore|log``): the format skips as few as it
    can tell apart (one JSON line, one Parquet row group, one Avro block) and each skip is noted there with its
    position and, when offsets are derived, the offsets it held; the records after it keep their own offsets and
    sidecar rows.
    """
    if obj.parts:
        yield from _read_merged(store, plugins, obj, skipped)
        return
    if obj.tombstones:
        batch = _tombstones(store, plugins, obj)
        if batch.num_rows:
            yield batch
        return
    name = obj.name
    skips = _Skips(obj, plugins.stored_offsets, bounds, skipped)
    ctx = FileContext(name.topic, name.partition, name.start_offset, name.key, skips.found, obj.last_offset)
    keys = _read_sidecar(plugins.keys_format, store, obj.keys_key, obj, "key", skips) if obj.keys_key else None
    headers = (
        _read_sidecar(plugins.headers_format, store, obj.headers_key, obj, "headers", skips)
        if obj.headers_key
        else None
    )
    fmt = plugins.value_format
    if keys is not None or headers is not None:
        _check_sidecar_counts(store, fmt, obj, [s for s in (keys, headers) if s is not None])
    whole = True  # every record of the object is read (sidecar counts can be checked)
    if obj.index_key and isinstance(fmt, IndexedFormat):
        blocks = load_blocks(store, fmt, obj)
        chosen = select(blocks, bounds.from_offset, bounds.until_offset) if bounds is not None else blocks
        whole = len(chosen) == len(blocks)
        pieces = read_blocks(store, fmt, name.key, chosen, ctx, skips.note)
    else:
        pieces = _whole_object(store, fmt, ctx, skips)
    row = 0  # records read or skipped
    for batch, first_row, first_offset in pieces:
        n = batch.num_rows
        if n == 0:
            continue
        dropped = None  # rows whose key or headers a sidecar could not give
        for sidecar in (keys, headers):
            if sidecar is not None and sidecar.bad is not None and sidecar.num_rows >= first_row + n:
                rows = sidecar.bad[first_row : first_row + n]
                dropped = rows if dropped is None else dropped | rows
        columns = {c: batch.column(c) for c in RECORD_SCHEMA.names}
        columns["topic"] = pa.array([name.topic] * n, pa.string())
        columns["partition"] = pa.array(np.full(n, name.partition, dtype=np.int32))
        if not plugins.stored_offsets:
            columns["offset"] = pa.array(np.arange(first_offset, first_offset + n))
            if keys is not None:
                columns["key"] = _aligned(keys, first_row, n)
            if headers is not None:
                columns["headers"] = _aligned(headers, first_row, n)
            if pc.all(pc.is_null(columns["timestampType"])).as_py():
                columns["timestampType"] = pa.array(np.full(n, -1, dtype=np.int32))
        row = first_row + n
        out = pa.RecordBatch.from_arrays([columns[c] for c in RECORD_SCHEMA.names], schema=RECORD_SCHEMA)
        if dropped is not None and dropped.any():
            out = out.filter(pa.array(~dropped))
        if out.num_rows:
            yield out
    if obj.index_key and isinstance(fmt, IndexedFormat):
        row = blocks[-1].row + blocks[-1].records if whole and blocks else row  # every block checked its count
    else:
        row = skips.note(row)  # skips after the last record
    whole = whole and not skips.rest
    for sidecar in (keys, headers):
        if whole and sidecar is not None and sidecar.num_rows != row:
            raise FormatError(
                f"sidecar has {sidecar.num_rows} records but the data object has {row}", object_key=sidecar.key
            )


def _tombstones(store: Store, plugins: ReadPlugins, obj: BackupObject) -> pa.RecordBatch:
    """A tombstone file's records (behavior.on.null.values=write): keys and headers from its sidecars, null values,
    offsets counted from its start (a merged object renumbers them)."""
    skips = _Skips(obj, True, None, None)
    assert obj.keys_key is not None
    keys = _read_sidecar(plugins.keys_format, store, obj.keys_key, obj, "key", skips).column.combine_chunks()
    n = len(keys)
    headers = (
        _read_sidecar(plugins.headers_format, store, obj.headers_key, obj, "headers", skips).column.combine_chunks()
        if obj.headers_key
        else pa.nulls(n, RECORD_SCHEMA.field("headers").type)
    )
    if len(headers) != n:
        raise FormatError(f"headers sidecar has {len(headers)} records, its keys sidecar {n}", obj.headers_key)
    columns = {
        "key": keys,
        "value": pa.nulls(n, pa.binary()),
        "topic": pa.array([obj.name.topic] * n, pa.string()),
        "partition": pa.array(np.full(n, obj.name.partition, dtype=np.int32)),
        "offset": pa.array(np.arange(obj.start, obj.start + n)),
        "timestamp": pa.nulls(n, RECORD_SCHEMA.field("timestamp").type),
        "timestampType": pa.array(np.full(n, -1, dtype=np.int32)),
        "headers": headers,
    }
    return pa.RecordBatch.from_arrays([columns[c] for c in RECORD_SCHEMA.names], schema=RECORD_SCHEMA)


def _read_merged(
    store: Store, plugins: ReadPlugins, obj: BackupObject, skipped: list[Problem] | None
) -> Iterator[pa.RecordBatch]:
    """A values object and tombstone files merged in offset order (:mod:`kafka_s3.core.layouts.tombstones`): each
    part is read whole, then its runs are taken in order and numbered from the merged object's start."""
    tables = []
    for part in obj.parts:
        if part.tombstones:
            tables.append(pa.Table.from_batches([_tombstones(store, plugins, part)], schema=RECORD_SCHEMA))
        else:
            whole = replace(part, records=None, last_offset=None)  # its manifest's count is checked by the merge
            batches = list(read_object(store, plugins, whole, None, skipped))
            tables.append(pa.Table.from_batches(batches, schema=RECORD_SCHEMA))
    pieces = []
    for index, row, count in obj.runs:
        table = tables[index]
        if row + count > table.num_rows:
            raise FormatError(
                f"holds {table.num_rows} records, fewer than its name and the other objects of its partition place "
                "in it",
                obj.parts[index].key,
            )
        pieces.append(table.slice(row, count))
    merged = pa.concat_tables(pieces).combine_chunks()
    merged = merged.set_column(
        RECORD_SCHEMA.get_field_index("offset"),
        RECORD_SCHEMA.field("offset"),
        pa.array(np.arange(obj.start, obj.start + merged.num_rows)),
    )
    yield from merged.to_batches(max_chunksize=65536)


def _check_sidecar_counts(store: Store, fmt: Format, obj: BackupObject, sidecars: list[_Sidecar]) -> None:
    """Sidecars must hold as many records as their data object, checked before a record of it is produced: the count
    comes from the chunk manifest, or (objects of another tool) from a first pass over the data object."""
    expected = obj.records
    if expected is None:
        if obj.index_key:
            return  # an indexed object read in part: checked at its end (read_object)
        expected = _count(store, fmt, obj)
        if expected is None:
            return  # records of unknown number skipped: checked at the object's end
    for sidecar in sidecars:
        if sidecar.num_rows != expected:
            raise FormatError(
                f"sidecar has {sidecar.num_rows} records but its data object {obj.key} has {expected}: nothing of it "
                "was produced",
                object_key=sidecar.key,
            )


def _count(store: Store, fmt: Format, obj: BackupObject) -> int | None:
    """The records (rows) of an object read whole, bad ones included; ``None`` when a skip's size is unknown."""
    skips = _Skips(obj, True, None, [])
    ctx = FileContext(obj.name.topic, obj.name.partition, obj.start, obj.key, skips.found)
    row = 0
    for batch, first_row, _ in _whole_object(store, fmt, ctx, skips):
        row = first_row + batch.num_rows
    row = skips.note(row)
    return None if skips.rest else row


class _Skips:
    """The records a format skipped in one object, as problems at their positions and offsets.

    The format appends to :attr:`found` right where it skips (see :meth:`FileContext.skip`); :meth:`note` is called
    with the row the reader has reached before each batch, and returns it moved past the skipped records.
    """

    def __init__(self, obj: BackupObject, envelope: bool, bounds: Bounds | None, problems: list[Problem] | None):
        self.obj = obj
        self.envelope = envelope
        self.bounds = bounds
        self.problems = problems
        self.found: list[Skipped] | None = None if problems is None else []
        self.noted = 0
        self.rest = False  # records were skipped without a count: the rows after it are unknown

    def note(self, row: int) -> int:
        while self.found is not None and self.noted < len(self.found):
            skip = self.found[self.noted]
            self.noted += 1
            first = None if self.envelope else self.obj.start + row
            if skip.records is None:
                self.rest = True
            elif first is not None and not self._in_bounds(first, first + skip.records):
                row += skip.records
                continue  # below a resume point or outside the bounds: not this read's records
            assert self.problems is not None  # found is a list only when problems is one
            self.problems.append(Problem(self.obj.key, skip.position, skip.message, skip.records, first))
            row += skip.records or 0
        return row

    def note_problem(self, problem: Problem) -> None:
        """A problem found outside the data object (a sidecar's skipped record), unless outside the bounds."""
        assert self.problems is not None and problem.first_offset is not None and problem.records is not None
        if self._in_bounds(problem.first_offset, problem.first_offset + problem.records):
            self.problems.append(problem)

    def _in_bounds(self, first: int, end: int) -> bool:
        bounds = self.bounds
        if bounds is None:
            return True
        return (bounds.from_offset is None or end > bounds.from_offset) and (
            bounds.until_offset is None or first < bounds.until_offset
        )


def _whole_object(
    store: Store, fmt: Format, ctx: FileContext, skips: _Skips
) -> Iterator[tuple[pa.RecordBatch, int, int]]:
    """``(batch, first row index, first offset)`` of an object read whole, offsets counted from its start offset
    (records the format skipped count too)."""
    row = 0
    with store.open(ctx.object_key) as source:
        for batch in fmt.read(source, ctx):
            row = skips.note(row)
            if skips.rest and not skips.envelope:
                raise FormatError(
                    "records follow a skip of unknown size: their offsets cannot be derived", ctx.object_key
                )
            yield batch, row, ctx.start_offset + row
            row += batch.num_rows


def _aligned(sidecar: _Sidecar, row: int, n: int) -> pa.Array:
    if row + n > sidecar.num_rows:
        raise FormatError(f"sidecar has {sidecar.num_rows} records, fewer than its data object", object_key=sidecar.key)
    return sidecar.column.slice(row, n).combine_chunks()


_UNBOUNDED = Bounds()


def unprovable_bound(
    objects: list[BackupObject],
    bounds: Bounds,
    count: Callable[[BackupObject], int | None] | None = None,
    options: tuple[str, str] = ("--from-offset", "--until-offset"),
) -> str | None:
    """Why an offset bound cannot be honoured on objects without stored offsets, or ``None``.

    Offsets of such objects are derived (start + row), which is exact only when the object's offsets have no gaps
    (compaction and transaction markers leave some): ``last - start + 1 == records``. A bound at an object's start is
    always exact; one inside an object is exact only when that holds. ``count`` counts an object's records when no
    manifest says (objects of another tool); without it such objects are left to be checked later (``None``).
    ``options`` name the bounds as the user gave them (``restore``'s flags by default).
    """
    for option, bound in ((options[0], bounds.from_offset), (options[1], bounds.until_offset)):
        if bound is None:
            continue
        for i, obj in enumerate(objects):
            if obj.index_key:
                continue  # a block index holds the source's offsets
            following = objects[i + 1].start if i + 1 < len(objects) else None
            last = obj.last_offset if obj.last_offset is not None else (None if following is None else following - 1)
            if bound <= obj.start or last is None or bound > last:
                # (last unknown: the newest object of another tool's partition, derived as Confluent's source does;
                # nothing tells its offsets — the plan's continuity note says so)
                continue
            records = obj.records if obj.records is not None else (count(obj) if count is not None else None)
            if records is None or last - obj.start + 1 == records:
                continue  # counted later, or no gap inside: derived offsets are the source's
            held = f"offsets {obj.start}..{last}"
            return (
                f"{option} {obj.name.topic}:{obj.name.partition}:{bound} cannot be honoured: it falls inside {obj.key} "
                f"({held}, {records} records), whose offsets are not stored and have gaps (compaction or transaction "
                f"markers); use a bound at an object start ({obj.start}"
                f"{'' if following is None else f' or {following}'}), or back up with store.envelope=true"
            )
    return None


def read_partition(
    store: Store,
    plugins: ReadPlugins,
    part: SourcePartition,
    bounds: Bounds = _UNBOUNDED,
    resume_from: int | None = None,
    on_error: str = "fail",
    problems: list[Problem] | None = None,
    on_object: Callable[[BackupObject], None] | None = None,
    on_span: Callable[[BackupObject, int | None, int | None], None] | None = None,
    bound_options: tuple[str, str] = ("--from-offset", "--until-offset"),
    selection: Selection | None = None,
) -> Generator[pa.RecordBatch, None, None]:
    """A source partition's records in offset order, filtered to ``bounds``, to offsets >= ``resume_from`` and to the
    offsets of ``selection`` (filters a DataFrame query pushed down; its times only choose objects: Spark applies
    them to the rows). Only the objects :func:`~kafka_s3.pipelines.read.planning.select_objects` chooses are read.

    ``on_span(object, first, last)`` is told the offsets each object read holds (before filtering), or
    ``(object, None, None)`` for an object skipped under ``behavior.on.error=ignore|log`` (see :func:`missing_offsets`);
    an object left out only for its record times is told as holding its whole offset span, so that it is no gap.
    Objects of one partition in several directories without stored offsets are read in object order
    (:func:`order_warning` says so).
    """
    asked = Selection.of_bounds(bounds) & (selection or Selection())
    lower = max(x for x in (bounds.from_offset, resume_from, -1) if x is not None)
    objects = part.objects
    contiguous = len(part.directories) <= 1  # objects of one directory never overlap
    if contiguous:
        if not plugins.stored_offsets and (bounds.from_offset is not None or bounds.until_offset is not None):
            reason = unprovable_bound(objects, bounds, lambda o: _count(store, plugins.value_format, o), bound_options)
            if reason:
                raise FormatError(reason)
        planned = asked & Selection(offsets=Ranges.between(lower if lower >= 0 else None))
    elif not plugins.stored_offsets:
        # Offsets derived per object (start + row) overlap across directories: resume by whole objects (the restore
        # commits ``resume_from`` between objects), filter only the bounds by offset.
        objects = [o for o in objects if resume_from is None or o.start >= resume_from]
        planned = asked
    else:
        planned = asked & Selection(offsets=Ranges.between(lower if lower >= 0 else None))
    chosen = select_objects(objects, planned, contiguous)
    if on_span is not None and not planned.times_us.unbounded:
        kept = {o.key for o in chosen}
        wanted = {o.key for o in select_objects(objects, Selection(offsets=planned.offsets), contiguous)}
        for i, obj in enumerate(objects):
            first, end = offset_span(objects, i, contiguous)
            if obj.key in wanted and obj.key not in kept and end < HIGH:
                on_span(obj, first, end - 1)  # in the backup, outside the times asked for
    groups = [[o] for o in chosen] if contiguous or not plugins.stored_offsets else [chosen]
    hull = planned.offset_bounds()  # every offset asked for: what a block index narrows its ranged reads to
    effective = Bounds(hull.from_offset, hull.until_offset, bounds.from_timestamp, bounds.until_timestamp)
    offsets = None if selection is None or selection.offsets.unbounded else selection.offsets
    for group in groups:
        batches = _read_group(store, plugins, group, on_error, problems, on_object, effective, on_span)
        for batch in batches:
            mask = effective.mask(batch)
            if offsets is not None:
                within = offsets.mask(batch.column("offset"))
                mask = within if mask is None else pc.and_(mask, within)
            if mask is not None:
                batch = batch.filter(mask)
            if batch.num_rows:
                yield batch


def _read_group(
    store: Store,
    plugins: ReadPlugins,
    group: list[BackupObject],
    on_error: str,
    problems: list[Problem] | None,
    on_object: Callable[[BackupObject], None] | None,
    bounds: Bounds | None = None,
    on_span: Callable[[BackupObject, int | None, int | None], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """One object streamed, or several envelope objects merged by offset (buffered one overlap set at a time)."""
    if len(group) == 1:
        yield from _guarded(store, plugins, group[0], on_error, problems, on_object, bounds, on_span)
        return
    pending: list[pa.RecordBatch] = []
    pending_max = -1
    for obj in group:
        if pending and obj.start > pending_max:
            yield from _sorted(pending)
            pending, pending_max = [], -1
        for batch in _guarded(store, plugins, obj, on_error, problems, on_object, bounds, on_span):
            pending.append(batch)
            pending_max = max(pending_max, pc.max(batch.column("offset")).as_py())
    if pending:
        yield from _sorted(pending)


def _sorted(batches: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    table = pa.Table.from_batches(batches, schema=RECORD_SCHEMA)
    table = table.take(pc.sort_indices(table, [("offset", "ascending")]))
    yield from table.to_batches(max_chunksize=65536)


def _guarded(
    store: Store,
    plugins: ReadPlugins,
    obj: BackupObject,
    on_error: str,
    problems: list[Problem] | None,
    on_object: Callable[[BackupObject], None] | None,
    bounds: Bounds | None = None,
    on_span: Callable[[BackupObject, int | None, int | None], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    if on_object is not None:
        on_object(obj)
    first = last = None
    next_offset = None if plugins.stored_offsets else obj.start  # of the record after the last one read
    skipped: list[Problem] | None = None if on_error == "fail" else []
    rows = 0
    try:
        try:
            for batch in read_object(store, plugins, obj, bounds, skipped):
                rows += batch.num_rows
                if next_offset is not None:
                    next_offset = batch.column("offset")[-1].as_py() + 1
                if on_span is not None:
                    low, high = pc.min_max(batch.column("offset")).values()
                    first = low.as_py() if first is None else min(first, low.as_py())
                    last = high.as_py() if last is None else max(last, high.as_py())
                yield batch
        finally:
            for problem in skipped or ():
                _note(problems, on_error, problem)
    except FormatError as exc:
        if on_error == "fail":
            raise
        # What the format could not skip record by record (a broken header or footer, a sidecar, a format that
        # does not skip): the object from there on.
        _note(problems, on_error, Problem(obj.key, exc.position or "object", bare_message(exc), None, next_offset))
        if on_span is not None:
            on_span(obj, None, None)
        return
    if obj.records is not None and not skipped and _read_whole(obj, bounds) and rows != obj.records:
        raise BackupIncomplete(
            f"{obj.name.topic}[{obj.name.partition}] offsets {obj.start}..{obj.last_offset}: counts: {obj.key} holds "
            f"{rows} records, its chunk manifest says {obj.records}: the manifest disagrees with its object (edited, "
            "or the object replaced); nothing of it was committed"
        )
    if on_span is not None:
        # Skipped records are reported as skipped, not also as offsets missing from the backup.
        for problem in skipped or ():
            if problem.first_offset is not None and problem.records is not None:
                first = problem.first_offset if first is None else min(first, problem.first_offset)
                end = problem.first_offset + problem.records - 1
                last = end if last is None else max(last, end)
        if any(problem.records is None for problem in skipped or ()):
            on_span(obj, first, None)  # the rest of the object was skipped: its extent is unknown
        elif first is not None:
            on_span(obj, first, last)


def _read_whole(obj: BackupObject, bounds: Bounds | None) -> bool:
    """Whether ``bounds`` let the object be read whole (a bounded read of an indexed format fetches some blocks)."""
    if bounds is None:
        return True
    if bounds.by_time:
        return False
    below = bounds.from_offset is None or bounds.from_offset <= obj.start
    above = bounds.until_offset is None or (obj.last_offset is not None and bounds.until_offset > obj.last_offset)
    return below and above


def order_warning(part: SourcePartition, envelope: bool) -> str | None:
    """Why a partition's records cannot be restored in their original order, if they cannot."""
    if envelope or len(part.directories) <= 1:
        return None
    return (
        f"{part.topic}[{part.partition}]: objects in {len(part.directories)} directories without stored offsets "
        "are read in object order, which is not the original order across directories (store.envelope=true "
        "keeps it exact)"
    )


@dataclass(frozen=True)
class Gap:
    """Offsets of a source partition that no object of the backup holds."""

    topic: str
    partition: int
    first: int
    last: int
    before: str  # key of the object holding the offsets just below
    after: str  # key of the object holding the offsets just above

    def __str__(self) -> str:
        count = self.last - self.first + 1
        return (
            f"{self.topic}[{self.partition}]: offsets {self.first}..{self.last} ({count} offset"
            f"{'s' if count != 1 else ''}) are not in the backup: no object holds them between {self.before} and "
            f"{self.after} (deleted or lost objects; compaction and transaction markers leave such gaps too)"
        )


def missing_offsets(topic: str, partition: int, spans: Iterable[tuple[int, int | None, str]]) -> list[Gap]:
    """Gaps between the ``(first, last, key)`` offset spans of the objects read (``last=None``: an object that was
    skipped, whose extent is unknown, so no gap is reported next to it)."""
    gaps = []
    reach: int | None = None
    reach_key = ""
    started = False
    for first, last, key in sorted(spans, key=lambda span: (span[0], span[2])):
        if started and reach is not None and first > reach + 1:
            gaps.append(Gap(topic, partition, reach + 1, first - 1, reach_key, key))
        started = True
        if last is None:
            reach = None  # unknown extent: no gap right after a skipped object
        elif reach is None or last > reach:
            reach, reach_key = last, key
    return gaps


def offset_gaps(offsets: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Missing offset ranges ``(first, last)`` between consecutive ``(first, last)`` spans (for reports)."""
    gaps = []
    previous = None
    for first, last in sorted(offsets):
        if previous is not None and first > previous + 1:
            gaps.append((previous + 1, first - 1))
        previous = last if previous is None else max(previous, last)
    return gaps
