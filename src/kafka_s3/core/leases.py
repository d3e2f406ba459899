"""Which restore holds a target topic: claims written to one Kafka partition, ordered by their offsets.

A restore claims its target topics before it creates or writes anything, renews the claim while it runs and releases
it when it ends. The partition's offsets give every claim a place in one order, so two restores claiming at the same
moment agree on which came first: the earlier claim of a topic wins while its restore is live (renewed within
:data:`TTL_MS`, by the record times of the lease partition, and not known dead). The later one gives up before
producing anything, naming the holder. Pure: the records are read and written in :mod:`kafka_s3.io.kafka.leases`.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass

TTL_MS = 30_000  # a claim not renewed for this long is expired (its restore was killed, or lost the cluster)
RENEW_MS = 10_000  # how often a running restore renews its claim


@dataclass(frozen=True)
class Claim:
    """One record of the lease partition: a run of a restore holding ``targets`` (or releasing them)."""

    run: str  # unique per run of a restore
    restore: str  # the configuration's name
    source: str  # where it restores from (store url / topics.dir)
    targets: tuple[str, ...]
    host: str
    pid: int
    boot: str = ""  # the host's boot id: a pid names a process only within one boot
    process_start: str = ""  # the process's start time as the host counts it (a pid reused later differs)
    started: int = 0  # epoch ms the run started
    released: bool = False

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes | None) -> Claim | None:
        """The claim a record holds; ``None`` for anything else (the topic is shared by every restore)."""
        try:
            doc = json.loads(data or b"")
            return cls(**{**doc, "targets": tuple(doc["targets"])})
        except (ValueError, TypeError, KeyError):
            return None

    def describe(self, heard_ms: int | None = None, now_ms: int | None = None) -> str:
        since = dt.datetime.fromtimestamp(self.started / 1000, dt.UTC).isoformat(timespec="seconds")
        heard = ""
        if heard_ms is not None and now_ms is not None:
            heard = f", last heard {max(0, now_ms - heard_ms) / 1000:.0f} s ago"
        return (
            f"restore {self.restore!r} (run {self.run[:12]}, pid {self.pid} on {self.host}, from {self.source}, "
            f"running since {since}{heard})"
        )


@dataclass(frozen=True)
class Heard:
    """A claim as read back: its offset in the lease partition and the record's time (ms)."""

    offset: int
    at: int
    claim: Claim


@dataclass(frozen=True)
class Rival:
    target: str
    claim: Claim
    heard: int  # record time (ms) of its latest renewal


def rivals(
    records: Iterable[Heard],
    run: str,
    mine: Mapping[str, int],
    now_ms: int,
    dead: Callable[[Claim], bool] = lambda claim: False,
    ttl_ms: int = TTL_MS,
) -> list[Rival]:
    """The targets of ``mine`` (target -> offset of this run's first claim of it) that another live run claimed
    first. A run is live when its latest record is not a release, is at most ``ttl_ms`` older than ``now_ms`` and
    ``dead`` does not know it ended. ``records`` must reach back ``ttl_ms`` before ``now_ms`` at least (a live run
    renewed in that window, so its first record seen there precedes a claim made after it)."""
    first: dict[tuple[str, str], int] = {}
    latest: dict[str, Heard] = {}
    for heard in sorted(records, key=lambda h: h.offset):
        for target in heard.claim.targets:
            first.setdefault((heard.claim.run, target), heard.offset)
        latest[heard.claim.run] = heard
    out = []
    for target, offset in sorted(mine.items()):
        for other, heard in sorted(latest.items()):
            claim = heard.claim
            if other == run or claim.released or target not in claim.targets:
                continue
            if now_ms - heard.at > ttl_ms or dead(claim):
                continue
            if first.get((other, target), offset) < offset:
                out.append(Rival(target, claim, heard.at))
    return out
