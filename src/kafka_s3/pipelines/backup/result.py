"""What a backup task tells the driver about its partition: the one type that crosses the Spark boundary.

It travels as JSON (a Spark result row holds a string), so the fields are plain values and the (de)serialization is
written out here, next to the type, and tested for round trips.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kafka_s3.core.manifest import FileEntry, Manifest


def logged_objects(chunk: Manifest) -> list[FileEntry]:
    """The files of ``chunk`` the backup logs one line each for (and counts as objects): its data objects, and the
    keys sidecar of a tombstone file (which has no data object). Other sidecars travel with their data object."""
    return [f for f in chunk.files if f.kind == "data" or (f.kind == "keys" and f.tombstones)]


@dataclass(frozen=True)
class OpenChunk:
    """The chunk still open when the task ended (not durable: the next cycle reads it again from ``start``)."""

    start: int
    records: int
    first_timestamp: int | None = None  # ms of its first record, when known


@dataclass(frozen=True)
class PartitionResult:
    topic: str
    partition: int
    start: int  # where the task started reading
    read_until: int  # the first offset it did not read
    committed_offset: int  # every record below it is in durable chunks
    chunks: tuple[Manifest, ...] = ()  # committed by this task (replayed ones included)
    open_chunk: OpenChunk | None = None
    records_in: int = 0
    replayed_files: int = 0  # files of re-created chunks that were already stored
    read_bytes: int = 0  # key and value bytes read from Kafka
    error: str | None = None  # a record the configuration cannot back up (deterministic, not retried), or ...
    retryable: bool = False  # ... a failure another attempt may cure (store, Kafka): the driver retries the partition

    @property
    def files(self) -> list[FileEntry]:
        return [f for chunk in self.chunks for f in chunk.files]

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "start": self.start,
            "read_until": self.read_until,
            "committed_offset": self.committed_offset,
            "chunks": [chunk.to_dict() for chunk in self.chunks],
            "open_chunk": None if self.open_chunk is None else vars(self.open_chunk).copy(),
            "records_in": self.records_in,
            "replayed_files": self.replayed_files,
            "read_bytes": self.read_bytes,
            "error": self.error,
            "retryable": self.retryable,
        }

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> PartitionResult:
        return cls(
            topic=doc["topic"],
            partition=doc["partition"],
            start=doc["start"],
            read_until=doc["read_until"],
            committed_offset=doc["committed_offset"],
            chunks=tuple(Manifest.from_dict(chunk) for chunk in doc["chunks"]),
            open_chunk=None if doc["open_chunk"] is None else OpenChunk(**doc["open_chunk"]),
            records_in=doc["records_in"],
            replayed_files=doc["replayed_files"],
            read_bytes=doc["read_bytes"],
            error=doc["error"],
            retryable=doc.get("retryable", False),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> PartitionResult:
        return cls.from_dict(json.loads(text))
