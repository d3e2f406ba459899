"""KCQL's PARTITIONBY: directories from value fields, the record key and record headers (Lenses' S3 sink).

``partition.field.name`` lists the fields, in order:

- ``field`` or ``_value.field``: a field of the value (nested with dots), read as FieldPartitioner reads it;
- ``_key``: the whole key, as UTF-8 text; ``_key.field``: a field of a JSON object key;
- ``_header.<name>``: the first header called ``<name>``, its value as UTF-8 text.

``partition.path.style=Values`` (KCQL's default) names directories by values only, ``value1/value2``;
``KeysAndValues`` writes ``field1=value1/field2=value2`` with the fields as written in PARTITIONBY. As in Confluent's
FieldPartitioner, a record without one of the fields (null key, missing header or field) cannot be placed: it is an
error naming the record.

Where a Lenses S3 sink configuration writes Lenses' layout (:func:`~kafka_s3.core.peers.lenses
.policy.lenses_layout_blockers`) the directories are Lenses' own (LS = lensesio/stream-reactor
``kafka-connect-cloud-common``, ``sink/``): the fields ``_topic``, ``_partition`` and ``_date.<pattern>`` exist too
(``config/PartitionSpecifier``); a directory's ``name=`` is Lenses' field name — ``key`` for ``_key``, ``topic``,
``partition``, ``date``, else the path after the specifier (``config/PartitionField``, ``PartitionNamePath
.toString``); ``/`` and ``\\`` in a header, key or value field become ``-`` (a date keeps them: its pattern may
make nested directories) and a field missing from a present value or key is
``[missing]`` (``naming/CloudKeyNamer.getFieldStringValue``, ``getPartitionValueFromSinkData``); a null key, header
or timestamp is an error (``CloudKeyNamer.processPartitionValues``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.config.model import Config
from kafka_s3.core.converters.base import Logical
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.partitioners.base import Partitioner
from kafka_s3.core.partitioners.field import _json_text, _struct_text, _unsupported
from kafka_s3.core.partitioners.time_based import TIMEZONE_KEY
from kafka_s3.core.partitioners.values import (
    MISSING,
    json_field,
    json_objects,
    json_path,
    record_error,
    require_structured,
)
from kafka_s3.core.peers.lenses.policy import (
    LENSES_DATE_PREFIX,
    lenses_date_printer,
    lenses_layout_blockers,
    lenses_padding,
)
from kafka_s3.core.timezones import zone_info

FIELDS_KEY = "partition.field.name"
STYLE_KEY = "partition.path.style"
HEADER_PREFIX = "_header."
KEY_FIELD = "_key"
VALUE_PREFIX = "_value."
#: Lenses' own fields (LS ``config/PartitionSpecifier``)
LENSES_TOPIC = "_topic"
LENSES_PARTITION = "_partition"
#: a field missing from a present value or key, in Lenses' directories (LS ``naming/CloudKeyNamer``)
LENSES_MISSING = "[missing]"


@dataclass(frozen=True)
class Field:
    name: str  # as written (the directory's "name=" in KeysAndValues style)
    source: str  # "value", "key" or "header"
    path: str  # value/key field path, or header name ("" for the whole key)


def parse_field(name: str, lenses: bool = False) -> Field:
    lowered = name.lower()
    if lenses and name in (LENSES_TOPIC, LENSES_PARTITION):
        return Field(name, name[1:], "")
    if lenses and name.startswith(LENSES_DATE_PREFIX):
        return Field(name, "date", name[len(LENSES_DATE_PREFIX) :])
    if lowered.startswith(HEADER_PREFIX):
        return Field(name, "header", name[len(HEADER_PREFIX) :])
    if lowered == KEY_FIELD:
        return Field(name, "key", "")
    if lowered.startswith(KEY_FIELD + "."):
        return Field(name, "key", name[len(KEY_FIELD) + 1 :])
    if lowered.startswith(VALUE_PREFIX):
        return Field(name, "value", name[len(VALUE_PREFIX) :])
    return Field(name, "value", name)


class KcqlPartitioner(Partitioner):
    """Directories from ``partition.field.name`` (value fields, ``_key``, ``_header.<name>``), KCQL style."""

    name = "kcql"

    def __init__(self, config: Config):
        super().__init__(config)
        names = list(config.get(FIELDS_KEY) or [])
        if not names:
            raise ConfigError(f"partitioner.class=kcql needs {FIELDS_KEY} (KCQL's PARTITIONBY)", key=FIELDS_KEY)
        self.lenses = not lenses_layout_blockers(config)  # Lenses' layout written (not Confluent's as a fallback)
        self.fields = [parse_field(n, self.lenses) for n in names]
        for f in self.fields:
            if not f.path and f.source not in ("key", "topic", "partition"):
                raise ConfigError(f"{FIELDS_KEY}: {f.name!r} names no field", key=FIELDS_KEY)
        self.style = config.get(STYLE_KEY) or "Values"
        self.uses_values = any(f.source == "value" for f in self.fields)
        self.zone = config.get(TIMEZONE_KEY) or "UTC"
        # LS CloudKeyNamer.processPartitionValues pads _partition as file names pad it (config/padding/PaddingService)
        self.partition_width = lenses_padding(config).get("partition", 0) if self.lenses else 0
        self.dates = {f.path: _lenses_date(f.path, self.zone) for f in self.fields if f.source == "date"}

    def encode(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> pa.Array:
        if not records.num_rows:
            return pa.array([], pa.string())
        parsed_values: list[dict[str, Any]] | None = None
        if self.uses_values:
            require_structured(records, values, FIELDS_KEY)
            if values.kind == "json":
                parsed_values = json_objects(records, values, FIELDS_KEY)
        parts = []
        for f in self.fields:
            if f.source == "header":
                text = _header_text(records, f)
            elif f.source == "key":
                text = _key_text(records, f, self.lenses)
            elif f.source == "topic":
                text = records.column("topic").cast(pa.string())
            elif f.source == "partition":
                text = pc.utf8_lpad(records.column("partition").cast(pa.string()), self.partition_width, "0")
            elif f.source == "date":
                text = _date_text(records, f, self.dates[f.path])
            elif parsed_values is not None:
                text = _json_field_text(records, parsed_values, f, self.lenses)
            else:
                text = _struct_text(records, values, f.path)
            if self.lenses and f.source in ("header", "key", "value"):  # LS CloudKeyNamer.getFieldStringValue
                text = pc.replace_substring(pc.replace_substring(text, "/", "-"), "\\", "-")
            if self.style == "KeysAndValues":
                text = pc.binary_join_element_wise(f"{self.field_name(f)}=", text, "")
            parts.append(text)
        return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, self.directory_delim)

    def field_name(self, f: Field) -> str:
        """The ``name`` of a ``name=value`` directory: as written in PARTITIONBY, or Lenses' name of the field."""
        if not self.lenses:
            return f.name
        if f.source in ("topic", "partition", "date") or (f.source == "key" and not f.path):
            return f.source
        return f.path

    def partition_fields(self) -> list[str]:
        return [self.field_name(f) for f in self.fields] if self.style == "KeysAndValues" else []


def _json_field_text(records: pa.RecordBatch, objects: list[dict[str, Any]], f: Field, lenses: bool) -> pa.Array:
    names = json_path(f.path)
    out = []
    for row, value in enumerate(objects):
        found = json_field(value, names)
        if found is MISSING and lenses:
            out.append(LENSES_MISSING)
            continue
        if found is MISSING:
            raise record_error(records, row, f"{FIELDS_KEY}: field {f.name!r} is missing or null")
        text = _json_text(found)
        if text is None:
            raise record_error(records, row, _unsupported(f.name, type(found).__name__))
        out.append(text)
    return pa.array(out, pa.string())


def _key_text(records: pa.RecordBatch, f: Field, lenses: bool = False) -> pa.Array:
    out = []
    for row, key in enumerate(records.column("key").to_pylist()):
        if key is None:
            raise record_error(records, row, f"{FIELDS_KEY}: {f.name} partitions by the key, but the record has none")
        try:
            text = key.decode("utf-8")
            if f.path:
                found = json_field(orjson.loads(key), json_path(f.path))
                if found is MISSING and lenses:
                    out.append(LENSES_MISSING)
                    continue
                if found is MISSING:
                    raise record_error(records, row, f"{FIELDS_KEY}: key field {f.path!r} is missing or null")
                text = _json_text(found)
                if text is None:
                    raise record_error(records, row, _unsupported(f.name, type(found).__name__))
        except (UnicodeDecodeError, orjson.JSONDecodeError) as exc:
            what = "UTF-8 text" if isinstance(exc, UnicodeDecodeError) else "a JSON object"
            raise record_error(records, row, f"{FIELDS_KEY}: {f.name} needs keys that are {what}") from None
        out.append(text)
    return pa.array(out, pa.string())


def _header_text(records: pa.RecordBatch, f: Field) -> pa.Array:
    out = []
    for row, headers in enumerate(records.column("headers").to_pylist()):
        value: Any = next((h["value"] for h in headers or () if h["key"] == f.path), MISSING)  # bytes from here on
        if value is MISSING or value is None:
            raise record_error(records, row, f"{FIELDS_KEY}: the record has no header {f.path!r} (or a null one)")
        try:
            out.append(value.decode("utf-8"))
        except UnicodeDecodeError:
            raise record_error(records, row, f"{FIELDS_KEY}: header {f.path!r} is not UTF-8 text") from None
    return pa.array(out, pa.string())


def _lenses_date(pattern: str, zone_id: str) -> Callable[[datetime], str]:
    """``_date.<pattern>``: Lenses formats the record timestamp with ``DateTimeFormatter.ofPattern`` in the JVM's zone
    (LS ``config/PartitionField.DatePartitionField.formatter``); here in ``timezone`` (UTC when unset), with the
    pattern letters :mod:`kafka_s3.core.java_time` prints as Java does (others are refused by name)."""
    formatter = lenses_date_printer(pattern)
    zone = zone_info(zone_id)
    return lambda moment: formatter(moment.astimezone(zone))


def _date_text(records: pa.RecordBatch, f: Field, formatter: Callable[[datetime], str]) -> pa.Array:
    micros = records.column("timestamp").cast(pa.int64()).to_pylist()
    out = []
    for row, value in enumerate(micros):
        if value is None:  # LS CloudKeyNamer.processPartitionValues: "Timestamp not found in message"
            raise record_error(records, row, f"{FIELDS_KEY}: {f.name} partitions by the record timestamp, it has none")
        out.append(formatter(EPOCH + timedelta(microseconds=value)))
    return pa.array(out, pa.string())


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
