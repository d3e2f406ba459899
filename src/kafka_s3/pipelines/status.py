"""``kafka-s3 status``: where a backup stands, per partition, read from both sides: Kafka (the log end, the consumer
group's committed offset and its metadata) and the bucket (the committed end its chunk manifests and marks record,
the newest data object and its age, and the backup's start once ``kafka-s3 prune`` removed its oldest chunks: the
first restorable offset and its record's time). When the consumer group is gone, the bucket's view is what a backup
would resume from, and what the lag is counted against. When the bucket cannot be read, Kafka's side is still told
(:class:`~kafka_s3.core.errors.StatusWithoutBucket` carries it)."""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import dataclass
from typing import Any

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import FormatError, StatusWithoutBucket, StoreError
from kafka_s3.core.layout import SIDE_SUFFIXES
from kafka_s3.core.manifest import EXTENSION, TAIL, Manifest, ManifestStore
from kafka_s3.core.prune import PRUNED, PrunedRange, iso, record_name
from kafka_s3.core.store import Store
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.pipelines.backup.driver import backup_topics, group_id


@dataclass(frozen=True)
class BucketView:
    """One partition as the bucket records it: the end of its committed chunks, and its newest data object."""

    committed: int  # the offset after the last committed chunk
    last_object: str  # the newest data object ("": none among the newest chunks)
    last_modified: float | None  # epoch seconds
    last_record_ms: int | None = None  # time of the newest record of the committed chunk, when its manifest has it
    pruned_start: int | None = None  # the first restorable offset after kafka-s3 prune (None: never pruned)
    pruned_start_ms: int | None = None  # the time of the record at that offset, when the prune recorded it


# How many chunks before the committed one status looks through for a data object (chunks of tombstones alone, in
# Confluent's plain layout, hold only .keys/.headers sidecars)
DATA_LOOKBACK = 20


def bucket_views(store: Store, manifests: ManifestStore, topic: str) -> dict[int, BucketView]:
    """Per partition with manifests: one listing of the topic's manifest tree, then the one manifest that holds the
    committed end (the newest chunk with a committed mark, else the newest chunk) and a HEAD of the newest data
    object at or before it (a chunk of tombstones alone has none: the chunks before it are looked at)."""
    base = f"{manifests.root}{manifests.delim}{topic}{manifests.delim}"
    chunks: dict[int, int] = {}
    starts: dict[int, list[int]] = {}
    marks: dict[int, int] = {}
    pruned: dict[int, int] = {}
    for listed in store.list(base):
        parts = listed.key[len(base) :].split(manifests.delim)
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        partition, name = int(parts[0]), parts[1]
        stem, _, extension = name.partition(".")
        if not stem.isdigit():
            continue
        found = {EXTENSION: chunks, TAIL: marks, PRUNED: pruned}.get("." + extension)
        if found is not None:
            found[partition] = max(found.get(partition, -1), int(stem))
        if found is chunks:
            starts.setdefault(partition, []).append(int(stem))
    views = {}
    for partition in sorted(chunks):
        chosen = marks.get(partition, chunks[partition])
        manifest = manifests.get(topic, partition, chosen)
        if manifest is None:
            continue
        earlier = sorted((s for s in starts[partition] if s < chosen), reverse=True)[:DATA_LOOKBACK]
        key = _last_data_key(manifests, topic, partition, manifest, earlier)
        info = store.head(key) if key else None
        times = [f.last_timestamp for f in manifest.files if f.last_timestamp is not None]
        start = pruned.get(partition)
        views[partition] = BucketView(
            manifest.end + 1,
            key,
            info.last_modified if info else None,
            max(times) if times else None,
            start,
            _first_kept_time(store, manifests, topic, partition, start),
        )
    return views


def _first_kept_time(
    store: Store, manifests: ManifestStore, topic: str, partition: int, start: int | None
) -> int | None:
    """The time of the first record a prune kept, as its record in the bucket says (one GET; ``None``: not pruned,
    or not recorded)."""
    if start is None:
        return None
    key = manifests.prefix(topic, partition) + record_name(start)
    try:
        return PrunedRange.from_bytes(store.get(key), key).first_time
    except FormatError:
        return None


def _last_data_key(manifests: ManifestStore, topic: str, partition: int, newest: Manifest, earlier: list[int]) -> str:
    """The last data object of the newest manifest holding one: ``newest`` first, then the chunks starting at
    ``earlier`` (newest first), each read only when the ones after it hold no data object."""
    manifest: Manifest | None = newest
    for start in [*earlier, None]:
        data = [f.key for f in manifest.files if f.kind == "data"] if manifest is not None else []
        if data or start is None:
            return data[-1] if data else ""
        manifest = manifests.get(topic, partition, start)
    return ""


def is_data_object(key: str) -> bool:
    """Whether an object's name is a data object's, not a ``.keys``/``.headers``/``.index`` sidecar's."""
    stem = key.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return not any(stem.endswith(suffix) for suffix in SIDE_SUFFIXES)


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds")


def backup_status(config: Config, store: Store | None = None, now: float | None = None) -> list[dict[str, Any]]:
    """One row per partition of the backed-up topics. Kafka is read first; a bucket that cannot be read (unreachable,
    refused, missing) ends it with :class:`StatusWithoutBucket`, which carries the rows of Kafka's side."""
    from kafka_s3.io.stores.spec import StoreSpec
    from kafka_s3.pipelines.backup.plugins import BackupPlugins

    admin = Admin.for_config(config)
    topics = backup_topics(admin, config)[0]
    tps = [(t, p) for t, n in sorted(topics.items()) for p in range(n)]
    group = group_id(config)
    committed = admin.group_offsets_with_metadata(group, tps)
    ends = admin.end_offsets(tps, read_committed=config["isolation.level"] == "read_committed")
    plugins = BackupPlugins.from_config(config)
    bucket: dict[str, dict[int, BucketView]] = {}
    unread: StoreError | None = None
    try:
        store = store or StoreSpec.from_config(config).open()
        manifests = ManifestStore(store, plugins.manifest_root, config["directory.delim"])
        bucket = {topic: bucket_views(store, manifests, topic) for topic in sorted(topics)}
    except StoreError as exc:
        unread = exc
    now = time.time() if now is None else now
    rows = []
    for tp in tps:
        offset, metadata = committed.get(tp, (None, ""))
        info = {}
        if metadata:
            try:
                info = json.loads(metadata)
            except ValueError:
                info = {}
        view = bucket.get(tp[0], {}).get(tp[1])
        first_kept_ms = None if view is None else view.pruned_start_ms
        at = info["at"] / 1000 if info.get("at") else None
        # what the group's commit names: a chunk ending in tombstones named its .keys sidecar (plain layout)
        committed_object = str(info.get("object") or "")
        last_object = (view.last_object if view is not None else "") or (
            committed_object if is_data_object(committed_object) else ""
        )
        source = "group"
        if offset is None:  # the group is gone (or never committed): the bucket's view
            source = "bucket" if view is not None else "none"
            if view is not None:
                last_object, at = view.last_object, view.last_modified
        base = offset if offset is not None else view.committed if view is not None else None
        rows.append(
            {
                "group": group,
                "topic": tp[0],
                "partition": tp[1],
                "committed": offset,
                "end": ends[tp],
                "lag": None if base is None else max(0, ends[tp] - base),
                "bucket_committed": None if view is None else view.committed,
                "last_object": last_object or None,
                "last_commit": _iso(at),
                "last_commit_age_s": None if at is None else max(0, round(now - at)),
                "last_record_ms": None if view is None else view.last_record_ms,
                "pruned_start": None if view is None else view.pruned_start,
                "pruned_start_time": None if first_kept_ms is None else iso(first_kept_ms),
                "view": source,
            }
        )
    if unread is not None:
        raise StatusWithoutBucket(f"status shows Kafka's side only: the bucket cannot be read: {unread}", rows)
    return rows
