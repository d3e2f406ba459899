"""An Apache Kafka broker of a test's own, stopped and started again on its data (marker ``apache_kafka``): what a
broker restart does to a running command, which an external broker is never put through."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path

from tests.support.integration import free_port_pair
from tools import services as dev


class OwnBroker:
    """Apache Kafka (KRaft, one JVM) in ``directory``; :meth:`restart` stops it gracefully, leaves it down ``down``
    seconds in all and starts it again on the same port and data, returning once it answers metadata requests."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.bootstrap = dev.start_apache_kafka(free_port_pair(), directory=directory, home=dev.kafka_home())

    def restart(self, down: float = 0.0, healthy_within: float = 120.0) -> float:
        """Stop, wait until ``down`` seconds have passed since the stop began, start again; the seconds it was down.
        A start that finds its port taken meanwhile (another process's connection got it as its local port) is tried
        again."""
        from tools.kafka_broker import kafka_healthy

        stopped = time.monotonic()
        dev.stop_apache_kafka(self.directory)
        time.sleep(max(0.0, stopped + down - time.monotonic()))
        deadline = time.monotonic() + healthy_within
        proc = self._start()
        while True:
            with contextlib.suppress(Exception):
                if kafka_healthy(self.bootstrap):
                    return time.monotonic() - stopped
            if proc.poll() is not None and time.monotonic() < deadline and self._port_taken():
                time.sleep(2)
                proc = self._start()
            elif proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the restarted broker at {self.bootstrap} did not answer (exit {proc.poll()})")
            time.sleep(0.3)

    def _start(self) -> subprocess.Popen:
        env = {**os.environ, "LOG_DIR": str(self.directory / "logs"), "KAFKA_HEAP_OPTS": "-Xmx1G -Xms256m"}
        for name in ("JMX_PORT", "KAFKA_JMX_OPTS"):
            env.pop(name, None)
        self._log().write_text("")
        with open(self._log(), "ab") as out:
            proc = subprocess.Popen(
                [str(dev.kafka_home() / "bin" / "kafka-server-start.sh"), str(self.directory / "server.properties")],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        (self.directory / "pid").write_text(str(proc.pid))
        return proc

    def _log(self) -> Path:
        return self.directory / "server-restarted.log"

    def _port_taken(self) -> bool:
        return "Address already in use" in self._log().read_text(errors="replace")

    def stop(self) -> None:
        dev.stop_apache_kafka(self.directory)
