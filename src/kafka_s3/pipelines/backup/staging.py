"""A staged object: bytes written before the object's name is known, uploaded under it once it is.

Lenses' names hold what only a closed object knows (its last offset, its records' first and last timestamps), so an
object of a layout that names at close (``names_at_close``) is written here first — in memory up to
:data:`SPOOL_BYTES`, then in a temporary file — and copied into a conditional upload of the final key when its chunk
closes. Lenses' sink does the same (LS ``sink/writer/Writer``: a local staging file, uploaded at ``commit``).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping

from kafka_s3.core.store import ObjectInfo, Store, Upload

SPOOL_BYTES = 8 << 20
COPY_BYTES = 8 << 20


class StagedUpload(Upload):
    """An :class:`Upload` whose bytes wait locally until :meth:`upload_as` names them; it never commits itself."""

    def __init__(self, description: str):
        self.key = description  # what error messages show until the object has its name
        self._file = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 (closed by upload_as/abort)
        self._size = 0

    def write(self, data: bytes | bytearray | memoryview) -> int:
        written = self._file.write(data)
        self._size += written
        return written

    @property
    def bytes_written(self) -> int:
        return self._size

    def commit(self) -> ObjectInfo:
        raise RuntimeError(f"{self.key}: a staged object is uploaded under its name with upload_as()")

    def abort(self) -> None:
        self._file.close()

    def upload_as(self, store: Store, key: str, metadata: Mapping[str, str] | None = None) -> Upload:
        """A conditional upload of ``key`` holding the staged bytes (with object ``metadata``), to commit with the
        chunk's other files."""
        upload = store.create(key, metadata)
        try:
            self._file.seek(0)
            while chunk := self._file.read(COPY_BYTES):
                upload.write(chunk)
        except BaseException:
            upload.abort()
            raise
        finally:
            self._file.close()
        return upload
