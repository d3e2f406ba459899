"""The backup's position in the table: every snapshot kafka-s3 commits records, in its summary, the next offset of
each topic-partition the table holds (``kafka-s3.offsets.<topic>`` → ``{"<partition>": <next offset>}``). Each
summary carries its parent's positions forward, so the newest snapshot that has them is the whole position: on
resume it is the source of truth, and the consumer group only follows it. Beside it, ``kafka-s3.starts.<topic>``
records the offset of each topic-partition's first record backed up, so that a restore tells a table that lost its
first rows (or all of them) from one that never had them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from kafka_s3.core.errors import DataError

OFFSETS_PREFIX = "kafka-s3.offsets."
STARTS_PREFIX = "kafka-s3.starts."
BACKUP_KEY = "kafka-s3.backup"  # the configuration's name that committed the snapshot

TopicPartition = tuple[str, int]


def offsets_summary(offsets: Mapping[TopicPartition, int]) -> dict[str, str]:
    """The summary properties recording ``offsets`` (topic-partition → next offset to back up)."""
    return _summary(OFFSETS_PREFIX, offsets)


def starts_summary(starts: Mapping[TopicPartition, int]) -> dict[str, str]:
    """The summary properties recording ``starts`` (topic-partition → offset of its first record backed up)."""
    return _summary(STARTS_PREFIX, starts)


def _summary(prefix: str, offsets: Mapping[TopicPartition, int]) -> dict[str, str]:
    by_topic: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, {})[str(partition)] = offset
    return {f"{prefix}{topic}": json.dumps(positions, separators=(",", ":")) for topic, positions in by_topic.items()}


def has_offsets(summary: Mapping[str, str]) -> bool:
    return any(key.startswith(OFFSETS_PREFIX) for key in summary)


def parse_offsets(summary: Mapping[str, str], where: str = "the table's snapshot") -> dict[TopicPartition, int]:
    """The positions a snapshot summary records (empty when it records none). A damaged entry is a
    :class:`DataError` naming the key: resuming from a guess would duplicate or lose records."""
    return _parse(summary, OFFSETS_PREFIX, where)


def parse_starts(summary: Mapping[str, str], where: str = "the table's snapshot") -> dict[TopicPartition, int]:
    """Where each topic-partition's backup began, as a snapshot summary records it (empty for a table written before
    kafka-s3 recorded it); damaged: a :class:`DataError` naming the key."""
    return _parse(summary, STARTS_PREFIX, where)


def _parse(summary: Mapping[str, str], prefix: str, where: str) -> dict[TopicPartition, int]:
    offsets: dict[TopicPartition, int] = {}
    for key, text in summary.items():
        if not key.startswith(prefix):
            continue
        topic = key[len(prefix) :]
        try:
            positions = json.loads(text)
            if not isinstance(positions, dict):
                raise ValueError("not an object")
            for partition, offset in positions.items():
                if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
                    raise ValueError(f"partition {partition}: {offset!r} is not an offset")
                offsets[(topic, int(partition))] = offset
        except ValueError as exc:
            raise DataError(
                f"{where}: summary property {key}={text!r} is not a map of partitions to offsets ({exc})"
            ) from None
    return offsets


def recorded(
    ancestry: Iterable[tuple[int, Mapping[str, str]]], table: str
) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """The positions and the starts the newest snapshot recording them holds, from a snapshot's ancestry (its id and
    summary, newest first): a snapshot of another writer (a compaction, an expiry) records none and is looked past."""
    for snapshot_id, summary in ancestry:
        if has_offsets(summary):
            where = f"Iceberg table {table}, snapshot {snapshot_id}"
            return parse_offsets(summary, where), parse_starts(summary, where)
    return {}, {}
