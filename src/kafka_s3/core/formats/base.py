"""The format contract: a writer turns ordered records into one object's bytes, a reader turns them back.

Writers must be **deterministic**: the same records and settings give the same bytes, byte for byte (no random
Avro sync markers, no gzip timestamps, no wall-clock metadata). Exactly-once backups rely on it: a re-run after a
crash re-creates an object identical to the one that may already be in the bucket.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO, Literal

import numpy as np
import pyarrow as pa

from kafka_s3.core.errors import FormatError

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Converter, Logical

Role = Literal["value", "keys", "headers"]


@dataclass(frozen=True)
class FileContext:
    """Where an object belongs: used for deterministic per-file values and for error messages."""

    topic: str
    partition: int
    start_offset: int
    object_key: str = ""
    #: Where a reader notes the records it skips (``behavior.on.error=ignore|log``); ``None``: bad bytes are errors.
    skips: list[Skipped] | None = field(default=None, compare=False, repr=False)
    #: The object's last offset when its name tells it (Lenses' names), else ``None``.
    last_offset: int | None = None

    def skip(self, error: FormatError, records: int | None) -> None:
        """Skip ``records`` bad records, or raise ``error`` when bad records are errors (``behavior.on.error=fail``).

        ``None``: how many is unknown. Offsets derived from positions then cannot go on: the reader yields nothing
        after it unless its records carry their own offsets (envelope objects), as Avro's does after resynchronising
        on the next sync marker.

        A reader calls it right where the bad records are: after yielding every record before them, before yielding
        any after them, so the caller numbers the records that follow (and derives their offsets) correctly.
        """
        if self.skips is None:
            raise error
        self.skips.append(Skipped(records, error.position or "object", bare_message(error)))

    def sync_marker(self) -> bytes:
        """A 16-byte Avro sync marker derived from the object's identity (not random: see module docstring)."""
        return hashlib.sha256(f"{self.topic}\x00{self.partition}\x00{self.start_offset}".encode()).digest()[:16]


@dataclass(frozen=True)
class Skipped:
    """Records a reader skipped: how many (``None``: unknown), where, and why."""

    records: int | None
    position: str
    message: str


def bare_message(error: FormatError) -> str:
    """The error's message without the ``in <key> at <position>`` its ``str`` adds."""
    text = str(error)
    if error.object_key:
        text = text.removesuffix(f" in {error.object_key}" + (f" at {error.position}" if error.position else ""))
    return text


@dataclass(frozen=True)
class Block:
    """One block of an indexed object: a byte range that is itself an object ``Format.read`` decodes.

    ``first_offset`` is the Kafka offset of the block's first record, ``records`` how many it holds and ``row`` how
    many records of the object come before it (its first row's index, for aligning keys and headers sidecars).
    """

    byte_offset: int
    byte_length: int
    first_offset: int
    records: int
    row: int


class FormatWriter(ABC):
    """Writes the records of one object, batch after batch, into a binary sink."""

    @abstractmethod
    def write(self, records: pa.RecordBatch, values: Logical | None) -> None:
        """Append records (``RECORD_SCHEMA`` rows, in offset order).

        ``values`` are the converted values of the same rows for the ``value`` role, the converted keys for the
        ``keys`` role, and ``None`` for the ``headers`` role and in envelope mode (which stores raw records).
        """

    @abstractmethod
    def close(self) -> None:
        """Write trailing structures (footers, final blocks, compression trailers). Does not close the sink."""

    def discard(self) -> None:
        """The object is abandoned (its upload aborted): release what the writer holds without writing, so that
        nothing (e.g. a garbage-collected library writer closing itself) writes into the aborted sink later. The
        default does nothing: writers that hold no such object need no override."""
        return None

    def ambiguous(self) -> int:
        """After :meth:`close`: how many of the object's records a reader cannot give back one by one (0, the
        default, for formats that frame every record). The backup records it in the chunk manifest; a restore
        refuses an object with any."""
        return 0

    def index(self) -> bytes | None:
        """After :meth:`close`: the bytes of the object's index sidecar, or ``None`` (the default: no index).

        A format whose writers return bytes here declares :attr:`Format.index_extension`; the backup stores them as
        ``<name>.index<index_extension>`` beside the data object, in the same chunk (listed in its manifest).
        """
        return None


class Format(ABC):
    """One object format. Configured once per job; cheap ``writer``/``read`` calls per object."""

    #: short registry name
    name: str = ""
    #: extension of the index sidecar written beside each object (``""`` gives ``<name>.index``), or ``None``
    #: for formats without an index. Formats with one are :class:`IndexedFormat` (their writers implement
    #: :meth:`FormatWriter.index`).
    index_extension: str | None = None
    #: whether a reader gives back every record as written; ``False`` (ByteArray) when some records cannot be told
    #: apart, which writers count (:meth:`FormatWriter.ambiguous`) and restores check
    frames_records: bool = True

    def __init__(
        self,
        config: Config,
        role: Role = "value",
        converter: Converter | None = None,
        envelope: bool = False,
    ):
        self.config = config
        self.role = role
        self.converter = converter
        self.envelope = envelope

    @property
    @abstractmethod
    def extension(self) -> str:
        """Full extension with the leading dot and any compression suffix (``.json.gz``, ``.snappy.parquet``)."""

    @abstractmethod
    def writer(self, sink: BinaryIO, ctx: FileContext) -> FormatWriter:
        """A writer streaming one object's bytes into ``sink``."""

    @abstractmethod
    def read(self, source: BinaryIO, ctx: FileContext) -> Iterator[pa.RecordBatch]:
        """Decode one object into ``RECORD_SCHEMA`` batches.

        Envelope objects fill every column. Otherwise only the role's column is filled (``value`` bytes re-encoded
        with the converter, ``key`` for keys sidecars, ``headers`` for headers sidecars); other columns are null and
        the restore fills them from the object name and sidecars. Bad bytes raise
        :class:`~kafka_s3.core.errors.FormatError` naming ``ctx.object_key`` and the position.
        """

    def row_schemas(self, records: pa.RecordBatch) -> tuple[np.ndarray, list[str]] | None:
        """Envelope objects whose schema follows each record (Lenses' Avro/Parquet envelope: its headers' names and
        types): per row a code into the schema identities, so that an object rolls where its schema changes.
        ``None`` (the default): the envelope's schema is fixed."""
        return None


class IndexedFormat(Format):
    """A format whose objects are made of independently readable blocks, listed in an index sidecar."""

    #: ``<name>.index``: no data format's extension, so a ``*.json`` glob over a bucket sees data only. Earlier
    #: versions wrote ``<name>.index.json`` (:data:`LEGACY_INDEX_EXTENSION`), which readers still accept.
    index_extension: str = ""

    @abstractmethod
    def blocks(self, index: bytes, ctx: FileContext) -> list[Block]:
        """The blocks an index sidecar lists, in object order.

        Readers bounded by offsets fetch only the blocks they need, with ranged GETs. A malformed index raises
        :class:`~kafka_s3.core.errors.FormatError` naming ``ctx.object_key`` (the index's key).
        """


# What earlier versions named the index sidecar: ``<name>.index.json`` (still read).
LEGACY_INDEX_EXTENSION = ".json"
