"""Where a backup starts reading a topic-partition it sees for the first time, and the checks that the log it is
about to read is the one the bucket and the consumer group describe.

The position comes from the consumer group, else from the bucket's manifests, else from the log start (or end, with
``auto.offset.reset=latest``). Two resume holes are closed here: a position inside an existing chunk (a group reset by
hand) moves to that chunk's start, so no object overlapping it is written; and a position the log cannot have (a
group offset or a stored chunk beyond the log's end: the topic was deleted and re-created, or this is another
cluster) is an error naming both sides, never a silent skip.
"""

from __future__ import annotations

import bisect
import json
import logging
from dataclasses import dataclass

from kafka_s3.core.errors import PlanError, SourceChanged
from kafka_s3.core.manifest import Manifest, ManifestStore

log = logging.getLogger("kafka_s3.backup")


@dataclass(frozen=True)
class Resume:
    next_offset: int
    forced_end: int | None = None  # re-create the bucket's chunk ending there first


@dataclass(frozen=True)
class LogRange:
    """The partition's log as the broker reports it now: offsets ``start`` .. ``end - 1``."""

    start: int
    end: int

    def __str__(self) -> str:
        if self.end > self.start:
            return f"log offsets {self.start}..{self.end - 1}"
        return f"empty log (next offset {self.end})"


def committed_by_us(metadata: str) -> bool:
    """True when the group offset carries the metadata our driver commits with: such offsets are always chunk
    boundaries (the start of an open chunk, or just past a committed one)."""
    try:
        doc = json.loads(metadata) if metadata else None
    except ValueError:
        return False
    return isinstance(doc, dict) and "at" in doc


def from_group(
    manifests: ManifestStore, where: tuple[str, int], group: str, offset: int, ours: bool, log_range: LogRange
) -> Resume:
    """Resume at a committed group offset: refused beyond the log's end; moved to the start of the chunk it falls
    inside (when the offset was not committed by us)."""
    topic, partition = where
    if offset > log_range.end:
        raise PlanError(
            f"{topic}[{partition}]: group {group} has committed offset {offset}, but the {log_range} (the topic was "
            "deleted and re-created, or this is another cluster): backing up from there would skip records. Delete "
            f"the group's offsets (kafka-consumer-groups --delete-offsets --group {group}) or set group.id to a new "
            "group to back up this log"
        )
    if ours:
        return Resume(offset)
    chunk = containing(manifests, topic, partition, offset)
    if chunk is None:
        return Resume(offset)
    if chunk.start >= log_range.start:
        log.warning(
            "%s[%d]: group %s offset %d is inside the bucket's chunk %d..%d; re-creating that chunk as it is "
            "(no overlapping object)",
            topic,
            partition,
            group,
            offset,
            chunk.start,
            chunk.end,
        )
        return Resume(chunk.start, forced_end=chunk.end)
    log.warning(
        "%s[%d]: group %s offset %d is inside the bucket's chunk %d..%d, whose first records are gone from Kafka; "
        "continuing after it at %d",
        topic,
        partition,
        group,
        offset,
        chunk.start,
        chunk.end,
        chunk.end + 1,
    )
    return Resume(chunk.end + 1)


def from_bucket(
    manifests: ManifestStore,
    where: tuple[str, int],
    group: str,
    bucket: str,
    log_range: LogRange,
    topic_id: str = "",
) -> Resume | None:
    """Resume from the bucket's manifests (the group has no offset): at the first chunk whose files are incomplete,
    else at the last chunk, which is replayed. Refused when the bucket holds offsets beyond the log's end, or chunks
    of a topic of another id (``topic_id``: the topic's now, "" where the broker gives none)."""
    topic, partition = where
    point = manifests.resume_point(topic, partition)
    if point is None:
        return None
    manifest, missing = point
    last = manifest if not missing else manifests.get(topic, partition, manifests.starts(topic, partition)[-1])
    if last is not None and last.end >= log_range.end:
        raise SourceChanged(
            f"{topic}[{partition}]: the bucket {bucket} holds chunk {last.start}..{last.end} "
            f"({manifests.key(topic, partition, last.start)}), but the {log_range} (the topic was deleted and "
            "re-created, or this is another cluster): this log is not the one backed up there. Back it up to "
            "another bucket or topics.dir"
        )
    recorded = last.source_topic_id if last is not None else None
    if last is not None and recorded and topic_id and recorded != topic_id:
        raise SourceChanged(
            f"{topic}[{partition}]: the topic's id is {topic_id}, and the bucket {bucket} holds chunks up to offset "
            f"{last.end} backed up from topic id {recorded} ({manifests.key(topic, partition, last.start)}): this "
            "is not the log the bucket holds (the topic was deleted and re-created, or this is another cluster's "
            "topic of the same name). Nothing of it was written; back this log up under another topics.dir (or "
            "bucket), or remove the old backup first"
        )
    if missing:
        log.warning(
            "%s[%d]: no committed offset in group %s; the bucket's chunk %d..%d misses %d file(s) (e.g. %s: its "
            "upload never completed); resuming from it",
            topic,
            partition,
            group,
            manifest.start,
            manifest.end,
            len(missing),
            missing[0],
        )
    else:
        log.info(
            "%s[%d]: no committed offset in group %s; resuming from the bucket's last chunk %d..%d",
            topic,
            partition,
            group,
            manifest.start,
            manifest.end,
        )
    return Resume(manifest.start, forced_end=manifest.end)


def containing(manifests: ManifestStore, topic: str, partition: int, offset: int) -> Manifest | None:
    """The stored chunk that holds ``offset`` without starting at it, if any."""
    starts = manifests.starts(topic, partition)
    index = bisect.bisect_right(starts, offset) - 1
    if index < 0 or starts[index] == offset:
        return None
    chunk = manifests.get(topic, partition, starts[index])
    return chunk if chunk is not None and chunk.end >= offset else None


def after_retention(manifests: ManifestStore, where: tuple[str, int], log_start: int) -> Resume:
    """Resume at the log start (the records before it were deleted before being backed up), or just past the stored
    chunk that holds it: its records are in the bucket, and a chunk started inside it would overlap it."""
    topic, partition = where
    chunk = containing(manifests, topic, partition, log_start)
    if chunk is None:
        return Resume(log_start)
    log.warning(
        "%s[%d]: the log now starts at %d, inside the bucket's chunk %d..%d; continuing after it at %d",
        topic,
        partition,
        log_start,
        chunk.start,
        chunk.end,
        chunk.end + 1,
    )
    return Resume(chunk.end + 1)


def check_log_end(where: tuple[str, int], next_offset: int, end: int, group: str) -> None:
    """A following backup's position beyond the log's end: the topic was deleted and re-created under it."""
    if end < next_offset:
        raise PlanError(
            f"{where[0]}[{where[1]}]: the backup has reached offset {next_offset} (group {group}), but the log now "
            f"ends at offset {end - 1} (the topic was deleted and re-created?): backing up from there would skip "
            "records. Delete the group's offsets or set group.id to a new group to back up this log"
        )


def check_topic_id(where: tuple[str, int], group: str, metadata: str, current: str) -> None:
    """The group offset was committed for another incarnation of the topic (its id, recorded with each commit,
    differs: the topic was deleted and re-created, or this is another cluster's topic of the same name). Brokers
    without topic ids give "" and are not compared."""
    try:
        doc = json.loads(metadata) if metadata else {}
    except ValueError:
        return
    stored = doc.get("topic_id", "") if isinstance(doc, dict) else ""
    if stored and current and stored != current:
        raise PlanError(
            f"{where[0]}[{where[1]}]: group {group} committed its offsets for topic id {stored}, but the topic now has "
            f"id {current} (deleted and re-created, or another cluster): resuming would skip or mix records. Delete "
            f"the group's offsets (kafka-consumer-groups --delete-offsets --group {group}) or set group.id to a new "
            "group to back up this log"
        )
