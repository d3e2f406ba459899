"""Avro object container files, as Confluent's AvroFormat writes them (``.avro`` whatever ``avro.codec``).

Writing encodes whole Arrow batches at once (:mod:`.avro_encoding`) and cuts blocks by size, so an object's bytes
depend only on its records. Reading uses fastavro, so files written by Confluent's connector restore too.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, cast

import fastavro
import orjson
import pyarrow as pa

from kafka_s3.core.converters.avro_data import datums_array, expand, has_named_branches
from kafka_s3.core.converters.base import Logical
from kafka_s3.core.converters.connect_schema import SchemaError, avro_full_name
from kafka_s3.core.errors import ConversionError, FormatError
from kafka_s3.core.formats.avro_encoding import encode, varint
from kafka_s3.core.formats.base import FileContext, Format, FormatWriter, Role
from kafka_s3.core.formats.compression import avro_block_compressor
from kafka_s3.core.formats.envelope import (
    HEADERS_AVRO,
    KAFKA_RECORD_AVRO,
    KAFKA_RECORD_NAME,
    NAMESPACE,
    ObjectValues,
    avro_value_schema,
    envelope_batch,
    envelope_struct,
    headers_or_empty,
    plain_kind,
    require_schema_converter,
    restored_batch,
    role_batch,
    value_avro_schema,
)
from kafka_s3.core.formats.framing import SizeGrouper, binary_offsets
from kafka_s3.core.records import HEADERS_TYPE

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter

MAGIC = b"Obj\x01"
BLOCK_BYTES = 64000  # encoded bytes per block: Java's DataFileWriter default sync interval
READ_BATCH_RECORDS = 65536


class AvroFormat(Format):
    """Values, keys or headers (or whole records in envelope mode) as Avro container files."""

    name = "avro"

    def __init__(
        self, config: Config, role: Role = "value", converter: Converter | None = None, envelope: bool = False
    ):
        super().__init__(config, role, converter, envelope)
        require_schema_converter(self)
        self.codec = config["avro.codec"]
        self.deflate_level = config.get("avro.deflate.level", -1)

    @property
    def extension(self) -> str:
        return ".avro"

    def writer(self, sink: BinaryIO, ctx: FileContext) -> FormatWriter:
        return _AvroWriter(self, sink, ctx)

    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        """The container's records, block after block. Blocks are framed here (record count, byte size, data, sync
        marker) and decoded by fastavro, so a block that does not decode is skipped alone: its header says how many
        records it held (they cannot be told apart), and reading goes on with the next block."""
        try:
            header, sync = _header(source)
            reader = fastavro.block_reader(_Feed.of(header, iter(())))
            schema = orjson.loads(reader.metadata["avro.schema"])
        except Exception as exc:  # fastavro raises assorted types (ValueError, EOFError, KeyError...) on bad headers
            raise FormatError(f"not a readable Avro container ({exc})", ctx.object_key, "header") from None
        to_batch = self._batch_builder(schema, ctx, _tag_union_branches(reader, schema))
        framer = _Framer(source.read, sync, resync=self.envelope)
        datums: list[Any] = []
        records_read = 0  # records decoded or skipped, for positions
        while True:
            reader = fastavro.block_reader(_Feed.of(header, framer.frames()))
            _tag_union_branches(reader, schema)
            blocks = iter(reader)
            restart = False
            while not restart:
                number = framer.consumed + 1
                try:
                    block = next(blocks)
                except StopIteration:
                    break
                except Exception as exc:  # corrupt codec data: fastavro raises assorted types
                    if datums:
                        yield to_batch(datums)
                        datums = []
                    count = framer.counts[framer.consumed]
                    framer.consumed += 1
                    records_read += count
                    message = f"corrupt Avro data ({exc}); the block's {count} records cannot be told apart"
                    ctx.skip(FormatError(message, ctx.object_key, f"block {number}"), count)
                    restart = True  # fastavro's reader ends at an error: a new one reads the next block on
                    continue
                framer.consumed += 1
                decoded = 0
                try:
                    for datum in block:
                        datums.append(datum)
                        decoded += 1
                except Exception as exc:  # a datum that does not decode with the file's schema
                    if datums:
                        yield to_batch(datums)
                        datums = []
                    left = block.num_records - decoded
                    message = (
                        f"corrupt Avro record ({exc}); the last {left} records of block {number} cannot be told apart"
                    )
                    ctx.skip(FormatError(message, ctx.object_key, f"record {records_read + decoded + 1}"), left)
                records_read += block.num_records
                if len(datums) >= READ_BATCH_RECORDS:
                    yield to_batch(datums)
                    datums = []
            if not restart and framer.error is not None and framer.resumed:
                # Broken framing passed over up to the next sync marker (envelope objects: offsets are stored).
                if datums:
                    yield to_batch(datums)
                    datums = []
                ctx.skip(FormatError(framer.error, ctx.object_key, f"block {framer.consumed + 1}"), None)
                framer.error, framer.resumed = None, False
                framer.counts.append(-1)  # the blocks passed over, as one
                framer.consumed += 1
                restart = True
            if not restart:
                break
        if datums:
            yield to_batch(datums)
        if framer.error is not None:
            ctx.skip(FormatError(framer.error, ctx.object_key, f"block {framer.consumed + 1}"), framer.error_records)

    def _batch_builder(
        self, schema: Any, ctx: FileContext, named_tuples: bool = False
    ) -> Callable[[list[Any]], pa.RecordBatch]:
        """A function from decoded datums to ``RECORD_SCHEMA`` batches, chosen once from the file's schema."""
        if self.envelope:
            _expect_schema(schema, KAFKA_RECORD_NAME, "an envelope object (store.envelope=true)", ctx)
            return envelope_batch
        if self.role == "headers":
            items = schema.get("items") if isinstance(schema, dict) and schema.get("type") == "array" else None
            _expect_schema(items, f"{NAMESPACE}.Header", "a headers object", ctx)
            return lambda datums: role_batch(len(datums), headers=pa.array(datums, HEADERS_TYPE))
        kind = plain_kind(schema)
        if kind is None:
            try:
                value_schema = avro_value_schema(schema)
                expanded = expand(schema)
            except SchemaError as exc:
                raise FormatError(f"unsupported value schema ({exc})", ctx.object_key, "header") from None

        def to_batch(datums: list[Any]) -> pa.RecordBatch:
            if kind is not None:
                logical = Logical(kind, pa.array(datums, pa.binary() if kind == "bytes" else pa.string()))
            else:
                logical = Logical(
                    "struct", datums_array(datums, expanded, value_schema.arrow, named_tuples), value_schema
                )
            return restored_batch(self, ctx.topic, logical)

        return to_batch


def _tag_union_branches(reader: Any, schema: Any) -> bool:
    """Have fastavro tag the values of named types in unions of several types (``(name, value)``), so an enum symbol
    is not taken for a string branch. Returns whether it will (the reader's options are read as blocks are)."""
    options = getattr(reader, "options", None)
    try:
        wanted = has_named_branches(expand(schema))
    except SchemaError:
        return False
    if wanted and isinstance(options, dict):
        options["return_named_type"] = True
        return True
    return False


def _expect_schema(schema: Any, full_name: str, what: str, ctx: FileContext) -> None:
    """Refuse an object of another kind (e.g. a headers sidecar read as an envelope) before decoding it."""
    if not (isinstance(schema, dict) and schema.get("type") == "record" and avro_full_name(schema) == full_name):
        raise FormatError(f"not {what}: its Avro schema is not {full_name}", ctx.object_key, "header")


def _header(source: BinaryIO) -> tuple[bytes, bytes]:
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


class _Framer:
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


class _Feed(io.RawIOBase):
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


class _AvroWriter(FormatWriter):
    """Writes the header at the first batch (a value schema is known only then) and blocks of ~64 kB."""

    def __init__(self, fmt: AvroFormat, sink: BinaryIO, ctx: FileContext):
        self._format = fmt
        self._sink = sink
        self._sync = ctx.sync_marker()
        self._compress = avro_block_compressor(fmt.codec, fmt.deflate_level)
        self._values = ObjectValues()
        self._schema: Any = None
        self._expanded: Any = None
        self._grouper = SizeGrouper(BLOCK_BYTES)
        self._pending: list[memoryview] = []
        self._pending_count = 0

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        if len(records) == 0:
            return
        if self._format.envelope:
            self._write(KAFKA_RECORD_AVRO, envelope_struct(records))
        elif self._format.role == "headers":
            self._write(HEADERS_AVRO, headers_or_empty(records))
        else:
            assert values is not None  # the value and keys roles are given their converted values
            for run in self._values.runs(values):
                self._write_values(run)

    def close(self) -> None:
        leftover = None if self._format.envelope or self._format.role == "headers" else self._values.leftover()
        if leftover is not None:
            self._write_values(leftover)
        if self._schema is None:  # no records: still a valid, empty container
            self._start(self._fixed_schema() or "null")
        self._flush_block()

    def _fixed_schema(self) -> Any:
        """The schema when it does not depend on the values (envelope, headers), else ``None``."""
        if self._format.envelope:
            return KAFKA_RECORD_AVRO
        if self._format.role == "headers":
            return HEADERS_AVRO
        return None

    def _write_values(self, values: Logical) -> None:
        schema = value_avro_schema(values, self._format)
        if values.array.null_count and not _allows_null(schema):
            raise ConversionError(
                f"a null {'key' if self._format.role == 'keys' else 'value'} cannot be written: its Avro schema is "
                "not optional (use behavior.on.null.values=ignore, or store.envelope=true to keep tombstones)",
                row=values.array.is_null().index(True).as_py(),
            )
        self._write(schema, values.array)

    def _write(self, schema: Any, array: pa.Array) -> None:
        if self._schema is None:
            self._start(schema)
        elif schema != self._schema:
            raise ConversionError(
                "the value schema changed within one Avro object; objects roll on schema changes "
                "(schema.compatibility=NONE)"
            )
        self._append(encode(array, self._expanded))

    def _start(self, schema: Any) -> None:
        try:
            self._expanded = fastavro.parse_schema(schema, expand=True)
        except Exception as exc:  # fastavro's SchemaParseException and friends
            raise ConversionError(f"the value schema is not valid Avro: {exc}") from None
        self._schema = schema
        metadata = {"avro.schema": orjson.dumps(schema), "avro.codec": self._format.codec.encode()}
        header = [MAGIC, varint(len(metadata))]
        for key, value in metadata.items():
            header += [varint(len(key)), key.encode(), varint(len(value)), value]
        header += [varint(0), self._sync]
        self._sink.write(b"".join(header))

    def _append(self, rows: pa.Array) -> None:
        offsets = binary_offsets(rows)
        data = memoryview(rows.buffers()[2])
        start = 0
        for end in self._grouper.cuts(offsets[1:] - offsets[:-1]):
            self._pending.append(data[offsets[start] : offsets[end]])
            self._pending_count += end - start
            self._flush_block()
            start = end
        self._pending.append(data[offsets[start] : offsets[-1]])
        self._pending_count += len(rows) - start

    def _flush_block(self) -> None:
        if not self._pending_count:
            return
        block = self._compress(b"".join(self._pending))
        self._sink.write(b"".join([varint(self._pending_count), varint(len(block)), block, self._sync]))
        self._pending, self._pending_count = [], 0


def _allows_null(schema: Any) -> bool:
    return schema == "null" or (isinstance(schema, list) and "null" in schema)
