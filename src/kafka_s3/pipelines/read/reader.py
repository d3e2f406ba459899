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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.pipelines.read.blocks import load_blocks, read_blocks, select
from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import FormatError, LayoutError
from kafka_s3.core.formats.base import FileContext, Format, IndexedFormat
from kafka_s3.core.layout import Layout, ObjectName
from kafka_s3.core.manifest import MANIFEST_DIR, ManifestStore, manifest_root
from kafka_s3.core.records import RECORD_SCHEMA
from kafka_s3.core.store import Store

log = logging.getLogger(__name__)
TP = tuple[str, int]


@dataclass(frozen=True)
class BackupObject:
    """One data object and its sidecars."""

    name: ObjectName
    size: int
    keys_key: str | None = None
    headers_key: str | None = None
    index_key: str | None = None  # block index of an indexed format (block_gzip)

    @property
    def key(self) -> str:
        return self.name.key

    @property
    def start(self) -> int:
        return self.name.start_offset


@dataclass
class SourcePartition:
    topic: str
    partition: int
    objects: list[BackupObject] = field(default_factory=list)

    @property
    def directories(self) -> set[str]:
        return {o.name.directory for o in self.objects}

    @property
    def bytes(self) -> int:
        return sum(o.size for o in self.objects)


@dataclass
class Problem:
    """A skipped object or record (``behavior.on.error=ignore|log``), or a gap worth reporting."""

    key: str
    position: str
    message: str


@dataclass
class ReadPlugins:
    """The formats a backup was written with, from its configuration."""

    config: Config
    layout: Layout
    value_format: Format
    keys_format: Format
    headers_format: Format
    envelope: bool

    @classmethod
    def from_config(cls, config: Config) -> "ReadPlugins":
        from kafka_s3.core import converters, formats

        value_converter = converters.REGISTRY.resolve(config["value.converter"])(
            config.with_prefix("value.converter."), False
        )
        key_converter = converters.REGISTRY.resolve(config["key.converter"])(config.with_prefix("key.converter."), True)
        if "topic.rename" in config.definition.props:  # a restore: values go to the routed topics (their subjects)
            value_converter.route = key_converter.route = _lazy_router(config)
        envelope = config["store.envelope"]
        return cls(
            config=config,
            layout=Layout.from_config(config),
            value_format=formats.REGISTRY.resolve(config["format.class"])(config, "value", value_converter, envelope),
            keys_format=formats.REGISTRY.resolve(config["keys.format.class"])(config, "keys", key_converter),
            headers_format=formats.REGISTRY.resolve(config["headers.format.class"])(config, "headers"),
            envelope=envelope,
        )

    def manifests(self, store: Store) -> ManifestStore:
        root = manifest_root(self.layout.topics_dir, self.value_format.extension, self.layout.directory_delim)
        return ManifestStore(store, root, self.layout.directory_delim)

    def extensions(self) -> dict[str, str]:
        data = self.value_format.extension
        extensions = {
            data: "data",
            ".keys" + self.keys_format.extension: "keys",
            ".headers" + self.headers_format.extension: "headers",
        }
        if self.value_format.index_extension:
            extensions[".index" + self.value_format.index_extension] = "index"
        return extensions


def _lazy_router(config: Config) -> Callable[[str], str]:
    """The restore's topic routing, built when first needed (only converters naming things after topics use it)."""
    router: list[Callable[[str], str]] = []

    def route(topic: str) -> str:
        if not router:
            from kafka_s3.core.transforms import topic_router

            router.append(topic_router(config))
        return router[0](topic)

    return route


# ---------------------------------------------------------------------------------------------------- discovery
def discover(
    store: Store,
    plugins: ReadPlugins,
    topics: Iterable[str] | None = None,
    on_error: str = "fail",
    problems: list[Problem] | None = None,
) -> dict[TP, SourcePartition]:
    """Every source partition's objects, sorted by start offset. Listing runs in parallel, one prefix per topic (all
    topics under ``topics.dir`` when none are named)."""
    layout = plugins.layout
    manifest_prefix = layout.topic_prefix(MANIFEST_DIR)
    if not topics:
        topics = [t for t in store.children(layout.topic_prefix(), layout.directory_delim) if t != MANIFEST_DIR]
    prefixes = [layout.topic_prefix(t) for t in topics]
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(prefixes)))) as pool:
        listings = list(pool.map(lambda prefix: list(store.list(prefix)), prefixes))
    extensions = plugins.extensions()
    data: list[tuple[ObjectName, int]] = []
    sidecars: dict[tuple[str, str], str] = {}
    for info in (i for listing in listings for i in listing):
        if info.key.startswith(manifest_prefix):
            continue
        try:
            name = layout.parse(info.key, extensions)  # type: ignore[arg-type]
        except LayoutError as exc:
            if on_error == "fail":
                raise
            _note(problems, on_error, Problem(info.key, "name", str(exc)))
            continue
        if name is None:
            continue
        base = name.key[: len(name.key) - len(name.extension)]
        if name.kind == "data":
            data.append((name, info.size))
        else:
            sidecars[(base, name.kind)] = name.key
    partitions: dict[TP, SourcePartition] = {}
    for name, size in data:
        base = name.key[: len(name.key) - len(name.extension)]
        tp = (name.topic, name.partition)
        partitions.setdefault(tp, SourcePartition(*tp)).objects.append(
            BackupObject(name, size, sidecars.get((base, "keys")), sidecars.get((base, "headers")),
                         sidecars.get((base, "index")))
        )
    for part in partitions.values():
        part.objects.sort(key=lambda o: (o.start, o.key))
    return dict(sorted(partitions.items()))


def _note(problems: list[Problem] | None, on_error: str, problem: Problem) -> None:
    if problems is not None:
        problems.append(problem)
    if on_error == "log":
        log.warning("skipped %s at %s: %s", problem.key, problem.position, problem.message)


# ---------------------------------------------------------------------------------------------------- reading
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


def _read_all(fmt: Format, store: Store, key: str, ctx: FileContext) -> pa.Table:
    with store.open(key) as source:
        return pa.Table.from_batches(list(fmt.read(source, ctx)), schema=RECORD_SCHEMA)


def read_object(store: Store, plugins: ReadPlugins, obj: BackupObject, bounds: Bounds | None = None
                ) -> Iterator[pa.RecordBatch]:
    """One object's records, with topic/partition, offsets (stored, or derived from the start offset), and keys and
    headers from sidecars when present.

    An object with a block index (block_gzip) is read block by block with ranged GETs, only the blocks overlapping
    the offsets of ``bounds``; its offsets come from the index (see :mod:`kafka_s3.pipelines.read.blocks`). The caller still
    filters records to ``bounds``.
    """
    name = obj.name
    ctx = FileContext(name.topic, name.partition, name.start_offset, name.key)
    keys = _read_all(plugins.keys_format, store, obj.keys_key, ctx) if obj.keys_key else None
    headers = _read_all(plugins.headers_format, store, obj.headers_key, ctx) if obj.headers_key else None
    fmt = plugins.value_format
    whole = True  # every record of the object is read (sidecar counts can be checked)
    if obj.index_key and isinstance(fmt, IndexedFormat):
        blocks = load_blocks(store, fmt, obj)
        chosen = select(blocks, bounds.from_offset, bounds.until_offset) if bounds is not None else blocks
        whole = len(chosen) == len(blocks)
        pieces = read_blocks(store, fmt, name.key, chosen, ctx)
    else:
        pieces = _whole_object(store, fmt, ctx)
    row = 0  # records read
    for batch, first_row, first_offset in pieces:
        n = batch.num_rows
        if n == 0:
            continue
        columns = {c: batch.column(c) for c in RECORD_SCHEMA.names}
        columns["topic"] = pa.array([name.topic] * n, pa.string())
        columns["partition"] = pa.array(np.full(n, name.partition, dtype=np.int32))
        if not plugins.envelope:
            columns["offset"] = pa.array(np.arange(first_offset, first_offset + n))
            if keys is not None:
                columns["key"] = _aligned(keys, "key", first_row, n, obj.keys_key)
            if headers is not None:
                columns["headers"] = _aligned(headers, "headers", first_row, n, obj.headers_key)
            if pc.all(pc.is_null(columns["timestampType"])).as_py():
                columns["timestampType"] = pa.array(np.full(n, -1, dtype=np.int32))
        row += n
        yield pa.RecordBatch.from_arrays([columns[c] for c in RECORD_SCHEMA.names], schema=RECORD_SCHEMA)
    for table, key in ((keys, obj.keys_key), (headers, obj.headers_key)):
        if whole and table is not None and table.num_rows != row:
            raise FormatError(f"sidecar has {table.num_rows} records but the data object has {row}", object_key=key)


def _whole_object(store: Store, fmt: Format, ctx: FileContext) -> Iterator[tuple[pa.RecordBatch, int, int]]:
    """``(batch, first row index, first offset)`` of an object read whole, offsets counted from its start offset."""
    row = 0
    with store.open(ctx.object_key) as source:
        for batch in fmt.read(source, ctx):
            yield batch, row, ctx.start_offset + row
            row += batch.num_rows


def _aligned(table: pa.Table, column: str, row: int, n: int, key: str | None) -> pa.Array:
    if row + n > table.num_rows:
        raise FormatError(f"sidecar has {table.num_rows} records, fewer than its data object", object_key=key)
    return table.column(column).slice(row, n).combine_chunks()


def read_partition(
    store: Store,
    plugins: ReadPlugins,
    part: SourcePartition,
    bounds: Bounds = Bounds(),
    resume_from: int | None = None,
    on_error: str = "fail",
    problems: list[Problem] | None = None,
    on_object: Callable[[BackupObject], None] | None = None,
    on_span: Callable[[BackupObject, int | None, int | None], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """A source partition's records in offset order, filtered to ``bounds`` and to offsets >= ``resume_from``.

    ``on_span(object, first, last)`` is told the offsets each object read holds (before filtering), or
    ``(object, None, None)`` for an object skipped under ``behavior.on.error=ignore|log`` (see :func:`missing_offsets`).
    Objects of one partition in several directories without stored offsets are read in object order
    (:func:`order_warning` says so).
    """
    lower = max(x for x in (bounds.from_offset, resume_from, -1) if x is not None)
    objects = part.objects
    if len(part.directories) <= 1:
        # Objects of one directory never overlap: object i holds offsets [start_i, start_i+1).
        nexts = [o.start for o in objects[1:]] + [None]
        selected = [o for o, nxt in zip(objects, nexts) if nxt is None or nxt > lower]
        if bounds.until_offset is not None:
            selected = [o for o in selected if o.start < bounds.until_offset]
        groups = [[o] for o in selected]
    elif not plugins.envelope:
        # Offsets derived per object (start + row) overlap across directories: resume by whole objects (the restore
        # commits ``resume_from`` between objects), filter only the bounds by offset.
        groups = [[o] for o in objects if resume_from is None or o.start >= resume_from]
        lower = bounds.from_offset if bounds.from_offset is not None else -1
    else:
        groups = [objects]
    effective = Bounds(lower if lower >= 0 else None, bounds.until_offset, bounds.from_timestamp,
                       bounds.until_timestamp)
    for group in groups:
        batches = _read_group(store, plugins, group, on_error, problems, on_object, effective, on_span)
        for batch in batches:
            mask = effective.mask(batch)
            if mask is not None:
                batch = batch.filter(mask)
            if batch.num_rows:
                yield batch


def _read_group(store, plugins, group, on_error, problems, on_object, bounds=None, on_span=None
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


def _guarded(store, plugins, obj, on_error, problems, on_object, bounds=None, on_span=None
             ) -> Iterator[pa.RecordBatch]:
    if on_object is not None:
        on_object(obj)
    first = last = None
    try:
        for batch in read_object(store, plugins, obj, bounds):
            if on_span is not None:
                low, high = pc.min_max(batch.column("offset")).values()
                first = low.as_py() if first is None else min(first, low.as_py())
                last = high.as_py() if last is None else max(last, high.as_py())
            yield batch
    except FormatError as exc:
        if on_error == "fail":
            raise
        _note(problems, on_error, Problem(obj.key, exc.position or "object", str(exc)))
        if on_span is not None:
            on_span(obj, None, None)
        return
    if on_span is not None and first is not None:
        on_span(obj, first, last)


def order_warning(part: SourcePartition, envelope: bool) -> str | None:
    """Why a partition's records cannot be restored in their original order, if they cannot."""
    if envelope or len(part.directories) <= 1:
        return None
    return (f"{part.topic}[{part.partition}]: objects in {len(part.directories)} directories without stored offsets "
            "are read in object order, which is not the original order across directories (store.envelope=true "
            "keeps it exact)")


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
        return (f"{self.topic}[{self.partition}]: offsets {self.first}..{self.last} ({count} offset"
                f"{'s' if count != 1 else ''}) are not in the backup: no object holds them between {self.before} and "
                f"{self.after} (deleted or lost objects; compaction and transaction markers leave such gaps too)")


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
