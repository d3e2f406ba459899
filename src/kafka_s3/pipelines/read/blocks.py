"""Indexed objects: pick the blocks an offset range needs and fetch only those, with ranged GETs.

A format with an index (``block_gzip``) stores ``<name>.index<ext>`` beside each object. The index lists the
object's blocks, and each block is a byte range that decodes on its own. A reader bounded by offsets reads the index,
keeps the blocks that overlap the bounds, and fetches each one as ``bytes=<first>-<last>`` ranges. It never asks for
a byte outside them.

Record offsets come from the index: the ``n``-th record of a block has offset ``first_offset + n``. A bounded read and
a whole read of the same object therefore number its records the same way. Without an index, records are numbered
from the object name's start offset.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, BinaryIO, cast

import pyarrow as pa

from kafka_s3.core.errors import FormatError
from kafka_s3.core.formats.base import Block, FileContext, Format, IndexedFormat, bare_message
from kafka_s3.core.store import Store

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

    from kafka_s3.pipelines.read.discovery import BackupObject

WINDOW = 8 * 1024 * 1024  # largest single ranged GET (a block larger than this is fetched in several)


class RangeReader(io.RawIOBase):
    """Bytes ``[start, start + length)`` of an object as a read-only file, through ranged GETs of at most ``window``
    bytes each. It never asks for a byte outside the range."""

    def __init__(self, store: Store, key: str, start: int, length: int, window: int = WINDOW):
        super().__init__()
        self.key = key
        self._store = store
        self._next = start  # first byte not fetched yet
        self._end = start + length
        self._window = window
        self._buffer = memoryview(b"")

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        self._checkClosed()
        pieces = []
        remaining = len(self._buffer) + self._end - self._next
        wanted = remaining if size is None or size < 0 else min(size, remaining)
        while wanted > 0:
            if not self._buffer:
                if self._next >= self._end:
                    break
                last = min(self._next + max(self._window, 1), self._end) - 1
                data = self._store.get(self.key, self._next, last)
                if len(data) != last - self._next + 1:
                    raise FormatError(
                        f"asked for bytes {self._next}-{last}, got {len(data)} bytes (the object is shorter than its "
                        "index says, or changed while being read)",
                        self.key,
                    )
                self._buffer = memoryview(data)
                self._next = last + 1
            piece = self._buffer[:wanted]
            self._buffer = self._buffer[len(piece) :]
            pieces.append(piece)
            wanted -= len(piece)
        return b"".join(pieces)

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)


def load_blocks(store: Store, fmt: IndexedFormat, obj: BackupObject) -> list[Block]:
    """The object's blocks from its index sidecar, checked against the object (they must tile it exactly and start at
    the object name's offset). A mismatch raises FormatError naming the index."""
    index_key = obj.index_key
    assert index_key is not None
    blocks = fmt.blocks(store.get(index_key), FileContext(obj.name.topic, obj.name.partition, obj.start, index_key))
    position = 0
    next_offset = obj.start
    for number, block in enumerate(blocks):
        problem = None
        if block.byte_offset != position:
            problem = f"starts at byte {block.byte_offset}, but the previous block ends at byte {position}"
        elif block.byte_length == 0 or block.records == 0:
            problem = "is empty"
        elif number == 0 and block.first_offset != obj.start:
            problem = f"starts at offset {block.first_offset}, but the object's name says {obj.start}"
        elif block.first_offset < next_offset:
            problem = (
                f"starts at offset {block.first_offset}, inside the previous block (which ends before {next_offset})"
            )
        if problem:
            raise FormatError(f"block {number} of the index {problem}", index_key, f"chunk {number}")
        position += block.byte_length
        next_offset = block.first_offset + block.records
    if obj.size and position != obj.size:
        raise FormatError(f"the index covers {position} bytes but {obj.key} has {obj.size}", index_key)
    return blocks


def select(blocks: list[Block], from_offset: int | None, until_offset: int | None) -> list[Block]:
    """The blocks holding offsets in ``[from_offset, until_offset)`` (``None``: unbounded)."""
    return [
        b
        for b in blocks
        if (from_offset is None or b.first_offset + b.records > from_offset)
        and (until_offset is None or b.first_offset < until_offset)
    ]


def read_blocks(
    store: Store,
    fmt: Format,
    key: str,
    blocks: list[Block],
    ctx: FileContext,
    note: Callable[[int], int] | None = None,
) -> Iterator[tuple[pa.RecordBatch, int, int]]:
    """``(batch, first row index in the object, first offset)`` for every batch of the given blocks, in order.

    Adjacent blocks are fetched together (ranged GETs of at most :data:`WINDOW` bytes over their span), other blocks
    apart: no byte outside the given blocks is requested. A block that does not decode to the number of records its
    index entry says raises FormatError at the block's byte position. When ``ctx`` skips bad records
    (``behavior.on.error=ignore|log``), a block that does not decode is skipped whole (its index says how many
    records it holds) and ``note`` is told the object row where the skip is.
    """
    for run in _runs(blocks):
        start = run[0].byte_offset
        with RangeReader(store, key, start, run[-1].byte_offset + run[-1].byte_length - start) as source:
            for block in run:
                yield from _read_block(fmt, key, block, _Slice(source, block.byte_length), ctx, note)


def _runs(blocks: list[Block]) -> list[list[Block]]:
    """Blocks grouped into runs of adjacent byte ranges."""
    runs: list[list[Block]] = []
    for block in blocks:
        if runs and runs[-1][-1].byte_offset + runs[-1][-1].byte_length == block.byte_offset:
            runs[-1].append(block)
        else:
            runs.append([block])
    return runs


def _read_block(
    fmt: Format, key: str, block: Block, source: _Slice, ctx: FileContext, note: Callable[[int], int] | None
) -> Iterator[tuple[pa.RecordBatch, int, int]]:
    done = 0
    whole = replace(ctx, skips=None)  # a block decodes whole or is skipped whole: its records are counted by the index
    try:
        for batch in fmt.read(cast(BinaryIO, source), whole):  # a binary file, though not a typing.BinaryIO
            if batch.num_rows:
                yield batch, block.row + done, block.first_offset + done
                done += batch.num_rows
    except FormatError as exc:
        error = FormatError(bare_message(exc), key, _object_position(exc.position, block))
        if ctx.skips is None:
            raise error from None
        source.read()  # the next block starts where this one ends
        ctx.skip(
            FormatError(
                f"{bare_message(error)}; the block's {block.records - done} remaining records cannot be told apart",
                key,
                error.position,
            ),
            block.records - done,
        )
        if note is not None:
            note(block.row + done)
        done = block.records
    if done != block.records:
        raise FormatError(
            f"the block holds {done} records but its index entry says {block.records}", key, f"byte {block.byte_offset}"
        )


class _Slice(io.RawIOBase):
    """The next ``length`` bytes of a reader, as a file of their own."""

    def __init__(self, source: RangeReader, length: int):
        super().__init__()
        self._source = source
        self._left = length

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        wanted = self._left if size is None or size < 0 else min(size, self._left)
        data = self._source.read(wanted) if wanted else b""
        self._left -= len(data)
        return data

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)


def _object_position(position: str | None, block: Block) -> str:
    """A position inside a block as a position inside the object (``byte N`` is relative to the block)."""
    if position and position.startswith("byte ") and position[5:].isdigit():
        return f"byte {block.byte_offset + int(position[5:])}"
    return f"block at byte {block.byte_offset}" + (f", {position}" if position else "")
