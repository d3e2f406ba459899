"""Lenses stream-reactor's JSON objects, read as Lenses' S3 *source* reads them (facts sheet B2, B5).

One JSON document per line. With ``store.envelope=true`` each line is the envelope Lenses' sink builds
(LS ``sink/transformers/SchemalessEnvelopeTransformer``, written by Jackson in ``conversion/ToJsonDataConverter``)::

    {"headers":{"h":"v"},"metadata":{"partition":0,"offset":0,"topic":"t","timestamp":1577849400000},
     "value":{...},"key":"k1"}

and becomes a record as LS ``formats/reader/converters/SchemalessEnvelopeConverter.convert`` makes one:

- ``key``/``value``: a JSON string gives its text, an object or array its compact JSON (``noSpaces``), a number or
  boolean its JSON text, ``null`` (or a missing field) no bytes; with ``keyIsArray``/``valueIsArray`` the string is
  base64 and gives the decoded bytes. These are the bytes Connect's StringConverter/ByteArrayConverter produce from
  the source's STRING/BYTES values.
- ``headers``: one header per field, in the file's order; a string gives its text, a number or boolean its JSON text
  (what Connect's SimpleHeaderConverter serializes for the source's long/double/boolean headers), ``null`` a null
  value. Lenses' sink kept only the last of repeated header names (a map).
- ``metadata``: ``partition``, ``offset`` and ``timestamp`` (epoch ms; missing: none, so the producer stamps the time of
  the restore, as the source does). The offset orders the records and tracks the restore's progress.

Without the envelope each line is the value alone: it becomes the value's bytes as it is in the file (LS
``TextConverter`` makes the line a STRING value), with no key, headers or timestamp. Offsets are counted back from
the last offset the object's name holds (:class:`~kafka_s3.core.peers.lenses.layout.LensesLayout`).

With ``connect.s3.compression.codec=GZIP`` (``s3.compression.type=gzip``) an object is one gzip stream over all its
lines (LS ``formats/writer/JsonFormatWriter.write``: a ``GzipCompressorOutputStream`` around the object) and its
extension is ``.gz`` instead of ``.json`` (LS ``sink/naming/FileExtensionNamer.fileExtension``: for JSON the codec's
extension replaces the format's).
The writer of a Lenses sink configuration is :mod:`kafka_s3.core.peers.lenses.json_writer`.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa

from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.formats.base import FileContext, Format, FormatWriter, Role
from kafka_s3.core.formats.compression import decompressed
from kafka_s3.core.formats.framing import split
from kafka_s3.core.records import (
    CREATE_TIME,
    HEADERS_TYPE,
    NO_TIMESTAMP_TYPE,
    RECORD_SCHEMA,
    TIMESTAMP_TYPE,
    batch_from_columns,
)

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter

READ_CHUNK = 1 << 20


def _json_text(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def field_bytes(value: Any, is_array: bool, where: str, ctx: FileContext, line: int) -> bytes | None:
    """A key's or value's bytes as the Lenses source gives them (see the module docstring)."""
    if value is None:
        return None
    if isinstance(value, str):
        if not is_array:
            return value.encode()
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as exc:
            raise FormatError(
                f"{where} is marked as an array but is not base64: {exc}", ctx.object_key, f"line {line}"
            ) from None
    return _json_text(value)


def header_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode()
    return _json_text(value)


def derived_offsets(n: int, ctx: FileContext) -> list[int]:
    """Offsets of an object's ``n`` records: counted back from the last offset its name holds (Lenses), else on from
    its start offset."""
    if ctx.last_offset is not None:
        return list(range(ctx.last_offset - n + 1, ctx.last_offset + 1))
    return list(range(ctx.start_offset, ctx.start_offset + n))


def lines_batch(lines: list[bytes], ctx: FileContext) -> pa.RecordBatch:
    """Lines as values alone (no key, headers or timestamp), as Lenses' source makes STRING values of them."""
    n = len(lines)
    return pa.RecordBatch.from_arrays(
        [
            pa.nulls(n, pa.binary()),
            pa.array(lines, pa.binary()),
            pa.array([ctx.topic] * n, pa.string()),
            pa.array([ctx.partition] * n, pa.int32()),
            pa.array(derived_offsets(n, ctx), pa.int64()),
            pa.nulls(n, TIMESTAMP_TYPE),
            pa.array([NO_TIMESTAMP_TYPE] * n, pa.int32()),
            pa.array([[]] * n, HEADERS_TYPE),
        ],
        schema=RECORD_SCHEMA,
    )


def read_lines(source: BinaryIO, compression: str = "none", object_key: str = "") -> list[bytes]:
    """An object's lines (``\n``-terminated; a last line without one counts too; a ``\r`` before it is dropped),
    decompressed first when ``compression`` says (``gzip``)."""
    chunks = (
        iter(lambda: source.read(READ_CHUNK), b"")
        if compression == "none"
        else decompressed(source, compression, object_key)
    )
    return [line.removesuffix(b"\r") for line in split(chunks, b"\n")]


class LensesJsonFormat(Format):
    """Objects of Lenses' sink with ``STOREAS JSON``: envelope lines (``store.envelope=true``) or values alone."""

    name = "lenses_json"

    def __init__(
        self, config: Config, role: Role = "value", converter: Converter | None = None, envelope: bool = False
    ):
        super().__init__(config, role, converter, envelope)
        # connect.s3.compression.codec=GZIP of a Lenses config (the readers' tests build the format without a config)
        settings: Mapping[str, Any] = config or {}
        self.compression = settings.get("s3.compression.type") or "none"
        if self.compression not in ("none", "gzip"):
            raise ConfigError(
                f"s3.compression.type={self.compression}: Lenses' JSON objects are uncompressed or GZIP (LS "
                "JsonFormatWriter.getCompressionCodecIfSupported)",
                key="s3.compression.type",
            )

    @property
    def extension(self) -> str:
        return ".gz" if self.compression == "gzip" else ".json"  # LS FileExtensionNamer.fileExtension

    def writer(self, sink: BinaryIO, ctx: FileContext) -> FormatWriter:
        """Lenses' own bytes (:mod:`kafka_s3.core.peers.lenses.json_writer`), for a Lenses sink configuration."""
        from kafka_s3.core.peers.lenses.policy import SINK_CLASS

        if self.config.get("connector.class") != SINK_CLASS:
            raise ConfigError(
                f"format.class=lenses_json is written by backups of a Lenses sink configuration (connector.class="
                f"{SINK_CLASS}, STOREAS JSON) and read by restores of Lenses' buckets (topic {ctx.topic}, partition "
                f"{ctx.partition})",
                key="format.class",
            )
        from kafka_s3.core.peers.lenses.json_writer import lenses_writer

        return lenses_writer(self.config, sink, ctx, self.converter, self.envelope)

    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        lines = read_lines(source, self.compression, ctx.object_key)
        if not lines:
            return
        if self.envelope:
            yield self._envelope_batch(lines, ctx)
        else:
            yield lines_batch(lines, ctx)

    def _envelope_batch(self, lines: list[bytes], ctx: FileContext) -> pa.RecordBatch:
        derived = derived_offsets(len(lines), ctx)
        columns: dict[str, list[Any]] = {name: [] for name in RECORD_SCHEMA.names}
        for number, line in enumerate(lines, start=1):
            position = f"line {number}"
            try:
                envelope = json.loads(line)
            except ValueError as exc:
                raise FormatError(f"not a JSON envelope: {exc}", ctx.object_key, position) from None
            if not isinstance(envelope, dict):
                raise FormatError("a Lenses envelope line must be a JSON object", ctx.object_key, position)
            metadata = envelope.get("metadata") or {}
            headers = envelope.get("headers") or {}
            if not isinstance(metadata, dict) or not isinstance(headers, dict):
                raise FormatError("envelope metadata and headers must be JSON objects", ctx.object_key, position)
            for name, value in headers.items():
                if isinstance(value, (list, dict)):
                    raise FormatError(
                        f"header {name!r} is an array or object: only primitives are supported (as Lenses' source)",
                        ctx.object_key,
                        position,
                    )
            key = field_bytes(envelope.get("key"), "keyIsArray" in envelope, "key", ctx, number)
            value = field_bytes(envelope.get("value"), "valueIsArray" in envelope, "value", ctx, number)
            timestamp = metadata.get("timestamp")
            offset = metadata.get("offset", derived[number - 1])
            partition = metadata.get("partition", ctx.partition)
            for name, item in (("offset", offset), ("partition", partition), ("timestamp", timestamp)):
                if item is not None and (not isinstance(item, int) or isinstance(item, bool)):
                    raise FormatError(
                        f"metadata.{name} must be a whole number, found {item!r}", ctx.object_key, position
                    )
            columns["key"].append(key)
            columns["value"].append(value)
            columns["topic"].append(metadata.get("topic", ctx.topic))
            columns["partition"].append(partition)
            columns["offset"].append(offset)
            columns["timestamp"].append(None if timestamp is None else timestamp * 1000)
            columns["timestampType"].append(NO_TIMESTAMP_TYPE if timestamp is None else CREATE_TIME)
            columns["headers"].append([{"key": k, "value": header_bytes(v)} for k, v in headers.items()])
        return batch_from_columns(columns)
