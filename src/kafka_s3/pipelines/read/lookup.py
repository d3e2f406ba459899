"""``kafka-s3 read``: a few records of a backup from an offset, without Spark and without reading whole objects.

Only the object that holds the offset is read. When the backup has a block index (``format.class=block_gzip``),
only the index and the block holding the offset are fetched, with a ranged GET, as DeviantArt's README describes.
Other formats read that one object. The restore's integrity checks run first, on the listing and the manifests: a
damaged object among the offsets returned (or read past) is a ``BackupIncomplete`` naming it, never a skipped range.
"""

from __future__ import annotations

from typing import Any

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import ConfigError, NotInBackup
from kafka_s3.core.records import to_dicts
from kafka_s3.core.store import Store
from kafka_s3.pipelines.read.discovery import SourcePartition, discover
from kafka_s3.pipelines.read.integrity import (
    blocking_within,
    incomplete,
    survey,
    unfinished_error,
    unfinished_within,
    without_excluded,
)
from kafka_s3.pipelines.read.layouts import detected
from kafka_s3.pipelines.read.options import Bounds
from kafka_s3.pipelines.read.planning import Ranges
from kafka_s3.pipelines.read.plugins import ReadPlugins
from kafka_s3.pipelines.read.reader import read_partition


def read_records(
    config: Config, partition: int, offset: int, count: int, topic: str | None = None, store: Store | None = None
) -> list[dict[str, Any]]:
    """Up to ``count`` records of ``topic[partition]`` from ``offset`` on, as :func:`kafka_s3.core.records.to_dicts`
    gives them. The topic defaults to the configuration's only topic, or the bucket's only topic."""
    if count < 1:
        raise ConfigError(f"--count must be at least 1, got {count}")
    if store is None:
        from kafka_s3.io.stores.spec import StoreSpec

        store = StoreSpec.from_config(config).open()
    config, _ = detected(config, store)
    plugins = ReadPlugins.from_config(config)
    topic = topic or _only_topic(config, store, plugins)
    found = survey(store, plugins, [topic])
    parts, checks = found.partitions, found.checks
    tp = (topic, partition)

    def refuse_damage(first: int, end: int | None) -> None:
        """The restore's checks: a damaged object holding offsets the read returns (or reads past) is an error, and
        so are offsets not committed yet (in or after a chunk the backup has not finished uploading)."""

        def asked(where: tuple[str, int]) -> Ranges | None:
            return Ranges.between(first, end) if where == tp else None

        damaged = blocking_within(checks, asked)
        if damaged:
            raise incomplete(damaged)
        unfinished = unfinished_within(checks, asked)
        if unfinished:
            raise unfinished_error(unfinished)

    refuse_damage(offset, offset + count)
    part = parts.get(tp)
    if part is None:
        raise NotInBackup(f"no backed-up objects of {topic}[{partition}] in {store.url}")
    part.objects = without_excluded(part, checks.get(tp))
    # First exactly the offsets asked for: with a block index, only the blocks holding them are fetched. Offsets may
    # have gaps (compaction, transaction markers): then read on from the last record, until ``count`` records.
    out = _take(store, plugins, part, Bounds(offset, offset + count), count)
    if len(out) < count:
        following = out[-1]["offset"] + 1 if out else offset + count
        out += _take(store, plugins, part, Bounds(following), count - len(out))
    refuse_damage(offset, out[-1]["offset"] + 1 if len(out) == count else None)  # and what it read on past
    if not out:
        raise NotInBackup(f"{topic}[{partition}] has no backed-up record at or after offset {offset}")
    return out


def _take(
    store: Store, plugins: ReadPlugins, part: SourcePartition, bounds: Bounds, count: int
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    batches = read_partition(store, plugins, part, bounds, bound_options=("--offset", "--offset + --count"))
    try:
        for batch in batches:
            out.extend(to_dicts(batch.slice(0, count - len(out))))
            if len(out) >= count:
                break
    finally:
        batches.close()  # stop reading now: nothing past the records taken is fetched
    return out


def _only_topic(config: Config, store: Store, plugins: ReadPlugins) -> str:
    topics: list[str] = list(config["topics"] or [])
    if len(topics) == 1:
        return topics[0]
    found = sorted({topic for topic, _ in discover(store, plugins, topics or None)})
    if len(found) != 1:
        listed = ", ".join(found) or "none"
        raise ConfigError(f"--topics is needed: the backup holds {len(found)} topics ({listed})")
    return found[0]
