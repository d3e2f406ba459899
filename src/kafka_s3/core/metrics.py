"""What a running ``backup --follow`` or ``restore --follow`` tells monitoring, and when it calls itself unhealthy.

The drivers already know, per cycle, what each partition committed and how far behind it is (they read the end
offsets every cycle); :class:`PipelineMetrics` keeps those numbers in the driver process and describes them as
Prometheus metric families (names, types, labels, values), without Prometheus' client or any network: the edge
(:mod:`kafka_s3.runtime.metrics`) turns them into the text format and serves them. ``kafka-s3 status --prometheus``
builds the same families from what ``status`` reads.

Health: a backup whose lag is 0 and that commits nothing is idle, not stalled; one that commits nothing for
``metrics.unhealthy.after.cycles`` cycles in a row while records wait is stalled (:class:`HealthPolicy`).
"""

from __future__ import annotations

import math
import threading
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

PREFIX = "kafka_s3"

# Cycle durations in seconds: a cycle is one Spark job, from under a second (nothing new) to minutes (a backlog)
CYCLE_BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, math.inf)

# (suffix, type, help, label names); the full name is kafka_s3_<side>_<suffix>, every family also has the label name
FAMILIES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("records_committed", "counter", "Records committed (durable and their offsets committed)", ("topic", "partition")),
    ("bytes_committed", "counter", "Bytes of the objects committed", ("topic", "partition")),
    ("objects_committed", "counter", "Data objects committed", ("topic", "partition")),
    (
        "lag_records",
        "gauge",
        "Records waiting: the log's end (or the backup's) minus the committed offset",
        ("topic", "partition"),
    ),
    (
        "lag_seconds",
        "gauge",
        "Seconds since the time of the last committed record, while records wait (0 when caught up)",
        ("topic", "partition"),
    ),
    ("last_commit_timestamp_seconds", "gauge", "Unix time of the last cycle that committed something", ()),
    ("cycle_duration_seconds", "histogram", "Duration of a cycle (planning, the Spark job, the commit)", ()),
    ("errors", "counter", "Errors by kind: the error's class and its exit code", ("kind", "exit_code")),
    ("healthy", "gauge", "1 while healthy, 0 when no commit happened for the configured cycles while lag > 0", ()),
)


def metric_names(side: str) -> set[str]:
    """Every series name a ``side`` ("backup" or "restore") exposes (counters with ``_total``, the histogram's
    ``_bucket``/``_sum``/``_count``): what dashboards and alert rules may refer to."""
    names = set()
    for suffix, kind, _, _ in FAMILIES:
        base = f"{PREFIX}_{side}_{suffix}"
        if kind == "counter":
            names.add(f"{base}_total")
        elif kind == "histogram":
            names.update(f"{base}_{part}" for part in ("bucket", "sum", "count"))
        else:
            names.add(base)
    return names


@dataclass(frozen=True)
class Sample:
    name: str  # the full series name (with _total, _bucket, ...)
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass(frozen=True)
class Family:
    """One metric family as Prometheus' text format describes it: ``name`` without ``_total``."""

    name: str
    kind: str  # counter | gauge | histogram
    help: str
    samples: tuple[Sample, ...]


@dataclass
class PartitionMetrics:
    records: int = 0
    bytes: int = 0
    objects: int = 0
    lag: int | None = None  # None: not known yet (no cycle read the partition's end)
    last_record_ms: int | None = None  # time of the newest committed record, when the objects recorded it


@dataclass(frozen=True)
class CycleOutcome:
    committed: bool  # the cycle committed records (or objects)
    lag: int  # records waiting after it (all partitions), not yet read


@dataclass(frozen=True)
class HealthPolicy:
    """Unhealthy after ``cycles`` cycles in a row that committed nothing while records waited; a cycle that failed
    counts as committing nothing, with the lag last known."""

    cycles: int = 5

    def healthy(self, history: Iterable[CycleOutcome]) -> bool:
        recent = list(history)[-self.cycles :]
        if len(recent) < self.cycles:
            return True
        return not all(not c.committed and c.lag > 0 for c in recent)


@dataclass
class PipelineMetrics:
    """The numbers of one backup or restore (``side``) named ``name``, updated by its driver after each cycle."""

    side: str
    name: str
    policy: HealthPolicy = field(default_factory=HealthPolicy)
    partitions: dict[tuple[str, int], PartitionMetrics] = field(default_factory=dict)
    last_commit: float | None = None  # unix seconds
    bucket_counts: list[int] = field(default_factory=lambda: [0] * len(CYCLE_BUCKETS))
    cycles: int = 0
    cycle_seconds: float = 0.0
    errors: Counter[tuple[str, int]] = field(default_factory=Counter)
    history: deque[CycleOutcome] = field(default_factory=lambda: deque(maxlen=1000))
    waiting: int = 0  # records waiting after the last cycle (a failed cycle keeps the last known)
    # the driver updates, the endpoint's thread reads: a scrape sees a cycle's numbers all or none of them
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def partition(self, topic: str, partition: int) -> PartitionMetrics:
        return self.partitions.setdefault((topic, partition), PartitionMetrics())

    def committed(
        self, topic: str, partition: int, records: int, nbytes: int, objects: int, last_record_ms: int | None
    ) -> None:
        """What a cycle committed in one partition."""
        with self.lock:
            totals = self.partition(topic, partition)
            totals.records += records
            totals.bytes += nbytes
            totals.objects += objects
            if last_record_ms is not None:
                totals.last_record_ms = max(totals.last_record_ms or 0, last_record_ms)

    def lags(self, records: dict[tuple[str, int], int]) -> None:
        """Each partition's records waiting (its end minus its committed offset), as just read."""
        with self.lock:
            for (topic, partition), lag in records.items():
                self.partition(topic, partition).lag = max(0, lag)

    def cycle(
        self, seconds: float, committed: bool, now: float, waiting: int, lags: dict[tuple[str, int], int]
    ) -> None:
        """A cycle ended: its duration, whether it committed anything, the partitions' lags after it and the records
        still waiting to be read (what makes a cycle without a commit a stall, not an idle one)."""
        with self.lock:
            self._cycle(seconds, committed, now, waiting)
            for (topic, partition), lag in lags.items():
                self.partition(topic, partition).lag = max(0, lag)

    def _cycle(self, seconds: float, committed: bool, now: float, waiting: int) -> None:
        self.waiting = waiting
        self.cycles += 1
        self.cycle_seconds += seconds
        self.bucket_counts[next(i for i, bound in enumerate(CYCLE_BUCKETS) if seconds <= bound)] += 1
        if committed:
            self.last_commit = now
        self.history.append(CycleOutcome(committed, waiting))

    def failed(self, kind: str, exit_code: int) -> None:
        """A cycle (or a partition's task) failed with an error of class ``kind``: counted, and a cycle without a
        commit for the health policy."""
        with self.lock:
            self.errors[(kind, exit_code)] += 1

    def cycle_failed(self, kind: str, exit_code: int) -> None:
        self.failed(kind, exit_code)
        with self.lock:
            self.history.append(CycleOutcome(False, self.waiting))

    @property
    def healthy(self) -> bool:
        return self.policy.healthy(self.history)

    def families(self, now: float) -> list[Family]:
        """The metric families as of ``now`` (unix seconds): lag in seconds is counted from the newest committed
        record's time, and is 0 where nothing waits."""
        with self.lock:
            return self._families(now)

    def _families(self, now: float) -> list[Family]:
        base = (("name", self.name),)
        prefix = f"{PREFIX}_{self.side}_"
        per: dict[str, list[Sample]] = {suffix: [] for suffix, *_ in FAMILIES}
        for (topic, partition), p in sorted(self.partitions.items()):
            labels = (*base, ("topic", topic), ("partition", str(partition)))
            per["records_committed"].append(Sample(f"{prefix}records_committed_total", labels, p.records))
            per["bytes_committed"].append(Sample(f"{prefix}bytes_committed_total", labels, p.bytes))
            per["objects_committed"].append(Sample(f"{prefix}objects_committed_total", labels, p.objects))
            if p.lag is not None:
                per["lag_records"].append(Sample(f"{prefix}lag_records", labels, p.lag))
                seconds = lag_seconds(p.lag, p.last_record_ms, now)
                if seconds is not None:
                    per["lag_seconds"].append(Sample(f"{prefix}lag_seconds", labels, seconds))
        if self.last_commit is not None:
            per["last_commit_timestamp_seconds"].append(
                Sample(f"{prefix}last_commit_timestamp_seconds", base, self.last_commit)
            )
        running = 0
        for bound, count in zip(CYCLE_BUCKETS, self.bucket_counts, strict=True):
            running += count
            le = "+Inf" if math.isinf(bound) else repr(bound)
            per["cycle_duration_seconds"].append(
                Sample(f"{prefix}cycle_duration_seconds_bucket", (*base, ("le", le)), running)
            )
        per["cycle_duration_seconds"] += [
            Sample(f"{prefix}cycle_duration_seconds_sum", base, self.cycle_seconds),
            Sample(f"{prefix}cycle_duration_seconds_count", base, self.cycles),
        ]
        for (kind, code), count in sorted(self.errors.items()):
            labels = (*base, ("kind", kind), ("exit_code", str(code)))
            per["errors"].append(Sample(f"{prefix}errors_total", labels, count))
        per["healthy"].append(Sample(f"{prefix}healthy", base, 1.0 if self.healthy else 0.0))
        return [Family(prefix + suffix, kind, text, tuple(per[suffix])) for suffix, kind, text, _ in FAMILIES]


def lag_seconds(lag: int, last_record_ms: int | None, now: float) -> float | None:
    """How far behind a partition is in time: 0 when nothing waits, else ``now`` minus its newest committed record's
    time (None: that time is not known, e.g. nothing committed yet)."""
    if lag <= 0:
        return 0.0
    if last_record_ms is None:
        return None
    return max(0.0, now - last_record_ms / 1000)


def gauge_families(side: str, name: str, rows: Iterable[dict[str, object]], now: float) -> list[Family]:
    """``kafka-s3 status --prometheus``: the gauges status can tell from ``rows`` (:func:`backup_status`'s): lag
    in records and seconds per partition, and the time of the newest commit."""
    metrics = PipelineMetrics(side, name)
    newest: float | None = None
    for row in rows:
        topic, partition = str(row["topic"]), int(str(row["partition"]))
        last_record_ms = row.get("last_record_ms")
        totals = metrics.partition(topic, partition)
        totals.last_record_ms = int(str(last_record_ms)) if last_record_ms is not None else None
        if row.get("lag") is not None:
            totals.lag = int(str(row["lag"]))
        age = row.get("last_commit_age_s")
        if age is not None:
            at = now - float(str(age))
            newest = at if newest is None else max(newest, at)
    metrics.last_commit = newest
    wanted = {f"{PREFIX}_{side}_{suffix}" for suffix in ("lag_records", "lag_seconds", "last_commit_timestamp_seconds")}
    return [family for family in metrics.families(now) if family.name in wanted]
