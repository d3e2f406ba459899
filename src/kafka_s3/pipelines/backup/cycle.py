"""What the backup driver knows between cycles, per partition and per cycle, and how a task's result moves it.

A partition's state is the driver's only memory of it: the next offset to read (what the group commits), the chunk
still open (when its time rules count from), the newest chunk committed (what the next one ``follows``) and its
failures in a row (its backoff). It changes only in :meth:`PartitionState.absorb`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_s3.core.errors import (
    BackupFailed,
    BucketNotFoundError,
    KafkaAuthorizationError,
    KafkaError,
    KafkaS3Error,
    StoreAccessDeniedError,
    StoreError,
)
from kafka_s3.io.kafka.clients import TP
from kafka_s3.pipelines.backup.result import PartitionResult

ONCE_ATTEMPTS = 4  # run_once: tries of a failing partition (as Spark's task retries) before it gives up
ONCE_RETRY_BASE_SECONDS = 0.5


@dataclass
class PartitionState:
    next_offset: int
    forced_end: int | None = None  # re-create the bucket's chunk ending there first
    last_scanned: int = -1  # high watermark seen by the last cycle that read this partition
    open_records: int = 0
    open_since: float | None = None  # wall time the open chunk was first seen (start of that cycle)
    open_start: int | None = None  # first offset of the open chunk
    last_object: str = ""
    last_chunk: int | None = None  # start of the newest chunk committed (recorded with the group's offsets)
    # End of the newest chunk this run committed (the next chunk's manifest ``follows`` it); unknown until then, when
    # the task looks it up in the bucket.
    previous_end: int | None = None
    previous_known: bool = False
    previous_record: str | None = None  # digest of the record at previous_end (the log must still hold it)
    # The bucket held no chunk of this partition when this run resumed it, and no task has run it since: its first
    # task neither lists the chunks before it nor looks for one to replay (a chunk another writer created meanwhile
    # is still met at its conditional create)
    unrecorded: bool = False
    failures: int = 0  # retryable task failures in a row
    retry_at: float = 0.0  # monotonic time before which a failing partition is not planned again

    def absorb(self, result: PartitionResult, planned_start: int, cycle_wall_start: float) -> bool:
        """Move to where ``result`` left the partition; whether the group's offset is to be committed (it moved, or
        a chunk ending where it stood was committed)."""
        committed = result.committed_offset
        self.unrecorded = False
        if result.chunks:
            self.last_chunk = result.chunks[-1].start
        advanced = committed > self.next_offset or (committed == self.next_offset and bool(result.chunks))
        self.next_offset = max(self.next_offset, committed)
        if result.chunks:
            self.previous_end, self.previous_known = result.chunks[-1].end, True
            self.previous_record = result.chunks[-1].last_record
        if self.forced_end is not None and (result.chunks or committed > planned_start):
            self.forced_end = None
        self.last_scanned = result.read_until
        open_chunk = result.open_chunk
        if open_chunk:
            self.open_records = open_chunk.records
            if self.open_since is None or self.open_start != open_chunk.start:
                # A chunk opened during this cycle: its scheduled rotation counts from the cycle's start.
                self.open_since, self.open_start = cycle_wall_start, open_chunk.start
        else:
            self.open_records, self.open_since, self.open_start = 0, None, None
        return advanced

    def commit_metadata(self, store_url: str, topic_id: str) -> str:
        """What the group's offset is committed with: the newest chunk it covers (verify and restore compare the
        bucket with it), the store, the time and the topic's id (a re-created topic is another log)."""
        return json.dumps(
            {
                "object": self.last_object,
                "chunk": self.last_chunk,
                "store": store_url,
                "at": int(time.time() * 1000),
                "topic_id": topic_id,
            }
        )


def metadata_field(metadata: str, name: str, default: Any) -> Any:
    """A field of :meth:`PartitionState.commit_metadata` (``default``: absent, or not ours)."""
    try:
        doc = json.loads(metadata) if metadata else {}
    except ValueError:
        return default
    return doc.get(name, default) if isinstance(doc, dict) else default


@dataclass
class CycleReport:
    cycle: int
    partitions: int
    records: int = 0
    objects: int = 0
    bytes: int = 0
    replayed: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    retrying: list[str] = field(default_factory=list)  # partitions that failed and are retried with backoff


@dataclass
class BackupSummary:
    cycles: list[CycleReport] = field(default_factory=list)
    committed: dict[TP, int] = field(default_factory=dict)
    targets: dict[TP, int] = field(default_factory=dict)

    @property
    def records(self) -> int:
        return sum(c.records for c in self.cycles)

    @property
    def objects(self) -> int:
        return sum(c.objects for c in self.cycles)

    @property
    def bytes(self) -> int:
        return sum(c.bytes for c in self.cycles)


OnCycle = Callable[[CycleReport, list[PartitionResult]], None]
"""Called after each cycle's commit with its report and the tasks' results (progress bars, tests)."""


def backoff(interval: float, failures: int) -> float:
    """Seconds to wait after ``failures`` failures in a row: doubling from the cycle interval, at most 5 minutes."""
    return float(min(300.0, interval * 2 ** min(failures, 8)))


def gave_up(message: str, failures: list[str], cause: KafkaS3Error | None = None) -> BackupFailed:
    """``run_once``'s failure for partitions it could not back up, with the exit code of the service they failed on
    (``cause``'s, else the first failure's kind named in ``failures``; 5 when none is the project's own)."""
    error = BackupFailed(message)
    if cause is not None:
        error.exit_code = cause.exit_code
        return error
    for line in failures:
        kind = re.match(r"\S+\[\d+\]: (\w+): ", line)
        known = _FAILURE_KINDS.get(kind.group(1)) if kind else None
        if known is not None:
            error.exit_code = known
            break
    return error


def failure_kind(line: str) -> tuple[str, int]:
    """The error class a failed partition's line (``topic[p]: Kind: message``) names, and its exit code (1 when
    the class is not one of the backup's known kinds)."""
    kind = re.match(r"\S+\[\d+\]: (\w+): ", line)
    name = kind.group(1) if kind else "Error"
    return name, _FAILURE_KINDS.get(name, 1)


# The error kinds a backup task reports by name, and their exit codes (3 object store, 4 Kafka or Schema Registry)
_FAILURE_KINDS = {
    **{
        kind.__name__: kind.exit_code
        for kind in (StoreError, BucketNotFoundError, StoreAccessDeniedError, KafkaError, KafkaAuthorizationError)
    },
    "SchemaRegistryUnavailable": 4,
    "SchemaRegistryError": 4,
}
