"""JSON text for many values at once, rendered with orjson a slice at a time.

orjson returns each document with ~8 KiB of allocated capacity whatever its length (measured: 1 KiB documents held
8 KiB each), so rendering a 20,000-record batch into one list held ~150 MB per Python worker. Joining or converting
each slice before rendering the next keeps that to a few MB.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa

SLICE = 512


def lines(items: Sequence[Any], render: Callable[[Any], bytes]) -> memoryview:
    """``render(item)`` for every item, one per line, each line ending with a newline."""
    out = bytearray()
    for start in range(0, len(items), SLICE):
        out += b"\n".join(map(render, items[start : start + SLICE]))
        out += b"\n"
    return memoryview(out)


def binary_array(items: Sequence[Any], render: Callable[[Any], bytes]) -> pa.Array:
    """``render(item)`` for every item as an Arrow binary array; None items stay null."""
    parts = [
        pa.array([None if item is None else render(item) for item in items[start : start + SLICE]], pa.binary())
        for start in range(0, len(items), SLICE)
    ]
    return pa.concat_arrays(parts) if parts else pa.array([], pa.binary())
