"""DeviantArt's Block-GZIP: one record per line, gzip members cut by size, and an index of the members.

An object is a series of independent gzip members, concatenated. Together they are one valid gzip file (``gzip -d``
gives every line), and each member alone is a valid gzip file too. A member closes once it holds at least
``compressed_block_size`` uncompressed bytes (the cut follows the row that reaches the threshold, so a block is never
empty and only one record can push it past the threshold). Cuts depend on record sizes only, never on batching, so
a re-run writes identical bytes.

Beside every object the backup stores ``<name>.index`` (``<name>.index.json`` in earlier versions, still read: no
metadata object ends in a data format's extension), holding DeviantArt's index fields::

    {"chunks": [{"byte_offset": 0, "byte_length": 275, "byte_length_uncompressed": 2890, "num_records": 100,
                 "first_record_offset": 0}, ...]}

``first_record_offset`` is the Kafka offset of the block's first record. A reader looking for an offset reads the
index, then fetches only the block it needs with a ranged GET.

Lines are the records' raw bytes plus ``\\n``, whatever the converter, as ByteArrayFormat writes them. A null value
is an empty line, and a value that contains a newline reads back as several records. The format is for line-shaped
data, as DeviantArt's was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.formats.base import Block, FileContext, FormatWriter, IndexedFormat, Role
from kafka_s3.core.formats.bytearray import READ_BATCH_BYTES
from kafka_s3.core.formats.compression import LEVEL_KEY, CompressingSink, decompressed
from kafka_s3.core.formats.envelope import role_batch
from kafka_s3.core.formats.framing import SizeGrouper, joined, split_arrays
from kafka_s3.core.peers.deviantart.config import BLOCK_SIZE_KEY
from kafka_s3.core.peers.deviantart.config import SINK_CLASS as DEVIANTART_SINK_CLASS

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter, Logical

SEPARATOR = b"\n"
INDEX_FIELDS = ("byte_offset", "byte_length", "byte_length_uncompressed", "num_records", "first_record_offset")
DEVIANTART_INDEX_FIELDS = (
    "byte_length_uncompressed",
    "num_records",
    "byte_length",
    "byte_offset",
    "first_record_offset",
)


class BlockGzipFormat(IndexedFormat):
    """Lines of raw values (or raw keys, for a keys sidecar) in gzip blocks of ``compressed_block_size`` bytes."""

    name = "block_gzip"

    def __init__(
        self, config: Config, role: Role = "value", converter: Converter | None = None, envelope: bool = False
    ):
        super().__init__(config, role, converter, envelope)
        if envelope:
            raise ConfigError(
                "format.class=block_gzip cannot store whole records (store.envelope=true): its lines are raw values. "
                "Use format.class=avro, parquet or json with store.envelope",
                key="format.class",
            )
        if role == "headers":
            raise ConfigError(
                "headers.format.class=block_gzip cannot store headers (a list of key/value pairs per record): use "
                "headers.format.class=avro (the default), parquet or json",
                key="headers.format.class",
            )
        compression = config["s3.compression.type"]
        if compression not in ("none", "gzip"):
            raise ConfigError(
                f"s3.compression.type={compression} does not apply to format.class=block_gzip, whose objects are "
                "always gzip: remove it or set gzip",
                key="s3.compression.type",
            )
        self.level = config[LEVEL_KEY]
        if self.level > 9:
            raise ConfigError(f"{LEVEL_KEY}={self.level} is out of range for gzip: use -1 (default) or 0-9", LEVEL_KEY)
        self.block_size: int = config[BLOCK_SIZE_KEY]
        self.column = "key" if role == "keys" else "value"
        self.deviantart = config.get("connector.class") == DEVIANTART_SINK_CLASS

    @property
    def extension(self) -> str:
        return ".gz"

    def writer(self, sink: BinaryIO, ctx: FileContext) -> BlockGzipWriter:
        if self.deviantart:
            return DeviantArtWriter(sink, self.level, self.block_size, self.column)
        return BlockGzipWriter(sink, self.level, self.block_size, self.column)

    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        for records in split_arrays(decompressed(source, "gzip", ctx.object_key), SEPARATOR, READ_BATCH_BYTES):
            yield role_batch(len(records), **{self.column: records.cast(pa.binary())})

    def blocks(self, index: bytes, ctx: FileContext) -> list[Block]:
        try:
            chunks = json.loads(index)["chunks"]
            if not isinstance(chunks, list):
                raise TypeError("'chunks' is not a list")
        except (ValueError, TypeError, KeyError) as exc:
            raise FormatError(f"unreadable block index ({exc})", ctx.object_key) from None
        blocks = []
        row = 0
        for number, chunk in enumerate(chunks):
            fields = [_count(chunk, name, ctx, number) for name in ("byte_offset", "byte_length")]
            first, records = (_count(chunk, name, ctx, number) for name in ("first_record_offset", "num_records"))
            blocks.append(Block(fields[0], fields[1], first, records, row))
            row += records
        return blocks


def _count(chunk: Any, name: str, ctx: FileContext, number: int) -> int:
    value = chunk.get(name) if isinstance(chunk, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise FormatError(f"block index entry without a valid {name} ({value!r})", ctx.object_key, f"chunk {number}")
    return value


class _CountingSink:
    """Counts the bytes that go into the object, whatever ``tell`` the sink has."""

    def __init__(self, sink: BinaryIO):
        self._sink = sink
        self.position = 0

    def write(self, data: bytes | memoryview) -> None:
        self._sink.write(data)
        self.position += len(data)


class BlockGzipWriter(FormatWriter):
    """Streams lines into the current gzip member; closes it at each size cut and notes it in the index."""

    def __init__(self, sink: BinaryIO, level: int, block_size: int, column: str):
        self._out = _CountingSink(sink)
        self._level = level
        self._grouper = SizeGrouper(block_size)
        self._column = column
        self._member: CompressingSink | None = None
        self._block: dict[str, int] = {}
        self._chunks: list[dict[str, int]] = []
        self._closed = False

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        if not len(records):
            return
        raw = records.column(self._column)
        raw = raw.fill_null(pa.scalar(b"", raw.type))
        data = joined(raw, SEPARATOR)
        sizes = pc.binary_length(raw).to_numpy(zero_copy_only=False).astype(np.int64) + len(SEPARATOR)
        starts = np.concatenate(([0], np.cumsum(sizes)))
        offsets = records.column("offset")
        row = 0
        for end in self._grouper.cuts(sizes):
            self._append(data, starts, offsets, row, end)
            self._finish_block()
            row = end
        if row < len(sizes):
            self._append(data, starts, offsets, row, len(sizes))

    def _append(self, data: memoryview, starts: np.ndarray, offsets: pa.Array, row: int, end: int) -> None:
        if self._member is None:
            self._member = CompressingSink(self._out, "gzip", self._level)
            self._block = {
                "byte_offset": self._out.position,
                "byte_length_uncompressed": 0,
                "num_records": 0,
                "first_record_offset": offsets[row].as_py(),
            }
        self._member.write(data[int(starts[row]) : int(starts[end])])
        self._block["byte_length_uncompressed"] += int(starts[end] - starts[row])
        self._block["num_records"] += end - row

    def _finish_block(self) -> None:
        if self._member is None:
            return
        self._member.finish()
        self._member = None
        block = self._block
        self._chunks.append({**block, "byte_length": self._out.position - block["byte_offset"]})

    def close(self) -> None:
        self._finish_block()
        self._closed = True

    def index(self) -> bytes:
        if not self._closed:
            raise RuntimeError("the block index is complete only once the writer is closed")
        chunks = [{name: chunk[name] for name in INDEX_FIELDS} for chunk in self._chunks]
        return json.dumps({"chunks": chunks}, separators=(",", ":")).encode() + b"\n"


class DeviantArtWriter(BlockGzipWriter):
    """DeviantArt's ``BlockGZIPFileWriter``: a block is open from the start; before each line, the block closes if the
    line would take it past the block size (counted in UTF-16 units, ``\\n`` included); lines lacking ``\\n`` get
    one. Row by row, as DeviantArt's cut depends on each line's text."""

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        raw = records.column(self._column).to_pylist()
        offsets = records.column("offset").to_pylist()
        for value, offset in zip(raw, offsets, strict=True):
            line = value or b""
            if not line.endswith(SEPARATOR):
                line += SEPARATOR
            units = len(line.decode("utf-8", errors="replace").encode("utf-16-le")) // 2
            if self._member is None:
                self._open(offset)
            if self._block["byte_length_uncompressed"] + units > self._grouper.threshold:
                self._finish_block()
                self._open(offset)
            assert self._member is not None
            self._member.write(line)
            self._block["byte_length_uncompressed"] += units
            self._block["num_records"] += 1

    def _open(self, offset: int) -> None:
        self._member = CompressingSink(self._out, "gzip", self._level)
        self._block = {
            "byte_offset": self._out.position,
            "byte_length_uncompressed": 0,
            "num_records": 0,
            "first_record_offset": offset,
        }

    def index(self) -> bytes:
        if not self._closed:
            raise RuntimeError("the block index is complete only once the writer is closed")
        chunks = [{name: chunk[name] for name in DEVIANTART_INDEX_FIELDS} for chunk in self._chunks]
        return json.dumps({"chunks": chunks}, separators=(",", ":")).encode()
