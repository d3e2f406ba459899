"""A ``restore --follow`` cycle's metrics (issue 29 item 4) from its plans and its tasks' results alone: what was
restored per partition, and what the bucket still holds beyond the progress, in records and in seconds."""

from __future__ import annotations

import pytest

from kafka_s3.core.layout import ObjectName
from kafka_s3.core.metrics import PipelineMetrics
from kafka_s3.pipelines.read.discovery import BackupObject
from kafka_s3.pipelines.read.options import Bounds
from kafka_s3.pipelines.restore.metrics import measure_cycle
from kafka_s3.pipelines.restore.result import RestoreResult
from kafka_s3.pipelines.restore.task import RestorePlan

pytestmark = pytest.mark.issue(29, item=4)


def _object(start: int, end: int, size: int, last_ms: int) -> BackupObject:
    name = ObjectName(f"topics/t/partition=0/t+0+{start:010d}.json", "t", 0, start, "t/partition=0", ".json")
    return BackupObject(name, size, records=end - start + 1, last_offset=end, last_timestamp=last_ms)


def _plan(*objects: BackupObject) -> RestorePlan:
    return RestorePlan("t", 0, "t-copy", objects, Bounds(), False, "", "")


def test_a_cycle_counts_what_it_restored_and_the_lag_left_in_the_bucket() -> None:
    metrics = PipelineMetrics("restore", "orders")
    plan = _plan(_object(0, 4, 100, 1_000), _object(5, 9, 120, 2_000), _object(10, 14, 90, 3_000))
    restored = RestoreResult(
        "t", 0, "t-copy", 0, progress=10, objects=2, records=10, first_source_offset=0, last_source_offset=9
    )
    measure_cycle(metrics, [plan], [restored], seconds=1.5)
    totals = metrics.partitions[("t", 0)]
    assert (totals.records, totals.objects, totals.bytes) == (10, 2, 220)
    assert totals.lag == 5 and totals.last_record_ms == 2_000
    assert metrics.last_commit is not None and metrics.healthy
    assert metrics.history[-1].lag == 5
