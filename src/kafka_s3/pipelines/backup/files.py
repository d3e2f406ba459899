"""The files of a partition's open chunk: one object (and its keys, headers and index sidecars) per encoded partition,
each streaming into a conditional upload until its chunk commits."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field

from kafka_s3.core.converters.base import ValueSchema
from kafka_s3.core.formats.base import FormatWriter
from kafka_s3.core.store import Upload

log = logging.getLogger("kafka_s3.pipelines.backup.partition")


@dataclass
class Sidecar:
    kind: str
    key: str
    upload: Upload
    writer: FormatWriter | None  # None for an index sidecar, whose bytes come whole from the data writer


@dataclass
class OpenFile:
    """One object being written for an encoded partition of the open chunk."""

    encoded: str
    key: str
    directory: str
    first_offset: int
    last_offset: int = -1
    records: int = 0
    first_timestamp: int | None = None  # earliest record time (ms), None while no record has one
    last_timestamp: int | None = None
    upload: Upload | None = None  # None when the object is already in the bucket (replayed chunk)
    writer: FormatWriter | None = None
    schema: ValueSchema | None = None  # of its first non-null value: values of other schemas are projected to it
    sidecars: list[Sidecar] = field(default_factory=list)
    untimed: bool = False  # holds a record without a timestamp (Lenses' names then give -1 as the smallest)
    # behavior.on.null.values=write: tombstones only, kept as keys and headers sidecars without a value object (CS
    # format/KeyValueHeaderRecordWriterProvider.getRecordWriter); their offsets go into the chunk manifest
    tombstones: list[int] | None = None

    def abort(self) -> None:
        for upload in [self.upload] + [s.upload for s in self.sidecars]:
            if upload is not None:
                try:
                    upload.abort()
                except Exception:  # aborting is best effort: an abandoned multipart upload only costs storage
                    log.warning("could not abort the upload of %s", self.key, exc_info=True)
        for writer in [self.writer] + [s.writer for s in self.sidecars]:
            if writer is not None:
                with contextlib.suppress(Exception):  # nothing of it is kept either way
                    writer.discard()


def ambiguous(writer: FormatWriter | None) -> int:
    """Records of a closed object that cannot be read back one by one (none for an object replayed from the bucket,
    whose chunk manifest is kept as it is)."""
    return writer.ambiguous() if writer is not None else 0
