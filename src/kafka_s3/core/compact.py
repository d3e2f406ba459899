"""Compaction of small objects: which committed chunks ``kafka-s3 compact`` merges, and the bucket's record that makes
the merge crash-safe.

**What is merged.** Per topic-partition, runs of consecutive committed chunks (each one's ``follows`` is the end of
the one before it) older than the partition's newest committed chunk (the one its newest ``.tail`` mark names: a
running backup's tail, never touched), each smaller than the target, whose files sit in one directory (one data
object per chunk) with no tombstone files or ambiguous records. A run is cut into groups of at least two chunks
holding at most ``target`` bytes and/or records together (:func:`plan_groups`); each group becomes one chunk (more
only where the backup's own rotation rules cut it, e.g. a schema change), written by the backup's own writers.

**The record.** The merged chunk's names are the layout's (Confluent's: the first offset of the object), so its
first object takes the name of the group's first original object: it cannot be written there while the originals
are the backup. So the merged files are first written under a staging tree
(``<manifest root>/<topic>/_compacting/<partition>/…``, invisible to every reader), then the compaction record
``<manifest root>/<topic>/<partition>/<group start, 20 digits>.compacting`` (:class:`Compaction`) is created. From
that moment readers take the record's staged chunk(s) in place of every chunk of its range (:func:`superseding`),
whatever is left of the originals. Then the originals are deleted (files, manifests, marks), the staged files copied
to their names and their manifests created, the record deleted (readers now take the new manifests), and the
staging tree last. A crash at any point leaves either the originals (before the record) or the record's chunk (after
it), never both and never neither: ``verify`` calls the backup whole and a restore reads each record once. The next
``compact`` finishes what a record names before planning anything new.

Pure: no store, no network; :mod:`kafka_s3.pipelines.compact` reads the bucket, runs the merge and deletes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.manifest import COMPACTING, Compaction, Manifest, record_name, record_start, superseding

__all__ = ["COMPACTING", "Compaction", "record_name", "record_start", "superseding"]  # the record: core.manifest's

STAGING_DIR = "_compacting"  # under <manifest root>/<topic>/: the merged files before they take their names


# ---------------------------------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class Target:
    """How big a merged chunk may grow: ``bytes`` (stored bytes of its files) and/or ``records`` (``None``: no
    limit of that kind; one of them must be set)."""

    bytes: int | None = None
    records: int | None = None

    @classmethod
    def of(cls, target_bytes: int, target_records: int) -> Target:
        target = cls(target_bytes if target_bytes > 0 else None, target_records if target_records > 0 else None)
        if target.bytes is None and target.records is None:
            raise ConfigError(
                "compact: compact.target.bytes and compact.target.records are both unlimited: set one of them",
                key="compact.target.bytes",
            )
        return target

    def fits(self, records: int, size: int) -> bool:
        return (self.bytes is None or size <= self.bytes) and (self.records is None or records <= self.records)

    def describe(self) -> str:
        said = [f"{self.bytes} bytes"] if self.bytes is not None else []
        said += [f"{self.records} records"] if self.records is not None else []
        return " and ".join(said)


def chunk_bytes(chunk: Manifest) -> int:
    return sum(f.bytes for f in chunk.files)


def unmergeable(chunk: Manifest) -> str:
    """Why a chunk cannot be merged with others ("" when it can): its files must be one data object and its
    sidecars, in one directory, without tombstone files or records a reader cannot tell apart."""
    data = [f for f in chunk.files if f.kind == "data"]
    if len(data) != 1:
        return f"chunk {chunk.start}..{chunk.end} has {len(data)} data objects"
    if len({f.directory for f in chunk.files}) > 1:
        return f"chunk {chunk.start}..{chunk.end} spans several directories"
    if any(f.tombstones for f in chunk.files):
        return f"chunk {chunk.start}..{chunk.end} holds tombstone files"
    if any(f.ambiguous for f in chunk.files):
        return f"chunk {chunk.start}..{chunk.end} holds records a reader cannot tell apart"
    return ""


def plan_groups(chunks: Sequence[Manifest], committed_start: int | None, target: Target) -> list[tuple[Manifest, ...]]:
    """The groups of ``chunks`` (one partition's, in offset order) to merge, each of at least two consecutive chunks
    holding at most ``target`` together. ``committed_start``: the start of the newest committed chunk (its
    ``.tail`` mark; ``None``: the newest chunk counts as committed): it and every chunk after it are left alone."""
    if not chunks:
        return []
    newest = committed_start if committed_start is not None else chunks[-1].start
    groups: list[tuple[Manifest, ...]] = []
    run: list[Manifest] = []

    def close() -> None:
        if len(run) >= 2:
            groups.append(tuple(run))
        run.clear()

    for chunk in chunks:
        if chunk.start >= newest or unmergeable(chunk) or not target.fits(chunk.records, chunk_bytes(chunk)):
            close()
            continue
        if run and not _follows(run[-1], chunk):
            close()
        if run and not target.fits(sum(c.records for c in run) + chunk.records, sum(map(chunk_bytes, run + [chunk]))):
            close()
        run.append(chunk)
    close()
    return groups


def _follows(before: Manifest, chunk: Manifest) -> bool:
    """``chunk`` comes right after ``before`` in the backup, in the same directory."""
    linked = chunk.follows is None or chunk.follows == before.end
    return linked and chunk.start > before.end and _directory(before) == _directory(chunk)


def _directory(chunk: Manifest) -> str:
    return next((f.directory for f in chunk.files if f.kind == "data"), "")


# ---------------------------------------------------------------------------------------------------- staging
def staging_dir(manifest_root: str, delim: str, topic: str, partition: int) -> str:
    """The ``topics.dir`` the merged files of a partition are written under before they take their names: inside
    the topic's manifest tree, where no reader lists data and no listing of chunk manifests looks."""
    return delim.join((manifest_root, topic, STAGING_DIR, str(partition)))


def final_key(staged_key: str, staging: str, topic_prefix: str, delim: str) -> str:
    """A staged file's name in the layout: the same path under ``topics.dir`` (``topic_prefix``: its prefix)."""
    head = staging + delim
    if not staged_key.startswith(head):
        raise FormatError(f"a staged file outside its staging tree {head}", object_key=staged_key)
    return topic_prefix + staged_key[len(head) :]
