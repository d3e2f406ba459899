"""Confluent's FieldPartitioner: ``<field>=<value>`` directories from fields of the record value.

As in Confluent, only integers, strings and booleans make directory names (a float's text or a nested object would
not round-trip). A null struct field gives ``<field>=null`` whatever its type (SC ``FieldPartitioner.getStructField``
since CC-36988); a field missing from the schema, a null parent struct, and a JSON field that is missing or null
cannot be placed (SC ``DataUtils.getNestedFieldValue`` throws): an error naming the record.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.config.model import Config
from kafka_s3.core.converters.base import Logical
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.partitioners.base import Partitioner
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

FIELDS_KEY = "partition.field.name"


class FieldPartitioner(Partitioner):
    """Directory ``f1=v1<directory.delim>f2=v2`` from the ``partition.field.name`` fields (dots for nested fields)."""

    name = "field"
    uses_values = True

    def __init__(self, config: Config):
        super().__init__(config)
        self.field_names: list[str] = list(config.get(FIELDS_KEY) or [])
        if not self.field_names:
            raise ConfigError(f"partitioner.class=FieldPartitioner needs {FIELDS_KEY}", key=FIELDS_KEY)

    def encode(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> pa.Array:
        if not records.num_rows:
            return pa.array([], pa.string())
        require_structured(records, values, FIELDS_KEY)
        if values.kind == "json":
            return self._encode_json(records, values)
        parts = [
            pc.binary_join_element_wise(f"{field}=", _struct_text(records, values, field), "")
            for field in self.field_names
        ]
        return pc.binary_join_element_wise(*parts, self.directory_delim)

    def partition_fields(self) -> list[str]:
        return list(self.field_names)

    def _encode_json(self, records: pa.RecordBatch, values: Logical) -> pa.Array:
        paths = [(field, json_path(field)) for field in self.field_names]
        directories = []
        for row, value in enumerate(json_objects(records, values, FIELDS_KEY)):
            parts = []
            for field, names in paths:
                found = json_field(value, names)
                if found is MISSING:
                    raise record_error(records, row, f"{FIELDS_KEY}: field {field!r} is missing or null")
                text = _json_text(found)
                if text is None:
                    raise record_error(records, row, _unsupported(field, type(found).__name__))
                parts.append(f"{field}={text}")
            directories.append(self.directory_delim.join(parts))
        return pa.array(directories, pa.string())


def _struct_text(records: pa.RecordBatch, values: Logical, field: str) -> pa.Array:
    """The field's values as directory text, for the whole batch at once; a null field is the text ``null``."""
    column = struct_field(records, values, field, FIELDS_KEY)
    if not _renders_as_text(column.type):
        raise record_error(records, 0, _unsupported(field, str(column.type)))
    row = first_null(values.array)
    if row >= 0:  # SC FieldPartitioner: a null value is neither a Struct nor a Map
        raise record_error(records, row, f"{FIELDS_KEY}: the value is null (a tombstone), it has no field {field!r}")
    if "." in field:
        parent = struct_field(records, values, field.rsplit(".", 1)[0], FIELDS_KEY)
        row = first_null(parent)
        if row >= 0:
            raise record_error(records, row, f"{FIELDS_KEY}: field {field!r} is inside a null struct")
    return pc.fill_null(pc.cast(column, pa.string()), "null")


def _renders_as_text(arrow_type: pa.DataType) -> bool:
    """Connect's INT8-INT64, BOOLEAN and STRING: the types Confluent accepts as partition values."""
    checks = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_string, pa.types.is_large_string)
    return any(check(arrow_type) for check in checks)


def _json_text(value: Any) -> str | None:
    """Confluent's rendering of a partition value (``None`` for types it does not accept)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    return None


def _unsupported(field: str, type_name: str) -> str:
    return f"{FIELDS_KEY}: field {field!r} has type {type_name}; partition values must be integers, strings or booleans"
