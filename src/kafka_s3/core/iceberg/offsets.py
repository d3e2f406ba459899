"""The backup's position in the table: every snapshot kafka-s3 commits records, in its summary, the next offset of
each topic-partition the table holds (``kafka-s3.offsets.<topic>`` → ``{"<partition>": <next offset>}``). Each
summary carries its parent's positions forward, so the newest snapshot that has them is the whole position: on
resume it is the source of truth, and the consumer group only follows it."""

from __future__ import annotations

import json
from collections.abc import Mapping

from kafka_s3.core.errors import DataError

OFFSETS_PREFIX = "kafka-s3.offsets."
BACKUP_KEY = "kafka-s3.backup"  # the configuration's name that committed the snapshot

TopicPartition = tuple[str, int]


def offsets_summary(offsets: Mapping[TopicPartition, int]) -> dict[str, str]:
    """The summary properties recording ``offsets`` (topic-partition → next offset to back up)."""
    by_topic: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, {})[str(partition)] = offset
    return {
        f"{OFFSETS_PREFIX}{topic}": json.dumps(positions, separators=(",", ":"))
        for topic, positions in by_topic.items()
    }


def has_offsets(summary: Mapping[str, str]) -> bool:
    return any(key.startswith(OFFSETS_PREFIX) for key in summary)


def parse_offsets(summary: Mapping[str, str], where: str = "the table's snapshot") -> dict[TopicPartition, int]:
    """The positions a snapshot summary records (empty when it records none). A damaged entry is a
    :class:`DataError` naming the key: resuming from a guess would duplicate or lose records."""
    offsets: dict[TopicPartition, int] = {}
    for key, text in summary.items():
        if not key.startswith(OFFSETS_PREFIX):
            continue
        topic = key[len(OFFSETS_PREFIX) :]
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
