"""The table's columns: those of Spark's Kafka source (:data:`kafka_s3.core.records.RECORD_SCHEMA`), each with a
fixed Iceberg field id carried as Parquet field metadata (``PARQUET:field_id``), so every engine reads the data files
by id rather than by name, and a later schema change (typed value columns, renames) never remaps them.

Every Kafka record has a topic, partition, offset and timestamp type: those columns are required. Keys, values and
headers may be null (tombstones, keyless records); a record without a timestamp (type -1) has a null one.
"""

from __future__ import annotations

import pyarrow as pa

from kafka_s3.core.records import HEADERS_TYPE, RECORD_SCHEMA

FIELD_ID = b"PARQUET:field_id"

# Column -> Iceberg field id. Ids are never reused: a column added later takes the next free id.
FIELD_IDS = {
    "key": 1,
    "value": 2,
    "topic": 3,
    "partition": 4,
    "offset": 5,
    "timestamp": 6,
    "timestampType": 7,
    "headers": 8,
}
HEADER_ELEMENT_ID, HEADER_KEY_ID, HEADER_VALUE_ID = 9, 10, 11
LAST_COLUMN_ID = HEADER_VALUE_ID
REQUIRED = frozenset({"topic", "partition", "offset", "timestampType"})


def _field(name: str, kind: pa.DataType, field_id: int, nullable: bool = True) -> pa.Field:
    return pa.field(name, kind, nullable, metadata={FIELD_ID: str(field_id).encode()})


_HEADER = pa.struct(
    [
        _field("key", HEADERS_TYPE.value_type.field("key").type, HEADER_KEY_ID),
        _field("value", HEADERS_TYPE.value_type.field("value").type, HEADER_VALUE_ID),
    ]
)
TABLE_SCHEMA = pa.schema(
    [
        _field(
            f.name,
            pa.list_(_field("element", _HEADER, HEADER_ELEMENT_ID)) if f.name == "headers" else f.type,
            FIELD_IDS[f.name],
            nullable=f.name not in REQUIRED,
        )
        for f in RECORD_SCHEMA
    ]
)
"""The Arrow schema of the table's data files: ``RECORD_SCHEMA``'s columns and types, with field ids."""


def table_batch(records: pa.RecordBatch) -> pa.RecordBatch:
    """Records (``RECORD_SCHEMA``) as the data files store them: same values, the table's field ids and required
    columns; a record without headers keeps an empty list (null headers are not a Kafka state)."""
    columns = []
    for f in TABLE_SCHEMA:
        column = records.column(f.name)
        if f.name == "headers":
            column = column.fill_null(pa.scalar([], HEADERS_TYPE))
        columns.append(column.cast(f.type))
    return pa.RecordBatch.from_arrays(columns, schema=TABLE_SCHEMA)
