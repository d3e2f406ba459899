"""``kafka-s3 ls`` and ``kafka-s3 info``: the backups a bucket holds, found and described with S3 access alone.

Cheap on big buckets: the backups are found by walking the bucket with delimiter listings (a prefix holding
``_kafka-s3/`` is a kafka-s3 backup's ``topics.dir``; a prefix whose directories hold partition directories of
objects a peer's layout names is a Confluent or Lenses backup, one holding upload-date directories a DeviantArt one),
each backup is listed once (names and sizes, no data read), and per partition only its first and last chunk manifests
are read (offsets and record times), plus one ranged read of one data object per backup for the envelope.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kafka_s3.core.catalogue import (
    BackupDetails,
    BackupEntry,
    BackupListing,
    PartitionListing,
    PartitionSummary,
    compaction_state,
    holds_manifests,
    looks_dated,
    looks_like_topic,
)
from kafka_s3.core.errors import ConfigError, FormatError, NoBackupFound, StoreError
from kafka_s3.core.layouts.detection import LAYOUTS, OWN, detect
from kafka_s3.core.manifest import MANIFEST_DIR, Manifest, ManifestStore
from kafka_s3.core.store import Store
from kafka_s3.pipelines.read.detect_format import ENVELOPE_FORMATS, EXTENSIONS, Example, describe, envelope_of

#: how deep below the starting prefix backups are looked for (``<cluster>/<env>/topics`` is three levels)
MAX_DEPTH = 4
#: keys of a candidate topic directory whose names decide its layout
SAMPLE_KEYS = 20


@dataclass(frozen=True)
class Found:
    """A backup's prefix (``topics.dir``, no trailing delimiter) and its layout's name."""

    root: str
    layout: str


def find_backups(store: Store, prefix: str = "", delim: str = "/") -> list[Found]:
    """Every backup under ``prefix``, breadth first, by delimiter listings; a backup's own tree is not walked."""
    start = prefix.strip(delim) + delim if prefix.strip(delim) else ""
    found: list[Found] = []
    children: dict[str, list[str]] = {}

    def listed(node: str) -> list[str]:
        if node not in children:
            children[node] = store.children(node, delim)
        return children[node]

    queue = deque([(start, 0)])
    while queue:
        node, depth = queue.popleft()
        names = listed(node)
        if holds_manifests(names):
            found.append(Found(node.rstrip(delim), OWN))
            continue
        peer = _peer_layout(store, node, names, listed, delim)
        if peer is not None:
            found.append(Found(node.rstrip(delim), peer))
            continue
        if depth < MAX_DEPTH:
            queue.extend((f"{node}{name}{delim}", depth + 1) for name in names)
    return sorted(found, key=lambda f: f.root)


def _peer_layout(
    store: Store, node: str, names: list[str], listed: Callable[[str], list[str]], delim: str
) -> str | None:
    """The layout of the peer whose topic (or upload-date) directories ``node`` holds (``None``: not a peer's)."""
    if looks_dated(names):
        return _detected(store, node, node, delim)
    for name in names:
        topic_dir = f"{node}{name}{delim}"
        if not looks_like_topic(listed(topic_dir)):
            continue
        found = _detected(store, node, topic_dir, delim)
        if found is not None:
            return found
    return None


def _detected(store: Store, node: str, sample: str, delim: str) -> str | None:
    """The peer layout a few keys under ``sample`` follow, relative to ``node`` (``None``: none, or kafka-s3's)."""
    keys = [info.key for info in itertools.islice(store.list(sample), SAMPLE_KEYS)]
    detection = detect(keys, node, delim, "+", f"{store.url}/{node}")
    return detection.name if detection.name not in (None, OWN) else None


def describe_backup(
    store: Store, found: Found, name: str | None = None, delim: str = "/", topics: Collection[str] = ()
) -> BackupDetails:
    """One backup in depth from one listing of its prefix, its partitions' first and last manifests and one ranged
    read of a data object; ``topics``: only these (default: every topic)."""
    listing = BackupListing(found.root, delim)
    for info in store.list(listing.prefix()):
        listing.add(info)
    if topics:
        listing.partitions = {t: held for t, held in listing.partitions.items() if t in topics}
        listing.snapshots = {t: kinds for t, kinds in listing.snapshots.items() if t in topics}
    base = found.root + delim if found.root else ""
    manifest_stores = {
        tree: ManifestStore(store, f"{base}{MANIFEST_DIR}{delim}{tree.lstrip('.')}", delim)
        for tree in listing.manifest_trees
    }
    jobs = [
        (topic, p, held) for topic, parts in sorted(listing.partitions.items()) for p, held in sorted(parts.items())
    ]
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(jobs)))) as pool:
        partitions = tuple(pool.map(lambda job: _summary(manifest_stores, *job), jobs))
    extension = min(listing.extensions & set(EXTENSIONS), default=None)
    if extension is None:  # the data objects are gone (pruned, or not uploaded yet): the manifest trees say
        extension = min((t for t in listing.manifest_trees if t in EXTENSIONS), default=None)
    entry = BackupEntry(
        url=f"{store.url}/{found.root}" if found.root else str(store.url),
        topics_dir=found.root,
        name=name,
        layout=found.layout,
        layout_title=LAYOUTS[found.layout].title,
        format=describe(extension) if extension is not None else ", ".join(sorted(listing.extensions)),
        envelope=_envelope(store, listing, extension),
        partitions=partitions,
    )
    marks = [held.newest_mark for parts in listing.partitions.values() for held in parts.values() if held.newest_mark]
    writes = [p.last_write for p in partitions if p.last_write]
    last_cycle = max(marks) if marks else max(writes) if writes else None
    snapshots = {
        topic: {kind: tuple(sorted(times)) for kind, times in sorted(kinds.items())}
        for topic, kinds in listing.snapshots.items()
    }
    held = {(topic, p): part for topic, parts in listing.partitions.items() for p, part in parts.items()}
    return BackupDetails(entry, snapshots, last_cycle, compaction_state(held))


def _envelope(store: Store, listing: BackupListing, extension: str | None) -> bool | None:
    """Whether the data objects hold whole records, from one ranged read of the smallest one (``None``: none)."""
    if extension is None or extension not in listing.examples:
        return None
    if EXTENSIONS[extension]["format.class"] not in ENVELOPE_FORMATS:
        return False  # ByteArray, Block-GZIP: values only
    example = listing.examples[extension]
    settings = EXTENSIONS[extension]
    try:
        return envelope_of(
            store,
            Example(example.key, example.size),
            settings["format.class"],
            settings.get("s3.compression.type", "none"),
        )
    except FormatError:
        return None


def _summary(stores: dict[str, ManifestStore], topic: str, partition: int, held: PartitionListing) -> PartitionSummary:
    kept = held.kept_manifests()
    first = _manifest(stores, held, topic, partition, kept[0]) if kept else None
    committed = [m for m in held.marks if held.pruned is None or m >= held.pruned]
    last_start = max(committed) if committed else kept[-1] if kept else None
    last = _manifest(stores, held, topic, partition, last_start) if last_start is not None else None
    if first is None:  # no manifest: a peer's backup, offsets from the names only
        first_offset = held.first_name_offset if held.pruned is None else held.pruned
        return PartitionSummary(
            topic,
            partition,
            first_offset,
            None,
            None,
            None,
            held.pruned,
            held.objects,
            held.bytes,
            last_object_offset=held.last_name_offset,
            last_write=held.newest_write,
        )
    first_times = [f.first_timestamp for f in first.files if f.kind == "data" and f.first_timestamp is not None]
    last_times = [f.last_timestamp for f in (last or first).files if f.kind == "data" and f.last_timestamp is not None]
    return PartitionSummary(
        topic,
        partition,
        first.start,
        (last or first).end,
        min(first_times) if first_times else None,
        max(last_times) if last_times else None,
        held.pruned,
        held.objects,
        held.bytes,
        chunks=len(kept),
        unfinished_chunks=tuple(held.unfinished()),
        last_object_offset=held.last_name_offset,
        last_write=held.newest_write,
    )


def _manifest(
    stores: dict[str, ManifestStore], held: PartitionListing, topic: str, partition: int, start: int
) -> Manifest | None:
    """The chunk's manifest: one GET when a single manifest tree holds the partition (the listing saw the key)."""
    trees = [stores["." + tree] for tree in sorted(held.trees) if "." + tree in stores]
    if len(trees) == 1:
        key = trees[0].key(topic, partition, start)
        try:
            return Manifest.from_bytes(trees[0].store.get(key), key)
        except StoreError:  # deleted since the listing (a prune running beside): None, or the store's own error
            return trees[0].get(topic, partition, start)
    for manifests in trees:  # one backup in two formats: the tree holding this chunk
        found = manifests.get(topic, partition, start)
        if found is not None:
            return found
    return None


def catalogue(
    store: Store,
    prefix: str = "",
    delim: str = "/",
    names: Mapping[str, str] | None = None,
    topics: Collection[str] = (),
) -> list[BackupEntry]:
    """``kafka-s3 ls``: every backup under ``prefix`` (``names``: a backup's name by its ``topics.dir``, where a
    configuration tells it; ``topics``: only the backups of these, and only their partitions); :class:`NoBackupFound`
    when there is none."""
    found = find_backups(store, prefix, delim)
    where = f"{store.url}/{prefix.strip(delim)}" if prefix.strip(delim) else str(store.url)
    if not found:
        raise NoBackupFound(
            f"{where} holds no backup: no kafka-s3 metadata ({MANIFEST_DIR}/) and no <topic>/<partition>/ tree of "
            f"Confluent's or Lenses' objects within {MAX_DEPTH} levels"
        )
    entries = [describe_backup(store, one, (names or {}).get(one.root), delim, topics).entry for one in found]
    entries = [e for e in entries if e.partitions or not topics]
    if not entries:
        raise NoBackupFound(f"{where} holds no backup of {', '.join(sorted(topics))}")
    return entries


def details(
    store: Store, prefix: str, name: str | None = None, delim: str = "/", topics: Collection[str] = ()
) -> BackupDetails:
    """``kafka-s3 info``: the one backup at (or under) ``prefix``; an error when there is none, or several."""
    found = find_backups(store, prefix, delim)
    where = f"{store.url}/{prefix.strip(delim)}" if prefix.strip(delim) else str(store.url)
    if not found:
        raise NoBackupFound(f"{where} holds no backup: no kafka-s3 metadata ({MANIFEST_DIR}/) and no tree of a peer's")
    if len(found) > 1:
        listed = ", ".join(f"{store.url}/{f.root}" for f in found)
        raise ConfigError(f"{where} holds {len(found)} backups: {listed}; name one (kafka-s3 info s3://BUCKET/PREFIX)")
    return describe_backup(store, found[0], name, delim, topics)
