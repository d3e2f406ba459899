"""Timestamp extractors: where a record's time comes from for time-based partitioning and ``rotate.interval.ms``.

The three of Confluent's ``TimeBasedPartitioner`` (``timestamp.extractor`` = Wallclock, Record, RecordField), each
extracting a whole batch into int64 epoch milliseconds. A user extractor subclasses :class:`TimestampExtractor` and is
named by its dotted path.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.config.model import Config
from kafka_s3.core.converters.base import Logical
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.partitioners.iso8601 import parse_millis
from kafka_s3.core.partitioners.values import (
    MISSING,
    first_null,
    json_field,
    json_objects,
    json_path,
    record_error,
    require_structured,
    struct_field,
)

FIELD_KEY = "timestamp.field"

# (multiplier, divisor) from an Arrow timestamp unit to milliseconds.
_TO_MS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


class TimestampExtractor(ABC):
    """Configured from the connector config, like a Connect ``TimestampExtractor``."""

    #: False when the time does not come from the record, so a re-run can partition records differently.
    deterministic: bool = True
    #: True when the time comes from the record value.
    uses_values: bool = False

    def __init__(self, config: Config):
        self.config = config

    @abstractmethod
    def extract(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> np.ndarray:
        """Each row's time as int64 ms since the epoch; a row without one raises ``PartitionerError`` naming it."""


class WallclockTimestampExtractor(TimestampExtractor):
    """The processing time: one ``now_ms`` for the whole batch, as Confluent passes ``nowInMillis`` per batch."""

    deterministic = False

    def extract(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> np.ndarray:
        return np.full(records.num_rows, now_ms, np.int64)


class RecordTimestampExtractor(TimestampExtractor):
    """The Kafka record's timestamp (create or log-append time)."""

    def extract(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> np.ndarray:
        micros = records.column("timestamp").cast(pa.int64())
        # Connect turns Kafka's "no timestamp" (-1) into null; brokers accept no other negative timestamp.
        missing = pc.fill_null(pc.less(micros, 0), True)
        row = pc.index(missing, True).as_py()
        if row >= 0:
            raise record_error(records, row, "timestamp.extractor=Record: the record has no timestamp")
        millis: np.ndarray = micros.to_numpy() // 1000
        return millis


class RecordFieldTimestampExtractor(TimestampExtractor):
    """A field of the value (``timestamp.field``, dots for nested fields): epoch ms, a timestamp, or ISO-8601 text."""

    uses_values = True

    def __init__(self, config: Config):
        super().__init__(config)
        self.field: str = config.get(FIELD_KEY) or ""
        if not self.field:
            raise ConfigError(f"timestamp.extractor=RecordField needs {FIELD_KEY}", key=FIELD_KEY)

    def extract(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> np.ndarray:
        if not records.num_rows:
            return np.empty(0, np.int64)
        require_structured(records, values, FIELD_KEY)
        if values.kind == "json":
            return self._extract_json(records, values)
        column = struct_field(records, values, self.field, FIELD_KEY)
        row = first_null(column)
        if row >= 0:
            raise record_error(records, row, f"{FIELD_KEY}: field {self.field!r} is missing or null")
        if pa.types.is_integer(column.type):
            integers: np.ndarray = column.cast(pa.int64()).to_numpy()
            return integers
        if pa.types.is_timestamp(column.type):
            multiplier, divisor = _TO_MS[column.type.unit]
            times: np.ndarray = column.cast(pa.int64()).to_numpy() * multiplier // divisor
            return times
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            return self._parse_strings(records, column)
        raise record_error(records, 0, self._unsupported(str(column.type)))

    def _parse_strings(self, records: pa.RecordBatch, column: pa.Array) -> np.ndarray:
        """Parse each distinct string once (batches often repeat timestamps)."""
        encoded = column.dictionary_encode()
        indices = encoded.indices.to_numpy()
        texts = encoded.dictionary.to_pylist()
        millis = np.empty(len(texts), np.int64)
        for position, text in enumerate(texts):
            try:
                millis[position] = parse_millis(text)
            except ValueError as exc:
                raise record_error(records, int(np.argmax(indices == position)), self._bad_text(text, exc)) from None
        per_row: np.ndarray = millis[indices]
        return per_row

    def _extract_json(self, records: pa.RecordBatch, values: Logical) -> np.ndarray:
        names = json_path(self.field)
        millis = np.empty(records.num_rows, np.int64)
        for row, value in enumerate(json_objects(records, values, FIELD_KEY)):
            found = json_field(value, names)
            if found is MISSING:
                raise record_error(records, row, f"{FIELD_KEY}: field {self.field!r} is missing or null")
            millis[row] = self._json_millis(records, row, found)
        return millis

    def _json_millis(self, records: pa.RecordBatch, row: int, found: Any) -> int:
        """A JSON number is epoch ms (a fraction truncated, as Java's ``longValue``); a string is ISO-8601."""
        if isinstance(found, (int, float)) and not isinstance(found, bool):
            if not -(2**63) <= found < 2**63:
                raise record_error(records, row, f"{FIELD_KEY}: field {self.field!r} = {found} is out of range")
            return int(found)
        if isinstance(found, str):
            try:
                return parse_millis(found)
            except ValueError as exc:
                raise record_error(records, row, self._bad_text(found, exc)) from None
        raise record_error(records, row, self._unsupported(type(found).__name__))

    def _bad_text(self, text: str, exc: ValueError) -> str:
        return f"{FIELD_KEY}: field {self.field!r} = {text!r} is not an ISO-8601 date-time ({exc})"

    def _unsupported(self, type_name: str) -> str:
        return (
            f"{FIELD_KEY}: field {self.field!r} has type {type_name}; a timestamp field must be an integer (epoch ms), "
            "a timestamp or an ISO-8601 string"
        )
