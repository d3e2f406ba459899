"""One backup object's records: decoded by its format, keys and headers joined from its sidecars, tombstone files
merged in, offsets stored or derived, bad records skipped and noted where ``behavior.on.error`` allows, and an object
with a block index read only where the bounds ask (ranged GETs).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.errors import FormatError
from kafka_s3.core.formats.base import FileContext, Format, IndexedFormat, Skipped
from kafka_s3.core.records import RECORD_SCHEMA
from kafka_s3.core.store import Store
from kafka_s3.pipelines.read.blocks import load_blocks, read_blocks, select
from kafka_s3.pipelines.read.discovery import BackupObject, Problem
from kafka_s3.pipelines.read.options import Bounds
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
        expected = record_count(store, fmt, obj)
        if expected is None:
            return  # records of unknown number skipped: checked at the object's end
    for sidecar in sidecars:
        if sidecar.num_rows != expected:
            raise FormatError(
                f"sidecar has {sidecar.num_rows} records but its data object {obj.key} has {expected}: nothing of it "
                "was produced",
                object_key=sidecar.key,
            )


def record_count(store: Store, fmt: Format, obj: BackupObject) -> int | None:
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
