"""The first Ctrl-C (or SIGTERM) ends any wait, not only a Spark job (the "No silent loss II" issue, item 5: one
Ctrl-C did not stop a command waiting for a Schema Registry that never answers).

With no Spark job running there is nothing to cancel: the first signal raises :class:`Interrupted` in the main
thread, which ends the blocking call it is in (PEP 475: a handler that raises ends the system call), and the engine
refuses to start a job after it. The engine here is the real one, never started (no job can be running).
"""

from __future__ import annotations

import os
import signal
import socket
import threading

import pytest

from kafka_s3.cli.signals import SIGNALS, Interrupts
from kafka_s3.core.errors import Interrupted
from kafka_s3.spark.engine import SparkEngine


@pytest.fixture
def handlers():
    """Interrupts keeps its handlers once a signal came (a second one aborts until the process ends): put the
    test runner's back."""
    saved = {sig: signal.getsignal(sig) for sig in SIGNALS}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_first_signal_ends_a_blocking_read_when_no_spark_job_runs(signum, handlers, capsys):
    engine = SparkEngine()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        client = socket.create_connection(server.getsockname())
        client.settimeout(120)  # far above the signal's delay: only the signal ends the read
        interrupts = Interrupts(engine)
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signum))
        with pytest.raises(Interrupted), interrupts:
            timer.start()
            client.recv(1)  # a service that accepted the connection and never answers
        client.close()
    assert interrupts.signum == signum and interrupts.exit_code == 128 + signum
    assert engine.cancelled  # no job starts after the stop
    with pytest.raises(Interrupted):
        engine.run_tasks("after the stop", lambda slot: iter(()), 1)
    err = capsys.readouterr().err
    assert f"kafka-s3: {signal.Signals(signum).name}: stopping" in err
