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
from kafka_s3.core.layout import ObjectName
from kafka_s3.core.layouts.lenses import assign_starts, with_start
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
    whole = getattr(layout, "lists_whole_prefix", False)  # a peer's layout whose directories do not name topics
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
    for name, size in data:
        base = name.key[: len(name.key) - len(name.extension)]
        tp = (name.topic, name.partition)
        partitions.setdefault(tp, SourcePartition(*tp)).objects.append(
            BackupObject(
                name, size, sidecars.get((base, "keys")), sidecars.get((base, "headers")), sidecars.get((base, "index"))
            )
        )
    for part in partitions.values():
        part.objects.sort(key=lambda o: (o.start, o.key))
        if getattr(layout, "names_hold_last_offset", False):
            part.objects = _lenses_spans(part.objects)
    return dict(sorted(partitions.items()))


def _lenses_spans(objects: list[BackupObject]) -> list[BackupObject]:
    """Lenses' names hold each object's last offset: keep it as ``last_offset`` and start each object after the one
    before it in its directory (:func:`kafka_s3.core.layouts.lenses.assign_starts`)."""
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
