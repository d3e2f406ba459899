"""The loopback standalone cluster of the tests: one per port, so two test workers never stop each other's cluster,
and a master whose UI does not serve its JSON yet is not started yet (not an error)."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from tools import spark_cluster


@pytest.fixture
def services_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("KAFKA_S3_SERVICES_DIR", str(tmp_path))
    return tmp_path


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)


def test_stopping_the_cluster_on_one_port_leaves_the_cluster_on_another_running(services_dir):
    first, second = _sleeper(), _sleeper()
    try:
        for port, proc in ((spark_cluster.DEFAULT_PORT, first), (spark_cluster.DEFAULT_PORT + 10, second)):
            base = spark_cluster.cluster_dir(port)
            base.mkdir(parents=True, exist_ok=True)
            (base / "pids.json").write_text(json.dumps({"master": proc.pid, "worker": proc.pid}))

        spark_cluster.down(spark_cluster.DEFAULT_PORT + 10)

        assert second.wait(timeout=20) != 0
        assert first.poll() is None
        assert (spark_cluster.cluster_dir(spark_cluster.DEFAULT_PORT) / "pids.json").exists()
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()


@pytest.fixture
def ui_answering(request) -> Iterator[int]:
    body = request.param.encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("ui_answering", ['<!DOCTYPE html><html data-bs-theme="light"></html>'], indirect=True)
def test_a_master_ui_answering_with_a_page_instead_of_its_json_has_no_worker_yet(ui_answering):
    assert spark_cluster._workers_alive(ui_answering) == 0


WORKERS = {"workers": [{"state": "ALIVE"}, {"state": "DEAD"}, {"state": "ALIVE"}]}


@pytest.mark.parametrize("ui_answering", [json.dumps(WORKERS)], indirect=True)
def test_the_workers_alive_are_those_the_master_lists_as_alive(ui_answering):
    assert spark_cluster._workers_alive(ui_answering) == 2
