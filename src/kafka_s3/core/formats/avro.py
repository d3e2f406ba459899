"""Avro object container files, as Confluent's AvroFormat writes them (``.avro`` whatever ``avro.codec``).

Writing encodes whole Arrow batches at once (:mod:`.avro_encoding`) and cuts blocks by size, so an object's bytes
depend only on its records. Reading uses fastavro, so files written by Confluent's connector restore too.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import fastavro
import orjson
import pyarrow as pa

from kafka_s3.core.converters.avro_data import datums_array, expand, has_named_branches
from kafka_s3.core.converters.base import Logical
from kafka_s3.core.converters.connect_schema import AVRO_NAMESPACE, DEFAULT_RECORD_NAME, SchemaError, avro_full_name
from kafka_s3.core.errors import ConversionError, FormatError
from kafka_s3.core.formats.avro_container import MAGIC, Feed, Framer, read_header
from kafka_s3.core.formats.avro_encoding import encode, varint
from kafka_s3.core.formats.avro_envelope import EnvelopeColumns, EnvelopeDecodeError
from kafka_s3.core.formats.base import FileContext, Format, FormatWriter, Role
from kafka_s3.core.formats.compiled_envelope import (
    BLOCK_DECOMPRESSORS,
    CompiledDecodeError,
    avro_blocks_batch,
    framed_block,
)
from kafka_s3.core.formats.compression import avro_block_compressor
from kafka_s3.core.formats.envelope import (
    CONFLUENT_HEADERS_AVRO,
    HEADERS_AVRO,
    KAFKA_RECORD_AVRO,
    KAFKA_RECORD_NAME,
    NAMESPACE,
    ObjectValues,
    avro_value_schema,
    envelope_batch,
    envelope_struct,
    headers_from_text,
    headers_or_empty,
    is_text_headers,
    plain_kind,
    require_schema_converter,
    restored_batch,
    role_batch,
    sidecar_headers,
    value_avro_schema,
)
from kafka_s3.core.formats.framing import SizeGrouper, binary_offsets
from kafka_s3.core.records import HEADERS_TYPE

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter

TEXT_HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))
BLOCK_BYTES = 64000  # encoded bytes per block: Java's DataFileWriter default sync interval
READ_BATCH_RECORDS = 65536
COMPILED_GROUP_BYTES = 4 * 1024 * 1024  # compressed bytes of the envelope blocks decoded by one compiled call


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
            header, sync = read_header(source)
            reader = fastavro.block_reader(Feed.of(header, iter(())))
            schema = orjson.loads(reader.metadata["avro.schema"])
        except Exception as exc:  # fastavro raises assorted types (ValueError, EOFError, KeyError...) on bad headers
            raise FormatError(f"not a readable Avro container ({exc})", ctx.object_key, "header") from None
        to_batch = self._batch_builder(schema, ctx, _tag_union_branches(reader, schema))
        # Envelope blocks are decoded by Polars in groups (compiled_envelope); the blocks of a group it declines one by
        # one column-wise (avro_envelope), and a block that decoder refuses by fastavro.
        columns = EnvelopeColumns() if self.envelope and schema == KAFKA_RECORD_AVRO else None
        framer = Framer(source.read, sync, resync=self.envelope)
        codec = str(reader.metadata.get("avro.codec", "null"))
        compiled = _CompiledGroups(framer, codec) if columns is not None and codec in BLOCK_DECOMPRESSORS else None
        datums: list[Any] = []
        records_read = 0  # records decoded or skipped, for positions

        def pending() -> Iterator[pa.RecordBatch]:
            """The records decoded and not yet yielded, as batches, in order: those of the block-by-block decoders,
            then the groups the compiled reader decoded since (they come before the block fastavro has just given)."""
            nonlocal records_read
            if columns is not None and len(columns):
                yield columns.batch()
            if datums:
                yield to_batch(datums)
                datums.clear()
            while compiled is not None and compiled.decoded:
                batch = compiled.decoded.popleft()
                records_read += batch.num_rows
                yield batch

        while True:
            frames = compiled.frames() if compiled is not None else framer.frames()
            reader = fastavro.block_reader(Feed.of(header, frames))
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
                    yield from pending()
                    count = framer.counts[framer.consumed]
                    framer.consumed += 1
                    records_read += count
                    message = f"corrupt Avro data ({exc}); the block's {count} records cannot be told apart"
                    ctx.skip(FormatError(message, ctx.object_key, f"block {number}"), count)
                    restart = True  # fastavro's reader ends at an error: a new one reads the next block on
                    continue
                if compiled is not None and compiled.decoded:
                    yield from pending()
                framer.consumed += 1
                if columns is not None:
                    if datums:  # records stay in order: those fastavro decoded go first
                        yield from pending()
                    if _columnar(block, columns):
                        records_read += block.num_records
                        if len(columns) >= READ_BATCH_RECORDS:
                            yield from pending()
                        continue
                    yield from pending()  # and the column-decoded ones before fastavro's
                decoded = 0
                try:
                    for datum in block:
                        datums.append(datum)
                        decoded += 1
                except Exception as exc:  # a datum that does not decode with the file's schema
                    yield from pending()
                    left = block.num_records - decoded
                    message = (
                        f"corrupt Avro record ({exc}); the last {left} records of block {number} cannot be told apart"
                    )
                    ctx.skip(FormatError(message, ctx.object_key, f"record {records_read + decoded + 1}"), left)
                records_read += block.num_records
                if len(datums) >= READ_BATCH_RECORDS:
                    yield from pending()
            if not restart and framer.error is not None and framer.resumed:
                # Broken framing passed over up to the next sync marker (envelope objects: offsets are stored).
                yield from pending()
                ctx.skip(FormatError(framer.error, ctx.object_key, f"block {framer.consumed + 1}"), None)
                framer.error, framer.resumed = None, False
                framer.counts.append(-1)  # the blocks passed over, as one
                framer.consumed += 1
                restart = True
            if not restart:
                break
        yield from pending()
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
            if _is_confluent_headers(items):  # Confluent's sidecar: text values
                return lambda datums: role_batch(
                    len(datums), headers=headers_from_text(pa.array(datums, TEXT_HEADERS_TYPE))
                )
            _expect_schema(items, f"{NAMESPACE}.Header", "a headers object", ctx)  # kafka-s3's own (bytes)
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


class _CompiledGroups:
    """Between the framer and fastavro: envelope blocks decoded by the compiled reader, a group at a time.

    A group (up to ``READ_BATCH_RECORDS`` records or ``COMPILED_GROUP_BYTES``) decoded becomes one batch in
    :attr:`decoded` and never reaches fastavro; the frames of a group it declines go on to fastavro one by one, as
    every block did before. Those frames wait here, not in a generator, so that a new fastavro reader (after a corrupt
    block) goes on with the rest of the group."""

    def __init__(self, framer: Framer, codec: str):
        self._framer = framer
        self._codec = codec
        self._waiting: deque[bytes] = deque()  # frames of a declined group, for fastavro
        self.decoded: deque[pa.RecordBatch] = deque()

    def frames(self) -> Iterator[bytes]:
        source = self._framer.frames()
        while True:
            while self._waiting:
                yield self._waiting.popleft()
            group: list[bytes] = []
            blocks: list[tuple[int, bytes]] = []
            records = size = 0
            for frame in source:
                group.append(frame)
                blocks.append(framed_block(frame))
                records, size = records + blocks[-1][0], size + len(frame)
                if records >= READ_BATCH_RECORDS or size >= COMPILED_GROUP_BYTES:
                    break
            if not group:
                return
            try:
                batch = avro_blocks_batch(blocks, self._codec)
            except CompiledDecodeError:
                self._waiting.extend(group)
                continue
            self._framer.consumed += len(group)
            self.decoded.append(batch)


def _columnar(block: Any, columns: EnvelopeColumns) -> bool:
    """Decode an envelope block column-wise into ``columns``; ``False`` when fastavro is to decode it (the decoder
    refused its data)."""
    data = getattr(block, "bytes_", None)  # fastavro's Block: its decompressed data
    if data is None:
        return False
    try:
        columns.add(data.getvalue(), block.num_records)
    except EnvelopeDecodeError:
        return False
    return True


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


def _is_confluent_headers(items: Any) -> bool:
    """The items of Confluent's headers sidecar: AvroData's ``ConnectDefault`` record of two strings."""
    if not (isinstance(items, dict) and items.get("type") == "record"):
        return False
    if not avro_full_name(items).startswith(f"{AVRO_NAMESPACE}.{DEFAULT_RECORD_NAME}"):
        return False
    return [(f.get("name"), f.get("type")) for f in items.get("fields", [])] == [("key", "string"), ("value", "string")]


def _expect_schema(schema: Any, full_name: str, what: str, ctx: FileContext) -> None:
    """Refuse an object of another kind (e.g. a headers sidecar read as an envelope) before decoding it."""
    if not (isinstance(schema, dict) and schema.get("type") == "record" and avro_full_name(schema) == full_name):
        raise FormatError(f"not {what}: its Avro schema is not {full_name}", ctx.object_key, "header")


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
        self._headers: list[pa.Array] = []  # the headers role writes at close (see sidecar_headers)

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        if len(records) == 0:
            return
        if self._format.envelope:
            self._write(KAFKA_RECORD_AVRO, envelope_struct(records))
        elif self._format.role == "headers":
            self._headers.append(headers_or_empty(records))
        else:
            assert values is not None  # the value and keys roles are given their converted values
            for run in self._values.runs(values):
                self._write_values(run)

    def close(self) -> None:
        if self._format.role == "headers":
            headers = sidecar_headers(self._headers)
            self._start(CONFLUENT_HEADERS_AVRO if is_text_headers(headers) else HEADERS_AVRO)
            if len(headers):
                self._write(self._schema, headers)
        leftover = None if self._format.envelope or self._format.role == "headers" else self._values.leftover()
        if leftover is not None:
            self._write_values(leftover)
        if self._schema is None:  # no records: still a valid, empty container
            self._start(self._fixed_schema() or "null")
        self._flush_block()

    def _fixed_schema(self) -> Any:
        """The schema when it does not depend on the values (envelope), else ``None``."""
        if self._format.envelope:
            return KAFKA_RECORD_AVRO
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
