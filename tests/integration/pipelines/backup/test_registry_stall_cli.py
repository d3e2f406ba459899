"""A Schema Registry that accepts connections and never answers, as the user of ``backup`` sees it (the "No silent
loss II" issue, item 5: ``backup`` hung with no output for minutes, and one Ctrl-C did not stop it).

The registry is a loopback socket that never answers; the topic is empty, so no Spark job runs: the waits are the
driver's own.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from kafka_s3.core.errors import KafkaError
from tests.support.backup import cli, write_properties

pytestmark = pytest.mark.integration

BOUND_S = 120  # a regression guard only


class SilentRegistry:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def __enter__(self) -> SilentRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


def test_backup_once_against_a_registry_that_never_answers_exits_4_naming_it(
    make_config, fresh_bucket, fresh_topic, tmp_path
):
    with SilentRegistry() as registry:
        raw, _ = make_config(
            fresh_bucket, fresh_topic(1), schemas__registry__url=registry.url, service__timeout__ms="500"
        )
        result = cli("backup", "--once", "--no-progress", "-c", str(write_properties(tmp_path / "b.properties", raw)))
    assert result.returncode == KafkaError.exit_code, result.stderr[-3000:]
    error = [line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error:")]
    assert len(error) == 1 and registry.url in error[0] and "Schema Registry subjects" in error[0], result.stderr


def test_one_ctrl_c_stops_a_backup_waiting_for_a_registry_that_never_answers(
    make_config, fresh_bucket, fresh_topic, tmp_path
):
    with SilentRegistry() as registry:
        # A registry timeout far beyond the test: only the signal can end the wait.
        raw, _ = make_config(
            fresh_bucket, fresh_topic(1), schemas__registry__url=registry.url, service__timeout__ms="600000"
        )
        path = str(write_properties(tmp_path / "b.properties", raw))
        command = subprocess.Popen(
            [sys.executable, "-m", "kafka_s3.cli", "backup", "--once", "--no-progress", "-c", path],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        )
        try:
            deadline = time.monotonic() + BOUND_S
            while not registry.held:  # the backup is waiting for the registry's answer now
                assert command.poll() is None and time.monotonic() < deadline, command.communicate()
                time.sleep(0.1)
            time.sleep(0.5)
            command.send_signal(signal.SIGINT)
            _, stderr = command.communicate(timeout=BOUND_S)
        finally:
            if command.poll() is None:
                command.kill()
    assert command.returncode == 130, stderr[-3000:]
    assert "kafka-s3: stopped by SIGINT" in stderr and "Traceback" not in stderr, stderr[-3000:]
