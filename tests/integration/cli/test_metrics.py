"""Issue 29, item 4 as an operator sees it: ``kafka-s3 backup --follow --metrics-port P`` serves Prometheus metrics
and ``/healthz`` while it runs, and ``kafka-s3 status --prometheus`` prints the same gauges. The real command in a
subprocess against the real Kafka and S3, scraped over HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.integration import run_cli, write_properties

pytestmark = pytest.mark.integration

PARTITIONS = 2
BACKUP = {"format.class": "json", "flush.size": "5", "cycle.interval.ms": "300"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a text exposition, by series name and labels (Prometheus' own parser)."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _total(samples: dict, name: str) -> float:
    return sum(value for (series, _), value in samples.items() if series == name)


def _values(samples: dict, name: str) -> list[float]:
    return [value for (series, _), value in samples.items() if series == name]


def _scrape_until(port: int, proc: subprocess.Popen, records: int, deadline: float) -> dict:
    """/metrics once the backup committed ``records`` records and every partition's lag is 0."""
    last = ""
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        try:
            status, last = _get(f"http://127.0.0.1:{port}/metrics")
        except OSError:  # not listening yet: the run is starting
            time.sleep(0.2)
            continue
        assert status == 200
        samples = _samples(last)
        lags = _values(samples, "kafka_s3_backup_lag_records")
        if (
            _total(samples, "kafka_s3_backup_records_committed_total") == records
            and len(lags) == PARTITIONS
            and not any(lags)
        ):
            return samples
        time.sleep(0.2)
    raise AssertionError(f"never reached {records} committed records with lag 0; last scrape:\n{last}")


def _records(count: int) -> list[dict]:
    return [{"partition": i % PARTITIONS, "value": b'{"i":%d}' % i} for i in range(count)]


@pytest.mark.issue(29, item=4)
def test_backup_follow_serves_metrics_that_move_with_commits_and_status_prints_the_same_gauges(
    make_config, fresh_bucket, fresh_topic, produce, tmp_path
):
    topic = fresh_topic(PARTITIONS)
    raw, _ = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in BACKUP.items()})
    path = str(write_properties(tmp_path / "backup.properties", raw))
    name = raw["name"]
    produce(topic, _records(20))
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafka_s3.cli", "backup", "-c", path, "--follow", "--no-progress"]
        + ["--metrics-port", str(port), "--set", "metrics.bind.address=127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    try:
        deadline = time.monotonic() + 120
        first = _scrape_until(port, proc, 20, deadline)
        assert _total(first, "kafka_s3_backup_objects_committed_total") == 4  # 2 chunks of 5 records a partition
        assert _total(first, "kafka_s3_backup_bytes_committed_total") > 0
        assert _values(first, "kafka_s3_backup_lag_seconds") == [0.0] * PARTITIONS
        assert _values(first, "kafka_s3_backup_healthy") == [1.0]
        committed_at = _values(first, "kafka_s3_backup_last_commit_timestamp_seconds")
        assert len(committed_at) == 1 and abs(committed_at[0] - time.time()) < 120
        labels = {dict(key[1])["topic"] for key in first if key[0] == "kafka_s3_backup_records_committed_total"}
        assert labels == {topic}
        assert all(dict(key[1])["name"] == name for key in first)
        assert _get(f"http://127.0.0.1:{port}/healthz") == (200, "ok\n")

        produce(topic, _records(10))
        second = _scrape_until(port, proc, 30, deadline)
        assert _total(second, "kafka_s3_backup_objects_committed_total") == 6
        assert _total(second, "kafka_s3_backup_bytes_committed_total") > _total(
            first, "kafka_s3_backup_bytes_committed_total"
        )
        assert _values(second, "kafka_s3_backup_last_commit_timestamp_seconds")[0] > committed_at[0]
        assert _total(second, "kafka_s3_backup_cycle_duration_seconds_count") > _total(
            first, "kafka_s3_backup_cycle_duration_seconds_count"
        )
        assert _get(f"http://127.0.0.1:{port}/healthz") == (200, "ok\n")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()

    result = run_cli(["status", "-c", path, "--prometheus"], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    gauges = _samples(result.stdout)
    assert _values(gauges, "kafka_s3_backup_lag_records") == [0.0] * PARTITIONS
    assert _values(gauges, "kafka_s3_backup_lag_seconds") == [0.0] * PARTITIONS
    assert abs(_values(gauges, "kafka_s3_backup_last_commit_timestamp_seconds")[0] - committed_at[0]) < 120
    assert {dict(key[1])["name"] for key in gauges} == {name}
