"""Avro object container framing, read here rather than by fastavro, so that one bad block is skipped alone.

A container is a header (magic, metadata, a 16-byte sync marker) and blocks: a record count, a byte size, the
(compressed) data and the sync marker again. :class:`Framer` cuts blocks out of the stream and checks each one's
sync marker; :class:`Feed` hands fastavro the header and the framed blocks one at a time, so when fastavro fails on a
block (corrupt codec data) the reader knows which block it was and how many records it held, and a new fastavro
reader goes on with the next block. Broken framing (a count, size or sync marker that does not add up) is passed
over to the next sync marker when the records carry their offsets (envelope objects).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, cast

MAGIC = b"Obj\x01"


def read_header(source: BinaryIO) -> tuple[bytes, bytes]:
    """The container's header bytes (magic, metadata map, sync marker) as read from ``source``, and its sync marker."""
    raw = bytearray()

    def take(n: int) -> bytes:
        data = _read_exactly(source.read, n)
        if len(data) < n:
            raise EOFError("the header is cut short")
        raw.extend(data)
        return data

    if take(4) != MAGIC:
        raise ValueError("no Avro magic bytes")
    while True:
        count = _long(source.read, raw)
        if count is None:
            raise EOFError("the header is cut short")
        if count == 0:
            break
        if count < 0:  # a map block with its byte size
            count = -count
            _long(source.read, raw)
        for _ in range(2 * count):  # keys and values: both length-prefixed
            length = _long(source.read, raw)
            if length is None or length < 0:
                raise ValueError("bad metadata length")
            take(length)
    sync = take(16)
    return bytes(raw), sync


def _read_exactly(read: Callable[[int], bytes], n: int) -> bytes:
    pieces = []
    while n > 0:
        piece = read(n)
        if not piece:
            break
        pieces.append(piece)
        n -= len(piece)
    return b"".join(pieces)


def _long(read: Callable[[int], bytes], raw: bytearray) -> int | None:
    """An Avro long (zigzag varint) read byte by byte, appended to ``raw``; ``None`` at the end of the stream."""
    shift = result = 0
    while True:
        byte = read(1)
        if not byte:
            if shift:
                raise EOFError("a number is cut short")
            return None
        raw.extend(byte)
        result |= (byte[0] & 0x7F) << shift
        if not byte[0] & 0x80:
            return (result >> 1) ^ -(result & 1)
        shift += 7
        if shift > 63:
            raise ValueError("a number is longer than a long")


class Framer:
    """Cuts the blocks after the header out of the stream: record count, byte size, data and sync marker each.

    A block whose sync marker is not where its size says it ends (or that is cut short) ends the framing
    (:attr:`error`; :attr:`error_records`: how many records were lost, when known). With ``resync`` (objects whose
    records carry their offsets) the stream is searched for the next sync marker and framing can go on from there
    (:attr:`resumed`); how many records were passed over is unknown.
    """

    def __init__(self, read: Callable[[int], bytes], sync: bytes, resync: bool = False):
        self._source_read = read
        self._sync = sync
        self._resync = resync
        self._pushback = b""
        self.counts: list[int] = []  # records of each block framed, in order
        self.consumed = 0  # blocks decoded or skipped
        self.error: str | None = None
        self.error_records: int | None = None  # records the broken block and the rest of the object held, if known
        self.resumed = False  # framing goes on after the broken block (at the next sync marker)

    def _read(self, n: int) -> bytes:
        if self._pushback:
            data, self._pushback = self._pushback[:n], self._pushback[n:]
            return data
        return self._source_read(n)

    def frames(self) -> Iterator[bytes]:
        while self.error is None:
            raw = bytearray()
            try:
                count = _long(self._read, raw)
                if count is None:
                    return
                size = _long(self._read, raw)
            except (EOFError, ValueError) as exc:
                self._broken(f"corrupt Avro data ({exc})", bytes(raw))
                return
            if size is None or size < 0 or count < 0:
                self._broken("corrupt Avro data (a block without a valid record count or size)", bytes(raw))
                return
            data = _read_exactly(self._read, size)
            marker = _read_exactly(self._read, 16)
            if len(data) < size or len(marker) < 16:
                # The last block, cut short — unless its size is wrong and a sync marker follows in what was read.
                message = f"corrupt Avro data (the object is cut short in a block of {count} records)"
                self._broken(message, bytes(raw) + data + marker, last_block=count)
                return
            if marker != self._sync:
                self._broken(
                    "corrupt Avro data (the block's sync marker is not where its size says it ends)",
                    bytes(raw) + data + marker,
                )
                return
            self.counts.append(count)
            yield bytes(raw) + data + marker

    def _broken(self, message: str, read: bytes, last_block: int | None = None) -> None:
        """Framing failed after ``read`` was read from the block's start: find the next sync marker, or give up.

        ``last_block``: the block's record count when the stream ended inside it (then, unless a sync marker is
        found in what was read, it was the last block and that many records are lost)."""
        self.error = message
        # The marker may be inside what was read (a size too large), or further on (a size too small).
        window = read[1:]  # not at the block's very start: a block begins with its record count
        found = window.find(self._sync)
        while found < 0 and self._resync:
            more = self._read(65536)
            if not more:
                break
            window = window[-15:] + more
            found = window.find(self._sync)
        if found >= 0 and self._resync:
            self._pushback = window[found + 16 :] + self._pushback
            self.resumed = True
            self.error += "; records up to the next sync marker are skipped, how many cannot be told"
        elif found < 0 and last_block is not None:
            self.error_records = last_block
        else:
            self.error += "; how many records the rest of the object holds cannot be told"


class Feed(io.RawIOBase):
    """What fastavro reads: the header, then the framed blocks, pulled one at a time as it reads."""

    def __init__(self, header: bytes, frames: Iterator[bytes]):
        super().__init__()
        self._buffer = memoryview(header)
        self._frames = frames
        self._position = 0

    @classmethod
    def of(cls, header: bytes, frames: Iterator[bytes]) -> BinaryIO:
        return cast(BinaryIO, cls(header, frames))  # a binary file, though not a typing.BinaryIO

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def read(self, size: int | None = -1) -> bytes:
        pieces = []
        wanted = -1 if size is None or size < 0 else size
        while wanted != 0:
            if not self._buffer:
                frame = next(self._frames, None)
                if frame is None:
                    break
                self._buffer = memoryview(frame)
            piece = self._buffer if wanted < 0 else self._buffer[:wanted]
            self._buffer = self._buffer[len(piece) :]
            pieces.append(piece)
            if wanted > 0:
                wanted -= len(piece)
        data = b"".join(pieces)
        self._position += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)
