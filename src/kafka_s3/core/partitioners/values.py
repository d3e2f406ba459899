"""Reading fields of record values, for the field partitioner and the RecordField timestamp extractor.

Confluent reads ``partition.field.name`` and ``timestamp.field`` from a Connect ``Struct`` (typed values) or a ``Map``
(schemaless JSON), nested fields separated by dots. Here a struct field is an Arrow child array, read for the whole
batch at once; JSON values can only be parsed row by row.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.converters.base import Logical
from kafka_s3.core.errors import PartitionerError

MISSING = object()
"""What :func:`json_field` returns for an absent field."""

# Dots outside double quotes: a JSON key may itself contain dots when quoted ("a.b".c), as Confluent allows for maps.
_UNQUOTED_DOT = re.compile(r'\.(?=(?:[^"]*"[^"]*")*[^"]*$)')


def record_error(records: pa.RecordBatch, row: int, problem: str) -> PartitionerError:
    """An error naming the record (topic, partition, offset), so it can be found in Kafka."""
    topic, partition, offset = (records.column(name)[row].as_py() for name in ("topic", "partition", "offset"))
    return PartitionerError(f"{problem} (record topic={topic} partition={partition} offset={offset})")


def first_null(array: pa.Array) -> int:
    """Index of the first null of ``array``, or -1."""
    return pc.index(array.is_null(), True).as_py() if array.null_count else -1


def require_structured(records: pa.RecordBatch, values: Logical, setting: str) -> None:
    """Fields exist only in struct or JSON values; Confluent too refuses to partition raw bytes or strings."""
    if values.kind not in ("struct", "json") or (values.kind == "struct" and not pa.types.is_struct(values.array.type)):
        raise record_error(
            records,
            0,
            f"{setting} reads fields of record values, but the values are {values.kind} ({values.array.type}); "
            "use a value.converter that gives structured values (JsonConverter, AvroConverter...)",
        )


def struct_field(records: pa.RecordBatch, values: Logical, path: str, setting: str) -> pa.Array:
    """The dotted field ``path`` of struct values, for every row (null where the field or a parent is null)."""
    array = values.array
    for name in path.split("."):
        if not pa.types.is_struct(array.type) or array.type.get_field_index(name) < 0:
            raise record_error(records, 0, f"{setting}: field {path!r} does not exist in the value schema")
        array = pc.struct_field(array, name)
    return array


def json_objects(records: pa.RecordBatch, values: Logical, setting: str) -> list[dict[str, Any]]:
    """Every row's JSON value parsed; a row that is not a JSON object (null included) cannot have fields."""
    objects = []
    for row, raw in enumerate(values.array.to_pylist()):
        try:
            parsed = orjson.loads(raw) if raw is not None else None
        except orjson.JSONDecodeError as exc:
            raise record_error(records, row, f"{setting}: the value is not valid JSON ({exc})") from None
        if not isinstance(parsed, dict):
            raise record_error(records, row, f"{setting} reads fields of values, but the value is not a JSON object")
        objects.append(parsed)
    return objects


def json_path(path: str) -> list[str]:
    """Field names of a dotted path into JSON objects; double quotes protect dots inside a name."""
    return [name.replace('"', "") for name in _UNQUOTED_DOT.split(path)]


def json_field(value: Any, names: list[str]) -> Any:
    """The nested field, or :data:`MISSING`; a JSON null counts as missing, as for Confluent's maps."""
    for name in names:
        if not isinstance(value, dict) or value.get(name) is None:
            return MISSING
        value = value[name]
    return value
