"""Is the backup whole? Checks a restore (and ``kafka-s3 verify``) runs before anything is produced.

For buckets kafka-s3 wrote, the chunk manifests are the source of truth: every file a manifest names must be listed
with the size the manifest recorded, chunks must not overlap, sidecars must hold as many records as their data
object, and every chunk the backup marked committed (``.tail`` marks, see :mod:`kafka_s3.core.manifest`) must still
have its manifest, and every chunk a manifest says it follows (``follows``: where its predecessor ended) must
still be there — so a deleted first, middle or last object, or a whole chunk lost with its manifest, is found, not
skipped. A chunk beyond the newest mark
whose files are not all there yet is one a running backup is still uploading (manifest first, files next, and later
chunks may complete first): nothing from it on is read until it is there — the partition's *frontier* — so a reader
never goes past offsets it will have to come back for.

For buckets another tool wrote (no manifests) names give start offsets only: the order is checked, and the plan says
that continuity cannot be verified (an offset gap may be compaction or a transaction marker, not a loss).

Over 450 lines: restore, verify and the DataFrame reader apply these rules alike; one module keeps them from drifting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, cast

from kafka_s3.core.errors import BackupIncomplete, BackupUnfinished
from kafka_s3.core.manifest import OBJECT_METADATA, Manifest, PartitionManifests
from kafka_s3.pipelines.read.discovery import BackupObject, Problem, SourcePartition, discover
from kafka_s3.pipelines.read.planning import HIGH, Ranges

if TYPE_CHECKING:
    from kafka_s3.core.store import Store
    from kafka_s3.pipelines.read.plugins import ReadPlugins


class Kind(StrEnum):
    MISSING = "missing"  # a file a manifest names, or a committed chunk's manifest, is gone
    TRUNCATED = "truncated"  # a file's size differs from the manifest's
    OVERLAP = "overlap"  # two chunks (or a stray object and a chunk) cover the same offsets
    UNLISTED = "in no manifest"  # an object of a kafka-s3 backup that no chunk manifest names
    COUNTS = "counts"  # a sidecar and its data object (or an object and its manifest) disagree on records
    UNDECODABLE = "undecodable"  # --verify-deep / verify --deep: an object does not decode, or its offsets are wrong
    IN_PROGRESS = "in progress"  # a chunk beyond the committed end, still uploading: reads stop before it
    PRUNED = "pruned"  # offsets ``kafka-s3 prune`` removed and recorded: the backup's start, said, not an error
    UNVERIFIABLE = "unverifiable"  # what cannot be checked (foreign objects): said, not an error


BLOCKING = frozenset({Kind.MISSING, Kind.TRUNCATED, Kind.OVERLAP, Kind.UNLISTED, Kind.COUNTS, Kind.UNDECODABLE})


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
    # The first chunk not uploaded yet: offsets from here on are not read until it is there (``--allow-gaps`` skips
    # the unfinished chunks instead). ``unfinished`` says so for the offsets it holds back.
    frontier: int | None = None
    unfinished: Finding | None = None

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
    pruned = manifests.pruned
    if pruned is not None:
        check.findings.append(
            Finding(
                Kind.PRUNED,
                topic,
                partition,
                None,
                pruned.offset - 1,
                (),
                f"{pruned.describe()} by kafka-s3 prune: the backup starts at offset {pruned.offset}",
            )
        )
    chunks = list(manifests.chunks)
    committed = manifests.committed_start
    note = check.findings.append
    starts = {m.start for m in chunks}
    for start in manifests.marked_starts:
        if start not in starts:
            later = [m.start for m in chunks if m.start > start]
            left = tuple(o.key for o in objects if o.start == start)
            note(
                Finding(
                    Kind.MISSING,
                    topic,
                    partition,
                    start,
                    later[0] - 1 if later else None,
                    left,
                    f"the backup committed a chunk at offset {start} but its manifest is gone"
                    + (": its object(s) are still there but cannot be verified" if left else " with its objects"),
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
                    Kind.UNLISTED,
                    topic,
                    partition,
                    obj.start,
                    obj.last_offset,
                    (obj.key,),
                    "object is in no chunk manifest of this backup (written by another tool, or its manifest was "
                    "deleted): its contents cannot be verified",
                )
            )
        check.excluded.add(obj.key)
    _tell_vanished_oldest(check, chunks)
    if check.frontier is not None:
        first_missing = next(f for f in check.findings if f.kind is Kind.IN_PROGRESS)
        check.unfinished = Finding(
            Kind.IN_PROGRESS,
            topic,
            partition,
            check.frontier,
            chunks[-1].end,
            first_missing.keys,
            f"chunk {first_missing.first}..{first_missing.last} is not uploaded yet (beyond the backup's committed "
            "end: a running backup?); nothing from it on is read until it is there: run again once the backup has "
            "uploaded it (restore --follow waits for it; --allow-gaps skips it)",
        )
    kept = [m for m in chunks if not ({f.key for f in m.files if f.kind == "data"} & check.excluded)]
    if kept:
        check.first = min(check.first if check.first is not None else kept[0].start, kept[0].start)
        check.last = kept[-1].end
        check.records = sum(m.records for m in kept)
    return check


VANISHED = (
    "the oldest objects of the partition vanished without a recorded prune (an S3 lifecycle rule on the prefix, or a "
    "deletion by hand?): the backup now starts at offset {start}. Remove old records with kafka-s3 prune instead: "
    "it records what it removes, so verify, restore and read start after it (docs/operations.md, retention)"
)


def _tell_vanished_oldest(check: PartitionCheck, chunks: list[Manifest]) -> None:
    """Missing offsets that all lie before the partition's oldest whole chunk: the oldest objects were deleted
    without ``kafka-s3 prune`` recording it, as an age-based lifecycle rule does. Said in those words (still a
    problem: nothing recorded that they were meant to go)."""
    broken = {f.first for f in check.findings if f.kind in (Kind.MISSING, Kind.TRUNCATED) and f.first is not None}
    whole = [m for m in chunks if m.start not in broken]
    if not whole:
        return
    oldest = whole[0].start
    missing = [f for f in check.findings if f.kind is Kind.MISSING]
    if not missing or any(f.last is None or f.last >= oldest for f in missing):
        return
    check.findings = [
        dataclasses.replace(f, message=f"{f.message}; {VANISHED.format(start=oldest)}") if f in missing else f
        for f in check.findings
    ]


def _check_chain(check: PartitionCheck, manifests: PartitionManifests, strays: list[int]) -> None:
    """Each manifest names the end of the chunk committed before it (``follows``): no chunk ending there means that
    chunk was lost with its manifest (an offset gap alone may be compaction or transaction markers, not a loss).
    ``strays``: start offsets of listed objects no manifest names — one starting in the lost chunk's offsets is that
    chunk's object whose manifest alone is gone: reported as an object in no manifest, not twice."""
    chunks = manifests.chunks
    ends = {m.end for m in chunks}
    reported = [(f.first, f.last) for f in check.findings if f.kind is Kind.MISSING]
    for index, manifest in enumerate(chunks):
        follows = manifest.follows
        if follows is None or follows in ends or (manifests.pruned and follows < manifests.pruned.offset):
            continue  # (below a recorded start: the chunk it follows was pruned)
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
    if missing and (committed is None or manifest.start > committed):
        check.findings.append(
            Finding(
                Kind.IN_PROGRESS,
                topic,
                partition,
                manifest.start,
                manifest.end,
                tuple(missing),
                "chunk beyond the backup's committed end, not uploaded yet (a running backup?)",
            )
        )
        check.excluded |= data_keys
        if check.frontier is None:
            check.frontier = manifest.start
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
    if manifest.records > manifest.end - manifest.start + 1:
        check.findings.append(
            Finding(
                Kind.COUNTS,
                topic,
                partition,
                manifest.start,
                manifest.end,
                tuple(f.key for f in data),
                f"the manifest counts {manifest.records} records in offsets {manifest.start}..{manifest.end}, more "
                "than the offsets hold: it disagrees with its objects",
            )
        )
        check.excluded |= data_keys
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


def without_excluded(part: SourcePartition, check: PartitionCheck | None, hold: bool = True) -> list[BackupObject]:
    """The objects a read may use: none a check left out, and (``hold``) none at or after the partition's frontier,
    the first chunk not uploaded yet (``hold=False``: ``--allow-gaps`` skips unfinished chunks instead)."""
    if check is None:
        return list(part.objects)
    frontier = check.frontier if hold else None
    return [o for o in part.objects if o.key not in check.excluded and (frontier is None or o.start < frontier)]


@dataclass
class Survey:
    """What a read of a backup starts from: each source partition's listed objects, the manifests and the checks."""

    partitions: dict[tuple[str, int], SourcePartition]
    manifests: dict[str, dict[int, PartitionManifests]]
    checks: dict[tuple[str, int], PartitionCheck]
    sizes: dict[str, int]

    @property
    def loaded(self) -> list[PartitionManifests]:
        return [pm for by_partition in self.manifests.values() for pm in by_partition.values()]


def survey(
    store: Store,
    plugins: ReadPlugins,
    topics: Iterable[str] | None = None,
    on_error: str = "fail",
    problems: list[Problem] | None = None,
) -> Survey:
    """List and check a backup (restores, ``verify``, ``kafka-s3 read`` and the DataFrame reader start here).

    The manifests are listed before the objects: a backup running meanwhile completes a chunk's files only after its
    manifest exists and marks it committed only after that, so every file a listed manifest names that is committed
    is in the later object listing (a deletion, not a race, when it is not). An object no listed manifest names may
    belong to a chunk committed between the two listings: such objects are looked up once more in a fresh listing of
    their partition's manifests, and a chunk found there is left for the next read, not reported."""
    manifest_store = plugins.manifests(store)
    cache = plugins.manifest_cache
    names = sorted(set(topics)) if topics else manifest_store.topics()
    manifests = {t: manifest_store.load_topic(t, cache) for t in names}
    sizes: dict[str, int] = {}
    partitions = discover(store, plugins, topics, on_error, problems, sizes)
    for topic in sorted({t for t, _ in partitions} - set(manifests)):
        manifests[topic] = manifest_store.load_topic(topic, cache)
    loaded = [pm for by_partition in manifests.values() for pm in by_partition.values()]
    _leave_out_pruned(partitions, loaded)
    _take_merged(store, plugins, partitions, loaded, sizes)
    with_records(partitions, loaded)
    checks = check_backup(partitions, manifests, sizes)
    _hold_back_first_chunks(checks, partitions, lambda topic: manifest_store.load_topic(topic, cache))
    _find_lost_manifests(store, checks, partitions, manifests)
    late = {tp for tp, check in checks.items() if any(f.kind is Kind.UNLISTED for f in check.findings)}
    for topic in sorted({t for t, _ in late}):
        fresh = manifest_store.load_topic(topic, cache)
        for tp in (tp for tp in late if tp[0] == topic):
            _forgive_newer_chunks(checks[tp], manifests[topic].get(tp[1]), fresh.get(tp[1]))
    return Survey(partitions, manifests, checks, sizes)


def _leave_out_pruned(partitions: dict[tuple[str, int], SourcePartition], loaded: list[PartitionManifests]) -> None:
    """Objects below a partition's recorded start (``kafka-s3 prune``) are what an interrupted prune left: no part
    of the backup, never read, not missing (the next prune removes them)."""
    for pm in loaded:
        part = partitions.get((pm.topic, pm.partition))
        if pm.pruned is not None and part is not None:
            part.objects = [o for o in part.objects if o.start >= pm.pruned.offset]


def _take_merged(
    store: Store,
    plugins: ReadPlugins,
    partitions: dict[tuple[str, int], SourcePartition],
    loaded: list[PartitionManifests],
    sizes: dict[str, int],
) -> None:
    """A merge ``kafka-s3 compact`` recorded and has not finished (:mod:`kafka_s3.core.compact`): its staged chunk is
    the backup for its offsets. The listed objects there (originals not deleted yet, merged files already under their
    names) are left out, and the staged files read in their place."""
    from kafka_s3.core.compact import COMPACTING, final_key, staging_dir
    from kafka_s3.core.layout import Kind as ObjectKind

    layout = plugins.layout
    for pm in loaded:
        merged = [m for m, key in zip(pm.chunks, pm.keys, strict=False) if key.endswith(COMPACTING)]
        if not merged:
            continue
        tp = (pm.topic, pm.partition)
        part = partitions.setdefault(tp, SourcePartition(*tp))
        part.objects = [o for o in part.objects if not any(m.start <= o.start <= m.end for m in merged)]
        delim = layout.directory_delim
        staging = staging_dir(plugins.manifests(store).root, delim, pm.topic, pm.partition)
        sizes.update({info.key: info.size for info in store.list(staging + delim)})
        for manifest in merged:
            files = {f.kind: f.key for f in manifest.files}
            named = final_key(files["data"], staging, layout.topic_prefix(), delim)
            name = layout.parse(named, cast("dict[str, ObjectKind]", plugins.extensions()))
            if name is None:
                continue
            part.objects.append(
                BackupObject(
                    dataclasses.replace(name, key=files["data"]),
                    sizes.get(files["data"], 0),
                    files.get("keys"),
                    files.get("headers"),
                    files.get("index"),
                )
            )
        part.objects.sort(key=lambda o: (o.start, o.key))


def _hold_back_first_chunks(
    checks: dict[tuple[str, int], PartitionCheck],
    partitions: dict[tuple[str, int], SourcePartition],
    fresh_manifests: Callable[[str], dict[int, PartitionManifests]],
) -> None:
    """Partitions listed with objects and no manifests whose manifests a fresh listing finds: their first chunks
    were committed between the two listings (manifest first, then files). Left for the next read, as any chunk
    committed after the listing — never taken for a backup whose manifests are lost."""
    bare = [tp for tp, check in checks.items() if not check.verified and tp in partitions]
    fresh = {topic: fresh_manifests(topic) for topic in sorted({t for t, _ in bare})}
    for tp in bare:
        found = fresh[tp[0]].get(tp[1])
        if found is None or not found.chunks:
            continue
        check = checks[tp]
        check.findings = [f for f in check.findings if f.kind is not Kind.UNVERIFIABLE]
        check.verified = True
        check.frontier = min(o.start for o in partitions[tp].objects)


def _find_lost_manifests(
    store: Store,
    checks: dict[tuple[str, int], PartitionCheck],
    partitions: dict[tuple[str, int], SourcePartition],
    manifests: dict[str, dict[int, PartitionManifests]],
) -> None:
    """Partitions with objects and no manifests are another tool's — unless they are a kafka-s3 backup's whose
    manifests are gone: the topic's other partitions have manifests, or the objects' metadata names their chunk
    manifest (first and last object asked). Those are missing, not unverifiable."""
    bare = [tp for tp, check in checks.items() if not check.verified and tp in partitions]
    if not bare:
        return
    probed = {
        tp: [o.key for o in (partitions[tp].objects[0], partitions[tp].objects[-1])]
        for tp in bare
        if not manifests.get(tp[0])
    }
    keys = sorted({key for listed in probed.values() for key in listed})
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(keys)))) as pool:
        heads = dict(zip(keys, pool.map(store.head, keys), strict=True))
    for tp in bare:
        if manifests.get(tp[0]):
            why = f"the topic's other partitions have chunk manifests, and none of partition {tp[1]}'s is there"
        else:
            named = [
                info.metadata.get(OBJECT_METADATA)
                for key in probed.get(tp, [])
                if (info := heads.get(key)) is not None and info.metadata.get(OBJECT_METADATA)
            ]
            if not named:
                continue
            why = f"their metadata names their chunk manifest (e.g. {named[0]}), and none of them is there"
        check = checks[tp]
        check.findings = [f for f in check.findings if f.kind is not Kind.UNVERIFIABLE]
        check.findings.append(
            Finding(
                Kind.MISSING,
                tp[0],
                tp[1],
                None,
                None,
                (),
                f"objects of a kafka-s3 backup ({why}): the backup's manifests are missing (an interrupted copy of "
                "the bucket?), so neither a missing object nor its contents can be told; --allow-gaps restores the "
                "objects as they are",
            )
        )


def _forgive_newer_chunks(
    check: PartitionCheck, listed: PartitionManifests | None, fresh: PartitionManifests | None
) -> None:
    """Objects in no listed manifest that a manifest created after the listing names, beyond every listed chunk: a
    chunk the backup committed while the listing ran. Not an error: left out of this read, as a chunk in progress."""
    if fresh is None:
        return
    end = listed.chunks[-1].end if listed is not None and listed.chunks else -1
    newer = {f.key for m in fresh.chunks if m.start > end for f in m.files}
    forgiven = [f for f in check.findings if f.kind is Kind.UNLISTED and set(f.keys) <= newer]
    check.findings = [f for f in check.findings if f not in forgiven]
    if forgiven and check.frontier is None:
        check.frontier = min(f.first for f in forgiven if f.first is not None)


def unfinished_within(
    checks: dict[tuple[str, int], PartitionCheck], wanted: Callable[[tuple[str, int]], Ranges | None]
) -> list[Finding]:
    """The unfinished ranges (a chunk not uploaded yet, and everything after it) that meet the offsets a read asks
    for: not committed yet, so not read (:class:`~kafka_s3.core.errors.BackupUnfinished`, or ``allow.gaps``)."""
    out = []
    for tp, check in checks.items():
        offsets = wanted(tp)
        if offsets is None or check.unfinished is None or check.frontier is None:
            continue
        if offsets.meets(check.frontier, HIGH):
            out.append(check.unfinished)
    return out


def unfinished_error(findings: list[Finding]) -> BackupUnfinished:
    lines = "\n".join(f"  {f}" for f in findings)
    return BackupUnfinished(f"offsets asked for are not committed yet:\n{lines}", findings)


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
