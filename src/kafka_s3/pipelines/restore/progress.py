"""Where a restore resumes from, and whether that progress is its own.

Progress (the next source offset to restore) is committed per target partition to the restore's consumer group, with
the restore's identity in the offset's metadata: the source (store, bucket, topics.dir, topic, partition), the target
(cluster id, topic id, partition) and the bounds given. Progress of another identity — the target topic deleted and
re-created, another bucket, other bounds — is never trusted: an empty target partition starts fresh, a non-empty one
is refused (``--restart`` starts over). So a re-created target is restored again instead of being told "nothing to
do", and a finished restore run again with the same identity writes nothing.

Each task decides again, with the progress it reads once its transactional producer has fenced any other producer of
the same partition: a decision taken when the restore planned may be stale by then (another run committed since, or
Spark runs the task a second time). The metadata also names the run (``run``), so that a run's own ``--restart``
progress is resumed by that run, not restarted again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from enum import StrEnum


@dataclass(frozen=True)
class ProgressIdentity:
    source: str  # store url / bucket / topics.dir
    source_topic: str
    source_partition: int
    cluster: str  # target cluster id ("" when the broker gives none)
    target_topic: str
    target_topic_id: str  # "" when the broker has no topic ids
    target_partition: int
    bounds: str

    def to_metadata(self, run: str = "") -> str:
        doc: dict[str, object] = {"kafka-s3-restore": asdict(self)}
        if run:
            doc["run"] = run
        return json.dumps(doc, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_metadata(cls, text: str) -> ProgressIdentity | None:
        """The identity stamped in committed offset metadata (``None``: progress from before identities, or none)."""
        try:
            doc = json.loads(text)["kafka-s3-restore"]
            return cls(**{f.name: doc[f.name] for f in fields(cls)})
        except (ValueError, TypeError, KeyError):
            return None

    def differences(self, other: ProgressIdentity) -> list[str]:
        """What differs, in words (ids the broker does not give are not compared)."""
        out = []
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if f.name in ("cluster", "target_topic_id") and not (mine and theirs):
                continue
            if mine != theirs:
                out.append(f"{f.name.replace('_', ' ')} {theirs!r} -> {mine!r}")
        return out


def run_of(metadata: str) -> str:
    """The run that committed progress with ``metadata`` ("" when it does not say)."""
    try:
        run = json.loads(metadata).get("run", "")
    except (ValueError, TypeError, AttributeError):
        return ""
    return run if isinstance(run, str) else ""


class Start(StrEnum):
    FRESH = "fresh"  # no progress, or progress not ours on an empty target
    RESUME = "resume"  # our own progress (or progress from before identities)


@dataclass(frozen=True)
class Decision:
    start: Start
    reason: str = ""  # why progress is not used (logged), or why the restore is refused (error)
    refused: bool = False


def decide(
    identity: ProgressIdentity,
    committed: int | None,
    metadata: str,
    target_end: int,
    restart: bool = False,
    *,
    run: str = "",
    append: bool = False,
    target_has_records: bool | None = None,
) -> Decision:
    """Resume from ``committed`` only when it is this restore's own progress and the target still holds what it
    produced. ``target_end``: the target partition's high watermark (0: empty, never written since it was created);
    ``target_has_records``: whether it holds records a reader sees (``None``: not known, taken as ``target_end > 0``)
    — a target holding records no restore's progress accounts for is refused unless ``append``. ``run``: this run,
    whose own ``--restart`` progress is resumed."""
    where = f"{identity.target_topic}[{identity.target_partition}]"
    if committed is None:
        holds = target_end > 0 if target_has_records is None else target_has_records
        if not holds:
            return Decision(Start.FRESH)
        if append:
            return Decision(Start.FRESH, f"{where}: --append: adding the backup's records after those already there")
        return Decision(
            Start.FRESH,
            f"{where} already holds records that no restore's progress accounts for: restoring would add the "
            "backup's records after them. Restore into an empty topic, or run again with --append to add them",
            refused=True,
        )
    if restart:
        if run and run_of(metadata) == run:
            return Decision(Start.RESUME)  # this run's own --restart progress (its task ran again)
        return Decision(Start.FRESH, f"{where}: --restart: restoring from the start, ignoring progress {committed}")
    stamped = ProgressIdentity.from_metadata(metadata)
    changed = stamped.differences(identity) if stamped is not None else []
    if not changed:
        if target_end == 0 and committed > 0:
            return Decision(
                Start.FRESH,
                f"{where}: the restore's progress says {committed} but the target partition is empty (deleted and "
                "re-created?): restoring from the start",
            )
        return Decision(Start.RESUME)
    if target_end == 0:
        return Decision(
            Start.FRESH,
            f"{where}: progress {committed} belongs to another restore ({'; '.join(changed)}); the target "
            "partition is empty: restoring from the start",
        )
    return Decision(
        Start.FRESH,
        f"{where} holds records and the restore's progress ({committed}) was made by another restore "
        f"({'; '.join(changed)}): resuming could lose or duplicate records. Restore into an empty topic, or run "
        "again with --restart to restore from the start (records already there stay: duplicates)",
        refused=True,
    )
