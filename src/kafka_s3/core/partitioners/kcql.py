"""KCQL's PARTITIONBY: directories from value fields, the record key and record headers (Lenses' S3 sink).

``partition.field.name`` lists the fields, in order:

- ``field`` or ``_value.field``: a field of the value (nested with dots), read as FieldPartitioner reads it;
- ``_key``: the whole key, as UTF-8 text; ``_key.field``: a field of a JSON object key;
- ``_header.<name>``: the first header called ``<name>``, its value as UTF-8 text.

``partition.path.style=Values`` (KCQL's default) names directories by values only, ``value1/value2``;
``KeysAndValues`` writes ``field1=value1/field2=value2`` with the fields as written in PARTITIONBY. As in Confluent's
FieldPartitioner, a record without one of the fields (null key, missing header or field) cannot be placed: it is an
error naming the record.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.config.model import Config
from kafka_s3.core.converters.base import Logical
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.partitioners.base import Partitioner
from kafka_s3.core.partitioners.field import _json_text, _struct_text, _unsupported
from kafka_s3.core.partitioners.values import (
    MISSING,
    json_field,
    json_objects,
    json_path,
    record_error,
    require_structured,
)

FIELDS_KEY = "partition.field.name"
STYLE_KEY = "partition.path.style"
HEADER_PREFIX = "_header."
KEY_FIELD = "_key"
VALUE_PREFIX = "_value."


@dataclass(frozen=True)
class Field:
    name: str  # as written (the directory's "name=" in KeysAndValues style)
    source: str  # "value", "key" or "header"
    path: str  # value/key field path, or header name ("" for the whole key)


def parse_field(name: str) -> Field:
    lowered = name.lower()
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
        self.fields = [parse_field(n) for n in names]
        for f in self.fields:
            if not f.path and f.source != "key":
                raise ConfigError(f"{FIELDS_KEY}: {f.name!r} names no field", key=FIELDS_KEY)
        self.style = config.get(STYLE_KEY) or "Values"
        self.uses_values = any(f.source == "value" for f in self.fields)

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
                text = _key_text(records, f)
            elif parsed_values is not None:
                text = _json_field_text(records, parsed_values, f)
            else:
                text = _struct_text(records, values, f.path)
            parts.append(pc.binary_join_element_wise(f"{f.name}=", text, "") if self.style == "KeysAndValues" else text)
        return parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, self.directory_delim)

    def partition_fields(self) -> list[str]:
        return [f.name for f in self.fields] if self.style == "KeysAndValues" else []


def _json_field_text(records: pa.RecordBatch, objects: list[dict[str, Any]], f: Field) -> pa.Array:
    names = json_path(f.path)
    out = []
    for row, value in enumerate(objects):
        found = json_field(value, names)
        if found is MISSING:
            raise record_error(records, row, f"{FIELDS_KEY}: field {f.name!r} is missing or null")
        text = _json_text(found)
        if text is None:
            raise record_error(records, row, _unsupported(f.name, type(found).__name__))
        out.append(text)
    return pa.array(out, pa.string())


def _key_text(records: pa.RecordBatch, f: Field) -> pa.Array:
    out = []
    for row, key in enumerate(records.column("key").to_pylist()):
        if key is None:
            raise record_error(records, row, f"{FIELDS_KEY}: {f.name} partitions by the key, but the record has none")
        try:
            text = key.decode("utf-8")
            if f.path:
                found = json_field(orjson.loads(key), json_path(f.path))
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
