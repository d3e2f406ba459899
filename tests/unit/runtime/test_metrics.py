"""The metrics endpoint of a follow run (issue 29 item 4): ``/healthz`` answers 200 while healthy and 503 once the
run stalls, ``/metrics`` the text format, anything else 404; a port already taken is a configuration error."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.metrics import HealthPolicy, PipelineMetrics
from kafka_s3.runtime.metrics import MetricsServer

pytestmark = pytest.mark.issue(29, item=4)


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_healthz_answers_503_once_the_run_stalls_and_metrics_serves_the_text_format() -> None:
    metrics = PipelineMetrics("backup", "orders", HealthPolicy(cycles=2))
    server = MetricsServer([metrics], "127.0.0.1", 0).start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        assert _get(f"{base}/healthz") == (200, "ok\n")
        for _ in range(2):
            metrics.cycle(1.0, committed=False, now=0.0, waiting=5, lags={("t", 0): 5})
        status, body = _get(f"{base}/healthz")
        assert (status, body) == (503, "unhealthy: no commit while records wait: backup orders\n")
        status, body = _get(f"{base}/metrics")
        assert status == 200 and 'kafka_s3_backup_lag_records{name="orders",partition="0",topic="t"} 5.0' in body
        assert _get(f"{base}/other")[0] == 404
    finally:
        server.close()


def test_a_port_already_taken_is_a_configuration_error_naming_metrics_port() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ConfigError, match=r"metrics.port=\d+: cannot listen on 127.0.0.1:\d+"):
            MetricsServer([], "127.0.0.1", taken.getsockname()[1])
