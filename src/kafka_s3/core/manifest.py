"""Chunk manifests: the bucket's own record of which offsets each committed chunk covers.

A chunk (all files a topic-partition commits together) is written in two steps: first its manifest, created
conditionally, then its files. The manifest is therefore the chunk's commit intent — once it exists, every later run
either reproduces exactly that chunk or re-creates its missing files; a run that would cut the offsets differently
(a ``--once`` partial flush followed by more data, a wall-clock rotation) defers to the manifest. That is what keeps
"never a different object under an existing name" true, and what lets a backup resume from the bucket alone when
its consumer-group offsets are lost.

Manifests live under ``<topics.dir>/_kafka-s3/<extension>/<topic>/<partition>/<startOffset>.chunk``; the ``.chunk``
extension keeps them invisible to format readers (Confluent's source ignores other extensions). Their content is
deterministic JSON (no wall-clock values), so a re-run writes identical bytes. Next to them,
``<topic>/partition-count/<n>.count`` (``<n>.json`` in earlier versions, still read) records each partition count the
backup saw, so a restore into a new cluster creates the topic with the source's partition count even when its last
partitions hold no records.

Each manifest also records ``follows``: the end offset of the chunk the backup committed before it (absent for the
backup's first chunk). An offset gap between chunks may be compaction or transaction markers; a ``follows`` that no
manifest ends at means a whole chunk was lost with its manifest. A replay writes the same link: the chunks before it
are the same manifests.

Once every file of a chunk is complete, and before the backup commits its consumer group past it, it leaves an
empty ``<startOffset>.tail`` mark next to the chunk's manifest: the partition's committed end, as the bucket knows
it. A restore that finds a mark without its manifest knows the tail of the partition was deleted, and a manifest
beyond the newest mark may belong to a chunk still being uploaded (manifest first, files next) rather than to a
damaged one.

A ``<startOffset>.pruned`` record beside them (:mod:`kafka_s3.core.prune`) is the partition's start after a
``kafka-s3 prune``: chunks and marks below it are what an interrupted prune left, no part of the backup.

A ``<startOffset>.compacting`` record (:class:`Compaction`; what is merged and why: :mod:`kafka_s3.core.compact`) is a
``kafka-s3 compact`` merge in progress: readers take the merged chunk it names in place of every chunk of its range.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import json
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_s3.core.errors import FormatError, ObjectExistsError
from kafka_s3.core.prune import PRUNED, PrunedStart
from kafka_s3.core.snapshots import R, Series, pick
from kafka_s3.core.store import Store

EXTENSION = ".chunk"
# The object metadata key (S3 user metadata) under which each file of a chunk names its manifest's key
OBJECT_METADATA = "kafka-s3-manifest"
TAIL = ".tail"
COMPACTING = ".compacting"  # a compaction record (kafka-s3 compact's merge in progress: kafka_s3.core.compact)
COMPACTION_VERSION = 1
PAD = 20
MANIFEST_DIR = "_kafka-s3"
PARTITION_COUNT_DIR = "partition-count"
# Not ".json": no metadata object ends in a data format's extension (a *.json glob must see data only).
PARTITION_COUNT_EXTENSIONS = (".count", ".json")  # written, then read too (earlier versions)


def manifest_root(topics_dir: str, object_extension: str, delim: str = "/") -> str:
    """One manifest tree per object extension: backups of a topic in two formats under one prefix are two
    independent object sets (as the objects' names say), not two cuts of one."""
    return delim.join(p for p in (topics_dir.strip(delim), MANIFEST_DIR, object_extension.lstrip(".")) if p)


@dataclass(frozen=True)
class FileEntry:
    key: str
    kind: str  # data | keys | headers | index
    records: int
    first_offset: int
    last_offset: int
    bytes: int
    directory: str = ""
    ambiguous: int = 0  # records a reader cannot give back one by one (ByteArray: separator in a value, tombstones)
    # Earliest and latest record time (epoch ms) of a data file, so that readers asking for times skip the files
    # outside them; absent (None) where no record has a timestamp, and in manifests written before they were recorded.
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    # Offsets of the records of a tombstone file (behavior.on.null.values=write: keys and headers sidecars without a
    # value object), which are not contiguous: a restore puts each back at its place among the values.
    offsets: tuple[int, ...] | None = None

    @property
    def tombstones(self) -> bool:
        return self.offsets is not None


# left out when None: manifests without them keep the bytes earlier versions wrote
_OPTIONAL = ("first_timestamp", "last_timestamp", "offsets")


def _entry_dict(entry: FileEntry) -> dict[str, Any]:
    doc = {k: v for k, v in asdict(entry).items() if v is not None or k not in _OPTIONAL}
    if entry.offsets is not None:
        doc["offsets"] = list(entry.offsets)
    return doc


@dataclass(frozen=True)
class Manifest:
    topic: str
    partition: int
    start: int  # offset of the chunk's first record
    end: int  # offset of the chunk's last record
    files: tuple[FileEntry, ...] = field(default_factory=tuple)
    version: int = 1
    # End offset of the chunk the backup committed before this one in the partition (None: the first chunk of the
    # backup, and manifests written before it was recorded — left out of the bytes then). It chains the chunks: an
    # offset gap between two chunks may be compaction or transaction markers, but a chunk whose predecessor's end
    # matches no manifest means a whole chunk, manifest included, was lost.
    follows: int | None = None
    # Where the records came from, to refuse another log under the same name (the topic deleted and re-created, or
    # another cluster): the source topic's id (None: the broker gives none, or manifests written before it was
    # recorded) and digests of the chunk's first and last record (:func:`kafka_s3.core.records.record_checksum`).
    source_topic_id: str | None = None
    first_record: str | None = None
    last_record: str | None = None

    @property
    def records(self) -> int:
        """Records of the chunk: its data objects', and its tombstone files' (counted by their keys sidecars)."""
        return sum(f.records for f in self.files if f.kind == "data" or (f.kind == "keys" and f.tombstones))

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["files"] = [_entry_dict(f) for f in self.files]
        for name in ("follows", "source_topic_id", "first_record", "last_record"):
            if doc[name] is None:  # left out: manifests without them keep the bytes earlier versions wrote
                del doc[name]
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Manifest:
        doc = dict(doc)
        files = tuple(
            FileEntry(**{**f, "offsets": tuple(f["offsets"])}) if f.get("offsets") is not None else FileEntry(**f)
            for f in doc.pop("files")
        )
        return cls(files=files, **doc)

    def to_bytes(self) -> bytes:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes, key: str = "") -> Manifest:
        try:
            return cls.from_dict(json.loads(data))
        except (ValueError, TypeError, KeyError) as exc:
            raise FormatError(f"unreadable chunk manifest: {exc}", object_key=key) from None

    def same_cut(self, other: Manifest) -> bool:
        """True when both describe the same offsets (the file bytes then agree, by determinism)."""
        return (self.topic, self.partition, self.start, self.end) == (
            other.topic,
            other.partition,
            other.start,
            other.end,
        )


@dataclass(frozen=True)
class PartitionManifests:
    """What the bucket says about one partition: its chunks in offset order and its committed end."""

    topic: str
    partition: int
    chunks: tuple[Manifest, ...] = ()
    committed_start: int | None = None  # start offset of the newest chunk marked committed (``.tail``)
    marked_starts: tuple[int, ...] = ()  # every chunk start with a committed mark
    keys: tuple[str, ...] = ()  # the manifests' object keys, in the order of ``chunks`` (when known)
    # The partition's recorded start (``kafka-s3 prune``: :mod:`kafka_s3.core.prune`): chunks and marks below it are
    # left out of ``chunks`` and ``marked_starts`` (what an interrupted prune left is no part of the backup).
    pruned: PrunedStart | None = None


@dataclass(frozen=True)
class ManifestStore:
    """Where manifests of one backup live, and how to read and create them."""

    store: Store
    root: str  # e.g. "topics/_kafka-s3"
    delim: str = "/"

    def prefix(self, topic: str, partition: int) -> str:
        return f"{self.root}{self.delim}{topic}{self.delim}{partition}{self.delim}"

    def key(self, topic: str, partition: int, start: int) -> str:
        return f"{self.prefix(topic, partition)}{start:0{PAD}d}{EXTENSION}"

    def get(self, topic: str, partition: int, start: int) -> Manifest | None:
        key = self.key(topic, partition, start)
        if self.store.head(key) is None:
            return None
        return Manifest.from_bytes(self.store.get(key), key)

    def create(self, manifest: Manifest) -> Manifest:
        """Create the manifest; if one exists for the same start, return the existing one (the caller compares)."""
        key = self.key(manifest.topic, manifest.partition, manifest.start)
        try:
            self.store.put(key, manifest.to_bytes())
            return manifest
        except ObjectExistsError:
            return Manifest.from_bytes(self.store.get(key), key)

    def latest(self, topic: str, partition: int) -> Manifest | None:
        """The manifest with the highest start offset (listing the partition's manifests)."""
        best = None
        for info in self.store.list(self.prefix(topic, partition)):
            name = info.key.rsplit(self.delim, 1)[-1]
            if name.endswith(EXTENSION) and name[: -len(EXTENSION)].isdigit():
                start = int(name[: -len(EXTENSION)])
                if best is None or start > best:
                    best = start
        return None if best is None else self.get(topic, partition, best)

    def mark_committed(self, topic: str, partition: int, start: int) -> None:
        """Leave the partition's committed-end mark at chunk ``start`` (idempotent, one empty object per mark)."""
        key = f"{self.prefix(topic, partition)}{start:0{PAD}d}{TAIL}"
        with contextlib.suppress(ObjectExistsError):
            self.store.put(key, b"")

    def topics(self) -> list[str]:
        """The topics this backup holds manifests or records of (the first names under the manifest root)."""
        return self.store.children(f"{self.root}{self.delim}", self.delim)

    def load_topic(self, topic: str, cache: dict[str, Manifest] | None = None) -> dict[int, PartitionManifests]:
        """Every partition's manifests and committed mark, from one listing of the topic's manifest tree (manifests
        are fetched in parallel). Partitions without manifests are absent. ``cache``: manifests already read (they
        never change: created once, conditionally), filled with the ones read now."""
        base = f"{self.root}{self.delim}{topic}{self.delim}"
        chunk_keys: dict[int, list[str]] = {}
        marks: dict[int, list[int]] = {}
        pruned: dict[int, PrunedStart] = {}
        compacting: dict[int, list[str]] = {}  # compaction records (kafka-s3 compact's merges in progress)
        etags: dict[str, str] = {}
        for info in self.store.list(base):
            parts = info.key[len(base) :].split(self.delim)
            if len(parts) != 2 or not parts[0].isdigit():
                continue  # partition-count records and anything else
            partition, name = int(parts[0]), parts[1]
            stem, dot, extension = name.partition(".")
            if not stem.isdigit():
                continue
            if "." + extension == EXTENSION:
                chunk_keys.setdefault(partition, []).append(info.key)
                etags[info.key] = info.etag
            elif "." + extension == TAIL:
                marks.setdefault(partition, []).append(int(stem))
            elif "." + extension == PRUNED and int(stem) >= (pruned[partition].offset if partition in pruned else 0):
                pruned[partition] = PrunedStart(int(stem), info.last_modified)
            elif "." + extension == COMPACTING:
                compacting.setdefault(partition, []).append(info.key)
        for partition, start in pruned.items():  # what an interrupted prune left below the start is not read
            chunk_keys[partition] = [k for k in chunk_keys.get(partition, []) if self._start_of(k) >= start.offset]
            marks[partition] = [m for m in marks.get(partition, []) if m >= start.offset]
        cache = {} if cache is None else cache
        keys = [k for ks in chunk_keys.values() for k in ks]
        for key in [k for k in keys if k in cache and not _same_bytes(cache[k], etags.get(k, ""))]:
            del cache[key]  # re-created since it was read: a merged chunk's manifest (kafka-s3 compact)
        new = [k for k in keys if k not in cache]
        with ThreadPoolExecutor(max_workers=min(16, max(1, len(new)))) as pool:
            cache.update(zip(new, pool.map(lambda k: Manifest.from_bytes(self.store.get(k), k), new), strict=True))
        loaded = [cache[k] for k in keys]
        by_partition: dict[int, list[tuple[Manifest, str]]] = {}
        for manifest, key in zip(loaded, keys, strict=True):
            by_partition.setdefault(manifest.partition, []).append((manifest, key))
        if compacting:
            self._supersede(compacting, pruned, by_partition, marks)
        ordered = {p: sorted(pairs, key=lambda pair: pair[0].start) for p, pairs in by_partition.items()}
        return {
            p: PartitionManifests(
                topic,
                p,
                tuple(m for m, _ in ordered.get(p, [])),
                max(marks[p]) if marks.get(p) else None,
                tuple(sorted(marks.get(p, []))),
                tuple(k for _, k in ordered.get(p, [])),
                pruned.get(p),
            )
            for p in sorted(set(by_partition) | {p for p, found in marks.items() if found} | set(pruned))
        }

    def _supersede(
        self,
        compacting: dict[int, list[str]],
        pruned: dict[int, PrunedStart],
        by_partition: dict[int, list[tuple[Manifest, str]]],
        marks: dict[int, list[int]],
    ) -> None:
        """Readers take a recorded merge's chunk in place of the chunks of its range (:mod:`kafka_s3.core.compact`);
        a record below a recorded start (pruned meanwhile) is no part of the backup."""
        for partition, record_keys in compacting.items():
            start = pruned[partition].offset if partition in pruned else 0
            records = [
                (Compaction.from_bytes(self.store.get(k), k), k) for k in record_keys if self._start_of(k) >= start
            ]
            chunks, kept_marks = superseding(by_partition.get(partition, []), marks.get(partition, []), records)
            if chunks:
                by_partition[partition] = chunks
            marks[partition] = kept_marks

    def _start_of(self, key: str) -> int:
        return int(key.rsplit(self.delim, 1)[-1].partition(".")[0])

    def _count_prefix(self, topic: str) -> str:
        return f"{self.root}{self.delim}{topic}{self.delim}{PARTITION_COUNT_DIR}{self.delim}"

    def note_partition_count(self, topic: str, count: int) -> None:
        """Record that ``topic`` had ``count`` partitions (idempotent: one immutable object per count seen)."""
        with contextlib.suppress(ObjectExistsError):
            self.store.put(
                f"{self._count_prefix(topic)}{count}{PARTITION_COUNT_EXTENSIONS[0]}",
                json.dumps({"topic": topic, "partitions": count}).encode(),
            )

    def partition_count(self, topic: str) -> int | None:
        """The highest partition count a backup of ``topic`` recorded, or ``None`` (e.g. objects from another tool)."""
        names = [info.key.rsplit(self.delim, 1)[-1] for info in self.store.list(self._count_prefix(topic))]
        counts = [n.partition(".")[0] for n in names if n.endswith(PARTITION_COUNT_EXTENSIONS)]
        numbers = [int(c) for c in counts if c.isdigit()]
        return max(numbers) if numbers else None

    # ---------------------------------------------------------------------------------------- time-stamped records
    def _series_prefix(self, series: Series[Any], topic: str) -> str:
        return f"{self.root}{self.delim}{topic}{self.delim}{series.directory}{self.delim}"

    def note(self, series: Series[R], record: R) -> bool:
        """Create ``record``'s object in its series (never replacing one: a record of the same millisecond is kept).
        ``False`` when one existed already."""
        try:
            self.store.put(f"{self._series_prefix(series, record.topic)}{series.name(record.at)}", record.to_bytes())
            return True
        except ObjectExistsError:
            return False

    def times(self, series: Series[Any], topic: str) -> list[int]:
        """Times of the topic's records of ``series``, ascending."""
        names = [info.key.rsplit(self.delim, 1)[-1] for info in self.store.list(self._series_prefix(series, topic))]
        return sorted(t for t in (series.time(n) for n in names) if t is not None)

    def load(self, series: Series[R], topic: str, at: int) -> R:
        key = f"{self._series_prefix(series, topic)}{series.name(at)}"
        return series.decode(self.store.get(key), key)

    def newest(self, series: Series[R], topic: str, until: int | None = None) -> R | None:
        """The topic's newest record of ``series`` (at or before ``until`` when given), if any."""
        at = pick(self.times(series, topic), until)
        return None if at is None else self.load(series, topic, at)

    # ---------------------------------------------------------------------------------------- resume checks
    def starts(self, topic: str, partition: int) -> list[int]:
        """Start offsets of the partition's manifests, ascending (one listing). Chunks a compaction record covers are
        left out (a merge in progress, below the partition's committed end: never where a backup resumes)."""
        found, pruned, compacting = [], 0, []
        for info in self.store.list(self.prefix(topic, partition)):
            name = info.key.rsplit(self.delim, 1)[-1]
            if name.endswith(EXTENSION) and name[: -len(EXTENSION)].isdigit():
                found.append(int(name[: -len(EXTENSION)]))
            elif name.endswith(PRUNED) and name[: -len(PRUNED)].isdigit():
                pruned = max(pruned, int(name[: -len(PRUNED)]))
            elif name.endswith(COMPACTING):
                compacting.append(info.key)
        if compacting:
            merges = [Compaction.from_bytes(self.store.get(k), k) for k in compacting]
            found = [s for s in found if not any(c.covers(s) for c in merges)]
        return sorted(s for s in found if s >= pruned)  # below a recorded start: what an interrupted prune left

    def missing_files(self, manifest: Manifest, existing: dict[str, set[str]] | None = None) -> list[str]:
        """Keys of ``manifest``'s files that are not in the store. ``existing`` caches one listing per directory of
        files (directory prefix -> keys), so checking many manifests of one partition lists each directory once."""
        existing = {} if existing is None else existing
        missing = []
        for entry in manifest.files:
            directory = entry.key.rsplit(self.delim, 1)[0] + self.delim if self.delim in entry.key else ""
            if directory not in existing:
                existing[directory] = {info.key for info in self.store.list(directory)}
            if entry.key not in existing[directory]:
                missing.append(entry.key)
        return missing

    def resume_point(self, topic: str, partition: int) -> tuple[Manifest, list[str]] | None:
        """Where a backup without committed offsets resumes: the newest manifest whose predecessors are all
        complete (every file they name exists), with the files it misses itself. Chunk files complete in the
        background after their manifest is created, so after a crash the newest manifests may stand on chunks
        whose files never arrived; resuming from the first incomplete chunk re-creates them (the chunks after it
        are replayed from their manifests). Reads every manifest of the partition: it runs only when the consumer
        group has no offsets. ``None`` when the partition has no manifest."""
        starts = self.starts(topic, partition)
        existing: dict[str, set[str]] = {}
        for start in starts:
            manifest = self.get(topic, partition, start)
            if manifest is None:  # deleted while we looked: the listing is stale
                continue
            missing = self.missing_files(manifest, existing)
            if missing or start == starts[-1]:
                return manifest, missing
        return None


def _same_bytes(manifest: Manifest, etag: str) -> bool:
    """Whether a listed manifest still holds the bytes of ``manifest`` (read earlier), as far as its ETag tells: the
    MD5 of a single-part upload; any other ETag (SSE-KMS, another store) is taken for the same."""
    if len(etag) != 32 or any(c not in "0123456789abcdef" for c in etag):
        return True
    return hashlib.md5(manifest.to_bytes(), usedforsecurity=False).hexdigest() == etag


# ---------------------------------------------------------------------------------------------------- compaction
@dataclass(frozen=True)
class Compaction:
    """One merge in progress: the chunks ``replaced`` (offsets ``start..end``), the merged chunk(s) as ``staged``
    (files under the staging tree: what readers take while the record exists) and as ``final`` (the same files
    under their names in the layout, the manifests that remain); ``at``: when it was recorded (epoch ms)."""

    topic: str
    partition: int
    start: int
    end: int
    replaced: tuple[Manifest, ...]
    staged: tuple[Manifest, ...]
    final: tuple[Manifest, ...]
    at: int = 0
    version: int = COMPACTION_VERSION

    @property
    def records(self) -> int:
        return sum(m.records for m in self.replaced)

    def covers(self, start: int) -> bool:
        return self.start <= start <= self.end

    def replaced_keys(self) -> set[str]:
        """Every file of the originals, and every file the merged chunk has under its final names."""
        return {f.key for m in self.replaced + self.final for f in m.files}

    def to_bytes(self) -> builtins.bytes:
        doc = {
            "topic": self.topic,
            "partition": self.partition,
            "start": self.start,
            "end": self.end,
            "at": self.at,
            "version": self.version,
            "replaced": [m.to_dict() for m in self.replaced],
            "staged": [m.to_dict() for m in self.staged],
            "final": [m.to_dict() for m in self.final],
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: builtins.bytes, key: str = "") -> Compaction:
        try:
            doc = json.loads(data)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            if int(doc.get("version", 0)) > COMPACTION_VERSION:
                raise ValueError(f"version {doc['version']} is newer than this kafka-s3 reads ({COMPACTION_VERSION})")
            return cls(
                doc["topic"],
                int(doc["partition"]),
                int(doc["start"]),
                int(doc["end"]),
                tuple(Manifest.from_dict(m) for m in doc["replaced"]),
                tuple(Manifest.from_dict(m) for m in doc["staged"]),
                tuple(Manifest.from_dict(m) for m in doc["final"]),
                int(doc.get("at", 0)),
                int(doc["version"]),
            )
        except (ValueError, TypeError, KeyError) as exc:
            raise FormatError(f"unreadable compaction record: {exc}", object_key=key) from None


def record_name(start: int) -> str:
    """The name of the compaction record of a merge starting at ``start``."""
    return f"{start:0{PAD}d}{COMPACTING}"


def record_start(name: str) -> int | None:
    """The start offset a record's name holds (``None``: not a compaction record)."""
    if not name.endswith(COMPACTING):
        return None
    stem = name[: -len(COMPACTING)]
    return int(stem) if stem.isdigit() else None


def superseding(
    chunks: Iterable[tuple[Manifest, str]], marks: Iterable[int], compactions: Iterable[tuple[Compaction, str]]
) -> tuple[list[tuple[Manifest, str]], list[int]]:
    """A partition's chunks (manifest and key) and committed marks as readers take them while merges are recorded:
    every chunk starting in a record's range gives way to the record's staged chunk(s) (keyed by the record's key),
    and marks inside the range other than at a staged chunk's start are left out. Sorted by start."""
    held = list(compactions)
    if not held:
        return sorted(chunks, key=lambda pair: pair[0].start), sorted(marks)
    kept = [(m, k) for m, k in chunks if not any(c.covers(m.start) for c, _ in held)]
    kept += [(m, key) for c, key in held for m in c.staged]
    starts = {m.start for c, _ in held for m in c.staged}
    kept_marks = [s for s in marks if s in starts or not any(c.covers(s) for c, _ in held)]
    return sorted(kept, key=lambda pair: pair[0].start), sorted(kept_marks)
