"""Long waits say what they wait for.

A blocked call — a Spark job whose tasks stopped moving, a Kafka request retried while a broker restarts, a store or
a registry that accepts connections and never answers — is bounded by its own timeouts, but those can be minutes
apart. :func:`logged_wait` around such a call logs a warning naming what it waits for (and its progress, when the
caller can tell it) once it has waited ``every`` seconds without progress, then again every ``every`` seconds, so an
operator never watches a silent stall. One daemon thread per process serves every wait.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

STALL_LOG_S = 30.0
"""How long a wait goes without progress before it is logged, and how often after that."""

_TICK_MAX_S = 1.0  # how often waits are looked at (more often only for waits logged more often than every 3 s)


@dataclass
class _Wait:
    what: str
    logger: logging.Logger
    every: float
    progress: Callable[[], object] | None
    started: float
    since: float  # last progress (or the start)
    due: float  # next warning
    last: object = None


class _Watcher:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waits: dict[int, _Wait] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()  # a new wait: look again at once (its period may be shorter than the sleep)

    def add(self, wait: _Wait) -> int:
        with self._lock:
            token = next(self._ids)
            self._waits[token] = wait
            self._wake.set()
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="kafka-s3-stall-log", daemon=True)
                self._thread.start()
            return token

    def remove(self, token: int) -> None:
        with self._lock:
            self._waits.pop(token, None)

    def _run(self) -> None:
        while True:
            with self._lock:
                waits = list(self._waits.values())
            self._wake.wait(min([_TICK_MAX_S] + [w.every / 3 for w in waits]))
            self._wake.clear()
            with self._lock:
                waits = list(self._waits.values())
            now = time.monotonic()
            for wait in waits:
                try:
                    self._check(wait, now)
                except Exception:  # a progress callback failing must not end the watcher
                    continue

    @staticmethod
    def _check(wait: _Wait, now: float) -> None:
        detail = wait.progress() if wait.progress is not None else None
        if detail != wait.last:
            wait.last, wait.since, wait.due = detail, now, now + wait.every
            return
        if now < wait.due:
            return
        wait.due = now + wait.every
        wait.logger.warning(
            "still waiting for %s: %.0f s%s%s",
            wait.what,
            now - wait.started,
            f" ({detail})" if detail is not None else "",
            f", no progress for {now - wait.since:.0f} s" if wait.progress is not None else "",
        )


_WATCHER = _Watcher()


@contextmanager
def logged_wait(
    what: str,
    logger: logging.Logger,
    every: float | None = None,
    progress: Callable[[], object] | None = None,
) -> Iterator[None]:
    """Log a warning naming ``what`` whenever the body has run ``every`` seconds (default :data:`STALL_LOG_S`)
    without ``progress`` changing (a callable returning a description such as "3 of 8 tasks done"; without one,
    every ``every`` seconds)."""
    every = STALL_LOG_S if every is None else every
    now = time.monotonic()
    token = _WATCHER.add(_Wait(what, logger, every, progress, now, now, now + every))
    try:
        yield
    finally:
        _WATCHER.remove(token)
