"""``kafka-s3 compact``: merge a backup's small committed chunks into bigger objects without ever breaking it.

Which chunks are merged, the compaction record and why the order below is crash-safe are
:mod:`kafka_s3.core.compact`'s. This module reads the bucket (the manifests through :meth:`ManifestStore.load_topic`,
one listing per topic for records and staged files), runs the merge as a Spark job — one task per partition reads
each group's records with the reader (:func:`~kafka_s3.pipelines.read.reader.read_partition`, Arrow batches) and
writes them with the backup's own writer (:class:`~kafka_s3.pipelines.backup.partition.PartitionBackup`, converters,
formats and sidecars as a backup with a bigger ``flush.size`` would have) under the staging tree — and then, on the
driver, per group:

1. the compaction record is created (``<partition>/<start>.compacting``): readers take the staged chunk from now on;
2. the originals' files, then their manifests, then their committed-end marks (except at a merged chunk's start)
   are deleted;
3. the staged files are copied to their names in the layout and the merged chunk's manifest created;
4. the record is deleted (readers take the new manifest), then the staging tree.

A record found when ``compact`` starts is finished first (steps 2–4, each idempotent); staged files no record names
are an interrupted run's and are deleted before anything new is written.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import cast

from kafka_s3.core.compact import (
    COMPACTING,
    STAGING_DIR,
    Compaction,
    Target,
    chunk_bytes,
    final_key,
    plan_groups,
    record_name,
    staging_dir,
)
from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import ConfigError, ObjectExistsError
from kafka_s3.core.layout import Kind, Layout
from kafka_s3.core.manifest import OBJECT_METADATA, TAIL, FileEntry, Manifest, ManifestStore
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.engine import Engine, Task
from kafka_s3.pipelines.read.discovery import BackupObject, SourcePartition
from kafka_s3.pipelines.read.plugins import ReadPlugins, layout_of
from kafka_s3.pipelines.task_settings import TaskSettings

log = logging.getLogger("kafka_s3.compact")

TP = tuple[str, int]


# ---------------------------------------------------------------------------------------------------- results
@dataclass
class GroupCompaction:
    """One group of chunks merged (or to merge): its offsets, how many chunks, records, bytes and files it holds,
    and the chunks it became (``merged``: 0 in a plan)."""

    topic: str
    partition: int
    first: int
    last: int
    chunks: int
    records: int
    bytes: int
    objects: int
    merged: int = 0
    merged_objects: int = 0
    merged_bytes: int = 0
    resumed: bool = False  # an interrupted compaction's record, finished by this run

    def to_dict(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "first_offset": self.first,
            "last_offset": self.last,
            "chunks": self.chunks,
            "records": self.records,
            "bytes": self.bytes,
            "objects": self.objects,
            "merged_chunks": self.merged,
            "merged_objects": self.merged_objects,
            "merged_bytes": self.merged_bytes,
            "resumed": self.resumed,
        }


@dataclass
class CompactReport:
    """What a compaction merged (``executed``) or would merge (``--dry-run``), per group of chunks; notes."""

    name: str
    store: str
    target: Target
    executed: bool = False
    groups: list[GroupCompaction] = field(default_factory=list)
    leftovers: int = 0  # staged files of an interrupted run, deleted (or to delete)
    notes: list[str] = field(default_factory=list)

    @property
    def chunks(self) -> int:
        return sum(g.chunks for g in self.groups)

    @property
    def objects(self) -> int:
        return sum(g.objects for g in self.groups)

    @property
    def merged_objects(self) -> int:
        return sum(g.merged_objects for g in self.groups)

    @property
    def records(self) -> int:
        return sum(g.records for g in self.groups)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "store": self.store,
            "target": self.target.describe(),
            "executed": self.executed,
            "chunks": self.chunks,
            "objects": self.objects,
            "merged_objects": self.merged_objects,
            "records": self.records,
            "leftovers": self.leftovers,
            "notes": self.notes,
            "groups": [g.to_dict() for g in self.groups],
        }


# ---------------------------------------------------------------------------------------------------- the bucket
@dataclass
class Held:
    """One listing of a topic's manifest tree as compaction needs it: per partition its compaction records, and
    every staged file."""

    records: dict[int, list[str]] = field(default_factory=dict)
    staged: dict[int, list[str]] = field(default_factory=dict)


def list_held(manifests: ManifestStore, topic: str) -> Held:
    delim = manifests.delim
    base = f"{manifests.root}{delim}{topic}{delim}"
    held = Held()
    for info in manifests.store.list(base):
        parts = info.key[len(base) :].split(delim)
        if parts[0] == STAGING_DIR and len(parts) > 2 and parts[1].isdigit():
            held.staged.setdefault(int(parts[1]), []).append(info.key)
        elif len(parts) == 2 and parts[0].isdigit() and parts[1].endswith(COMPACTING):
            held.records.setdefault(int(parts[0]), []).append(info.key)
    return held


def refuse_foreign(config: Config, manifests: ManifestStore, topics: list[str]) -> None:
    """Compaction merges kafka-s3's own chunks: a peer's layout (Lenses', DeviantArt's names), or a prefix without
    kafka-s3 chunk manifests for ``topics`` (Confluent's sink, another tool) is refused by name."""
    from kafka_s3.core.errors import PlanError
    from kafka_s3.core.layouts.detection import LAYOUTS
    from kafka_s3.pipelines.verify import detected_config

    detected, detection = detected_config(config)
    title = LAYOUTS[detection.name].title if detection.name else "no recognised layout"
    if type(layout_of(detected)) is not Layout:
        raise PlanError(
            f"compact: the backup's layout is {title}: kafka-s3 compact merges only objects in kafka-s3's own "
            "(Confluent-named) layout with its chunk manifests; nothing was changed"
        )
    if not any(manifests.load_topic(topic) for topic in topics):
        raise PlanError(
            f"compact: {detection.describe()}, and no kafka-s3 chunk manifests under {manifests.root}: "
            f"these objects were not written by kafka-s3 ({title}); compact merges only chunks kafka-s3 committed: "
            "nothing was changed"
        )


# ---------------------------------------------------------------------------------------------------- compaction
def compact(
    config: Config,
    engine: Engine | None,
    *,
    target: Target,
    topics: list[str] | None = None,
    partitions: list[int] | None = None,
    dry_run: bool = False,
) -> CompactReport:
    """Plan (``dry_run``) or carry out the merge of the backup's small committed chunks into chunks of up to
    ``target``: interrupted compactions finished first, then the groups :func:`plan_groups` picks merged in a Spark
    job on ``engine`` (one task per partition) and swapped in, each in the crash-safe order."""
    from kafka_s3.pipelines.backup.plugins import BackupPlugins

    store = StoreSpec.from_config(config).open()
    store.check()
    plugins = BackupPlugins.from_config(config)
    manifests = ManifestStore(store, plugins.manifest_root, plugins.layout.directory_delim)
    names = _topics(config, manifests, topics)
    refuse_foreign(config, manifests, names)
    report = CompactReport(str(config["name"]), store.url, target, executed=not dry_run)
    work: list[tuple[TP, list[tuple[Manifest, ...]]]] = []
    for topic in names:
        held = list_held(manifests, topic)
        wanted = [p for p in held.records if partitions is None or p in partitions]
        starts = {p: pm.pruned.offset for p, pm in manifests.load_topic(topic).items() if pm.pruned is not None}
        for partition in sorted(wanted):
            for key in sorted(held.records[partition]):
                record = Compaction.from_bytes(store.get(key), key)
                if record.start < starts.get(partition, 0):  # pruned meanwhile: nothing of it is the backup's
                    report.leftovers += 1
                    if not dry_run:
                        _discard(manifests, record, key)
                    continue
                report.groups.append(_group_of(record.replaced, resumed=True))
                if not dry_run:
                    _finish(manifests, plugins.layout, record, key)
                    _describe_merged(report.groups[-1], record.final)
        for partition in sorted(held.staged):
            if partitions is None or partition in partitions:
                report.leftovers += clear_staging(manifests, topic, partition, dry_run)
        for partition, pm in sorted(manifests.load_topic(topic).items()):
            if partitions is not None and partition not in partitions:
                continue
            groups = plan_groups(pm.chunks, pm.committed_start, target)
            if groups:
                work.append(((topic, partition), groups))
    for _, groups in work:
        report.groups += [_group_of(g) for g in groups]
    if dry_run or not work:
        return report
    if engine is None:
        raise ValueError("compact merges chunks in Spark tasks: it needs an engine")
    settings = TaskSettings(config, StoreSpec.from_config(config))
    described = {(g.topic, g.partition, g.first): g for g in report.groups if not g.resumed}
    rows = engine.run_tasks(
        f"kafka-s3 compact ({sum(len(g) for _, g in work)} groups of {len(work)} partitions)",
        _merge_task(work, settings),
        len(work),
    )
    by_group = {}
    for row in rows:
        doc = json.loads(row)
        by_group[(doc["topic"], doc["partition"], doc["start"])] = tuple(Manifest.from_dict(m) for m in doc["staged"])
    recorded = []
    for (topic, partition), groups in work:  # every merge recorded before any is finished: finishing one clears the
        for group in groups:  # staged files no record names, and a rerun after a crash then has nothing to stage
            staged = by_group[(topic, partition, group[0].start)]
            record = _record(manifests, plugins.layout, group, staged)
            key = manifests.prefix(topic, partition) + record_name(record.start)
            with contextlib.suppress(ObjectExistsError):  # recorded by a run that got this far
                store.put(key, record.to_bytes())
            recorded.append((record, key))
    for record, key in recorded:
        _finish(manifests, plugins.layout, record, key)
        _describe_merged(described[(record.topic, record.partition, record.start)], record.final)
    return report


def _topics(config: Config, manifests: ManifestStore, asked: list[str] | None) -> list[str]:
    held = manifests.topics()
    if asked:
        missing = [t for t in asked if t not in held]
        if missing:
            raise ConfigError(
                f"compact: the backup holds no manifests of topic(s) {', '.join(missing)} (it holds "
                f"{', '.join(held) or 'nothing'})",
                key="--topic",
            )
        return sorted(asked)
    if config["topics.regex"]:
        pattern = re.compile(config["topics.regex"])
        return [t for t in held if pattern.fullmatch(t)]
    named = list(config["topics"] or [])
    return sorted(t for t in named if t in held) if named else held


def _group_of(chunks: tuple[Manifest, ...], resumed: bool = False) -> GroupCompaction:
    first = chunks[0]
    return GroupCompaction(
        first.topic,
        first.partition,
        first.start,
        chunks[-1].end,
        len(chunks),
        sum(c.records for c in chunks),
        sum(chunk_bytes(c) for c in chunks),
        sum(len(c.files) for c in chunks),
        resumed=resumed,
    )


def _describe_merged(group: GroupCompaction, final: tuple[Manifest, ...]) -> None:
    group.merged = len(final)
    group.merged_objects = sum(len(m.files) for m in final)
    group.merged_bytes = sum(chunk_bytes(m) for m in final)


def clear_staging(manifests: ManifestStore, topic: str, partition: int, dry_run: bool = False) -> int:
    """Delete what the partition's staging tree holds that no compaction record names (an interrupted run's staged
    files, a finished merge's staging manifests and marks); how many objects that is."""
    named: set[str] = set()
    for info in manifests.store.list(manifests.prefix(topic, partition)):
        if info.key.endswith(COMPACTING):
            record = Compaction.from_bytes(manifests.store.get(info.key), info.key)
            named |= {f.key for m in record.staged for f in m.files}
    present = {info.key for info in manifests.store.list(_staging(manifests, topic, partition) + manifests.delim)}
    unnamed = sorted(present - named)
    if unnamed and not dry_run:
        manifests.store.delete(unnamed)
    return len(unnamed)


def _staging(manifests: ManifestStore, topic: str, partition: int) -> str:
    return staging_dir(manifests.root, manifests.delim, topic, partition)


def _record(
    manifests: ManifestStore, layout: Layout, group: tuple[Manifest, ...], staged: tuple[Manifest, ...]
) -> Compaction:
    """The compaction record of ``group`` merged into ``staged``: the merged manifests under their final names too."""
    first = group[0]
    staging = _staging(manifests, first.topic, first.partition)
    prefix, delim = layout.topic_prefix(), manifests.delim
    final = tuple(
        replace(m, files=tuple(replace(f, key=final_key(f.key, staging, prefix, delim)) for f in m.files))
        for m in staged
    )
    return Compaction(
        first.topic, first.partition, first.start, group[-1].end, group, staged, final, int(time.time() * 1000)
    )


def _finish(manifests: ManifestStore, layout: Layout, record: Compaction, key: str) -> None:
    """Steps 2–4 of a recorded merge: the originals deleted, the merged files given their names and their manifests
    created, the record deleted, then its staged files. Each step may be repeated (a rerun after a crash)."""
    store, topic, partition = manifests.store, record.topic, record.partition
    keep_marks = {m.start for m in record.final}
    store.delete(sorted({f.key for m in record.replaced for f in m.files if f.kind == "data"}))
    store.delete(sorted({f.key for m in record.replaced for f in m.files if f.kind != "data"}))
    store.delete(sorted({manifests.key(topic, partition, m.start) for m in record.replaced}))
    marks = [m.start for m in record.replaced if m.start not in keep_marks]
    store.delete(sorted(manifests.prefix(topic, partition) + f"{s:020d}{TAIL}" for s in marks))
    for staged, final in zip(record.staged, record.final, strict=True):
        manifest_key = manifests.key(topic, partition, final.start)
        for source, entry in zip(staged.files, final.files, strict=True):
            _copy(manifests, source, entry, manifest_key)
        manifests.create(final)
        manifests.mark_committed(topic, partition, final.start)
    store.delete([key])
    clear_staging(manifests, topic, partition)
    log.info(
        "%s[%d]: merged %d chunk(s), offsets %d..%d (%d records), into %d chunk(s)",
        topic,
        partition,
        len(record.replaced),
        record.start,
        record.end,
        record.records,
        len(record.final),
        extra={"topic": topic, "partition": partition, "chunks": len(record.replaced)},
    )


def _discard(manifests: ManifestStore, record: Compaction, key: str) -> None:
    """A recorded merge a prune removed meanwhile (its range below the partition's recorded start): what is left of
    the originals and of the merged chunk is deleted, the record last."""
    store, topic, partition = manifests.store, record.topic, record.partition
    chunks = record.replaced + record.final
    store.delete(sorted({f.key for m in chunks for f in m.files}))
    store.delete(sorted({manifests.key(topic, partition, m.start) for m in chunks}))
    store.delete(sorted({manifests.prefix(topic, partition) + f"{m.start:020d}{TAIL}" for m in chunks}))
    store.delete([key])
    clear_staging(manifests, topic, partition)


def _copy(manifests: ManifestStore, source: FileEntry, entry: FileEntry, manifest_key: str) -> None:
    """A staged file under its name (already there whole: a rerun's copy, kept)."""
    store = manifests.store
    existing = store.head(entry.key)
    if existing is not None and existing.size == entry.bytes:
        return
    if existing is not None:
        store.delete([entry.key])
    store.put(entry.key, store.get(source.key), {OBJECT_METADATA: manifest_key})


# ---------------------------------------------------------------------------------------------------- the task
def _merge_task(work: list[tuple[TP, list[tuple[Manifest, ...]]]], settings: TaskSettings) -> Task:
    docs = [(tp, [[m.to_dict() for m in group] for group in groups]) for tp, groups in work]

    def task(slot: int) -> Iterator[str]:
        (topic, partition), groups = docs[slot]
        for group in groups:
            chunks = tuple(Manifest.from_dict(m) for m in group)
            staged = merge_group(settings, chunks)
            yield json.dumps(
                {
                    "topic": topic,
                    "partition": partition,
                    "start": chunks[0].start,
                    "staged": [m.to_dict() for m in staged],
                }
            )

    return task


def merge_group(settings: TaskSettings, chunks: tuple[Manifest, ...]) -> list[Manifest]:
    """Runs in a task: the records of ``chunks`` read in offset order (Arrow batches) and written by the backup's
    writer under the staging tree, as one chunk (more where the backup's rotation rules cut it). Its manifests."""
    from kafka_s3.pipelines.backup.partition import PartitionBackup
    from kafka_s3.pipelines.backup.plugins import BackupPlugins
    from kafka_s3.pipelines.read.reader import read_partition

    first = chunks[0]
    topic, partition = first.topic, first.partition
    store = settings.open_store()
    config = settings.config
    read_plugins = settings.plugins("read-plugins", ReadPlugins.from_config)
    manifests = ManifestStore(store, read_plugins.manifests(store).root, read_plugins.layout.directory_delim)
    records = sum(c.records for c in chunks)
    staging = config.replace(
        topics__dir=_staging(manifests, topic, partition),
        flush__size=max(records, 1),
        rotate__size__bytes=-1,
        rotate__schedule__interval__ms=-1,
    )
    writer = PartitionBackup(
        BackupPlugins.from_config(staging),
        store,
        topic,
        partition,
        recover=False,
        previous=(first.follows,),
        topic_id=first.source_topic_id or "",
    )
    part = SourcePartition(topic, partition, [_backup_object(read_plugins.layout, read_plugins, c) for c in chunks])
    try:
        for batch in read_partition(store, read_plugins, part):
            writer.write(batch)
    except BaseException:
        writer.abort_open()
        raise
    writer.finish(chunks[-1].end + 1, flush_open=True, start=first.start)
    return list(writer.committed)


def _backup_object(layout: Layout, plugins: ReadPlugins, chunk: Manifest) -> BackupObject:
    """The reader's view of a chunk's data object, from its manifest (no listing)."""
    files = {f.kind: f for f in chunk.files}
    data = files["data"]
    name = layout.parse(data.key, cast("dict[str, Kind]", plugins.extensions()))
    if name is None:
        raise ConfigError(f"compact: {data.key} is not named as the configured format's objects are")
    return BackupObject(
        name,
        data.bytes,
        files["keys"].key if "keys" in files else None,
        files["headers"].key if "headers" in files else None,
        files["index"].key if "index" in files else None,
        records=data.records,
        last_offset=data.last_offset,
        first_timestamp=data.first_timestamp,
        last_timestamp=data.last_timestamp,
    )
