"""Confluent's JsonFormat: one compact JSON value per line, a newline after every record, optionally compressed.

Values render as Connect's JsonConverter (``schemas.enable=false``) renders them: raw bytes as base64 strings, text as
strings, JSON as is, typed values as objects (see
:func:`kafka_s3.core.converters.connect_payload.json_default`). Non-ASCII text is written as UTF-8, not escaped, as
Jackson does.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson
import pyarrow as pa

from kafka_s3.core import json_text
from kafka_s3.core.converters.base import Kind, Logical
from kafka_s3.core.converters.bytearray import ByteArrayConverter
from kafka_s3.core.converters.connect_payload import JSON_OPTIONS, first_unconvertible, json_default, payload_values
from kafka_s3.core.converters.string import StringConverter
from kafka_s3.core.errors import FormatError
from kafka_s3.core.formats.base import FileContext, Format, FormatWriter, Role
from kafka_s3.core.formats.compiled_envelope import CompiledDecodeError, json_lines_batch
from kafka_s3.core.formats.compression import (
    SUFFIXES,
    CompressingSink,
    StreamWriter,
    decompressed,
    stream_settings,
)
from kafka_s3.core.formats.envelope import (
    EnvelopeFieldMissing,
    envelope_batch,
    headers_or_empty,
    is_text_headers,
    restored_batch,
    role_batch,
    sidecar_headers,
)
from kafka_s3.core.formats.framing import joined, split
from kafka_s3.core.formats.json_envelope import envelope_columns, envelope_lines
from kafka_s3.core.records import HEADERS_TYPE, timestamps_ms

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter

READ_BATCH_LINES = 65536
SEGMENT_BYTES = 8 * 1024 * 1024  # envelope text parsed by one compiled call (whole lines: a little more)
Batches = Callable[[list[Any], int, FileContext], Iterator[pa.RecordBatch]]  # parsed lines, first line number, ctx
ENVELOPE_FIELDS = ("topic", "partition", "offset", "timestamp", "timestampType", "key", "value", "headers")


class JsonFormat(Format):
    """JSON lines of values, keys, headers, or whole records (envelope mode)."""

    name = "json"

    def __init__(
        self, config: Config, role: Role = "value", converter: Converter | None = None, envelope: bool = False
    ):
        super().__init__(config, role, converter, envelope)
        self.compression, self.level = stream_settings(config)

    @property
    def extension(self) -> str:
        return ".json" + SUFFIXES[self.compression]

    def writer(self, sink: BinaryIO, ctx: FileContext) -> FormatWriter:
        if self.role == "headers" and not self.envelope:
            return _HeadersWriter(sink, self.compression, self.level)
        return StreamWriter(sink, self.compression, self.level, self._render)

    def _render(self, records: pa.RecordBatch, values: Logical | None) -> bytes | memoryview:
        if self.envelope:
            return _envelope_lines(records)
        assert values is not None  # the value and keys roles are given their converted values
        return _value_lines(values)

    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        """Every line is one record: a bad line is skipped alone (or is the error) after the lines before it."""
        chunks = decompressed(source, self.compression, ctx.object_key)
        if self.envelope:
            yield from self._read_envelope(chunks, ctx)
        else:
            yield from self._read_lines(enumerate(split(chunks, b"\n"), 1), ctx)

    def _read_envelope(self, chunks: Iterator[bytes], ctx: FileContext) -> Iterator[pa.RecordBatch]:
        """Envelope lines, a segment of whole lines at a time: parsed by the compiled reader (compiled_envelope), or
        line by line (:meth:`_read_lines`) when it declines the segment."""
        number = 1  # the line number of the segment's first line

        def segment(text: bytes) -> Iterator[pa.RecordBatch]:
            nonlocal number
            try:
                batch = json_lines_batch(text)
            except CompiledDecodeError:
                lines = list(split([text], b"\n"))
                yield from self._read_lines(enumerate(lines, number), ctx, number)
                number += len(lines)
                return
            number += batch.num_rows
            yield batch

        pending = bytearray()
        try:
            for chunk in chunks:
                pending += chunk
                if len(pending) >= SEGMENT_BYTES and (cut := pending.rfind(b"\n") + 1):
                    text = bytes(pending[:cut])
                    del pending[:cut]
                    yield from segment(text)
        except FormatError as exc:  # the stream itself (compression) is broken: nothing after it can be read
            if cut := pending.rfind(b"\n") + 1:  # the whole lines before it, as a line reader would have
                yield from segment(bytes(pending[:cut]))
            ctx.skip(exc, None)
            return
        if pending:
            yield from segment(bytes(pending))

    def _read_lines(
        self, lines: Iterator[tuple[int, bytes]], ctx: FileContext, first_line: int = 1
    ) -> Iterator[pa.RecordBatch]:
        """Numbered lines (the first numbered ``first_line``) parsed one by one, batched; a bad line skipped alone (or
        the error)."""
        parse, batches = self._line_reader(ctx)
        rows: list[Any] = []
        while True:
            try:
                number, line = next(lines)
            except StopIteration:
                break
            except FormatError as exc:  # the stream itself (compression) is broken: nothing after it can be read
                yield from batches(rows, first_line, ctx)
                ctx.skip(exc, None)
                return
            try:
                rows.append(parse(line))
            except (ValueError, TypeError, KeyError, AttributeError) as exc:  # JSON, base64 and shape errors
                yield from batches(rows, first_line, ctx)
                rows, first_line = [], number + 1
                ctx.skip(FormatError(f"invalid JSON line ({exc})", ctx.object_key, f"line {number}"), 1)
                continue
            if len(rows) == READ_BATCH_LINES:
                yield from batches(rows, first_line, ctx)
                rows, first_line = [], number + 1
        yield from batches(rows, first_line, ctx)

    def _line_reader(self, ctx: FileContext) -> tuple[Callable[[bytes], Any], Batches]:
        """How one line parses, and how parsed lines become ``RECORD_SCHEMA`` batches, for this role."""
        if self.envelope:
            return orjson.loads, _envelope_batches
        if self.role == "headers":
            return _header_line, partial(
                _batches, lambda rows: role_batch(len(rows), headers=pa.array(rows, HEADERS_TYPE))
            )
        kind = _line_kind(self.converter)

        def to_batch(rows: list[Any]) -> pa.RecordBatch:
            logical = Logical(kind, pa.array(rows, pa.string() if kind == "string" else pa.binary()))
            return restored_batch(self, ctx.topic, logical)

        return _VALUE_PARSERS[kind], partial(_batches, to_batch)


def _value_lines(values: Logical) -> bytes | memoryview:
    """Converted values (or keys) as JSON lines."""
    if values.kind == "json":  # already compact JSON text: joined without a per-record step
        return joined(values.array.fill_null(pa.scalar(b"null", values.array.type)), b"\n")
    return json_text.lines(payload_values(values.array), _render_value)


class _HeadersWriter(FormatWriter):
    """A headers sidecar: one line per record, written when the object closes (:func:`sidecar_headers` picks the form).

    Confluent's line (JsonConverter, ``schemas.enable=false``, of CS ``RecordViews.HeadersRecordView``'s struct):
    ``{"headers":[{"key":"tag","value":"a"}]}``. kafka-s3's own (for null or non-UTF-8 values, which Confluent
    refuses): ``[{"key":"tag","value":"<base64>"|null}]``.
    """

    def __init__(self, sink: BinaryIO, compression: str, level: int):
        self._out = CompressingSink(sink, compression, level)
        self._parts: list[pa.Array] = []

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        if len(records):
            self._parts.append(headers_or_empty(records))

    def close(self) -> None:
        headers = sidecar_headers(self._parts)
        render = _render_confluent_headers if is_text_headers(headers) else _render_headers
        if len(headers):
            self._out.write(json_text.lines(headers.to_pylist(), render))
        self._out.finish()


def _render_confluent_headers(headers: list[Any]) -> bytes:
    return orjson.dumps({"headers": headers})


def _render_headers(headers: list[Any] | None) -> bytes:
    return orjson.dumps(headers or [], default=json_default)


def _render_value(value: Any) -> bytes:
    return orjson.dumps(value, default=json_default, option=JSON_OPTIONS)


def _envelope_lines(records: pa.RecordBatch) -> memoryview:
    """Records as envelope lines: column-wise (:func:`envelope_lines`), or record by record when it declines."""
    lines = envelope_lines(records)
    return lines if lines is not None else _envelope_lines_per_record(records)


def _envelope_lines_per_record(records: pa.RecordBatch) -> memoryview:
    """Records as envelope lines, one ``orjson.dumps`` of a dict each."""
    columns = [
        timestamps_ms(records).to_pylist() if name == "timestamp" else records.column(name).to_pylist()
        for name in ENVELOPE_FIELDS
    ]
    return json_text.lines(list(zip(*columns, strict=True)), _render_envelope)


def _render_envelope(record: tuple[Any, ...]) -> bytes:
    topic, partition, offset, timestamp, timestamp_type, key, value, headers = record
    return orjson.dumps(
        {
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "timestamp": timestamp,
            "timestampType": timestamp_type,
            "key": key,
            "value": value,
            "headers": headers or [],
        },
        default=json_default,
    )


def _line_kind(converter: Converter | None) -> Kind:
    """What a value line holds, given the converter that produced it: base64 bytes, a string, or JSON."""
    if converter is None or isinstance(converter, ByteArrayConverter):
        return "bytes"
    if isinstance(converter, StringConverter):
        return "string"
    return "json"


def _unbase64(value: Any) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"expected a base64 string or null, got {type(value).__name__}")
    return binascii.a2b_base64(value, strict_mode=True)


def _string_line(line: bytes) -> str | None:
    value = orjson.loads(line)
    if value is not None and not isinstance(value, str):
        raise TypeError(f"expected a JSON string or null, got {type(value).__name__}")
    return value


def _json_line(line: bytes) -> bytes | None:
    return None if orjson.loads(line) is None else line.rstrip(b"\r")


_VALUE_PARSERS: dict[str, Callable[[bytes], Any]] = {
    "bytes": lambda line: _unbase64(orjson.loads(line)),
    "string": _string_line,
    "json": _json_line,
}


def _headers(headers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"key": h["key"], "value": _unbase64(h["value"])} for h in headers]


def _header_line(line: bytes) -> list[dict[str, Any]]:
    """A headers sidecar line: Confluent's ``{"headers": [...]}`` (text values) or kafka-s3's ``[...]`` (base64)."""
    doc = orjson.loads(line)
    if isinstance(doc, dict):
        return [{"key": h["key"], "value": _text(h["value"])} for h in doc["headers"]]
    return _headers(doc)


def _text(value: Any) -> bytes:
    if not isinstance(value, str):
        raise TypeError(f"expected a header value string, got {type(value).__name__}")
    return value.encode()


def _envelope_row(row: Any) -> dict[str, Any]:
    """A parsed envelope line as ``envelope_batch`` takes it: key, value and header values decoded from base64."""
    return {
        **row,
        "key": _unbase64(row.get("key")),
        "value": _unbase64(row.get("value")),
        "headers": _headers(row.get("headers") or []),
    }


def _envelope_batches(rows: list[Any], first_line: int, ctx: FileContext) -> Iterator[pa.RecordBatch]:
    """Parsed envelope lines as batches: column-wise (:mod:`.json_envelope`) when every line is as the writer writes
    them, else line by line, a bad line skipped alone (or the error) after the lines before it."""
    batch = envelope_columns(rows)
    if batch is not None:
        if batch.num_rows:
            yield batch
        return
    converted: list[Any] = []
    start = first_line
    for i, row in enumerate(rows):
        try:
            converted.append(_envelope_row(row))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # base64 and shape errors
            yield from _batches(envelope_batch, converted, start, ctx)
            converted, start = [], first_line + i + 1
            ctx.skip(FormatError(f"invalid JSON line ({exc})", ctx.object_key, f"line {first_line + i}"), 1)
    yield from _batches(envelope_batch, converted, start, ctx)


def _batches(
    to_batch: Callable[[list[Any]], pa.RecordBatch], rows: list[Any], first_line: int, ctx: FileContext
) -> Iterator[pa.RecordBatch]:
    """Parsed lines as batches; a line with a field of the wrong type or a missing field is skipped alone (or is the
    error, reported at its line) after the lines before it."""
    while rows:
        try:
            yield to_batch(rows)
            return
        except EnvelopeFieldMissing as exc:
            bad, error = exc.row, FormatError(str(exc), ctx.object_key, f"line {first_line + exc.row}")
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            bad = first_unconvertible(rows, to_batch)
            error = FormatError(f"invalid record ({exc})", ctx.object_key, f"line {first_line + bad}")
        if bad:
            yield to_batch(rows[:bad])
        ctx.skip(error, 1)
        rows, first_line = rows[bad + 1 :], first_line + bad + 1
