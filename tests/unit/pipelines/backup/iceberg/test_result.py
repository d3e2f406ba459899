"""What a table backup's task sends to the driver survives the trip as JSON (issue 31, item 3)."""

from __future__ import annotations

import pytest

from kafka_s3.io.iceberg.table import WrittenFile
from kafka_s3.pipelines.backup.iceberg.result import TablePartitionResult

pytestmark = pytest.mark.issue(31, item=3)


def test_a_task_result_with_its_files_partition_values_and_footers_round_trips_through_json():
    written = WrittenFile("s3://b/w/data/x.parquet", 1234, 10, (490105, None, "t"), "UEFSMQ==", "t", 2, 5, 14)
    result = TablePartitionResult("t", 2, 5, 15, 10, (written,))
    assert TablePartitionResult.from_json(result.to_json()) == result
    failed = TablePartitionResult("t", 2, 5, 5, error="StoreError: down")
    assert TablePartitionResult.from_json(failed.to_json()) == failed
