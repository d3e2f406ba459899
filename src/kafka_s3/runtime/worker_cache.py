"""Objects built once per Python worker: plugins and store clients, keyed by what they were built from.

Spark reuses a Python worker for every later task and cycle (``spark.python.worker.reuse``), so a task that finds
its plugins here skips configuration parsing, schema work and client set-up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_CACHE: dict[str, Any] = {}
_BUILDING = threading.RLock()  # a task backing up several partitions at once asks from several threads: built once


def cached(key: str, factory: Callable[[], T]) -> T:
    if key not in _CACHE:
        with _BUILDING:
            if key not in _CACHE:
                _CACHE[key] = factory()
    value: T = _CACHE[key]  # built by a factory of this key: a T
    return value
