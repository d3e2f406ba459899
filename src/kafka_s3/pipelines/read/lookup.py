"""``kafka-s3 read``: a few records of a backup from an offset, without Spark and without reading whole objects.

Only the object that holds the offset is read. When the backup has a block index (``format.class=block_gzip``),
only the index and the block holding the offset are fetched, with a ranged GET, as DeviantArt's README describes.
Other formats read that one object. The restore's integrity checks run first, on the listing and the manifests: a
damaged object among the offsets returned (or read past) is a ``BackupIncomplete`` naming it, never a skipped range.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import ConfigError, NotInBackup
from kafka_s3.core.records import to_dicts
from kafka_s3.core.store import Store
from kafka_s3.pipelines.read.discovery import SourcePartition, discover
from kafka_s3.pipelines.read.integrity import (
    Survey,
    blocking_within,
    incomplete,
    survey,
    unfinished_error,
    unfinished_within,
    without_excluded,
)
from kafka_s3.pipelines.read.layouts import detected
from kafka_s3.pipelines.read.options import Bounds, Start
from kafka_s3.pipelines.read.planning import Ranges
from kafka_s3.pipelines.read.plugins import ReadPlugins
from kafka_s3.pipelines.read.pruned import pruned_starts, refuse_offset, refuse_time
from kafka_s3.pipelines.read.reader import read_partition


def read_records(
    config: Config, partition: int, offset: int, count: int, topic: str | None = None, store: Store | None = None
) -> list[dict[str, Any]]:
    """Up to ``count`` records of ``topic[partition]`` from ``offset`` on, as :func:`kafka_s3.core.records.to_dicts`
    gives them. The topic defaults to the configuration's only topic, or the bucket's only topic."""
    start = Start("positions", positions=(((None, partition), offset),))
    return list(records_from(config, start, [topic] if topic else None, count=count, store=store))


def records_from(
    config: Config,
    start: Start,
    topics: Sequence[str] | None = None,
    partitions: Sequence[int] | None = None,
    count: int | None = None,
    store: Store | None = None,
) -> Iterator[dict[str, Any]]:
    """The records of each partition of ``topics`` (default: the configuration's or the bucket's only topic) from
    ``start`` on, partition after partition in order, as :func:`kafka_s3.core.records.to_dicts` gives them with their
    ``topic`` and ``partition``: at most ``count`` of each partition (``None``: to the end of what the backup holds).
    ``partitions`` (default: every partition the backup holds, or those ``start`` gives offsets for) must be in it.

    The restore's checks run first: a damaged object among the offsets a partition's read returns (or reads past) is
    an error before any of its records; reading to the end, a chunk the backup has not finished uploading ends the
    read after the records before it, with the error saying so."""
    if count is not None and count < 1:
        raise ConfigError(f"--count must be at least 1, got {count}")
    if start.kind == "positions" and partitions:
        raise ConfigError("--offset PARTITION:OFFSET names the partitions to read: leave out --partition")
    if store is None:
        from kafka_s3.io.stores.spec import StoreSpec

        store = StoreSpec.from_config(config).open()
    config, _ = detected(config, store)
    plugins = ReadPlugins.from_config(config)
    names = list(dict.fromkeys(topics or [_only_topic(config, store, plugins)]))
    found = survey(store, plugins, names)
    for topic in names:
        held = sorted(p for t, p in found.partitions if t == topic)
        wanted = start.partitions(topic) if start.kind == "positions" else list(partitions or held)
        if not wanted:
            raise NotInBackup(f"no backed-up objects of {topic} in {store.url}")
        for partition in dict.fromkeys(wanted):
            yield from _partition_records(store, plugins, found, (topic, partition), start, count)


def _partition_records(
    store: Store, plugins: ReadPlugins, found: Survey, tp: tuple[str, int], start: Start, count: int | None
) -> Iterator[dict[str, Any]]:
    """One partition's records from ``start`` on (see :func:`records_from`)."""
    topic, partition = tp

    def refuse_damage(first: int, end: int | None, unfinished_too: bool = True) -> None:
        """The restore's checks: a damaged object holding offsets the read returns (or reads past) is an error, and
        so are offsets not committed yet (in or after a chunk the backup has not finished uploading)."""

        def asked(where: tuple[str, int]) -> Ranges | None:
            return Ranges.between(first, end) if where == tp else None

        damaged = blocking_within(found.checks, asked)
        if damaged:
            raise incomplete(damaged)
        unfinished = unfinished_within(found.checks, asked) if unfinished_too else []
        if unfinished:
            raise unfinished_error(unfinished)

    part = found.partitions.get(tp)
    if part is None:
        raise NotInBackup(f"no backed-up objects of {topic}[{partition}] in {store.url}")
    part.objects = without_excluded(part, found.checks.get(tp))
    _refuse_pruned(found, tp, start)
    first = _first_offset(store, plugins, part, start)
    if first is None:
        return  # at the end of what the backup holds, or no record at or after the time asked for
    if count is None:  # to the end: damage anywhere on the way before anything; an unfinished chunk where it starts
        refuse_damage(first, None, unfinished_too=False)
        batches = read_partition(store, plugins, part, Bounds(first), bound_options=("--offset", "--offset"))
        try:
            for batch in batches:
                yield from _with_place(to_dicts(batch), tp)
        finally:
            batches.close()
        refuse_damage(first, None)
        return
    refuse_damage(first, first + count)
    # First exactly the offsets asked for: with a block index, only the blocks holding them are fetched. Offsets may
    # have gaps (compaction, transaction markers): then read on from the last record, until ``count`` records.
    out = _take(store, plugins, part, Bounds(first, first + count), count)
    if len(out) < count:
        following = out[-1]["offset"] + 1 if out else first + count
        out += _take(store, plugins, part, Bounds(following), count - len(out))
    refuse_damage(first, out[-1]["offset"] + 1 if len(out) == count else None)  # and what it read on past
    if not out and start.kind in ("offset", "positions"):
        raise NotInBackup(f"{topic}[{partition}] has no backed-up record at or after offset {first}")
    yield from _with_place(out, tp)


def _refuse_pruned(found: Survey, tp: tuple[str, int], start: Start) -> None:
    """An offset, or a time, before what ``kafka-s3 prune`` left of the partition: an error naming where it starts."""
    starts = pruned_starts(found.manifests)
    offset = start.value if start.kind == "offset" else start.offset_of(tp) if start.kind == "positions" else None
    if offset is not None:
        refuse_offset(starts, tp, offset, "--offset")
    elif start.kind == "time":
        refuse_time(starts, [tp], start.value, "--offset s@")


def _with_place(records: list[dict[str, Any]], tp: tuple[str, int]) -> Iterator[dict[str, Any]]:
    for record in records:
        record["topic"], record["partition"] = tp
        yield record


def _first_offset(store: Store, plugins: ReadPlugins, part: SourcePartition, start: Start) -> int | None:
    """The offset ``start`` stands for in ``part`` (None: nothing to read)."""
    if start.kind == "offset":
        return start.value
    if start.kind == "positions":
        return start.offset_of((part.topic, part.partition))
    if not part.objects or start.kind == "end":
        return None
    if start.kind == "beginning":
        return part.objects[0].start
    if start.kind == "from_end":
        return max(part.objects[0].start, _end_of(store, plugins, part) - start.value)
    at = _take(store, plugins, part, Bounds(from_timestamp=start.value), 1)
    return at[0]["offset"] if at else None


def _end_of(store: Store, plugins: ReadPlugins, part: SourcePartition) -> int:
    """The offset after the last record ``part`` holds: from its last object's manifest, else by reading that
    object."""
    last = part.objects[-1]
    if last.last_offset is not None:
        return last.last_offset + 1
    only_last = SourcePartition(part.topic, part.partition, [last])
    ends = [batch.column("offset")[-1].as_py() for batch in read_partition(store, plugins, only_last) if len(batch)]
    return max(ends, default=last.start - 1) + 1


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
