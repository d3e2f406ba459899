"""A part buffer that keeps memory bounded: bytes stay in memory up to a limit, then move to a temporary file.

One open object per topic-partition times many partitions per executor would not fit in memory if every open
object held a full part (25 MiB by default); spilling keeps each at ``upload.buffer.memory.bytes``.
"""

from __future__ import annotations

import io
import tempfile
from typing import BinaryIO


class SpillBuffer:
    """Append-only bytes, in memory until ``memory_limit`` would be exceeded, then in an anonymous temp file."""

    def __init__(self, memory_limit: int):
        self._memory_limit = memory_limit
        self._file: io.BytesIO | BinaryIO = io.BytesIO()
        self.spilled = False
        self.size = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not self.spilled and self.size + len(data) > self._memory_limit:
            self._spill()
        self._file.write(data)
        self.size += len(data)

    def _spill(self) -> None:
        disk = tempfile.TemporaryFile(prefix="kafka-s3-part-")
        with self._file.getbuffer() as pending:
            disk.write(pending)
        self._file.close()
        self._file = disk
        self.spilled = True

    @property
    def memory_bytes(self) -> int:
        """Bytes held in memory (0 once spilled or closed)."""
        return 0 if self.spilled or self._file.closed else self.size

    def body(self) -> BinaryIO:
        """The content as a file positioned at its start (an upload body; call again before each attempt)."""
        self._file.seek(0)
        return self._file

    def close(self) -> None:
        self._file.close()
