"""What a bucket holds, told from object names alone: where its backups are, and per backup, topic and partition the
objects, bytes, offsets by name, chunk manifests, committed marks, pruned starts and snapshot records
(``kafka-s3 ls`` / ``kafka-s3 info``).

Pure: the caller lists (with delimiters to find the backups, then one listing of each backup's prefix) and reads the
few manifests this module names. A backup is a prefix (its ``topics.dir``) holding kafka-s3's ``_kafka-s3/``
metadata, or trees of objects named as a peer's layout (Confluent's and Lenses' ``<topic>/<partition>/``, DeviantArt's
``<yyyy-MM-dd>/``), told apart by :func:`kafka_s3.core.layouts.detection.detect`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_s3.core.layout import SIDE_SUFFIXES
from kafka_s3.core.manifest import COMPACTING, EXTENSION, MANIFEST_DIR, PARTITION_COUNT_DIR, TAIL
from kafka_s3.core.prune import PRUNED, iso
from kafka_s3.core.store import ObjectInfo

#: a Confluent or Lenses partition directory under a topic's: ``partition=3`` (the default partitioner) or ``3``
PARTITION_DIRECTORY = re.compile(r"^(partition=)?\d+$")
#: ``<topic>+<partition>+<offset><extension>`` (Confluent's names, kafka-s3's own); Lenses' ``<offset>[_..].<ext>``
CONFLUENT_NAME = re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)\+(?P<partition>\d+)\+(?P<offset>\d+)(?P<extension>\..+)$")
LENSES_NAME = re.compile(r"^(?P<offset>\d+)(_\d+_\d+)?(?P<extension>\..+)$")
#: DeviantArt's ``<yyyy-MM-dd>/<topic>-<partition %05d>-<offset %012d>.gz`` (and its ``.gz.index.json``)
DATED_DIRECTORY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DEVIANTART_NAME = re.compile(
    r"^(?P<topic>.+)-(?P<partition>\d{5,})-(?P<offset>\d{12,})(?P<extension>\.gz(\.index\.json)?)$"
)
DEVIANTART_INDEX = ".gz.index.json"
#: the snapshot series a kafka-s3 backup keeps beside its manifests (directory -> what ``info`` calls them)
SNAPSHOT_DIRECTORIES = {"consumer-groups": "consumer_groups", "topic-config": "topic_configs", "schemas": "schemas"}


def holds_manifests(children: Iterable[str]) -> bool:
    """Whether a prefix is a kafka-s3 backup's ``topics.dir``: its children include the ``_kafka-s3`` directory."""
    return MANIFEST_DIR in set(children)


def looks_like_topic(children: Iterable[str]) -> bool:
    """Whether a directory's children are a peer's partition directories (``partition=0``, ``0``): then its parent
    may be a backup's ``topics.dir`` (confirmed by detecting the layout of a few of its keys)."""
    return any(PARTITION_DIRECTORY.match(name) for name in children)


def looks_dated(children: Iterable[str]) -> bool:
    """Whether a directory's children are upload dates (DeviantArt's layout keeps its objects under them)."""
    return any(DATED_DIRECTORY.match(name) for name in children)


def _is_sidecar(extension: str) -> bool:
    if extension == DEVIANTART_INDEX:
        return True
    return any(extension == s or extension.startswith(s + ".") for s in SIDE_SUFFIXES)


@dataclass
class PartitionListing:
    """One partition as a listing of its backup tells it (no object read)."""

    objects: int = 0  # every object of the partition: data and sidecars
    bytes: int = 0
    data_objects: int = 0
    first_name_offset: int | None = None  # the smallest start offset a data object's name holds
    last_name_offset: int | None = None  # the largest
    newest_write: float = 0.0  # epoch seconds of the newest object
    manifest_starts: list[int] = field(default_factory=list)
    marks: list[int] = field(default_factory=list)  # chunks marked committed (``.tail``)
    pruned: int | None = None  # the recorded start (``.pruned``): offsets below it were pruned
    pruned_at: float = 0.0
    newest_mark: float = 0.0  # epoch seconds the newest committed mark was written: the last cycle's commit
    trees: set[str] = field(default_factory=set)  # the manifest trees (by extension) holding its chunks
    compacting: list[int] = field(default_factory=list)  # starts of merges kafka-s3 compact recorded, not finished

    def kept_manifests(self) -> list[int]:
        """The chunk starts from the pruned start on, ascending (below it: what an interrupted prune left)."""
        return sorted(s for s in self.manifest_starts if self.pruned is None or s >= self.pruned)

    def unfinished(self) -> list[int]:
        """Chunks beyond the newest committed mark: being uploaded, or left by a crash (their files may be
        missing; the next backup run completes them)."""
        kept = self.kept_manifests()
        if not self.marks:
            return kept
        newest = max(self.marks)
        return [s for s in kept if s > newest]


@dataclass
class BackupListing:
    """One backup's prefix, as one listing of it tells it."""

    root: str  # topics.dir ("" at the bucket root)
    delim: str = "/"
    partitions: dict[str, dict[int, PartitionListing]] = field(default_factory=dict)
    extensions: set[str] = field(default_factory=set)  # the data objects' extensions
    manifest_trees: set[str] = field(default_factory=set)  # the extensions kafka-s3's manifest trees name
    snapshots: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # topic -> kind -> times (ms)
    examples: dict[str, ObjectInfo] = field(default_factory=dict)  # extension -> its smallest data object

    def prefix(self) -> str:
        return self.root + self.delim if self.root else ""

    def partition(self, topic: str, partition: int) -> PartitionListing:
        return self.partitions.setdefault(topic, {}).setdefault(partition, PartitionListing())

    def add(self, info: ObjectInfo) -> None:
        """Note one object under the prefix."""
        parts = info.key[len(self.prefix()) :].split(self.delim)
        if parts[0] == MANIFEST_DIR:
            self._metadata(parts[1:], info)
        elif len(parts) >= 2:
            self._data(parts, info)

    def _metadata(self, parts: list[str], info: ObjectInfo) -> None:
        # <extension>/<topic>/<partition>/<start>.<kind> or <extension>/<topic>/<series>/<time><ext>
        if len(parts) != 4:
            return
        tree, topic, directory, name = parts
        self.manifest_trees.add("." + tree)
        stem, _, extension = name.partition(".")
        if directory in SNAPSHOT_DIRECTORIES and stem.isdigit():
            kind = SNAPSHOT_DIRECTORIES[directory]
            self.snapshots.setdefault(topic, {}).setdefault(kind, []).append(int(stem))
            return
        if directory == PARTITION_COUNT_DIR or not directory.isdigit() or not stem.isdigit():
            return
        held = self.partition(topic, int(directory))
        suffix = "." + extension
        if suffix == EXTENSION:
            held.manifest_starts.append(int(stem))
            held.trees.add(tree)
        elif suffix == TAIL:
            held.marks.append(int(stem))
            held.newest_mark = max(held.newest_mark, info.last_modified)
        elif suffix == PRUNED and (held.pruned is None or int(stem) >= held.pruned):
            held.pruned, held.pruned_at = int(stem), info.last_modified
        elif suffix == COMPACTING:
            held.compacting.append(int(stem))

    def _data(self, parts: list[str], info: ObjectInfo) -> None:
        topic, filename = parts[0], parts[-1]
        named = CONFLUENT_NAME.match(filename)
        dated = DEVIANTART_NAME.match(filename) if len(parts) == 2 and DATED_DIRECTORY.match(parts[0]) else None
        if named is not None:
            partition, offset, extension = int(named["partition"]), int(named["offset"]), named["extension"]
            topic = named["topic"]
        elif dated is not None:
            partition, offset, extension = int(dated["partition"]), int(dated["offset"]), dated["extension"]
            topic = dated["topic"]
        else:
            lenses = LENSES_NAME.match(filename)
            if lenses is None or len(parts) < 3 or not parts[-2].isdigit():
                return
            partition, offset, extension = int(parts[-2]), int(lenses["offset"]), lenses["extension"]
        held = self.partition(topic, partition)
        held.objects += 1
        held.bytes += info.size
        held.newest_write = max(held.newest_write, info.last_modified)
        if _is_sidecar(extension):
            return
        held.data_objects += 1
        self.extensions.add(extension)
        if extension not in self.examples or info.key < self.examples[extension].key:
            self.examples[extension] = info
        if held.first_name_offset is None or offset < held.first_name_offset:
            held.first_name_offset = offset
        if held.last_name_offset is None or offset > held.last_name_offset:
            held.last_name_offset = offset


# ---------------------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class PartitionSummary:
    """One partition of a backup: the offsets and record times it holds (from its first and last chunk manifests;
    for a backup without manifests, the offsets its objects' names hold), the pruned start, objects and bytes."""

    topic: str
    partition: int
    first_offset: int | None
    last_offset: int | None  # None: not known without reading data (no manifests)
    first_time: int | None  # epoch ms of the first and last record kept (None: unknown)
    last_time: int | None
    pruned_start: int | None  # offsets below it were removed by kafka-s3 prune
    objects: int
    bytes: int
    chunks: int = 0
    unfinished_chunks: tuple[int, ...] = ()
    last_object_offset: int | None = None  # the start offset of the newest data object by name (no manifests)
    last_write: float = 0.0  # epoch seconds of the newest object

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "last_object_offset": self.last_object_offset,
            "first_time": iso(self.first_time) if self.first_time is not None else None,
            "last_time": iso(self.last_time) if self.last_time is not None else None,
            "pruned_start": self.pruned_start,
            "chunks": self.chunks,
            "unfinished_chunks": list(self.unfinished_chunks),
            "objects": self.objects,
            "bytes": self.bytes,
            "last_write": iso(int(self.last_write * 1000)) if self.last_write else None,
        }


@dataclass(frozen=True)
class BackupEntry:
    """One backup of a bucket: where (``url``: ``s3://bucket/<topics.dir>``), its name when known, the layout and
    format, and its partitions."""

    url: str
    topics_dir: str
    name: str | None
    layout: str  # the ``restore.layout`` name: kafka-s3, confluent, lenses, deviantart
    layout_title: str
    format: str  # e.g. "JSON objects (.json)"; "" when no data object tells it
    envelope: bool | None  # whole records (store.envelope=true); None: not told
    partitions: tuple[PartitionSummary, ...]

    @property
    def topics(self) -> list[str]:
        return sorted({p.topic for p in self.partitions})

    @property
    def objects(self) -> int:
        return sum(p.objects for p in self.partitions)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "topics_dir": self.topics_dir,
            "name": self.name,
            "layout": self.layout,
            "format": self.format,
            "envelope": self.envelope,
            "topics": self.topics,
            "objects": self.objects,
            "bytes": self.bytes,
            "partitions": [p.to_dict() for p in self.partitions],
        }


def compaction_state(partitions: Mapping[tuple[str, int], PartitionListing]) -> str:
    """What ``info`` says of compaction: merges ``kafka-s3 compact`` recorded and did not finish (a crash: the next
    ``compact`` finishes them), else how many chunks the partitions hold (small ones are what it merges)."""
    open_merges = sorted((tp, start) for tp, held in partitions.items() for start in held.compacting)
    if open_merges:
        named = ", ".join(f"{t}[{p}] from offset {start}" for (t, p), start in open_merges[:5])
        more = f" and {len(open_merges) - 5} more" if len(open_merges) > 5 else ""
        return f"{len(open_merges)} merge(s) not finished ({named}{more}): kafka-s3 compact finishes them"
    chunks = [len(held.kept_manifests()) for held in partitions.values() if held.manifest_starts]
    if not chunks:
        return "no chunk manifests (not a kafka-s3 backup): kafka-s3 compact does not apply"
    sizes = sum(held.bytes for held in partitions.values() if held.manifest_starts) // max(1, sum(chunks))
    return (
        f"no merge in progress; {sum(chunks)} chunk(s) in {len(chunks)} partition(s), {sizes:,} bytes each on "
        "average (kafka-s3 compact --dry-run shows what would merge)"
    )


@dataclass(frozen=True)
class BackupDetails:
    """``kafka-s3 info``: a backup in depth — its catalogue entry, the snapshot records it holds per topic and kind
    (times, ascending), its last cycle (the newest committed chunk's time) and the chunks not committed yet."""

    entry: BackupEntry
    snapshots: Mapping[str, Mapping[str, tuple[int, ...]]]  # topic -> kind (consumer groups, ...) -> times (ms)
    last_cycle: float | None  # epoch seconds: the newest object written
    compaction: str = ""  # merges in progress, and the chunks per partition (:func:`compaction_state`)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.entry.to_dict(),
            "snapshots": {
                topic: {kind: [iso(t) for t in times] for kind, times in kinds.items()}
                for topic, kinds in sorted(self.snapshots.items())
            },
            "last_cycle": iso(int(self.last_cycle * 1000)) if self.last_cycle else None,
            "unfinished_chunks": sum(len(p.unfinished_chunks) for p in self.entry.partitions),
            "compaction": self.compaction,
        }
