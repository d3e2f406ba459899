"""Live counts from running Spark tasks to the driver's progress bars, over UDP.

Spark tells the driver nothing about a Python task until it ends, and a backup cycle or a restore is one long task per
partition, so a bar fed by task results would sit at zero and then jump to the end. Instead each task sends its
running totals for its partition (records, payload bytes) at most every ``INTERVAL_S`` to a socket the driver opened.
Totals are absolute, so a lost datagram costs nothing; a task never waits for, or fails because of, the driver (a
firewalled cluster just shows no live progress). Datagrams carry a round tag so counts of an earlier cycle never mix
into the current one.

Besides counts, a backup task sends one datagram per object it has stored (``stored``: its key, records, offsets and
bytes) the moment the object is complete, and the driver's ``on_stored`` hears of it then: a cycle's "committed"
log lines come as the objects are stored, not all at once when the Spark job ends. A lost datagram costs only the
moment: the driver logs what it did not hear of from the job's results.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

INTERVAL_S = 0.5
MAX_DATAGRAM = 4096

Key = tuple[str, int]  # (topic, partition)
OnStored = Callable[[Key, dict[str, Any]], None]
"""What the driver does with an object a task stored: ``(topic, partition)`` and the object's fields as the task sent
them. Called on the listener's thread."""


class LiveCounts:
    """The driver's end: a UDP socket on the driver host and a thread keeping each partition's latest totals."""

    def __init__(self, host: str, on_stored: OnStored | None = None):
        self.on_stored = on_stored
        family = socket.getaddrinfo(host, 0, type=socket.SOCK_DGRAM)[0][0]
        self._socket = socket.socket(family, socket.SOCK_DGRAM)
        self._socket.bind((host, 0))
        self._socket.settimeout(0.2)
        self.address = (host, self._socket.getsockname()[1])
        self._lock = threading.Lock()
        self._totals: dict[Key, tuple[int, int]] = {}
        self._tag = 0
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._receive, name="kafka-s3-live-counts", daemon=True)
        self._thread.start()

    @classmethod
    def open(cls, host: str, on_stored: OnStored | None = None) -> LiveCounts | None:
        """A listener on ``host``, the address tasks know the driver by; ``None`` when it cannot be opened."""
        try:
            return cls(host, on_stored)
        except OSError:
            return None

    def new_round(self) -> tuple[str, int, int]:
        """Forget the counts of the previous round; returns what tasks of the new round report to."""
        with self._lock:
            self._tag += 1
            self._totals = {}
            return (self.address[0], self.address[1], self._tag)

    def snapshot(self) -> dict[Key, tuple[int, int]]:
        with self._lock:
            return dict(self._totals)

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=1)
        self._socket.close()

    def _receive(self) -> None:
        while not self._closed.is_set():
            try:
                data = self._socket.recv(MAX_DATAGRAM)
                message = json.loads(data)
                key = (str(message["topic"]), int(message["partition"]))
                stored = message.get("stored")
                totals = None if stored is not None else (int(message["records"]), int(message["bytes"]))
            except TimeoutError:
                continue
            except (OSError, ValueError, KeyError, TypeError):  # closed socket or a stray datagram
                continue
            with self._lock:
                if message.get("round") != self._tag:
                    continue
                if totals is not None:
                    self._totals[key] = totals
            if isinstance(stored, dict) and self.on_stored is not None:
                with contextlib.suppress(Exception):  # what the driver makes of it must not stop the counts
                    self.on_stored(key, stored)


class LiveReporter:
    """A task's end: sends its partition's running totals now and then. Never raises, never blocks."""

    _address: tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes]  # as socket.getaddrinfo gives it

    def __init__(self, target: tuple[str, int, int] | None, topic: str, partition: int):
        self._socket = None
        self._last = 0.0
        if target is None:
            return
        host, port, tag = target
        self._message = {"round": tag, "topic": topic, "partition": partition}
        try:
            family, _, _, _, self._address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
            self._socket = socket.socket(family, socket.SOCK_DGRAM)
            self._socket.setblocking(False)
        except OSError:
            self._socket = None

    def update(self, records: int, nbytes: int, final: bool = False) -> None:
        if self._socket is None:
            return
        now = time.monotonic()
        if not final and now - self._last < INTERVAL_S:
            return
        self._last = now
        with contextlib.suppress(OSError):
            self._socket.sendto(
                json.dumps({**self._message, "records": records, "bytes": nbytes}).encode(), self._address
            )

    def stored(self, fields: dict[str, Any]) -> None:
        """Tell the driver of an object stored now (sent at once: these are few, one per object)."""
        if self._socket is None:
            return
        with contextlib.suppress(OSError, TypeError, ValueError):
            self._socket.sendto(json.dumps({**self._message, "stored": fields}).encode(), self._address)

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
