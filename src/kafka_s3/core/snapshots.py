"""Time-stamped records a backup keeps beside its chunk manifests: one series per kind — consumer-group snapshots,
Schema Registry subjects, topic configurations.

A record is one immutable object ``<manifest root>/<topic>/<directory>/<epoch ms, 20 digits><extension>``, created
conditionally and never replaced: the series is the kind's history, and a restore picks the record of its time
(:func:`pick`). The extensions are never a data format's, so a ``*.json`` glob over a bucket sees data only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

PAD = 20


class Record(Protocol):
    @property
    def topic(self) -> str: ...

    @property
    def at(self) -> int: ...

    def to_bytes(self) -> bytes: ...


R = TypeVar("R", bound=Record)


@dataclass(frozen=True)
class Series(Generic[R]):
    """One kind of record: where its objects go, how they are named, how one is read back (``decode(data, key)``)."""

    directory: str
    extension: str
    decode: Callable[[bytes, str], R]

    def name(self, at: int) -> str:
        return f"{at:0{PAD}d}{self.extension}"

    def time(self, name: str) -> int | None:
        """The time an object's name holds (``None``: not a record of this series)."""
        if not name.endswith(self.extension):
            return None
        stem = name[: -len(self.extension)]
        return int(stem) if stem.isdigit() else None


def pick(times: list[int], until: int | None) -> int | None:
    """The newest record time at or before ``until`` (any time when ``None``); ``None`` when there is none."""
    eligible = [t for t in times if until is None or t <= until]
    return max(eligible) if eligible else None
