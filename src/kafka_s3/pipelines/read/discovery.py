"""Discovery: which data objects and sidecars a backup holds, per source partition, in offset order.

Follows Confluent's source: only keys under ``topics.dir`` count, keys with another extension are ignored, and a key
with the format's extension whose name does not follow the layout is an error (or skipped under
``behavior.on.error=ignore|log``). Listing runs in parallel, one prefix per topic.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from kafka_s3.core.errors import LayoutError
from kafka_s3.core.formats.base import FileContext, Format
from kafka_s3.core.layout import Layout, ObjectName, assign_starts, with_start
from kafka_s3.core.layouts.tombstones import VALUES, Source, interleave
from kafka_s3.core.manifest import MANIFEST_DIR
from kafka_s3.core.store import Store
from kafka_s3.pipelines.read.plugins import ReadPlugins

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
    records: int | None = None  # as its chunk manifest recorded (None: objects of another tool)
    last_offset: int | None = None  # likewise
    first_timestamp: int | None = None  # earliest record time (ms) its manifest recorded (None: not recorded)
    last_timestamp: int | None = None  # latest record time (ms), likewise
    # A tombstone file (behavior.on.null.values=write): keys and headers sidecars, no value object (``key``: the keys
    # sidecar's); its records' offsets when its chunk manifest recorded them.
    tombstones: bool = False
    offsets: tuple[int, ...] | None = None
    # A merged object: records of ``parts`` (a values object and tombstone files) in offset order, as ``runs``
    # (part index, first row, rows) say (see :mod:`kafka_s3.core.layouts.tombstones`).
    parts: tuple[BackupObject, ...] = ()
    runs: tuple[tuple[int, int, int], ...] = ()

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
    """A skipped object or record (``behavior.on.error=ignore|log``), or a gap worth reporting.

    ``records``: how many records were skipped there (``None``: the object, or the rest of it, their number unknown);
    ``first_offset``: the offset of the first of them, when the backup's offsets tell it.
    """

    key: str
    position: str
    message: str
    records: int | None = None
    first_offset: int | None = None

    def __str__(self) -> str:
        if self.records is None:  # the object from this position on
            where = f" from offset {self.first_offset}" if self.first_offset is not None else ""
            return f"skipped {self.key}{where} at {self.position}: {self.message}"
        else:
            what = f"skipped {self.records} record{'s' if self.records != 1 else ''}"
            if self.first_offset is not None:
                last = self.first_offset + self.records - 1
                what += f" (offset{'s' if self.records != 1 else ''} {self.first_offset}"
                what += f"..{last})" if self.records != 1 else ")"
            what += " of"
        return f"{what} {self.key} at {self.position}: {self.message}"


# ---------------------------------------------------------------------------------------------------- discovery
def discover(
    store: Store,
    plugins: ReadPlugins,
    topics: Iterable[str] | None = None,
    on_error: str = "fail",
    problems: list[Problem] | None = None,
    sizes: dict[str, int] | None = None,
) -> dict[TP, SourcePartition]:
    """Every source partition's objects, sorted by start offset. Listing runs in parallel, one prefix per topic (all
    topics under ``topics.dir`` when none are named). ``sizes``, when given, receives every listed key's size."""
    layout = plugins.layout
    whole = layout.lists_whole_prefix  # a peer's layout whose directories do not name topics
    manifest_prefix = layout.topic_prefix() + MANIFEST_DIR + layout.directory_delim
    names = list(topics) if topics else []
    if not names and not whole:
        names = [t for t in store.children(layout.topic_prefix(), layout.directory_delim) if t != MANIFEST_DIR]
    wanted = set(names) if names else None
    prefixes = [layout.topic_prefix()] if whole else [layout.topic_prefix(t) for t in names]
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(prefixes)))) as pool:
        listings = list(pool.map(lambda prefix: list(store.list(prefix)), prefixes))
    extensions = plugins.extensions()
    data: list[tuple[ObjectName, int]] = []
    sidecars: dict[tuple[str, str], str] = {}
    for info in (i for listing in listings for i in listing):
        if info.key.startswith(manifest_prefix):
            continue
        if sizes is not None:
            sizes[info.key] = info.size
        try:
            name = layout.parse(info.key, extensions)  # type: ignore[arg-type]
        except LayoutError as exc:
            if on_error == "fail":
                raise
            _note(problems, on_error, Problem(info.key, "name", str(exc)))
            continue
        if name is None or (wanted is not None and name.topic not in wanted):
            continue
        base = name.key[: len(name.key) - len(name.extension)]
        if name.kind == "data":
            data.append((name, info.size))
        else:
            sidecars[(base, name.kind)] = name.key
    partitions: dict[TP, SourcePartition] = {}
    size_of = {info.key: info.size for listing in listings for info in listing}
    tombstones = _tombstone_files(layout, plugins, data, sidecars, size_of)
    tombstone_keys = {name.key for name, _ in tombstones}
    for name, size in data + tombstones:
        base = name.key[: len(name.key) - len(name.extension)]
        tp = (name.topic, name.partition)
        partitions.setdefault(tp, SourcePartition(*tp)).objects.append(
            BackupObject(
                name,
                size,
                sidecars.get((base, "keys")),
                sidecars.get((base, "headers")),
                sidecars.get((base, "index")),
                tombstones=name.key in tombstone_keys,
            )
        )
    for part in partitions.values():
        part.objects.sort(key=lambda o: (o.start, o.key))
        if layout.names_hold_last_offset:
            part.objects = _spans_from_last_offsets(part.objects)
        if any(o.tombstones for o in part.objects):
            part.objects = _merge_tombstones(store, plugins, part)
    return dict(sorted(partitions.items()))


# ---------------------------------------------------------------------------------------------------- tombstones
def _tombstone_files(
    layout: Layout,
    plugins: ReadPlugins,
    data: list[tuple[ObjectName, int]],
    sidecars: dict[tuple[str, str], str],
    size_of: dict[str, int],
) -> list[tuple[ObjectName, int]]:
    """Keys sidecars without a value object in a ``tombstone.encoded.partition`` directory: tombstones of
    ``behavior.on.null.values=write`` (CS ``format/KeyValueHeaderRecordWriterProvider.getRecordWriter`` writes no
    value object there). Each stands for its file, as a data object named by its keys sidecar."""
    if plugins.envelope or type(layout) is not Layout:
        return []
    tombstone = plugins.config.get("tombstone.encoded.partition", "tombstone")
    bases = {name.key[: len(name.key) - len(name.extension)] for name, _ in data}
    out = []
    for (base, kind), key in sidecars.items():
        if kind != "keys" or base in bases:
            continue
        name = layout.parse(key, plugins.extensions())  # type: ignore[arg-type]
        if name is not None and name.directory.rsplit(layout.directory_delim, 1)[-1] == tombstone:
            out.append((replace(name, kind="data", extension=key[len(base) :]), size_of.get(key, 0)))
    return out


def _merge_tombstones(store: Store, plugins: ReadPlugins, part: SourcePartition) -> list[BackupObject]:
    """A partition's values objects with its tombstone files put back among them at their offsets, when the values sit
    in one directory (several directories are read in object order anyway: :func:`reader.order_warning`)."""
    values = [o for o in part.objects if not o.tombstones]
    tombs = [o for o in part.objects if o.tombstones]
    if len({o.name.directory for o in values}) > 1:
        return part.objects
    recorded = _recorded(store, plugins, part.topic, part.partition)
    value_sources = [Source(o.start, _records_of(store, plugins.value_format, o, recorded), o.key) for o in values]
    tomb_sources = [
        Source(o.start, _records_of(store, plugins.keys_format, o, recorded), o.key, recorded.get(o.key, (0, None))[1])
        for o in tombs
    ]
    out = []
    for merged in interleave(value_sources, tomb_sources, f"{part.topic}[{part.partition}]"):
        parts: list[BackupObject] = []
        runs = []
        for run in merged.runs:
            obj = values[run.file] if run.kind == VALUES else tombs[run.file]
            if obj not in parts:
                parts.append(obj)
            runs.append((parts.index(obj), run.row, run.count))
        lead = parts[0]
        directory = values[0].name.directory if values else lead.name.directory
        out.append(
            replace(
                lead,
                name=replace(lead.name, directory=directory, start_offset=merged.start),
                records=merged.records,
                last_offset=merged.start + merged.records - 1,
                tombstones=False,
                parts=tuple(parts),
                runs=tuple(runs),
            )
        )
    return out


Recorded = dict[str, tuple[int, tuple[int, ...] | None]]


def _recorded(store: Store, plugins: ReadPlugins, topic: str, partition: int) -> Recorded:
    """``key -> (records, tombstone offsets)`` of every file the partition's chunk manifests list (ours)."""
    found = plugins.manifests(store).load_topic(topic, plugins.manifest_cache).get(partition)
    if found is None:
        return {}
    return {f.key: (f.records, f.offsets) for m in found.chunks for f in m.files}


def _records_of(store: Store, fmt: Format, obj: BackupObject, recorded: Recorded) -> int:
    """An object's records: as its chunk manifest recorded, else counted by reading it (objects of another tool)."""
    if obj.key in recorded:
        return recorded[obj.key][0]
    ctx = FileContext(obj.name.topic, obj.name.partition, obj.start, obj.key)
    with store.open(obj.key) as source:
        return sum(batch.num_rows for batch in fmt.read(source, ctx))


def _spans_from_last_offsets(objects: list[BackupObject]) -> list[BackupObject]:
    """Names holding each object's last offset (``Layout.names_hold_last_offset``): keep it as ``last_offset`` and
    start each object after the one before it in its directory (:func:`kafka_s3.core.layout.assign_starts`)."""
    by_directory: dict[str, list[BackupObject]] = {}
    for obj in objects:
        by_directory.setdefault(obj.name.directory, []).append(obj)
    out = []
    for group in by_directory.values():
        starts = assign_starts([o.name.start_offset for o in group])
        out += [
            replace(o, name=with_start(o.name, start), last_offset=o.name.start_offset)
            for o, start in zip(group, starts, strict=True)
        ]
    return sorted(out, key=lambda o: (o.start, o.key))


def _note(problems: list[Problem] | None, on_error: str, problem: Problem) -> None:
    if problems is not None:
        problems.append(problem)
    if on_error == "log":
        log.warning("%s", problem)
