"""Retention that never breaks a backup: which chunks ``kafka-s3 prune`` (and ``backup.retention.*``) removes, and
the bucket's record of what was removed.

**What is removed.** Per topic-partition, whole committed chunks only, as one contiguous run from the oldest: the
chunks a selector asks for (``before``: every record older than a time, the newest record time a chunk's manifest
recorded, else the time its manifest was written; ``max_bytes``: the oldest chunks until the partition's chunks hold
at most that many bytes, as Kafka's ``retention.bytes`` counts per partition). A chunk is removed when any selector
asks for it, but never the partition's newest committed chunk (the one its newest ``.tail`` mark names: the
backup's committed end, which a backup resuming from the bucket reads), never a chunk beyond it (still uploading),
and never the chunk holding the backup's resume position (its consumer group's offset) or one after it. A run stops
at the first chunk that must stay: what is kept is always one unbroken run of offsets.

**The record.** Before anything is deleted, the new start of the partition is recorded in the bucket:
``<manifest root>/<topic>/<partition>/<first kept offset, 20 digits>.pruned``, beside the chunk manifests and
``.tail`` marks, a small versioned JSON object (:class:`PrunedRange`) created conditionally. Readers need only its
name (one listing of the manifest tree gives the start of every partition); its body says when and what was
removed. Then the chunks' files (data objects before their sidecars) are deleted, then their manifests and marks,
then the records a newer one superseded. A crash at any point leaves objects below a recorded start — orphans that
every reader ignores (they are not "missing") and the next prune removes — and never a backup that fails to verify.

**Snapshots.** The consumer-group, topic-configuration and Schema Registry series (:mod:`.snapshots`) describe the
topic at a time; once every partition's first kept record is later than some of them, the records of a series older
than the newest one at or before that time describe nothing a restore can reach: they are removed, the one a
restore from the new start picks kept (:func:`stale_snapshots`), and the newest always.

Pure: no store, no network; :mod:`kafka_s3.pipelines.prune` reads the bucket and deletes.
"""

from __future__ import annotations

import builtins
import datetime as dt
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.snapshots import pick

PRUNED = ".pruned"  # extension of a pruned-range record, next to the partition's chunk manifests
PAD = 20
VERSION = 1


# ---------------------------------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class ChunkSpan:
    """A committed chunk as the plan sees it: its offsets, size, and the time of its newest record (ms; the time its
    manifest was written when the records carry none)."""

    start: int
    end: int
    records: int
    bytes: int
    last_time: int | None = None
    first_time: int | None = None  # its oldest record's time (ms), when its manifest recorded it


@dataclass(frozen=True)
class Selectors:
    """What a prune asks to remove (any of them may ask for a chunk): records older than ``before`` (epoch ms), and
    the oldest chunks beyond ``max_bytes`` per partition."""

    before: int | None = None
    max_bytes: int | None = None

    @property
    def empty(self) -> bool:
        return self.before is None and self.max_bytes is None

    def describe(self) -> str:
        parts = []
        if self.before is not None:
            parts.append(f"records before {iso(self.before)}")
        if self.max_bytes is not None:
            parts.append(f"beyond {self.max_bytes} bytes per partition")
        return " or ".join(parts) or "nothing"


@dataclass(frozen=True)
class Cut:
    """How many of a partition's oldest chunks to remove, and why the next one stays (``""``: none is left to ask
    for)."""

    count: int
    kept_because: str


def plan_cut(
    chunks: Sequence[ChunkSpan], selectors: Selectors, committed_start: int | None, resume: int | None = None
) -> Cut:
    """The oldest chunks of one partition (``chunks``: its chunks in offset order) to remove.

    ``committed_start``: the start of the newest committed chunk (its ``.tail`` mark; ``None``: no mark, the newest
    chunk counts as committed); ``resume``: the offset the backup resumes from (its group's committed offset), when
    known. The result is a count from the oldest: the contiguous run the selectors ask for, stopped at the first
    protected chunk."""
    if not chunks or selectors.empty:
        return Cut(0, "")
    newest = committed_start if committed_start is not None else chunks[-1].start
    asked = max(_older_than(chunks, selectors.before), _beyond_bytes(chunks, selectors.max_bytes))
    for index, chunk in enumerate(chunks[:asked]):
        if chunk.start >= newest:
            return Cut(index, f"chunk {chunk.start}..{chunk.end} is the backup's newest committed chunk")
        if resume is not None and chunk.end >= resume:
            return Cut(index, f"chunk {chunk.start}..{chunk.end} holds the backup's resume position (offset {resume})")
    return Cut(asked, "")


def _older_than(chunks: Sequence[ChunkSpan], before: int | None) -> int:
    """How many of the oldest chunks hold only records older than ``before`` (a chunk of unknown time stops it)."""
    if before is None:
        return 0
    count = 0
    for chunk in chunks:
        if chunk.last_time is None or chunk.last_time >= before:
            break
        count += 1
    return count


def _beyond_bytes(chunks: Sequence[ChunkSpan], max_bytes: int | None) -> int:
    """How many of the oldest chunks to remove so that the rest hold at most ``max_bytes``."""
    if max_bytes is None:
        return 0
    total = sum(c.bytes for c in chunks)
    count = 0
    while count < len(chunks) and total > max_bytes:
        total -= chunks[count].bytes
        count += 1
    return count


# ---------------------------------------------------------------------------------------------------- the record
@dataclass(frozen=True)
class PrunedRange:
    """What one prune removed from a partition: every offset below ``start`` (the first kept chunk's start). ``at``:
    when (epoch ms); ``first_time``: the first kept record's time, when known; ``removed_from``: the first offset of
    the chunks it removed; ``chunks``, ``records``, ``bytes``: how much."""

    topic: str
    partition: int
    start: int
    at: int
    first_time: int | None = None
    removed_from: int | None = None
    chunks: int = 0
    records: int = 0
    bytes: int = 0
    reason: str = ""
    version: int = VERSION

    def to_bytes(self) -> builtins.bytes:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: builtins.bytes, key: str = "") -> PrunedRange:
        try:
            doc = json.loads(data)
            if not isinstance(doc, dict):
                raise ValueError("not a JSON object")
            if int(doc.get("version", 0)) > VERSION:
                raise ValueError(f"version {doc['version']} is newer than this kafka-s3 reads ({VERSION})")
            fields = set(cls.__dataclass_fields__)
            return cls(**{k: v for k, v in doc.items() if k in fields})
        except (ValueError, TypeError, KeyError) as exc:
            raise FormatError(f"unreadable pruned-range record: {exc}", object_key=key) from None


def record_name(start: int) -> str:
    return f"{start:0{PAD}d}{PRUNED}"


def record_start(name: str) -> int | None:
    """The start offset a record's name holds (``None``: not a pruned-range record)."""
    if not name.endswith(PRUNED):
        return None
    stem = name[: -len(PRUNED)]
    return int(stem) if stem.isdigit() else None


@dataclass(frozen=True)
class PrunedStart:
    """A partition's recorded start, as a listing tells it: offsets below ``offset`` were pruned, ``at`` epoch
    seconds (the record's time in the bucket)."""

    offset: int
    at: float = 0.0

    def describe(self) -> str:
        when = f" at {iso(int(self.at * 1000))}" if self.at else ""
        return f"pruned up to offset {self.offset - 1}{when}"


# ---------------------------------------------------------------------------------------------------- snapshots
def stale_snapshots(times: Sequence[int], first_kept: int | None) -> list[int]:
    """Times of a series' records that nothing left in the backup needs: older than the newest record at or before
    ``first_kept`` (the earliest first record time of the topic's partitions after the prune; ``None``: unknown,
    nothing removed). The newest record is always kept."""
    if first_kept is None or not times:
        return []
    keep_from = pick(list(times), first_kept)
    if keep_from is None:
        return []
    newest = max(times)
    return sorted(t for t in times if t < keep_from and t != newest)


# ---------------------------------------------------------------------------------------------------- selectors
UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_DURATION = re.compile(r"(\d+)\s*(ms|s|m|h|d|w)")


def parse_duration(text: str, option: str = "--older-than") -> int:
    """Milliseconds of a duration: a number and a unit (``ms``, ``s``, ``m``, ``h``, ``d``, ``w``), several summed
    (``1d12h``), or a bare number of milliseconds."""
    spoken = text.strip().lower().replace(" ", "")
    if spoken.isdigit():
        return int(spoken)
    parts = _DURATION.findall(spoken)
    if not spoken or not parts or "".join(n + u for n, u in parts) != spoken:
        raise ConfigError(
            f"{option}: not a duration: {text!r} (use a number and a unit: 30d, 12h, 90m, 1w, 500ms; or milliseconds)",
            key=option,
        )
    return sum(int(number) * UNITS_MS[unit] for number, unit in parts)


def parse_size(text: str, option: str = "--max-total-bytes") -> int:
    """Bytes: a number, optionally with a binary unit (``KiB``, ``MiB``, ``GiB``, ``TiB``) or a decimal one (``KB``,
    ``MB``, ``GB``, ``TB``)."""
    units = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
    units |= {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
    match = re.fullmatch(r"(\d+)\s*([a-z]*)", text.strip().lower())
    if match is None or match.group(2) not in units:
        raise ConfigError(f"{option}: not a size: {text!r} (use bytes, or e.g. 500MiB, 20GB)", key=option)
    return int(match.group(1)) * units[match.group(2)]


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
