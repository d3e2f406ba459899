"""The object store contract shared by S3 and the local directory store.

Objects are created with **conditional create** semantics only: a key that exists is never overwritten (the
exactly-once backup depends on it), and writes are streamed so memory stays bounded whatever the object size.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    size: int
    etag: str = ""
    last_modified: float = 0.0  # epoch seconds
    metadata: Mapping[str, str] = field(default_factory=dict)  # user metadata (only filled by head())


class Upload(ABC):
    """A streaming, conditional object creation. Nothing is visible under ``key`` before ``commit`` succeeds."""

    key: str

    @abstractmethod
    def write(self, data: bytes | bytearray | memoryview) -> int:
        """Append bytes. Memory held stays bounded (parts go out as they fill; pending bytes may spill to disk)."""

    @abstractmethod
    def commit(self) -> ObjectInfo:
        """Make the object visible, atomically, only if no object exists under ``key``.

        Raises :class:`~kafka_s3.core.errors.ObjectExistsError` when one does (the upload is then aborted).
        """

    @abstractmethod
    def abort(self) -> None:
        """Discard everything written; safe to call twice or after a failed commit."""

    @property
    @abstractmethod
    def bytes_written(self) -> int: ...

    # file-like conveniences so format writers (gzip, pyarrow, fastavro) can write straight into an upload
    def writable(self) -> bool:
        return True

    def flush(self) -> None:  # noqa: B027 (file-like no-op: uploads send parts as they fill)
        pass

    def tell(self) -> int:
        return self.bytes_written

    @property
    def closed(self) -> bool:
        return False


class Store(ABC):
    """One bucket (or directory) with the operations backup and restore need."""

    #: printable location, e.g. ``s3://bucket`` or ``file:///data/bucket``
    url: str

    @abstractmethod
    def check(self) -> None:
        """Verify the bucket exists and the credentials work.

        Raises :class:`~kafka_s3.core.errors.BucketNotFoundError` or
        :class:`~kafka_s3.core.errors.StoreAccessDeniedError`.
        """

    @abstractmethod
    def create(
        self,
        key: str,
        metadata: Mapping[str, str] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> Upload:
        """Start a conditional, streaming creation of ``key`` with user ``metadata`` and object ``tags``."""

    def put(self, key: str, data: bytes, metadata: Mapping[str, str] | None = None) -> ObjectInfo:
        """Create a small object in one call (conditional, like ``create``)."""
        upload = self.create(key, metadata)
        try:
            upload.write(data)
        except BaseException:
            upload.abort()
            raise
        return upload.commit()

    @abstractmethod
    def put_tags(self, key: str, tags: Mapping[str, str]) -> None:
        """Replace the object tags of an existing ``key``.

        Tags describing the finished object (Confluent's startOffset, endOffset, recordCount) are only known once its
        bytes are written, so, as in Confluent's sink, they are set after the commit.
        """

    @abstractmethod
    def head(self, key: str) -> ObjectInfo | None:
        """Size, ETag and user metadata of ``key``; ``None`` when absent."""

    @abstractmethod
    def get(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        """The object's bytes, or the inclusive byte range ``[start, end]`` (an HTTP ranged GET)."""

    @abstractmethod
    def open(self, key: str) -> BinaryIO:
        """A streaming, read-only binary file for the object (does not load it whole into memory)."""

    @abstractmethod
    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        """Every object under ``prefix`` exactly once, in no guaranteed order (callers sort)."""

    def children(self, prefix: str, delimiter: str = "/") -> builtins.list[str]:
        """The distinct names that follow ``prefix`` up to the next ``delimiter`` among keys that have one (the
        "directories" under ``prefix``), sorted."""
        names = {
            info.key[len(prefix) :].partition(delimiter)[0]
            for info in self.list(prefix)
            if delimiter in info.key[len(prefix) :]
        }
        return sorted(names)

    @abstractmethod
    def delete(self, keys: Iterable[str]) -> None: ...

    @abstractmethod
    def create_bucket(self) -> None:
        """Create the bucket (only ``kafka-s3 bucket create`` calls this; jobs never create buckets)."""

    def close(self) -> None:  # noqa: B027 (optional: only stores holding clients or pools override it)
        """Release clients and thread pools."""
