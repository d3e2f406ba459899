"""The monitoring numbers of a follow run (issue 29 item 4): the health policy from the cycles' history, and the metric
families the driver's updates produce, checked through Prometheus' own text parser."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kafka_s3.core.metrics import (
    CycleOutcome,
    HealthPolicy,
    PipelineMetrics,
    gauge_families,
    lag_seconds,
    metric_names,
)
from kafka_s3.runtime.metrics import text_format

pytestmark = pytest.mark.issue(29, item=4)

NOW = 1_800_000_000.0


def _samples(metrics: PipelineMetrics, now: float = NOW) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = text_format(lambda: metrics.families(now)).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _labels(**labels: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def test_health_turns_unhealthy_only_after_the_configured_cycles_without_commit_while_records_wait() -> None:
    policy = HealthPolicy(cycles=3)
    stalled = CycleOutcome(committed=False, lag=10)
    assert policy.healthy([stalled, stalled])
    assert not policy.healthy([stalled, stalled, stalled])
    assert policy.healthy([stalled, stalled, stalled, CycleOutcome(committed=True, lag=10)])


def test_an_idle_run_with_nothing_waiting_stays_healthy() -> None:
    assert HealthPolicy(cycles=2).healthy([CycleOutcome(committed=False, lag=0)] * 10)


def test_failed_cycles_count_as_cycles_without_commit_with_the_lag_last_known() -> None:
    metrics = PipelineMetrics("backup", "orders", HealthPolicy(cycles=2))
    metrics.cycle(1.0, committed=True, now=NOW, waiting=7, lags={("t", 0): 7})
    metrics.cycle_failed("StoreError", 3)
    assert metrics.healthy
    metrics.cycle_failed("StoreError", 3)
    assert not metrics.healthy
    samples = _samples(metrics)
    assert samples[("kafka_s3_backup_errors_total", _labels(name="orders", kind="StoreError", exit_code="3"))] == 2
    assert samples[("kafka_s3_backup_healthy", _labels(name="orders"))] == 0


def test_commits_add_up_per_partition_and_lag_seconds_counts_from_the_newest_committed_record() -> None:
    metrics = PipelineMetrics("backup", "orders")
    metrics.committed("t", 0, records=5, nbytes=100, objects=1, last_record_ms=int((NOW - 30) * 1000))
    metrics.committed("t", 0, records=5, nbytes=120, objects=1, last_record_ms=int((NOW - 20) * 1000))
    metrics.committed("t", 1, records=3, nbytes=50, objects=1, last_record_ms=None)
    metrics.cycle(2.0, committed=True, now=NOW - 5, waiting=4, lags={("t", 0): 4, ("t", 1): 0})
    samples = _samples(metrics)
    p0, p1 = _labels(name="orders", topic="t", partition="0"), _labels(name="orders", topic="t", partition="1")
    assert samples[("kafka_s3_backup_records_committed_total", p0)] == 10
    assert samples[("kafka_s3_backup_bytes_committed_total", p0)] == 220
    assert samples[("kafka_s3_backup_objects_committed_total", p1)] == 1
    assert samples[("kafka_s3_backup_lag_records", p0)] == 4
    assert samples[("kafka_s3_backup_lag_seconds", p0)] == pytest.approx(20)
    assert samples[("kafka_s3_backup_lag_seconds", p1)] == 0  # caught up
    assert samples[("kafka_s3_backup_last_commit_timestamp_seconds", _labels(name="orders"))] == NOW - 5
    assert samples[("kafka_s3_backup_cycle_duration_seconds_count", _labels(name="orders"))] == 1
    assert samples[("kafka_s3_backup_cycle_duration_seconds_bucket", _labels(name="orders", le="2.5"))] == 1
    assert samples[("kafka_s3_backup_cycle_duration_seconds_bucket", _labels(name="orders", le="1.0"))] == 0


def test_every_series_exposed_is_a_declared_metric_name() -> None:
    metrics = PipelineMetrics("restore", "orders")
    metrics.committed("t", 0, records=1, nbytes=1, objects=1, last_record_ms=1)
    metrics.cycle(0.1, committed=True, now=NOW, waiting=0, lags={("t", 0): 0})
    metrics.failed("KafkaError", 4)
    assert {name for name, _ in _samples(metrics)} == metric_names("restore")


def test_lag_seconds_is_unknown_before_any_record_time_is_known() -> None:
    assert lag_seconds(5, None, NOW) is None
    assert lag_seconds(0, None, NOW) == 0.0


def test_status_rows_give_the_lag_and_last_commit_gauges_only() -> None:
    rows = [
        {"topic": "t", "partition": 0, "lag": 3, "last_commit_age_s": 60, "last_record_ms": int((NOW - 90) * 1000)},
        {"topic": "t", "partition": 1, "lag": 0, "last_commit_age_s": 10, "last_record_ms": None},
        {"topic": "t", "partition": 2, "lag": None, "last_commit_age_s": None, "last_record_ms": None},
    ]
    families = gauge_families("backup", "orders", rows, NOW)
    assert [f.name for f in families] == [
        "kafka_s3_backup_lag_records",
        "kafka_s3_backup_lag_seconds",
        "kafka_s3_backup_last_commit_timestamp_seconds",
    ]
    values = {(s.name, dict(s.labels).get("partition")): s.value for f in families for s in f.samples}
    assert values == {
        ("kafka_s3_backup_lag_records", "0"): 3,
        ("kafka_s3_backup_lag_records", "1"): 0,
        ("kafka_s3_backup_lag_seconds", "0"): pytest.approx(90),
        ("kafka_s3_backup_lag_seconds", "1"): 0,
        ("kafka_s3_backup_last_commit_timestamp_seconds", None): NOW - 10,
    }
