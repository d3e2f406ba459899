"""CSV as Lenses stream-reactor writes and reads it (``STOREAS CSV`` and ``STOREAS CSV_WITHHEADERS``).

Writing follows LS ``formats/writer/CsvFormatWriter`` (opencsv's ``CSVWriter`` with its defaults):

- values must be structs with a schema (Avro, JSON with ``schemas.enable=true``); the columns are the schema's
  top-level fields, in order, and ``csv_withheaders`` writes their names as the first row of every object;
- every field is quoted with ``"``, a ``"`` inside is doubled, fields are separated by ``,`` and each row ends with
  ``\\n``; a null field is left empty, unquoted;
- primitive fields only, written as Java's ``toString`` writes them (``true``, ``42``, ``1.5``, ``1.0E-5``; bytes
  as UTF-8 text); a nested struct, array, map or logical type (timestamp, date, decimal) is an error, as in Lenses
  ("Non-primitive values not supported").

Reading follows LS ``formats/reader/CsvFormatStreamReader`` (a ``TextFormatStreamReader``): each line is one record
whose value is the line's text; ``csv_withheaders`` skips the first line. Keys, headers and timestamps are not
stored. A field holding a line break reads back as two records, so the writer counts such records as ambiguous
(:meth:`~kafka_s3.core.formats.base.FormatWriter.ambiguous`) and a restore refuses their object.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import pyarrow as pa

from kafka_s3.core.errors import ConfigError, FormatError
from kafka_s3.core.formats.base import FileContext, Format, FormatWriter, Role
from kafka_s3.core.peers.lenses.java_json import java_double
from kafka_s3.core.peers.lenses.json import lines_batch, read_lines

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter, Logical


def java_text(value: Any, field: pa.Field) -> str | None:
    """A primitive field as Java's ``toString`` writes it (opencsv leaves a null empty)."""
    if value is None:
        return None
    kind = field.type
    if pa.types.is_boolean(kind):
        return "true" if value else "false"
    if pa.types.is_float32(kind):
        return java_double(float(str(np.float32(value))))
    if pa.types.is_floating(kind):
        return java_double(value)
    if pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return str(value)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return bytes(value).decode("utf-8", errors="replace")
    raise TypeError(kind)


def quoted(fields: list[str | None]) -> bytes:
    """One opencsv row: every field quoted, quotes doubled, nulls empty, ``\\n`` after it."""
    return ",".join("" if f is None else '"' + f.replace('"', '""') + '"' for f in fields).encode("utf-8") + b"\n"


class CsvFormat(Format):
    """Lenses' ``STOREAS CSV``: rows of a struct value's fields, no header row."""

    name = "csv"
    #: whether each object starts with a row of the field names (``STOREAS CSV_WITHHEADERS``)
    headers = False

    def __init__(
        self, config: Config, role: Role = "value", converter: Converter | None = None, envelope: bool = False
    ):
        super().__init__(config, role, converter, envelope)
        if envelope or role != "value":
            what = "store.envelope=true" if envelope else f"{role}.format.class"
            raise ConfigError(
                f"{what}: CSV stores values only (their struct fields), as Lenses' CSV does; use avro, parquet or json",
                key="store.envelope" if envelope else f"{role}.format.class",
            )

    @property
    def extension(self) -> str:
        return ".csv"

    def writer(self, sink: BinaryIO, ctx: FileContext) -> FormatWriter:
        return _CsvWriter(sink, ctx, self.headers)

    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        lines = read_lines(source)
        if self.headers:
            if not lines:
                raise FormatError("no column headers are available (an empty CSV object)", ctx.object_key, "line 1")
            lines = lines[1:]
        if lines:
            yield lines_batch(lines, ctx)


class CsvWithHeadersFormat(CsvFormat):
    """Lenses' ``STOREAS CSV_WITHHEADERS``: the field names first, then rows."""

    name = "csv_withheaders"
    headers = True


class _CsvWriter(FormatWriter):
    def __init__(self, sink: BinaryIO, ctx: FileContext, headers: bool):
        self.sink = sink
        self.ctx = ctx
        self.headers = headers
        self.fields: list[pa.Field] | None = None
        self._ambiguous = 0

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        if not len(records):
            return
        offsets = records.column("offset").to_pylist()
        if values is None or values.kind != "struct" or not pa.types.is_struct(values.array.type):
            kind = "none" if values is None else values.kind
            raise FormatError(
                f"topic {self.ctx.topic} partition {self.ctx.partition} offset {offsets[0]}: CSV needs struct values "
                f"with a schema (Avro, or JSON with schemas.enable=true), found {kind} values",
                self.ctx.object_key,
            )
        struct_type = values.array.type
        fields = [struct_type.field(i) for i in range(struct_type.num_fields)]
        if self.fields is None:
            self.fields = fields
            if self.headers:
                self.sink.write(quoted([f.name for f in fields]))
        elif [f.name for f in fields] != [f.name for f in self.fields]:
            raise FormatError(
                f"topic {self.ctx.topic} partition {self.ctx.partition} offset {offsets[0]}: the value schema changed "
                "inside one CSV object (its columns are fixed by the first record)",
                self.ctx.object_key,
            )
        out = bytearray()
        for offset, row in zip(offsets, values.array.to_pylist(), strict=True):
            if row is None:
                raise FormatError(
                    f"topic {self.ctx.topic} partition {self.ctx.partition} offset {offset}: a null value (tombstone) "
                    "has no CSV row (Lenses fails on it too); set behavior.on.null.values=ignore",
                    self.ctx.object_key,
                )
            try:
                texts = [java_text(row[f.name], f) for f in fields]
            except TypeError as exc:
                raise FormatError(
                    f"topic {self.ctx.topic} partition {self.ctx.partition} offset {offset}: Non-primitive values "
                    f"not supported in CSV: {exc}",
                    self.ctx.object_key,
                ) from None
            if any(t is not None and ("\n" in t or "\r" in t) for t in texts):
                self._ambiguous += 1
            out += quoted(texts)
        self.sink.write(bytes(out))

    def close(self) -> None:
        pass

    def ambiguous(self) -> int:
        return self._ambiguous
