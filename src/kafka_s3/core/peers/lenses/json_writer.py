"""Lenses stream-reactor's ``STOREAS JSON`` objects, written byte for byte as its S3 sink writes them (facts sheet B2).

One JSON document per line, ``\\n`` after each (LS ``formats/writer/JsonFormatWriter.write``).

- **Envelope** (``store.envelope=true``): LS ``sink/transformers/SchemalessEnvelopeTransformer.envelope`` puts
  ``key`` (and ``keyIsArray`` for a byte[] key), ``value`` (and ``valueIsArray``), ``metadata`` and ``headers`` into
  a ``java.util.HashMap``; ``metadata`` is a ``java.util.HashMap`` of ``timestamp`` (left out when the record has
  none), ``topic``, ``partition``, ``offset``; ``headers`` a ``java.util.HashMap`` of the record's headers (a repeated
  name keeps its last value: they come from a Scala ``Map``). A schemaless JSON object (JsonConverter with
  ``schemas.enable=false``: a ``java.util.HashMap``) goes through ``convertMap``, which rebuilds it as a Scala
  ``mutable.HashMap``. Jackson writes the lot (``sink/conversion/ToJsonDataConverter``, the ``MapSinkData`` case):
  every object in its map's hash order (:mod:`kafka_s3.core.peers.lenses.java_json`), byte[] as base64.
- **Plain**: the value alone, as ``ToJsonDataConverter.convertMessageValueToByteArray`` gives it: a string or number
  through Connect's JsonConverter (``schemas.enable=false``), a schemaless JSON object (a ``java.util.HashMap``) through
  Jackson. Lenses cannot write a byte[] value or a tombstone this way (``IllegalStateException``; a null from the
  JsonConverter): neither can we (a ByteArrayConverter value is refused by the configuration, a tombstone here).

Keys and values are read from the record's bytes as Connect's converters give them to the sink: StringConverter →
a string, ByteArrayConverter → byte[], JsonConverter with ``schemas.enable=false`` → the parsed JSON. Header values
are typed as Connect's default ``header.converter`` (SimpleHeaderConverter, ``Values.parseString``) types them: a
whole number within a long → a number, a decimal → a float, ``true``/``false`` → a boolean, anything else a string.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import pyarrow as pa

from kafka_s3.core.errors import ConfigError, DataError, FormatError
from kafka_s3.core.formats.base import FileContext, FormatWriter
from kafka_s3.core.peers.lenses.java_json import JavaMap, Raw, ScalaMap, jackson, java_double
from kafka_s3.core.records import NO_TIMESTAMP_TYPE

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter, Logical

#: converters whose values the Lenses JSON writer knows how to type (kafka-s3's short converter names)
KINDS = ("string", "bytearray", "json")
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
_WHOLE = re.compile(r"^[+-]?\d+$")
_DECIMAL = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)$")


def converter_kind(converter: Converter, setting: str) -> str:
    """``string``, ``bytearray`` or ``json`` (schemaless): what the sink receives from ``converter``; anything else
    (Avro, JSON with schemas) is refused naming ``setting``."""
    name = getattr(converter, "name", "")
    if name == "json" and getattr(converter, "schemas_enabled", True):
        raise ConfigError(
            f"{setting}=JsonConverter with schemas.enable=true gives Lenses' sink structs; the Lenses JSON layout "
            f"is written for schemaless JSON (set {setting}.schemas.enable=false), strings and byte arrays",
            key=setting,
        )
    if name not in KINDS:
        raise ConfigError(
            f"{setting}={name or type(converter).__name__}: the Lenses JSON layout is written for StringConverter, "
            "ByteArrayConverter and JsonConverter with schemas.enable=false",
            key=setting,
        )
    return name


def _json_tree(value: Any, map_type: type[JavaMap] | type[ScalaMap]) -> Any:
    """Parsed JSON with its objects as the maps the sink holds them in."""
    if isinstance(value, dict):
        return map_type([(k, _json_tree(v, map_type)) for k, v in value.items()])
    if isinstance(value, list):
        return [_json_tree(item, map_type) for item in value]
    return value


def header_value(raw: bytes | None) -> Any:
    """A header's bytes typed as Connect's SimpleHeaderConverter types them for the sink (see the module docstring);
    a decimal is a Java float, returned as its ``Float.toString`` text."""
    if raw is None:
        return None
    text = raw.decode("utf-8", "replace")
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if _WHOLE.match(text):
        number = int(text)
        if LONG_MIN <= number <= LONG_MAX:
            return number
        return text
    if _DECIMAL.match(text):
        return Raw(java_double(float(str(np.float32(float(text))))))
    return text


class CommonsGzipStream:
    """One gzip stream as commons-compress ``GzipCompressorOutputStream`` writes it with ``GzipParameters``' defaults
    and the given level (LS ``formats/writer/JsonFormatWriter.write``, which makes one per object): a 10-byte header
    (``writeHeader``: modification time 0, no name or comment, extra flags 2 for level 9, 4 for level 1, else 0,
    operating system 255), raw deflate at ``level`` (``java.util.zip.Deflater(level, nowrap=true)``, the same zlib
    stream), then CRC-32 and the input size, little-endian (``writeTrailer``)."""

    def __init__(self, sink: BinaryIO, level: int):
        self.sink = sink
        extra = 2 if level == 9 else 4 if level == 1 else 0
        sink.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00" + bytes([extra, 255]))
        self._deflate = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._crc = 0
        self._size = 0

    def write(self, data: bytes | bytearray) -> None:
        self._crc = zlib.crc32(data, self._crc)
        self._size += len(data)
        out = self._deflate.compress(data)
        if out:
            self.sink.write(out)

    def finish(self) -> None:
        self.sink.write(self._deflate.flush())
        self.sink.write(struct.pack("<II", self._crc, self._size & 0xFFFFFFFF))


class LensesJsonWriter(FormatWriter):
    def __init__(
        self,
        sink: BinaryIO,
        ctx: FileContext,
        envelope: bool,
        key_kind: str,
        value_kind: str,
        gzip_level: int | None = None,
    ):
        self.sink = sink
        self.gzip = CommonsGzipStream(sink, gzip_level) if gzip_level is not None else None
        self.ctx = ctx
        self.envelope = envelope
        self.key_kind = key_kind
        self.value_kind = value_kind

    def _field(self, raw: bytes | None, kind: str, map_type: type[JavaMap] | type[ScalaMap], offset: int) -> Any:
        if raw is None:
            return None
        if kind == "bytearray":
            return bytes(raw)
        text = raw.decode("utf-8")
        if kind == "string":
            return text
        try:
            return _json_tree(json.loads(text), map_type)
        except ValueError as exc:
            raise FormatError(f"offset {offset}: not JSON: {exc}", self.ctx.object_key) from None

    def line(self, row: dict[str, Any]) -> str:
        offset = row["offset"]
        if not self.envelope:
            if row["value"] is None:
                raise DataError(
                    f"{self.ctx.topic}[{self.ctx.partition}] offset {offset}: a null value (tombstone) cannot be "
                    "written as Lenses' plain JSON (Lenses' sink fails on it too); set store.envelope=true in the "
                    "statement's PROPERTIES or behavior.on.null.values=ignore"
                )
            return jackson(self._field(row["value"], self.value_kind, JavaMap, offset))
        items: list[tuple[str, Any]] = [("key", self._field(row["key"], self.key_kind, ScalaMap, offset))]
        if self.key_kind == "bytearray" and row["key"] is not None:
            items.append(("keyIsArray", True))
        items.append(("value", self._field(row["value"], self.value_kind, ScalaMap, offset)))
        if self.value_kind == "bytearray" and row["value"] is not None:
            items.append(("valueIsArray", True))
        metadata: list[tuple[str, Any]] = []
        timestamp = row["timestamp"]
        if timestamp is not None and row["timestampType"] != NO_TIMESTAMP_TYPE:
            metadata.append(("timestamp", _millis(timestamp)))
        metadata += [("topic", row["topic"]), ("partition", row["partition"]), ("offset", offset)]
        items.append(("metadata", JavaMap(metadata)))
        items.append(("headers", JavaMap([(h["key"], header_value(h["value"])) for h in row["headers"] or ()])))
        return jackson(JavaMap(items))

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        out = bytearray()
        for row in records.to_pylist():
            out += self.line(row).encode("utf-8")
            out += b"\n"
        if self.gzip is not None:
            self.gzip.write(out)
        else:
            self.sink.write(out)

    def close(self) -> None:
        if self.gzip is not None:
            self.gzip.finish()


def _millis(timestamp: Any) -> int:
    """Epoch milliseconds of an Arrow timestamp as ``to_pylist`` gives it (a datetime)."""
    import datetime as dt

    if isinstance(timestamp, dt.datetime):
        delta = timestamp - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        return (delta.days * 86_400_000_000 + delta.seconds * 1_000_000 + delta.microseconds) // 1000
    return int(timestamp) // 1000


def lenses_writer(
    config: Config, sink: BinaryIO, ctx: FileContext, value_converter: Converter | None, envelope: bool
) -> LensesJsonWriter:
    """The writer for a Lenses sink configuration's objects (checks the converters first)."""
    from kafka_s3.core import converters

    if value_converter is None:
        value_converter = converters.REGISTRY.resolve(config["value.converter"])(
            config.with_prefix("value.converter."), False
        )
    key_converter = converters.REGISTRY.resolve(config["key.converter"])(config.with_prefix("key.converter."), True)
    value_kind = converter_kind(value_converter, "value.converter")
    key_kind = converter_kind(key_converter, "key.converter") if envelope else "bytearray"
    gzip_level = None
    if config.get("s3.compression.type") == "gzip":  # connect.s3.compression.codec=GZIP (LS JsonFormatWriter)
        level = config.get("s3.compression.level", -1)
        gzip_level = GZIP_DEFAULT_LEVEL if level in (None, -1) else int(level)
    return LensesJsonWriter(sink, ctx, envelope, key_kind, value_kind, gzip_level)


#: LS ``formats/writer/JsonFormatWriter.write``: ``defaultGzipCompressionLevel`` when the codec has no level
GZIP_DEFAULT_LEVEL = 6
