"""The converter contract: a column of Kafka bytes <-> a column of logical values.

Kafka Connect converters turn ``byte[]`` into a Connect value and schema; here a converter turns a whole Arrow column
of raw bytes into a :class:`Logical` column (and back, for restores). Formats and partitioners only ever see
``Logical`` columns, so a new converter needs no change anywhere else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa

Kind = Literal["bytes", "string", "json", "struct"]


@dataclass(frozen=True)
class ValueSchema:
    """A schema that values of one run share.

    ``avro`` is the Avro schema (dict or primitive name) that Avro/Parquet writers use; ``arrow`` the Arrow type of
    the values; ``version`` orders schemas for ``schema.compatibility`` (Schema Registry version, or ``None``);
    ``fingerprint`` identifies the schema (two runs with equal fingerprints have the same schema).
    """

    avro: Any
    arrow: pa.DataType
    fingerprint: str
    version: int | None = None
    name: str | None = None


@dataclass
class Logical:
    """A run of logical values that share one kind and (when typed) one schema.

    - ``bytes``: ``array`` is ``binary`` (the raw bytes; ByteArrayConverter);
    - ``string``: ``array`` is ``string`` (StringConverter);
    - ``json``: ``array`` is ``binary`` holding compact JSON text per record (schemaless JsonConverter); null values
      stay null;
    - ``struct``: ``array`` is a typed Arrow array (usually a ``StructArray``) described by ``schema``.
    Null Kafka values (tombstones) are null entries of ``array`` in every kind.
    """

    kind: Kind
    array: pa.Array
    schema: ValueSchema | None = None

    def __len__(self) -> int:
        return len(self.array)

    def slice(self, offset: int, length: int) -> Logical:
        return Logical(self.kind, self.array.slice(offset, length), self.schema)

    def take(self, indices: pa.Array) -> Logical:
        return Logical(self.kind, self.array.take(indices), self.schema)


@dataclass
class Converted:
    """A converter's output for one input column: consecutive runs covering every row, in order.

    Converters without per-record schemas return a single run. A run boundary marks a schema change (which
    ``schema.compatibility=NONE`` turns into a file roll).
    """

    runs: list[tuple[int, Logical]] = field(default_factory=list)  # (first row index, values)

    @staticmethod
    def single(values: Logical) -> Converted:
        return Converted([(0, values)])


class Converter(ABC):
    """Configured from ``<role>.converter.*`` settings, exactly as a Connect converter is."""

    #: short registry name, e.g. "json"
    name: str = ""
    #: Restores: the target topic of values read from a backup of a topic (``topic.rename``, RegexRouter), which
    #: converters that name things after the topic (Schema Registry subjects) follow. ``None``: the same topic.
    route: Callable[[str], str] | None = None

    def __init__(self, settings: Mapping[str, str], is_key: bool):
        self.settings = dict(settings)
        self.is_key = is_key

    def subject_topic(self, topic: str) -> str:
        """The topic values of ``topic`` are written to (restores), for names derived from it."""
        return topic if self.route is None else self.route(topic)

    @abstractmethod
    def to_logical(self, topic: str, data: pa.Array) -> Converted:
        """Decode a ``binary`` column; on bad input raise :class:`~kafka_s3.core.errors.ConversionError` naming the
        row."""

    @abstractmethod
    def from_logical(self, topic: str, values: Logical) -> pa.Array:
        """Encode logical values back to a ``binary`` column (restore)."""
