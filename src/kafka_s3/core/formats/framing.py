"""Rows <-> byte streams: joining encoded rows, splitting streams on a separator, and grouping rows by size.

Grouping (Avro blocks, Parquet row groups) is decided by row sizes only, never by how records happened to be
batched, so a re-run that batches differently still writes the identical object.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

LARGE_BINARY = pa.large_binary()


def joined(rows: pa.Array, separator: bytes = b"") -> memoryview:
    """Every row's bytes followed by ``separator``, as one contiguous buffer (no copy without a separator)."""
    rows = rows.cast(LARGE_BINARY)
    if separator:
        rows = pc.binary_join_element_wise(rows, pa.scalar(separator, LARGE_BINARY), pa.scalar(b"", LARGE_BINARY))
    if len(rows) == 0:
        return memoryview(b"")
    offsets = binary_offsets(rows)
    return memoryview(rows.buffers()[2])[offsets[0] : offsets[-1]]


def binary_offsets(rows: pa.Array) -> np.ndarray:
    """Where each row of a ``large_binary`` array starts in its data buffer (plus the end of the last row)."""
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int64)
    return offsets[rows.offset : rows.offset + len(rows) + 1]


def split(chunks: Iterable[bytes], separator: bytes) -> Iterator[bytes]:
    """Records of a stream where a separator follows each record; a tail without one is a record too."""
    tail = b""
    for chunk in chunks:
        parts = (tail + chunk).split(separator)
        tail = parts.pop()
        yield from parts
    if tail:
        yield tail


def split_arrays(chunks: Iterable[bytes], separator: bytes, target_bytes: int) -> Iterator[pa.Array]:
    """The records of :func:`split`, as ``large_binary`` arrays of about ``target_bytes`` of stream each.

    With a one-byte separator (the default line separator) records are found with numpy and the array is built from
    the stream's bytes, with no Python object per record: restores of ByteArray objects spent a fifth of their time
    splitting records one by one. Longer separators go through ``bytes.split``.
    """
    pending = bytearray()
    for chunk in chunks:
        pending += chunk
        if len(pending) >= target_bytes:
            cut = _after_last_separator(pending, separator)
            if cut > 0:
                yield _records(bytes(pending[:cut]), separator)
                del pending[:cut]
    if pending:
        yield _records(bytes(pending), separator)


def _after_last_separator(data: bytearray, separator: bytes) -> int:
    """Where the records complete in ``data`` end: just after its last separator, found left to right as the records
    are split (0 when there is none). A longer separator can match where no separator is, across a separator split
    between chunks (``b"\x00---"`` holds one ``--`` separator, not two), so only a single byte can be searched from
    the end."""
    if len(separator) == 1:
        return data.rfind(separator) + 1
    last = data.split(separator)[-1]
    return len(data) - len(last) if len(last) < len(data) else 0


def _records(data: bytes, separator: bytes) -> pa.Array:
    """The records of ``data``: each followed by ``separator``, except perhaps the last."""
    if len(separator) != 1:
        parts = data.split(separator)
        if not parts[-1]:
            parts.pop()  # what follows the last separator is not a record when empty
        return pa.array(parts, LARGE_BINARY)
    stream = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(stream == separator[0])  # where each record's separator is
    tail = len(data) - (int(ends[-1]) + 1 if len(ends) else 0)  # bytes of a last record without a separator
    count = len(ends) + (1 if tail else 0)
    # Without the separators, record i starts where record i-1 ended: offsets are the separators' positions minus
    # the number of separators before them.
    offsets = np.empty(count + 1, dtype=np.int64)
    offsets[0] = 0
    offsets[1 : len(ends) + 1] = ends - np.arange(len(ends))
    if tail:
        offsets[-1] = len(data) - len(ends)
    content = np.delete(stream, ends)
    return pa.Array.from_buffers(LARGE_BINARY, count, [None, pa.py_buffer(offsets), pa.py_buffer(content)])


class SizeGrouper:
    """Cuts a stream of rows into groups of at least ``threshold`` bytes, across batch boundaries."""

    def __init__(self, threshold: int):
        self.threshold = threshold
        self.pending = 0  # bytes of rows already given but not yet in a complete group

    def cuts(self, sizes: np.ndarray) -> list[int]:
        """Exclusive end rows (within this batch) of the groups this batch completes."""
        ends: list[int] = []
        cumulative = np.cumsum(sizes, dtype=np.int64)
        done = 0  # cumulative bytes of this batch at the last cut
        while True:
            target = done + self.threshold - self.pending
            row = int(np.searchsorted(cumulative, target, side="left"))
            if row >= len(sizes):
                self.pending += int(cumulative[-1]) - done if len(sizes) else 0
                return ends
            ends.append(row + 1)
            done, self.pending = int(cumulative[row]), 0
