"""Giving a Python worker's freed memory back to the system while a task runs.

A backup with a thousand open objects grows a thousand buffers side by side, spills them and frees them; glibc keeps
the freed pages inside its heap (fragmented, below the top, so never trimmed on its own) and Arrow's mimalloc pool
keeps its segments. Measured on the memory case (bench/README.md, "Memory"): one worker's task ended at 310 MiB RSS
with 113 MiB of free heap that only ``malloc_trim`` returns. The task calls :func:`release` every
``RELEASE_EVERY_BYTES`` read, which costs a few milliseconds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

import pyarrow as pa

RELEASE_EVERY_BYTES = 32 * 1024 * 1024


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim  # glibc only
    except (OSError, AttributeError):
        return None
    return trim


_TRIM = _malloc_trim()


def release() -> None:
    """Return free memory of Arrow's pool and of the C heap to the system (what the process keeps only grows RSS)."""
    pa.default_memory_pool().release_unused()
    if _TRIM is not None:
        _TRIM(0)


class Releaser:
    """Calls :func:`release` each time ``every`` more bytes have gone through :meth:`add`."""

    def __init__(self, every: int = RELEASE_EVERY_BYTES, action: Callable[[], None] = release):
        self.every, self.action = every, action
        self._since = 0
        self.releases = 0

    def add(self, size: int) -> None:
        self._since += size
        if self._since >= self.every:
            self._since = 0
            self.releases += 1
            self.action()
