"""The edge of monitoring: :class:`~kafka_s3.core.metrics.PipelineMetrics` in Prometheus' text format (the
``prometheus-client`` package), served over HTTP by a follow run on ``metrics.port``: ``/metrics`` and ``/healthz``
(200 while healthy, 503 when stalled)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Metric, generate_latest
from prometheus_client.registry import Collector

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.metrics import Family, PipelineMetrics

log = logging.getLogger("kafka_s3.metrics")


class _FamiliesCollector(Collector):
    def __init__(self, families: Callable[[], Iterable[Family]]):
        self._families = families

    def collect(self) -> Iterator[Metric]:
        for family in self._families():
            metric = Metric(family.name, family.help, family.kind)
            for sample in family.samples:
                metric.add_sample(sample.name, dict(sample.labels), sample.value)
            yield metric


def text_format(families: Callable[[], Iterable[Family]]) -> bytes:
    """``families`` in Prometheus' text exposition format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_FamiliesCollector(families))
    return generate_latest(registry)


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged: one every 15 s would drown the backup's own lines."""


class _ThreadingServer(WSGIServer):
    daemon_threads = True

    def process_request(self, request: Any, client_address: Any) -> None:
        threading.Thread(target=self._handle, args=(request, client_address), daemon=True).start()

    def _handle(self, request: Any, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        finally:
            self.shutdown_request(request)


class MetricsServer:
    """``/metrics`` (every pipeline's families) and ``/healthz`` (200 "ok" when every pipeline is healthy, else 503
    naming the stalled ones), in a daemon thread of the driver process."""

    def __init__(self, pipelines: Sequence[PipelineMetrics], address: str, port: int):
        self.pipelines = list(pipelines)
        try:
            self._server = make_server(address, port, self._app, _ThreadingServer, handler_class=_Quiet)
        except OSError as exc:
            raise ConfigError(
                f"metrics.port={port}: cannot listen on {address}:{port}: {exc.strerror or exc}", key="metrics.port"
            ) from None
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, name="kafka-s3-metrics", daemon=True)

    def start(self) -> MetricsServer:
        self._thread.start()
        log.info("serving Prometheus metrics on http://%s:%d/metrics (and /healthz)", *self._server.server_address[:2])
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _families(self) -> list[Family]:
        now = time.time()
        return [family for pipeline in self.pipelines for family in pipeline.families(now)]

    def _app(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        path = environ.get("PATH_INFO", "/")
        if path == "/healthz":
            stalled = [f"{p.side} {p.name}" for p in self.pipelines if not p.healthy]
            if stalled:
                body = f"unhealthy: no commit while records wait: {', '.join(stalled)}\n".encode()
                start_response("503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8")])
                return [body]
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"ok\n"]
        if path in ("/", "/metrics"):
            start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
            return [text_format(self._families)]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found: /metrics and /healthz are served\n"]


def serve(pipelines: Sequence[PipelineMetrics], config: Any) -> MetricsServer | None:
    """The endpoint a follow run's configuration asks for (``metrics.port``; 0: none), started."""
    port = int(config["metrics.port"])
    if port <= 0:
        return None
    return MetricsServer(pipelines, str(config["metrics.bind.address"]), port).start()
