"""``--log-format json`` for every line on stderr, not only kafka-s3's own log records.

The JVM Spark starts, Spark's Python workers (its children) and librdkafka write to file descriptor 2 directly, in
their own forms (``WARNING: Using incubator modules: jdk.incubator.vector``, log4j lines, a worker's traceback). So
in JSON mode descriptor 2 of this process — and with it of every process it starts — becomes a pipe, and a thread
turns each line coming out of it into a JSON record (:class:`kafka_s3.core.logs.StderrLines`) on its way to the real
stderr. Lines that are JSON already (kafka-s3's own records) pass as they are, in the order they were written.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import BinaryIO

from kafka_s3.core.logs import StderrLines

_FLUSHED = b"\x00kafka-s3: stderr flushed\n"
_started: JsonStderr | None = None


class JsonStderr:
    """The pipe in front of descriptor 2 and the thread that empties it into the real stderr as JSON lines."""

    def __init__(self) -> None:
        sys.stderr.flush()
        self._out: BinaryIO = os.fdopen(os.dup(2), "wb")  # the real stderr (not inherited by children)
        reading, writing = os.pipe()
        os.dup2(writing, 2)  # this process's and, from now on, every started process's stderr
        os.close(writing)
        self._in: BinaryIO = os.fdopen(reading, "rb")
        self._lines = StderrLines()
        self._flushed = threading.Event()
        self._gone = False
        threading.Thread(target=self._pump, name="kafka-s3-json-stderr", daemon=True).start()

    def _pump(self) -> None:
        for raw in self._in:
            flushed = raw.endswith(_FLUSHED)
            if flushed:
                raw = raw[: -len(_FLUSHED)]
            converted = self._lines.convert(raw.decode("utf-8", errors="replace")) if raw else None
            if converted is not None and not self._gone:
                try:
                    self._out.write(converted.encode() + b"\n")
                    self._out.flush()
                except OSError:  # the real stderr's reader has gone: keep emptying the pipe so no writer blocks
                    self._gone = True
            if flushed:
                self._flushed.set()

    def flush(self, timeout: float = 2.0) -> None:
        """Wait (at most ``timeout`` seconds) until everything written to stderr so far is out."""
        sys.stderr.flush()
        self._flushed.clear()
        os.write(2, _FLUSHED)
        self._flushed.wait(timeout)


def start() -> JsonStderr:
    """Put the JSON pipe in front of stderr (once per process: later calls return the same one)."""
    global _started
    if _started is None:
        _started = JsonStderr()
    return _started


def flush() -> None:
    """In JSON mode, wait until everything written to stderr so far is out (nothing to do otherwise)."""
    if _started is not None:
        _started.flush()


def asked_for(argv: list[str]) -> bool:
    """Whether the command line asks for ``--log-format json`` (looked at before parsing, so that even a usage error
    comes out as JSON)."""
    for index, arg in enumerate(argv):
        if arg == "--log-format=json" or (arg == "--log-format" and argv[index + 1 : index + 2] == ["json"]):
            return True
    return False
