"""Lenses stream-reactor's ``STOREAS TEXT`` and ``STOREAS BYTES`` objects, both ways.

Writing (a Lenses sink configuration), as LS (lensesio/stream-reactor, ``kafka-connect-cloud-common``) does it:

- **TEXT** (``formats/writer/TextFormatWriter.write``): for each record the value's text
  (``PrimitiveSinkData.safeValue.toString.getBytes``) then ``System.lineSeparator`` (``LineSeparatorUtil``: ``\\n``
  on Linux). A string's ``\\n`` is written as the two characters ``\\`` ``n`` (``SinkData.StringSinkData.safeValue``);
  a number or boolean (JsonConverter with ``schemas.enable=false``) as Java prints it (``42``, ``1.5``, ``true``);
  anything else (an object, an array, byte[], a tombstone) fails the task: "Text format is only for output of kafka
  string values". Extension ``.text`` (``config/FormatSelection.TextFormatSelection.extension``), never compressed.
- **BYTES** (``formats/writer/BytesFormatWriter``): one record per object, its value's bytes alone, nothing around
  them; a second record in one object is an error, so Lenses demands ``flush.count`` 1
  (``sink/config/CloudSinkBucketOptions.validateCommitPolicyForBytesFormat``); a value other than byte[] fails
  ("Non-binary content received"); a tombstone is written as an empty object. Extension ``.bytes``.

Reading (a Lenses source configuration), as LS reads them:

- **TEXT** (``config/FormatSelection.TextFormatSelection.toStreamReader``: ``formats/reader/TextStreamReader`` over
  ``scala.io.Source.getLines`` in UTF-8, then ``converters/TextConverter``): each line is a STRING value, with no key,
  headers or timestamp; ``\\n``, ``\\r\\n`` and a lone ``\\r`` end a line.
- **BYTES** (``BytesFormatSelection``: ``formats/reader/BytesStreamFileReader``,
  ``converters/BytesOutputRowConverter``): the whole object is one BYTES value, no key. Lenses' reader gives nothing
  for an empty object (``hasNext`` is false at size 0); here it gives one record with an empty value, because the
  object's name holds that record's offset.

Offsets are counted back from the last offset the object's name holds (:func:`~kafka_s3.core.peers.lenses.json
.derived_offsets`). What a restore cannot give back as it was written is counted by the writers
(:meth:`~kafka_s3.core.formats.base.FormatWriter.ambiguous`) so that a restore refuses such objects: a TEXT value
holding a line break (escaped, or read back as two lines) and a BYTES tombstone (read back as an empty value).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO

import pyarrow as pa

from kafka_s3.core.errors import ConfigError, DataError, FormatError
from kafka_s3.core.formats.base import FileContext, Format, FormatWriter, Role
from kafka_s3.core.peers.lenses.java_json import java_double
from kafka_s3.core.peers.lenses.json import lines_batch

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter, Logical

#: Lenses' compression setting: TEXT and BYTES objects are never compressed (LS ``FormatSelection
#: .availableCompressionCodecs``: UNCOMPRESSED only, and ``FileExtensionNamer`` keeps their extension)
CODEC_KEY = "connect.s3.compression.codec"
LINE_SEPARATOR = b"\n"  # LS LineSeparatorUtil: System.lineSeparator of a Linux JVM
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1
_LINE_END = re.compile(rb"\r\n|\r|\n")


class _LensesPlainFormat(Format):
    """What TEXT and BYTES share: values only, uncompressed, Lenses' sink class to write."""

    store_as = ""

    def __init__(
        self, config: Config, role: Role = "value", converter: Converter | None = None, envelope: bool = False
    ):
        super().__init__(config, role, converter, envelope)
        if envelope or role != "value":
            # LS CloudSinkBucketOptions.validateEnvelopeAndFormat: "Envelope is not supported for format TEXT"
            what = "store.envelope=true" if envelope else f"{role}.format.class"
            raise ConfigError(
                f"{what}: Lenses' STOREAS {self.store_as} holds values only (Lenses refuses the envelope for it too); "
                "use STOREAS JSON, AVRO or PARQUET with 'store.envelope'=true",
                key="store.envelope" if envelope else f"{role}.format.class",
            )
        settings: Mapping[str, Any] = config or {}
        originals = getattr(config, "originals", None) or {}  # Lenses' own key, kept verbatim from the file
        codec = str(originals.get(CODEC_KEY) or "").strip().upper()
        compression = str(settings.get("s3.compression.type") or "none").lower()
        if codec not in ("", "UNCOMPRESSED") or compression not in ("", "none"):
            shown = (
                f"{CODEC_KEY}={codec}" if codec not in ("", "UNCOMPRESSED") else f"s3.compression.type={compression}"
            )
            raise ConfigError(
                f"{shown}: Lenses' STOREAS {self.store_as} objects are not compressed (LS FormatSelection: "
                "UNCOMPRESSED only)",
                key=CODEC_KEY if codec not in ("", "UNCOMPRESSED") else "s3.compression.type",
            )

    def _check_writable(self, ctx: FileContext) -> str:
        """The value converter's kind (``string``, ``json``, ``bytearray``), for a Lenses sink configuration only."""
        from kafka_s3.core.peers.lenses.json_writer import converter_kind
        from kafka_s3.core.peers.lenses.policy import SINK_CLASS

        if self.config.get("connector.class") != SINK_CLASS:
            raise ConfigError(
                f"format.class={self.name} is written by backups of a Lenses sink configuration (connector.class="
                f"{SINK_CLASS}, STOREAS {self.store_as}) and read by restores of Lenses' buckets (topic {ctx.topic}, "
                f"partition {ctx.partition})",
                key="format.class",
            )
        converter = self.converter
        if converter is None:
            from kafka_s3.core import converters

            converter = converters.REGISTRY.resolve(self.config["value.converter"])(
                self.config.with_prefix("value.converter."), False
            )
        return converter_kind(converter, "value.converter")


class LensesTextFormat(_LensesPlainFormat):
    """Lenses' ``STOREAS TEXT``: one value per line."""

    name = "lenses_text"
    store_as = "TEXT"

    @property
    def extension(self) -> str:
        return ".text"  # LS FormatSelection.TextFormatSelection.extension

    def writer(self, sink: BinaryIO, ctx: FileContext) -> FormatWriter:
        kind = self._check_writable(ctx)
        if kind == "bytearray":
            raise ConfigError(
                f"value.converter={self.config['value.converter']}: Lenses' STOREAS TEXT writes string values only "
                "(its TextFormatWriter fails on byte[]: 'Text format is only for output of kafka string values'); "
                "set value.converter to StringConverter, or use STOREAS BYTES",
                key="value.converter",
            )
        return _TextWriter(sink, ctx, kind)

    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        data = source.read()
        if not data:
            return
        lines = _LINE_END.split(data)
        if lines[-1] == b"":
            lines.pop()  # the last line's terminator ends the object: no empty line after it
        batch = lines_batch(lines, ctx)
        bad: set[int] = set()
        for number, line in enumerate(lines, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad.add(number - 1)
                ctx.skip(FormatError(f"not UTF-8 text: {exc}", ctx.object_key, f"line {number}"), 1)
        if bad:
            keep = pa.array([i not in bad for i in range(len(lines))])
            batch = batch.filter(keep)
        if batch.num_rows:
            yield batch


class _TextWriter(FormatWriter):
    def __init__(self, sink: BinaryIO, ctx: FileContext, kind: str):
        self.sink = sink
        self.ctx = ctx
        self.kind = kind
        self._ambiguous = 0

    def _fail(self, offset: int, problem: str) -> DataError:
        return DataError(
            f"topic {self.ctx.topic} partition {self.ctx.partition} offset {offset}: {problem}: Lenses' STOREAS TEXT "
            "writes string values only (its TextFormatWriter fails too: 'Text format is only for output of kafka "
            "string values')"
        )

    def text(self, raw: bytes | None, offset: int) -> str:
        """The value's text as Lenses' ``TextFormatWriter`` gets it (``PrimitiveSinkData.safeValue.toString``),
        before the ``\\n`` escape."""
        if raw is None:
            raise self._fail(offset, "a null value (tombstone) has no text")
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail(offset, "the value is not UTF-8 text") from None
        if self.kind == "string":
            return text
        try:  # JsonConverter, schemas.enable=false: the sink gets a String, Long, Double, Boolean, Map or List
            value: Any = json.loads(text, parse_constant=_not_json)
        except ValueError as exc:
            raise self._fail(offset, f"the value is not JSON ({exc})") from None
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int) and LONG_MIN <= value <= LONG_MAX:
            return str(value)
        if isinstance(value, float):
            # Kafka's JsonConverter reads decimals as BigDecimal (USE_BIG_DECIMAL_FOR_FLOATS), then doubleValue():
            # no negative zero, and a number beyond a double is Infinity (checked on the JVM)
            if math.isinf(value):
                return "Infinity" if value > 0 else "-Infinity"
            return java_double(value + 0.0)
        shown = "a JSON null" if value is None else f"a JSON {type(value).__name__}"
        raise self._fail(offset, f"{shown} is not a primitive value Lenses writes as text")

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        out = bytearray()
        for raw, offset in zip(records.column("value").to_pylist(), records.column("offset").to_pylist(), strict=True):
            text = self.text(raw, offset)
            if "\n" in text or "\r" in text:
                self._ambiguous += 1  # escaped \n, or a \r that reads back as a line end
            out += text.replace("\n", "\\n").encode("utf-8") + LINE_SEPARATOR  # LS StringSinkData.safeValue
        self.sink.write(bytes(out))

    def close(self) -> None:
        pass

    def ambiguous(self) -> int:
        return self._ambiguous


class LensesBytesFormat(_LensesPlainFormat):
    """Lenses' ``STOREAS BYTES``: one record per object, its value's bytes."""

    name = "lenses_bytes"
    store_as = "BYTES"

    @property
    def extension(self) -> str:
        return ".bytes"  # LS FormatSelection.BytesFormatSelection.extension

    def writer(self, sink: BinaryIO, ctx: FileContext) -> FormatWriter:
        kind = self._check_writable(ctx)
        if kind != "bytearray":
            raise ConfigError(
                f"value.converter={self.config['value.converter']}: Lenses' STOREAS BYTES writes byte[] values only "
                "(its BytesFormatWriter fails otherwise: 'Non-binary content received'); set value.converter="
                "org.apache.kafka.connect.converters.ByteArrayConverter",
                key="value.converter",
            )
        return _BytesWriter(sink, ctx)

    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        yield lines_batch([source.read()], ctx)


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON (Jackson refuses it)")


class _BytesWriter(FormatWriter):
    def __init__(self, sink: BinaryIO, ctx: FileContext):
        self.sink = sink
        self.ctx = ctx
        self.written: int | None = None
        self._ambiguous = 0

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        for raw, offset in zip(records.column("value").to_pylist(), records.column("offset").to_pylist(), strict=True):
            if self.written is not None:
                raise DataError(
                    f"topic {self.ctx.topic} partition {self.ctx.partition} offset {offset}: a second record in one "
                    f"STOREAS BYTES object (after offset {self.written}): Lenses' BytesFormatWriter holds one record "
                    "per object; set PROPERTIES('flush.count'=1)"
                )
            self.written = offset
            if raw is None:
                self._ambiguous += 1  # LS BytesFormatWriter: NullSinkData → an empty object, read back as b""
            self.sink.write(bytes(raw or b""))

    def close(self) -> None:
        pass

    def ambiguous(self) -> int:
        return self._ambiguous
