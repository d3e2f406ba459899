"""A directory that behaves like a bucket: for development, tests and air-gapped backups.

``store.url=file:///root`` and ``s3.bucket.name=b`` make the bucket the directory ``root/b``. Creation has S3's
conditional-create semantics: bytes go to a hidden temporary file that is published with ``os.link``, which fails
instead of replacing an existing file, so exactly one of several racing writers wins and nothing is ever visible
half-written. Names starting with ``.`` are the store's own (temporary files, metadata sidecars): listings skip
them and keys may not use them.
"""

from __future__ import annotations

import builtins
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from stat import S_ISREG
from typing import BinaryIO

from kafka_s3.core.errors import BucketNotFoundError, ObjectExistsError, StoreAccessDeniedError, StoreError
from kafka_s3.core.store import ObjectInfo, Store, Upload
from kafka_s3.io.stores.spec import StoreSpec


class LocalStore(Store):
    """One bucket directory under a root directory."""

    def __init__(self, spec: StoreSpec):
        if not spec.local_root:
            raise StoreError("the local store needs store.url=file:///path/to/directory")
        self.spec = spec
        self.root = Path(spec.local_root)
        self.bucket_dir = self.root / spec.bucket
        self.url = self.bucket_dir.as_uri()

    def check(self) -> None:
        self._require_bucket()
        if not os.access(self.bucket_dir, os.R_OK | os.W_OK | os.X_OK):
            raise StoreAccessDeniedError(f"no read/write access to the bucket directory {self.bucket_dir}")

    def create(
        self,
        key: str,
        metadata: Mapping[str, str] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> LocalUpload:
        path = self._path(key)
        self._require_bucket()
        with self._errors("create", key):
            path.parent.mkdir(parents=True, exist_ok=True)
            return LocalUpload(self, key, path, {"metadata": dict(metadata or {}), "tags": dict(tags or {})})

    def put_tags(self, key: str, tags: Mapping[str, str]) -> None:
        path = self._path(key)
        with self._errors("put_tags", key):
            try:
                sidecar_path = _sidecar_path(path, path.stat().st_ino)
            except (FileNotFoundError, NotADirectoryError):
                raise StoreError(f"put_tags {self.url}/{key}: no such object") from None
            sidecar = _read_sidecar(sidecar_path)
            _write_durably(sidecar_path, json.dumps({**sidecar, "tags": dict(tags)}).encode("utf-8"))

    def head(self, key: str) -> ObjectInfo | None:
        path = self._path(key)
        with self._errors("head", key):
            try:
                stat = path.stat()
            except (FileNotFoundError, NotADirectoryError):
                return None
            if not S_ISREG(stat.st_mode):  # a "directory" is not an object
                return None
            sidecar = _read_sidecar(_sidecar_path(path, stat.st_ino))
        return ObjectInfo(key, stat.st_size, last_modified=stat.st_mtime, metadata=sidecar["metadata"])

    def get(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        with self.open(key) as file:
            size = os.fstat(file.fileno()).st_size
            first = start or 0
            if first > 0 and first >= size:
                raise StoreError(f"get {self.url}/{key}: range {first}-{end} is past the end ({size} bytes)")
            file.seek(first)
            return file.read(-1 if end is None else end - first + 1)

    def open(self, key: str) -> BinaryIO:
        path = self._path(key)
        with self._errors("open", key):
            try:
                return path.open("rb")
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                self._require_bucket()
                raise StoreError(f"open {self.url}/{key}: no such object") from None

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        self._require_bucket()
        directory = prefix.rpartition("/")[0]
        start = self._path(directory) if directory else self.bucket_dir
        with self._errors("list", prefix):
            if not start.is_dir():
                return
            pending = [start]
            while pending:
                with os.scandir(pending.pop()) as entries:
                    for entry in entries:
                        if entry.name.startswith("."):
                            continue
                        key = _key_of(Path(entry.path).relative_to(self.bucket_dir).as_posix())
                        if entry.is_dir(follow_symlinks=False):
                            if f"{key}/".startswith(prefix):
                                pending.append(Path(entry.path))
                        elif entry.is_file() and key.startswith(prefix):
                            stat = entry.stat()
                            yield ObjectInfo(key, stat.st_size, last_modified=stat.st_mtime)

    def children(self, prefix: str, delimiter: str = "/") -> builtins.list[str]:  # ``list`` is the method here
        if delimiter != "/" or (prefix and not prefix.endswith("/")):
            return super().children(prefix, delimiter)
        self._require_bucket()
        start = self._path(prefix.rstrip("/")) if prefix else self.bucket_dir
        with self._errors("list", prefix):
            if not start.is_dir():
                return []
            with os.scandir(start) as entries:
                return sorted(
                    _key_of(e.name) for e in entries if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")
                )

    def delete(self, keys: Iterable[str]) -> None:
        self._require_bucket()
        for key in keys:
            path = self._path(key)
            with self._errors("delete", key):
                try:
                    inode = path.stat().st_ino
                    path.unlink()
                except (FileNotFoundError, NotADirectoryError):
                    continue  # like S3: deleting a missing key is not an error
                _sidecar_path(path, inode).unlink(missing_ok=True)

    def create_bucket(self) -> None:
        with self._errors("create_bucket", ""):
            self.bucket_dir.mkdir(parents=True, exist_ok=True)

    # ---------------------------------------------------------------------------------------------- helpers
    def _path(self, key: str) -> Path:
        """The file of ``key``. A segment starting with ``.`` (Lenses' ``.indexes/…/.locks/…``) is stored as
        ``%2E…`` so that it never meets the store's own hidden files (temporary uploads, metadata)."""
        segments = key.split("/")
        if any(s in ("", ".", "..") or s.startswith(DOT_ESCAPE) for s in segments):
            raise StoreError(
                f"invalid object key for the local store: {key!r} (empty, '.' and '..' segments, and segments "
                f"starting with {DOT_ESCAPE!r}, are not allowed)"
            )
        return self.bucket_dir.joinpath(*(DOT_ESCAPE + s[1:] if s.startswith(".") else s for s in segments))

    def _require_bucket(self) -> None:
        if not self.bucket_dir.is_dir():
            raise BucketNotFoundError(
                f"bucket '{self.spec.bucket}' does not exist at {self.root.as_uri()}; buckets are never created "
                f"implicitly: run `kafka-s3 bucket create {self.spec.bucket}`"
            )

    @contextmanager
    def _errors(self, operation: str, key: str) -> Iterator[None]:
        """File system errors as store errors naming the operation and key."""
        try:
            yield
        except PermissionError as exc:
            raise StoreAccessDeniedError(f"{operation} {self.url}/{key}: {exc.strerror}: {exc.filename}") from exc
        except OSError as exc:
            raise StoreError(f"{operation} {self.url}/{key} failed: {exc.strerror or exc}") from exc


class LocalUpload(Upload):
    """Bytes go straight to a hidden temporary file next to the target; ``commit`` links it into place."""

    def __init__(self, store: LocalStore, key: str, path: Path, sidecar: dict[str, dict[str, str]]):
        self.key = key
        self._store = store
        self._path = path
        self._sidecar = sidecar
        descriptor, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        self._temp = Path(temp)
        self._file = os.fdopen(descriptor, "wb")
        self._bytes_written = 0
        self._closed = False

    @property
    def bytes_written(self) -> int:
        return self._bytes_written

    @property
    def closed(self) -> bool:
        return self._closed

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self._closed:
            raise ValueError(f"upload of {self.key} is already committed or aborted")
        with self._store._errors("write", self.key):
            written = self._file.write(data)
        self._bytes_written += written
        return written

    def commit(self) -> ObjectInfo:
        if self._closed:
            raise ValueError(f"upload of {self.key} is already committed or aborted")
        try:
            with self._store._errors("commit", self.key):
                self._file.flush()
                os.fsync(self._file.fileno())
                self._file.close()
                # The sidecar is named after the inode that the link publishes, so it is in place before the object
                # is visible and a losing racer's sidecar can never be mistaken for the winner's.
                sidecar = _sidecar_path(self._path, self._temp.stat().st_ino)
                _write_durably(sidecar, json.dumps(self._sidecar).encode("utf-8"))
                try:
                    os.link(self._temp, self._path)
                except FileExistsError:
                    sidecar.unlink(missing_ok=True)
                    raise ObjectExistsError(self.key) from None
                self._temp.unlink()
                _fsync_directory(self._path.parent)
                stat = self._path.stat()
        except BaseException:
            self.abort()
            raise
        self._closed = True
        return ObjectInfo(self.key, stat.st_size, last_modified=stat.st_mtime)

    def abort(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._file.close()
        self._temp.unlink(missing_ok=True)


DOT_ESCAPE = "%2E"


def _key_of(relative: str) -> str:
    """The key of a file's path relative to the bucket directory (``%2E`` at a segment's start back to ``.``)."""
    return "/".join("." + s[len(DOT_ESCAPE) :] if s.startswith(DOT_ESCAPE) else s for s in relative.split("/"))


def _sidecar_path(path: Path, inode: int) -> Path:
    return path.with_name(f".{path.name}.{inode}.meta.json")


def _read_sidecar(path: Path) -> dict[str, dict[str, str]]:
    try:
        sidecar: dict[str, dict[str, str]] = json.loads(path.read_text("utf-8"))
        return sidecar
    except FileNotFoundError:  # an object put into the directory by other means
        return {"metadata": {}, "tags": {}}


def _write_durably(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` all at once: a reader sees the old content or the new, never a part."""
    descriptor, temp = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
