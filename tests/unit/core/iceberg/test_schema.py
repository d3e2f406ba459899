"""The backup table's columns: Spark's Kafka source's, each with a fixed Iceberg field id (issue 31, item 2)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_s3.core.iceberg.schema import FIELD_ID, FIELD_IDS, TABLE_SCHEMA, table_batch
from kafka_s3.core.records import RECORD_SCHEMA, make_batch

pytestmark = pytest.mark.issue(31, item=2)


def _ids(schema: pa.Schema) -> dict[str, int]:
    return {f.name: int(f.metadata[FIELD_ID]) for f in schema}


def test_the_table_has_the_kafka_source_columns_in_order_each_with_its_own_field_id():
    assert TABLE_SCHEMA.names == RECORD_SCHEMA.names
    assert _ids(TABLE_SCHEMA) == FIELD_IDS
    header = TABLE_SCHEMA.field("headers").type.value_field
    ids = [int(header.metadata[FIELD_ID])] + [int(f.metadata[FIELD_ID]) for f in header.type]
    assert len(set(ids) | set(FIELD_IDS.values())) == len(ids) + len(FIELD_IDS)


def test_every_kafka_record_has_a_topic_partition_offset_and_timestamp_type_so_those_columns_are_required():
    assert {f.name for f in TABLE_SCHEMA if not f.nullable} == {"topic", "partition", "offset", "timestampType"}


def test_records_written_as_table_rows_keep_every_value_and_the_field_ids_reach_the_parquet_file():
    records = make_batch(
        [
            {
                "topic": "t",
                "partition": 1,
                "offset": 7,
                "key": None,
                "value": b"v",
                "timestamp": 1_000,
                "headers": [("h", b"1"), ("h", None)],
            },
            {"topic": "t", "partition": 1, "offset": 8, "key": b"k", "value": None, "timestamp": 2_000},
        ]
    )
    rows = table_batch(records)
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_batches([rows]), sink)
    read = pq.read_table(io.BytesIO(sink.getvalue()))
    assert _ids(read.schema) == FIELD_IDS
    assert read.column("headers").to_pylist() == [[{"key": "h", "value": b"1"}, {"key": "h", "value": None}], []]
    assert read.select(["key", "value", "offset"]).to_pylist() == [
        {"key": None, "value": b"v", "offset": 7},
        {"key": b"k", "value": None, "offset": 8},
    ]
