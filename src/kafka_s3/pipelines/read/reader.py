"""Reading a backup: discover its objects, and stream each source partition's records back in offset order.

Shared by the restore and by the ``kafka-s3`` DataFrame reader. Discovery follows Confluent's source: only keys
under ``topics.dir`` count, keys with another extension are ignored, a key with the format's extension whose name
does not follow the layout is an error (or skipped under ``behavior.on.error=ignore|log``). Within a source
partition, objects are read by start offset across every directory; when a partition's objects sit in several
directories (field or time partitioners) and carry offsets (envelope), overlapping objects are merged by offset so
the order is exact. One object's records are :mod:`.objects`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.errors import BackupIncomplete, FormatError
from kafka_s3.core.formats.base import bare_message
from kafka_s3.core.records import RECORD_SCHEMA
from kafka_s3.core.store import Store
from kafka_s3.pipelines.read.discovery import BackupObject, Problem, SourcePartition, _note
from kafka_s3.pipelines.read.objects import read_object, record_count
from kafka_s3.pipelines.read.options import Bounds
from kafka_s3.pipelines.read.planning import HIGH, Ranges, Selection, offset_span, select_objects
from kafka_s3.pipelines.read.plugins import ReadPlugins

log = logging.getLogger(__name__)

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
            reason = unprovable_bound(
                objects, bounds, lambda o: record_count(store, plugins.value_format, o), bound_options
            )
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
