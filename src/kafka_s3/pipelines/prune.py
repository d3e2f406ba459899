"""``kafka-s3 prune`` and ``backup.retention.*``: remove a backup's oldest committed chunks without ever breaking it.

What is removed, and the record that makes it safe, are :mod:`kafka_s3.core.prune`'s. This module reads the bucket
(one listing of each topic's manifest tree, the manifests through the cache readers share), the backup's consumer
group (its resume positions, and whether it looks live), and acts in the crash-safe order:

1. per partition, the pruned-range record (``<partition>/<first kept offset>.pruned``) is created — durable before
   anything is deleted, it makes every reader start after the removed chunks;
2. the removed chunks' data objects, then their sidecars, then their manifests and committed-end marks, then
   records a newer one superseded, are deleted (each step a batch, in that order);
3. the snapshot series records nothing left needs (:func:`kafka_s3.core.prune.stale_snapshots`) are deleted.

A crash anywhere leaves objects below a recorded start, which readers ignore and the next prune removes (what a
manifest below the start names is deleted with it). A backup whose newest commit is younger than
:data:`LIVE_CYCLES` cycle intervals is taken for live: ``execute`` refuses
(:class:`~kafka_s3.core.errors.BackupLive`) unless ``force``.
A running backup applies its own retention at the end of each cycle (:func:`retention_selectors`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import BackupLive, ConfigError, KafkaError, ObjectExistsError
from kafka_s3.core.groups import SERIES as GROUP_SERIES
from kafka_s3.core.manifest import EXTENSION, TAIL, Manifest, ManifestStore, PartitionManifests
from kafka_s3.core.prune import (
    PRUNED,
    ChunkSpan,
    PrunedRange,
    PrunedStart,
    Selectors,
    iso,
    plan_cut,
    record_name,
    stale_snapshots,
)
from kafka_s3.core.schemas import SERIES as SCHEMA_SERIES
from kafka_s3.core.snapshots import Series
from kafka_s3.core.topic_config import SERIES as CONFIG_SERIES
from kafka_s3.pipelines.read.committed import backup_group

log = logging.getLogger("kafka_s3.prune")

TP = tuple[str, int]
LIVE_CYCLES = 3  # a backup committed within this many cycle intervals is taken for live
SNAPSHOT_SERIES: tuple[Series[Any], ...] = (GROUP_SERIES, CONFIG_SERIES, SCHEMA_SERIES)


# ---------------------------------------------------------------------------------------------------- results
@dataclass
class PartitionPrune:
    """One partition's part of a prune: the chunks removed (or to remove), its new start, why the next chunk stays."""

    topic: str
    partition: int
    chunks: int = 0
    first: int | None = None  # first offset removed
    last: int | None = None  # last offset removed
    records: int = 0
    bytes: int = 0
    objects: int = 0  # files of the removed chunks
    new_start: int | None = None  # the first kept offset (None: nothing removed)
    first_time: int | None = None  # the first kept record's time (ms), when recorded
    kept_because: str = ""
    leftovers: int = 0  # objects below a recorded start (an interrupted prune's) to remove
    pruned: PrunedStart | None = None  # the start recorded before this prune

    def to_dict(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "chunks": self.chunks,
            "first_offset": self.first,
            "last_offset": self.last,
            "records": self.records,
            "bytes": self.bytes,
            "objects": self.objects,
            "new_start": self.new_start,
            "first_time": None if self.first_time is None else iso(self.first_time),
            "kept_because": self.kept_because,
            "leftovers": self.leftovers,
            "pruned_before": None if self.pruned is None else self.pruned.offset,
        }


@dataclass
class PruneReport:
    """What a prune removed (``executed``) or would remove, per partition; snapshot records; notes."""

    name: str
    store: str
    selectors: Selectors
    executed: bool = False
    partitions: list[PartitionPrune] = field(default_factory=list)
    snapshots: int = 0  # snapshot records (consumer groups, topic configs, schemas) removed or to remove
    live: str = ""  # why the backup looks live ("" not), when it was pruned anyway (--force) or only planned
    notes: list[str] = field(default_factory=list)

    @property
    def chunks(self) -> int:
        return sum(p.chunks for p in self.partitions)

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)

    @property
    def leftovers(self) -> int:
        return sum(p.leftovers for p in self.partitions)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "store": self.store,
            "selectors": self.selectors.describe(),
            "executed": self.executed,
            "chunks": self.chunks,
            "records": self.records,
            "bytes": self.bytes,
            "leftovers": self.leftovers,
            "snapshots": self.snapshots,
            "live": self.live or None,
            "notes": self.notes,
            "partitions": [p.to_dict() for p in self.partitions],
        }


# ---------------------------------------------------------------------------------------------------- the bucket
@dataclass
class TopicListing:
    """One listing of a topic's manifest tree: per partition its manifests' times, marks and pruned records; the
    snapshot series' record times."""

    manifest_times: dict[TP, dict[int, float]] = field(default_factory=dict)  # start -> last modified (s)
    marks: dict[TP, list[int]] = field(default_factory=dict)
    records: dict[TP, list[int]] = field(default_factory=dict)  # pruned-range record starts
    series: dict[str, list[int]] = field(default_factory=dict)  # series directory -> record times (ms)
    newest_mark: float = 0.0  # last modified (s) of the newest committed-end mark


def list_topic(manifests: ManifestStore, topic: str) -> TopicListing:
    delim = manifests.delim
    base = f"{manifests.root}{delim}{topic}{delim}"
    found = TopicListing()
    by_directory = {series.directory: series for series in SNAPSHOT_SERIES}
    for info in manifests.store.list(base):
        parts = info.key[len(base) :].split(delim)
        if len(parts) != 2:
            continue
        if parts[0] in by_directory:
            at = by_directory[parts[0]].time(parts[1])
            if at is not None:
                found.series.setdefault(parts[0], []).append(at)
            continue
        stem, _, extension = parts[1].partition(".")
        if not parts[0].isdigit() or not stem.isdigit():
            continue
        tp, start = (topic, int(parts[0])), int(stem)
        if "." + extension == EXTENSION:
            found.manifest_times.setdefault(tp, {})[start] = info.last_modified
        elif "." + extension == TAIL:
            found.marks.setdefault(tp, []).append(start)
            found.newest_mark = max(found.newest_mark, info.last_modified)
        elif "." + extension == PRUNED:
            found.records.setdefault(tp, []).append(start)
    return found


def chunk_span(manifest: Manifest, written: float | None) -> ChunkSpan:
    """The plan's view of a chunk: record times from its data files' recorded spans, else the time its manifest was
    written (its records all came before)."""
    data = [f for f in manifest.files if f.kind == "data"]
    lasts = [f.last_timestamp for f in data]
    firsts = [f.first_timestamp for f in data]
    last = max(t for t in lasts if t is not None) if data and None not in lasts else None
    if last is None and written:
        last = int(written * 1000)
    first = min(t for t in firsts if t is not None) if data and None not in firsts else None
    return ChunkSpan(manifest.start, manifest.end, manifest.records, sum(f.bytes for f in manifest.files), last, first)


# ---------------------------------------------------------------------------------------------------- the group
@dataclass(frozen=True)
class GroupView:
    """The backup's consumer group on the pruned topics: resume positions and the newest commit time (ms)."""

    group: str
    resume: dict[TP, int] = field(default_factory=dict)
    newest: tuple[int, TP] | None = None
    unread: str = ""  # why it could not be read ("" read)


def read_group(config: Config, store_url: str, topics: Iterable[str]) -> GroupView:
    """The backup's own commits (metadata naming this bucket) for the partitions of ``topics`` the cluster has."""
    from kafka_s3.io.kafka.admin import Admin

    group = backup_group(config)
    if not (config.originals.get("bootstrap.servers") or os.environ.get("KAFKA_BOOTSTRAP_SERVERS")):
        return GroupView(group, unread="no Kafka cluster configured")
    try:
        admin = Admin.for_config(config)
        present = admin.topics()
        tps = [(t, p) for t in sorted(set(topics)) if t in present for p in range(present[t])]
        committed = admin.group_offsets_with_metadata(group, tps)
    except (KafkaError, ConfigError) as exc:
        return GroupView(group, unread=f"the backup's consumer group {group} could not be read: {exc}")
    resume: dict[TP, int] = {}
    newest: tuple[int, TP] | None = None
    for tp, (offset, metadata) in committed.items():
        try:
            doc = json.loads(metadata) if metadata else None
        except ValueError:
            doc = None
        if offset is None or not isinstance(doc, dict) or doc.get("store", store_url) != store_url:
            continue  # not this backup's commit
        resume[tp] = offset
        at = doc.get("at")
        if isinstance(at, int) and (newest is None or at > newest[0]):
            newest = (at, tp)
    return GroupView(group, resume, newest)


def live_reason(config: Config, group: GroupView, newest_mark: float, now_ms: int) -> str:
    """Why the backup looks live ("" when it does not): a commit, in its group or as a committed-end mark in the
    bucket, younger than :data:`LIVE_CYCLES` × ``cycle.interval.ms``."""
    window = LIVE_CYCLES * int(config["cycle.interval.ms"])
    said = []
    if group.newest is not None and now_ms - group.newest[0] < window:
        at, (topic, partition) = group.newest
        said.append(f"group {group.group} committed {topic}[{partition}] {(now_ms - at) / 1000:.0f} s ago")
    if newest_mark and now_ms - newest_mark * 1000 < window:
        said.append(f"the bucket's newest committed-end mark is {(now_ms - newest_mark * 1000) / 1000:.0f} s old")
    if not said:
        return ""
    return (
        f"backup {config['name']!r} looks live: {' and '.join(said)}, within {LIVE_CYCLES} × cycle.interval.ms "
        f"({window / 1000:g} s)"
    )


# ---------------------------------------------------------------------------------------------------- the prune
def prune(
    config: Config,
    manifests: ManifestStore,
    selectors: Selectors,
    *,
    topics: list[str] | None = None,
    partitions: list[int] | None = None,
    execute: bool = False,
    force: bool = False,
    resume: dict[TP, int] | None = None,
    check_live: bool = True,
    now_ms: int | None = None,
    cache: dict[str, Manifest] | None = None,
) -> PruneReport:
    """Plan (and with ``execute``, carry out) the prune ``selectors`` ask for on the backup ``config`` describes,
    whose manifests ``manifests`` reads (:class:`~kafka_s3.pipelines.backup.plugins.BackupPlugins` knows where).

    ``topics``/``partitions``: only these (default: every topic of the backup, every partition; a running backup's
    retention, ``check_live=False``, names its own topics, not checked against the bucket). ``resume``: the
    backup's resume positions when the caller knows them (a running backup's retention); else its consumer group is
    read. ``check_live``: refuse to execute while the backup looks live (unless ``force``). ``cache``: manifests
    already read (a running backup's, kept between cycles; the removed ones are dropped from it)."""
    if selectors.empty:
        raise ConfigError("prune: say what to remove: --before TIME, --older-than DURATION or --max-total-bytes SIZE")
    store = manifests.store
    names = sorted(topics) if topics and not check_live else _topics(config, manifests, topics)
    report = PruneReport(str(config["name"]), store.url, selectors)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    listings = {topic: list_topic(manifests, topic) for topic in names}
    if resume is None:
        group = read_group(config, store.url, names)
        if group.unread:
            report.notes.append(f"resume positions and commit times not read from Kafka: {group.unread}")
        resume = group.resume
        if check_live:
            report.live = live_reason(
                config, group, max((li.newest_mark for li in listings.values()), default=0), now_ms
            )
    if report.live and execute and not force:
        raise BackupLive(
            f"{report.live}: nothing was removed. Prune a stopped backup (a running one prunes itself at the end of "
            "each cycle with backup.retention.ms / backup.retention.bytes), or use --force"
        )
    for topic in names:
        _prune_topic(manifests, topic, listings[topic], selectors, partitions, resume, report, execute, cache)
    report.executed = execute
    return report


def _topics(config: Config, manifests: ManifestStore, asked: list[str] | None) -> list[str]:
    held = manifests.topics()
    if asked:
        missing = [t for t in asked if t not in held]
        if missing:
            raise ConfigError(
                f"prune: the backup holds no manifests of topic(s) {', '.join(missing)} (it holds "
                f"{', '.join(held) or 'nothing'})",
                key="--topic",
            )
        return sorted(asked)
    if config["topics.regex"]:
        pattern = re.compile(config["topics.regex"])
        return [t for t in held if pattern.fullmatch(t)]
    named = list(config["topics"] or [])
    return sorted(t for t in named if t in held) if named else held


def _prune_topic(
    manifests: ManifestStore,
    topic: str,
    listing: TopicListing,
    selectors: Selectors,
    partitions: list[int] | None,
    resume: dict[TP, int],
    report: PruneReport,
    execute: bool,
    cache: dict[str, Manifest] | None,
) -> None:
    cache = {} if cache is None else cache
    loaded = manifests.load_topic(topic, cache)
    first_times: list[int | None] = []
    for partition, held in sorted(loaded.items()):
        tp = (topic, partition)
        if partitions is not None and partition not in partitions:
            first_times.append(_first_time(held, 0, listing))
            continue
        times = listing.manifest_times.get(tp, {})
        spans = [chunk_span(m, times.get(m.start)) for m in held.chunks]
        cut = plan_cut(spans, selectors, held.committed_start, resume.get(tp))
        leftovers = _leftovers(manifests, tp, listing, held.pruned, spans[cut.count].start if cut.count else None)
        part = PartitionPrune(topic, partition, kept_because=cut.kept_because, pruned=held.pruned)
        removed = list(held.chunks[: cut.count])
        if removed:
            kept = held.chunks[cut.count]
            part.chunks = len(removed)
            part.first, part.last = removed[0].start, removed[-1].end
            part.records = sum(m.records for m in removed)
            part.bytes = sum(s.bytes for s in spans[: cut.count])
            part.objects = sum(len(m.files) for m in removed)
            part.new_start = kept.start
            part.first_time = spans[cut.count].first_time
        part.leftovers = len(leftovers)
        first_times.append(_first_time(held, cut.count, listing))
        if removed or leftovers:
            report.partitions.append(part)
        if execute and (removed or leftovers):
            _execute_partition(manifests, part, removed, leftovers, selectors)
            for key in held.keys[: cut.count]:
                cache.pop(key, None)
    stale = _stale_snapshots(listing, first_times)
    report.snapshots += sum(len(times) for times in stale.values())
    if execute and stale:
        prefix = f"{manifests.root}{manifests.delim}{topic}{manifests.delim}"
        by_directory = {series.directory: series for series in SNAPSHOT_SERIES}
        manifests.store.delete(
            f"{prefix}{directory}{manifests.delim}{by_directory[directory].name(at)}"
            for directory, times in sorted(stale.items())
            for at in times
        )


def _first_time(held: PartitionManifests, removed: int, listing: TopicListing) -> int | None:
    """The partition's first kept record's time (ms), as its first kept chunk recorded it."""
    if removed >= len(held.chunks):
        return None
    chunk = held.chunks[removed]
    return chunk_span(chunk, listing.manifest_times.get((held.topic, held.partition), {}).get(chunk.start)).first_time


def _stale_snapshots(listing: TopicListing, first_times: list[int | None]) -> dict[str, list[int]]:
    """Per series directory, the record times nothing left needs (none when a partition's first time is unknown)."""
    if not first_times or None in first_times:
        return {}
    first_kept = min(t for t in first_times if t is not None)
    out = {directory: stale_snapshots(times, first_kept) for directory, times in listing.series.items()}
    return {directory: times for directory, times in out.items() if times}


@dataclass(frozen=True)
class Leftover:
    """An object an interrupted prune left below the partition's recorded start (or one a new record supersedes)."""

    key: str
    step: int  # deletion order: 0 data, 1 sidecars, 2 manifests, 3 marks, 4 superseded records


def _leftovers(
    manifests: ManifestStore, tp: TP, listing: TopicListing, pruned: PrunedStart | None, new_start: int | None
) -> list[Leftover]:
    """What lies below the partition's start (the recorded one, or ``new_start`` once recorded) and is not one of the
    chunks this prune removes itself: manifests an interrupted prune left (with the files they name), marks, and
    pruned-range records below the newest."""
    start = max(pruned.offset if pruned else 0, 0)
    topic, partition = tp
    out: list[Leftover] = []
    if start:
        below = sorted(s for s in listing.manifest_times.get(tp, {}) if s < start)
        for begin in below:
            key = manifests.key(topic, partition, begin)
            manifest = Manifest.from_bytes(manifests.store.get(key), key)
            out += [Leftover(f.key, 0 if f.kind == "data" else 1) for f in manifest.files]
            out.append(Leftover(key, 2))
        out += [Leftover(_mark_key(manifests, tp, m), 3) for m in listing.marks.get(tp, []) if m < start]
    newest = max([start, new_start or 0])
    out += [
        Leftover(manifests.prefix(topic, partition) + record_name(r), 4)
        for r in listing.records.get(tp, [])
        if r < newest
    ]
    return out


def _mark_key(manifests: ManifestStore, tp: TP, start: int) -> str:
    return manifests.key(tp[0], tp[1], start)[: -len(EXTENSION)] + TAIL


def _execute_partition(
    manifests: ManifestStore,
    part: PartitionPrune,
    removed: list[Manifest],
    leftovers: list[Leftover],
    selectors: Selectors,
) -> None:
    """The record first, then the deletions in order (files, manifests, marks, superseded records)."""
    topic, partition = part.topic, part.partition
    if removed and part.new_start is not None:
        record = PrunedRange(
            topic,
            partition,
            part.new_start,
            int(time.time() * 1000),
            part.first_time,
            removed[0].start,
            len(removed),
            part.records,
            part.bytes,
            selectors.describe(),
        )
        with contextlib.suppress(ObjectExistsError):  # a rerun of a prune that got this far: the start is recorded
            manifests.store.put(manifests.prefix(topic, partition) + record_name(part.new_start), record.to_bytes())
    steps: list[list[str]] = [[], [], [], [], []]
    for manifest in removed:
        for entry in manifest.files:
            steps[0 if entry.kind == "data" else 1].append(entry.key)
        steps[2].append(manifests.key(topic, partition, manifest.start))
    marks = {_mark_key(manifests, (topic, partition), m.start) for m in removed}
    steps[3] += sorted(marks)
    for leftover in leftovers:
        steps[leftover.step].append(leftover.key)
    for keys in steps:
        if keys:
            manifests.store.delete(sorted(set(keys)))
    log.info(
        "%s[%d]: pruned %d chunk(s), offsets %s..%s (%d records, %d bytes)%s",
        topic,
        partition,
        part.chunks,
        part.first,
        part.last,
        part.records,
        part.bytes,
        f"; the backup starts at offset {part.new_start}" if part.new_start is not None else "",
        extra={"topic": topic, "partition": partition, "chunks": part.chunks, "new_start": part.new_start},
    )


# ---------------------------------------------------------------------------------------------------- retention
def retention_selectors(config: Config, now_ms: int | None = None) -> Selectors:
    """What ``backup.retention.ms`` / ``backup.retention.bytes`` ask a running backup to remove after each cycle
    (``-1``: unlimited, as Kafka's own retention settings)."""
    ms, size = int(config["backup.retention.ms"]), int(config["backup.retention.bytes"])
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    return Selectors(before=now_ms - ms if ms >= 0 else None, max_bytes=size if size >= 0 else None)
