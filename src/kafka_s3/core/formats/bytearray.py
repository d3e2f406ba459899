"""Confluent's ByteArrayFormat: each record's raw bytes followed by a separator (the last record too).

The bytes are the Kafka record's own, whatever the converter, so a restore gives back the original values. A null
value is written as an empty record (the format cannot tell them apart), and a value holding the separator reads
back as several records: the writer counts such records (:meth:`FormatWriter.ambiguous`), the backup warns and
records the count in the chunk manifest, and a restore refuses the object rather than guess.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.formats.base import FileContext, Format, FormatWriter, Role
from kafka_s3.core.formats.compression import SUFFIXES, StreamWriter, decompressed, stream_settings
from kafka_s3.core.formats.envelope import role_batch
from kafka_s3.core.formats.framing import LARGE_BINARY, binary_offsets, joined, split_arrays

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter, Logical

SEPARATOR_KEY = "format.bytearray.separator"
READ_BATCH_BYTES = 16 * 1024 * 1024


class ByteArrayFormat(Format):
    """Raw values (or raw keys, for a keys sidecar) separated by ``format.bytearray.separator``."""

    name = "bytearray"
    frames_records = False

    def __init__(
        self, config: Config, role: Role = "value", converter: Converter | None = None, envelope: bool = False
    ):
        super().__init__(config, role, converter, envelope)
        if envelope:
            raise ConfigError(
                "format.class=ByteArrayFormat cannot store whole records (store.envelope=true): raw bytes have no "
                "room for keys, headers and timestamps. Use format.class=avro, parquet or json with store.envelope",
                key="format.class",
            )
        if role == "headers":
            raise ConfigError(
                "headers.format.class=ByteArrayFormat cannot store headers (a list of key/value pairs per record): "
                "use headers.format.class=avro (the default), parquet or json",
                key="headers.format.class",
            )
        self.compression, self.level = stream_settings(config)
        # The raw text, verbatim as Confluent's getFormatByteArrayLineSeparator takes it from the originals (no
        # unescaping: only the config file's own escapes apply). The typed value is stripped, which would turn a " "
        # or "\n" separator into nothing.
        raw = config.originals.get(SEPARATOR_KEY)
        self.separator = str(raw).encode() if raw is not None else b"\n"
        self.column = "key" if role == "keys" else "value"

    @property
    def extension(self) -> str:
        extension: str = self.config["format.bytearray.extension"]
        return extension + SUFFIXES[self.compression]

    def writer(self, sink: BinaryIO, ctx: FileContext) -> FormatWriter:
        return _ByteArrayWriter(sink, self)

    def _render(self, records: pa.RecordBatch, values: Logical | None) -> memoryview:
        raw = records.column(self.column)
        return joined(raw.fill_null(pa.scalar(b"", raw.type)), self.separator)

    def ambiguous(self, records: pa.RecordBatch) -> int:
        """Records of ``records`` that cannot be read back as written: a value (or key) where the separator is found
        before its end, and a tombstone (an empty record reads back as an empty value, not a null one)."""
        raw = records.column(self.column)
        nulls = raw.null_count if self.role == "value" else 0
        if not self.separator or not _holds_byte(raw, self.separator[0]):
            return nulls + (len(raw) - raw.null_count if not self.separator else 0)  # the common case, fast
        # "a-" followed by the separator "--" reads back as "a" then "-": look for the separator in the record
        # followed by all but the last byte of the separator.
        if len(self.separator) > 1:
            tail = pa.scalar(self.separator[:-1], raw.type)
            raw = pc.binary_join_element_wise(raw, tail, pa.scalar(b"", raw.type))
        found = pc.sum(pc.match_substring(raw, self.separator.decode())).as_py() or 0
        return int(found) + nulls

    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        if not self.separator:
            raise ConfigError(
                f"{SEPARATOR_KEY} is empty: records written without a separator cannot be split apart again",
                key=SEPARATOR_KEY,
            )
        for records in split_arrays(
            decompressed(source, self.compression, ctx.object_key), self.separator, READ_BATCH_BYTES
        ):
            yield role_batch(len(records), **{self.column: records.cast(pa.binary())})


class _ByteArrayWriter(StreamWriter):
    """A stream writer that counts the records it cannot write unambiguously."""

    def __init__(self, sink: BinaryIO, fmt: ByteArrayFormat):
        super().__init__(sink, fmt.compression, fmt.level, fmt._render)
        self._format = fmt
        self._ambiguous = 0

    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        super().write(records, values)
        if len(records):
            self._ambiguous += self._format.ambiguous(records)

    def ambiguous(self) -> int:
        return self._ambiguous


def _holds_byte(raw: pa.Array, byte: int) -> bool:
    """Whether any value of ``raw`` holds ``byte`` (one vectorised scan of the values' bytes)."""
    rows = raw.cast(LARGE_BINARY)
    if len(rows) == 0 or rows.buffers()[2] is None:
        return False
    offsets = binary_offsets(rows)
    data = np.frombuffer(rows.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[-1]]
    return bool((data == byte).any())
