"""The backup's own consumer group as a witness of what the bucket must hold.

A backup commits its group (``connect-<name>``, or ``group.id``) only once a chunk is durable, and records with the
offset the chunk's start and the object it committed last. Where the cluster a restore or ``verify`` talks to has that
group (the backup's own cluster), a chunk the group covers and the bucket lacks is a loss even when its manifest and
committed-end mark went with it — the one deletion the bucket alone cannot tell from "never written". The group is
read before the bucket is listed: a backup running meanwhile commits its group only after the bucket holds the chunk.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import ConfigError, KafkaError
from kafka_s3.core.manifest import PartitionManifests
from kafka_s3.pipelines.read.integrity import Finding, Kind, PartitionCheck

log = logging.getLogger("kafka_s3.read")

TP = tuple[str, int]


@dataclass(frozen=True)
class GroupMark:
    """What the backup's group says of one partition: the next offset to back up and the newest chunk committed."""

    group: str
    offset: int
    chunk: int | None  # start of the newest committed chunk (None: committed by an older version, or by hand)
    last_object: str  # the object committed last ("" unknown)


def backup_group(config: Config) -> str:
    return str(config.originals.get("group.id") or f"connect-{config['name']}")


def read_marks(config: Config, store_url: str, topics: Iterable[str]) -> tuple[dict[TP, GroupMark], str]:
    """The backup group's marks for the partitions of ``topics`` the cluster has, and a note when they could not be
    read ("" when read). Only offsets the backup itself committed for this bucket and topic count: another group of
    that name, or the same topic re-created since (its id differs), is no witness."""
    from kafka_s3.io.kafka.admin import Admin

    group = backup_group(config)
    if not (config.originals.get("bootstrap.servers") or os.environ.get("KAFKA_BOOTSTRAP_SERVERS")):
        return {}, "no Kafka cluster configured"
    try:
        admin = Admin.for_config(config)
        present = admin.topics()
        names = sorted(t for t in set(topics) if t in present)
        tps = [(t, p) for t in names for p in range(present[t])]
        committed = admin.group_offsets_with_metadata(group, tps)
        ids = admin.topic_ids(names)
    except (KafkaError, ConfigError) as exc:
        return {}, f"the backup's consumer group {group} could not be read: {exc}"
    marks = {}
    for tp, (offset, metadata) in committed.items():
        try:
            doc = json.loads(metadata) if metadata else None
        except ValueError:
            doc = None
        if offset is None or not isinstance(doc, dict) or "at" not in doc:
            continue  # not committed by a backup
        if doc.get("store", store_url) != store_url:
            continue  # a backup of that name to another bucket
        if doc.get("topic_id") and ids.get(tp[0]) and doc["topic_id"] != ids[tp[0]]:
            continue  # committed for an earlier incarnation of the topic
        chunk = doc.get("chunk")
        marks[tp] = GroupMark(group, offset, chunk if isinstance(chunk, int) else None, str(doc.get("object") or ""))
    return marks, ""


def cross_check(
    checks: dict[TP, PartitionCheck],
    manifests: dict[str, dict[int, PartitionManifests]],
    marks: dict[TP, GroupMark],
    listed: set[str],
) -> None:
    """Add a finding to each partition whose group mark says more was committed than the bucket holds: the chunk the
    group names has no manifest, and no later chunk is there (or, for offsets committed by older versions, the object
    it names is in no manifest and not listed)."""
    for tp, mark in sorted(marks.items()):
        found = checks.get(tp)
        if found is not None and any(f.kind is Kind.MISSING and f.first is None for f in found.findings):
            continue  # its manifests are lost: said already
        held = manifests.get(tp[0], {}).get(tp[1])
        chunks = held.chunks if held is not None else ()
        starts = {m.start for m in chunks}
        last = chunks[-1] if chunks else None
        if mark.chunk is not None:
            lost = mark.chunk not in starts and (last is None or last.start < mark.chunk)
        else:
            known = {f.key for m in chunks for f in m.files}
            lost = bool(mark.last_object) and mark.last_object not in known and mark.last_object not in listed
        if not lost:
            continue
        first = last.end + 1 if last is not None else (mark.chunk if mark.chunk is not None else None)
        check = checks.setdefault(tp, PartitionCheck(tp[0], tp[1], verified=True))
        check.findings.append(
            Finding(
                Kind.MISSING,
                tp[0],
                tp[1],
                first,
                mark.offset - 1,
                (mark.last_object,) if mark.last_object else (),
                f"the backup's consumer group {mark.group} committed up to offset {mark.offset}"
                + (f" (its newest chunk starts at {mark.chunk})" if mark.chunk is not None else "")
                + ", but the bucket's "
                + (f"chunks end at offset {last.end}" if last is not None else "manifests hold nothing of it")
                + ": the newest chunk(s) were deleted with their manifests",
            )
        )
