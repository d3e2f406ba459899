"""Is the backup whole? Checks a restore (and ``kafka-s3 verify``) runs before anything is produced.

For buckets kafka-s3 wrote, the chunk manifests are the source of truth: every file a manifest names must be listed
with the size the manifest recorded, chunks must not overlap, sidecars must hold as many records as their data
object, and every chunk the backup marked committed (``.tail`` marks, see :mod:`kafka_s3.core.manifest`) must still
have its manifest, and every chunk a manifest says it follows (``follows``: where its predecessor ended) must
still be there — so a deleted first, middle or last object, or a whole chunk lost with its manifest, is found, not
skipped. A chunk beyond the newest mark
whose files are not all there yet may be one a running backup is still uploading: it is left out, and said so.

For buckets another tool wrote (no manifests) names give start offsets only: the order is checked, and the plan says
that continuity cannot be verified (an offset gap may be compaction or a transaction marker, not a loss).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from kafka_s3.core.errors import BackupIncomplete
from kafka_s3.core.manifest import Manifest, PartitionManifests
from kafka_s3.pipelines.read.discovery import BackupObject, SourcePartition
from kafka_s3.pipelines.read.planning import HIGH, Ranges

if TYPE_CHECKING:
    from kafka_s3.core.store import Store
    from kafka_s3.pipelines.read.plugins import ReadPlugins


class Kind(StrEnum):
    MISSING = "missing"  # a file a manifest names, or a committed chunk's manifest, is gone
    TRUNCATED = "truncated"  # a file's size differs from the manifest's
    OVERLAP = "overlap"  # two chunks (or a stray object and a chunk) cover the same offsets
    COUNTS = "counts"  # a sidecar and its data object (or an object and its manifest) disagree on records
    UNDECODABLE = "undecodable"  # --verify-deep / verify --deep: an object does not decode, or its offsets are wrong
    IN_PROGRESS = "in progress"  # a chunk beyond the committed end, still uploading: left out
    UNVERIFIABLE = "unverifiable"  # what cannot be checked (foreign objects): said, not an error


BLOCKING = frozenset({Kind.MISSING, Kind.TRUNCATED, Kind.OVERLAP, Kind.COUNTS, Kind.UNDECODABLE})


@dataclass(frozen=True)
class Finding:
    kind: Kind
    topic: str
    partition: int
    first: int | None  # the offsets affected (None when unknown)
    last: int | None
    keys: tuple[str, ...]
    message: str

    @property
    def blocking(self) -> bool:
        return self.kind in BLOCKING

    @property
    def offsets(self) -> str:
        if self.first is None:
            return "offsets unknown" if self.last is None else f"offsets ..{self.last}"
        return f"offsets {self.first}..{'' if self.last is None else self.last}"

    def __str__(self) -> str:
        keys = f" [{', '.join(self.keys)}]" if self.keys else ""
        return f"{self.topic}[{self.partition}] {self.offsets}: {self.kind.value}: {self.message}{keys}"

    def to_dict(self) -> dict[str, object]:
        return {**dataclasses.asdict(self), "kind": self.kind.value, "blocking": self.blocking}


@dataclass
class PartitionCheck:
    """One source partition as the checks see it: what is there, and what is wrong."""

    topic: str
    partition: int
    objects: int = 0
    records: int | None = None  # known from manifests only
    first: int | None = None
    last: int | None = None
    verified: bool = False  # manifests back it
    findings: list[Finding] = field(default_factory=list)
    excluded: set[str] = field(default_factory=set)  # data object keys a restore must leave out

    @property
    def blocking(self) -> list[Finding]:
        return [f for f in self.findings if f.blocking]

    def to_dict(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "objects": self.objects,
            "records": self.records,
            "first_offset": self.first,
            "last_offset": self.last,
            "verified": self.verified,
            "problems": [f.to_dict() for f in self.findings],
        }


def incomplete(findings: list[Finding], hint: str = "") -> BackupIncomplete:
    lines = "\n".join(f"  {f}" for f in findings)
    return BackupIncomplete(
        f"the backup is not whole ({len(findings)} problem(s)); nothing was produced:\n{lines}{hint}", findings
    )


def check_partition(
    topic: str,
    partition: int,
    part: SourcePartition | None,
    manifests: PartitionManifests | None,
    sizes: dict[str, int],
) -> PartitionCheck:
    """The findings of one source partition (``part``: its listed objects; ``sizes``: every listed key's size)."""
    objects = list(part.objects) if part else []
    check = PartitionCheck(topic, partition, objects=len(objects))
    if objects:
        check.first = objects[0].start
    if manifests is None or not (manifests.chunks or manifests.marked_starts):
        if objects:
            check.findings.append(
                Finding(
                    Kind.UNVERIFIABLE,
                    topic,
                    partition,
                    None,
                    None,
                    (),
                    "no manifests (objects written by another tool): start offsets and order are checked, continuity "
                    "cannot be verified (an offset gap may be compaction or transaction markers)",
                )
            )
        return check
    check.verified = True
    chunks = list(manifests.chunks)
    committed = manifests.committed_start
    note = check.findings.append
    starts = {m.start for m in chunks}
    for start in manifests.marked_starts:
        if start not in starts:
            later = [m.start for m in chunks if m.start > start]
            note(
                Finding(
                    Kind.MISSING,
                    topic,
                    partition,
                    start,
                    later[0] - 1 if later else None,
                    (),
                    f"the backup committed a chunk at offset {start} but its manifest is gone: its objects were "
                    "deleted",
                )
            )
    known = {f.key for m in chunks for f in m.files}
    _check_chain(check, manifests, [obj.start for obj in objects if obj.key not in known])
    previous: Manifest | None = None
    for manifest in chunks:
        if previous is not None and manifest.start <= previous.end:
            note(
                Finding(
                    Kind.OVERLAP,
                    topic,
                    partition,
                    manifest.start,
                    min(manifest.end, previous.end),
                    tuple(f.key for f in previous.files + manifest.files if f.kind == "data"),
                    f"chunks {previous.start}..{previous.end} and {manifest.start}..{manifest.end} overlap",
                )
            )
        previous = manifest
        _check_chunk(check, manifest, sizes, committed)
    for obj in objects:
        if obj.key in known:
            continue
        inside = [m for m in chunks if m.start <= obj.start <= m.end]
        if inside:
            note(
                Finding(
                    Kind.OVERLAP,
                    topic,
                    partition,
                    obj.start,
                    inside[0].end,
                    (obj.key,),
                    f"object is in no manifest but starts inside chunk {inside[0].start}..{inside[0].end}: its records "
                    "would be restored twice",
                )
            )
        else:
            note(
                Finding(
                    Kind.UNVERIFIABLE,
                    topic,
                    partition,
                    obj.start,
                    None,
                    (obj.key,),
                    "object is in no manifest (written by another tool?): restored, its contents unverified",
                )
            )
    kept = [m for m in chunks if not ({f.key for f in m.files if f.kind == "data"} & check.excluded)]
    if kept:
        check.first = min(check.first if check.first is not None else kept[0].start, kept[0].start)
        check.last = kept[-1].end
        check.records = sum(m.records for m in kept)
    return check


def _check_chain(check: PartitionCheck, manifests: PartitionManifests, strays: list[int]) -> None:
    """Each manifest names the end of the chunk committed before it (``follows``): no chunk ending there means that
    chunk was lost with its manifest (an offset gap alone may be compaction or transaction markers, not a loss).
    ``strays``: start offsets of listed objects no manifest names — one starting in the lost chunk's offsets is that
    chunk's object whose manifest alone is gone: restored, noted unverifiable (as any object in no manifest)."""
    chunks = manifests.chunks
    ends = {m.end for m in chunks}
    reported = [(f.first, f.last) for f in check.findings if f.kind is Kind.MISSING]
    for index, manifest in enumerate(chunks):
        follows = manifest.follows
        if follows is None or follows in ends:
            continue
        if any(
            first is not None and first <= follows and (last is None or follows <= last) for first, last in reported
        ):
            continue  # a committed mark without its manifest already names these offsets
        before = [m.end for m in chunks if m.end < follows]
        first = before[-1] + 1 if before else None
        if any((first is None or first <= start) and start <= follows for start in strays):
            continue
        key = manifests.keys[index] if index < len(manifests.keys) else ""
        check.findings.append(
            Finding(
                Kind.MISSING,
                check.topic,
                check.partition,
                first,
                follows,
                (key,) if key else (),
                f"chunk {manifest.start}..{manifest.end} follows a chunk ending at offset {follows}, and no manifest "
                "of the partition ends there: that chunk was deleted with its manifest",
            )
        )
        reported.append((first, follows))


def _check_chunk(check: PartitionCheck, manifest: Manifest, sizes: dict[str, int], committed: int | None) -> None:
    topic, partition = check.topic, check.partition
    missing = [f.key for f in manifest.files if f.key not in sizes]
    resized = [f for f in manifest.files if f.key in sizes and sizes[f.key] != f.bytes]
    data_keys = {f.key for f in manifest.files if f.kind == "data"}
    if missing and committed is not None and manifest.start > committed:
        check.findings.append(
            Finding(
                Kind.IN_PROGRESS,
                topic,
                partition,
                manifest.start,
                manifest.end,
                tuple(missing),
                "chunk beyond the backup's committed end, not all uploaded yet (a running backup?): not restored",
            )
        )
        check.excluded |= data_keys
        return
    if missing:
        check.findings.append(
            Finding(Kind.MISSING, topic, partition, manifest.start, manifest.end, tuple(missing), "object(s) missing")
        )
        check.excluded |= data_keys
    for entry in resized:
        check.findings.append(
            Finding(
                Kind.TRUNCATED,
                topic,
                partition,
                manifest.start,
                manifest.end,
                (entry.key,),
                f"holds {sizes[entry.key]} bytes, the manifest recorded {entry.bytes}",
            )
        )
        check.excluded |= data_keys
    data = [f for f in manifest.files if f.kind == "data"]
    for entry in manifest.files:
        if (
            entry.kind in ("keys", "headers")
            and not entry.tombstones  # a tombstone file's sidecars have no data object
            and data
            and entry.records != sum(d.records for d in data if d.directory == entry.directory)
        ):
            check.findings.append(
                Finding(
                    Kind.COUNTS,
                    topic,
                    partition,
                    manifest.start,
                    manifest.end,
                    (entry.key,),
                    f"{entry.kind} sidecar holds {entry.records} records, its data object "
                    f"{sum(d.records for d in data if d.directory == entry.directory)}",
                )
            )
            check.excluded |= data_keys


def check_backup(
    partitions: dict[tuple[str, int], SourcePartition],
    manifests: dict[str, dict[int, PartitionManifests]],
    sizes: dict[str, int],
) -> dict[tuple[str, int], PartitionCheck]:
    """Every source partition's check: partitions with objects and partitions only the manifests know about."""
    tps = set(partitions) | {(t, p) for t, by_p in manifests.items() for p in by_p}
    return {
        tp: check_partition(tp[0], tp[1], partitions.get(tp), manifests.get(tp[0], {}).get(tp[1]), sizes)
        for tp in sorted(tps)
    }


def with_records(partitions: dict[tuple[str, int], SourcePartition], manifests: Iterable[PartitionManifests]) -> None:
    """Give each listed data object the record count, last offset and record-time span its manifest recorded
    (sidecar counts are checked against them before a record of the object is produced; offset bounds of plain
    formats need them; readers asking for offsets or times choose objects by them)."""
    known = {f.key: f for pm in manifests for m in pm.chunks for f in m.files if f.kind == "data"}
    for part in partitions.values():
        part.objects = [
            dataclasses.replace(
                o,
                records=known[o.key].records,
                last_offset=known[o.key].last_offset,
                first_timestamp=known[o.key].first_timestamp,
                last_timestamp=known[o.key].last_timestamp,
            )
            if o.key in known and not o.parts  # a merged object (tombstones among values) counted its records
            else o
            for o in part.objects
        ]


def without_excluded(part: SourcePartition, check: PartitionCheck | None) -> list[BackupObject]:
    if check is None or not check.excluded:
        return list(part.objects)
    return [o for o in part.objects if o.key not in check.excluded]


def check_listed(
    store: Store,
    plugins: ReadPlugins,
    partitions: dict[tuple[str, int], SourcePartition],
    sizes: dict[str, int],
    topics: Iterable[str] | None = None,
) -> dict[tuple[str, int], PartitionCheck]:
    """:func:`check_backup` of what :func:`~kafka_s3.pipelines.read.discovery.discover` listed (``sizes``: the sizes
    it recorded), with the manifests of the listed ``topics`` loaded from the store; gives each listed data object its
    manifest's record count and spans (:func:`with_records`). What the readers (``kafka-s3 read``, the DataFrame
    reader) run before reading: only manifests and the listing, no object is fetched."""
    store_manifests = plugins.manifests(store)
    names = sorted({t for t, _ in partitions} | set(topics or []))
    loaded = [pm for t in names for pm in store_manifests.load_topic(t).values()]
    with_records(partitions, loaded)
    by_topic = {t: {pm.partition: pm for pm in loaded if pm.topic == t} for t in names}
    return check_backup(partitions, by_topic, sizes)


def blocking_within(
    checks: dict[tuple[str, int], PartitionCheck], wanted: Callable[[tuple[str, int]], Ranges | None]
) -> list[Finding]:
    """The blocking findings of the partitions a read asks for (``wanted``: the offsets it asks of a partition, or
    ``None`` for none) whose offsets meet the offsets asked for; a finding whose offsets are unknown always does."""
    out = []
    for tp, check in checks.items():
        offsets = wanted(tp)
        if offsets is None:
            continue
        for finding in check.blocking:
            end = HIGH if finding.last is None else finding.last + 1
            if finding.first is None or offsets.meets(finding.first, end):
                out.append(finding)
    return out
