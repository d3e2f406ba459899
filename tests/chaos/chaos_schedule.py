"""Randomized fault schedules: one seed → one schedule (the workload, the configuration and a list of timed steps).

Pure: no service is touched here, so a seed always gives the same schedule (``chaos_harness`` runs it). Times are
seconds after the moment both followers (``backup --follow``, ``restore --follow``) are running.

What a schedule holds, and how likely each part is (per schedule):

- workload: 2–3 source topics of 2–4 partitions, 1,500–3,000 records (a quarter before the followers start), 20–45 %
  of them in transactions of which 20–35 % are aborted; keys (some null), repeated header keys, explicit timestamps
  out of order, a few tombstones;
- configuration: ``format.class`` avro, parquet or json with ``store.envelope=true``, ``flush.size`` 30–80 (many
  chunks), ``topic.rename`` to ``<topic>-restored`` (the targets created by the restore, or beforehand: 1 in 2);
- ``kill9`` (always 1–3): kill -9 of a process group (a primary follower 4 in 5, else any running kafka-s3 process),
  the primary restarted 0–8 s later;
- ``sigterm`` (0–2, 7 in 10 schedules): SIGTERM to the process group (as systemd stops a unit) or to the driver alone
  (as ``kill PID``), restarted 0–8 s later;
- ``latency`` (always 1–3 windows of 8–25 s): 0.3–3 s on 20–70 % of the PUT, GET, LIST or all requests;
- ``errors`` (0–2 windows of 5–15 s, 6 in 10 schedules): 500 or 503 on 5–25 % of the PUT, GET or LIST requests;
- ``stall`` (6 in 10): the PUT of one chunk's object held 20–45 s (the n-th object of a partition, chosen to be
  written mid-schedule: offsets skip transaction markers, so its name cannot be known in advance);
- ``backup2`` / ``restore2`` (6 in 10 each): a second backup / restore of the same configuration, ``--once`` or
  ``--follow`` (then stopped by SIGTERM 10–40 s later, or at the end); in half the schedules with a stall, the
  second restore is instead a one-shot run 2–10 s after the stall began (``after_stall``; at ``t`` if no stall
  happened by then), ``alone``: the restore follower stopped first and started again after it;
- ``broker-restart`` (4 in 10, only on a broker the harness started): graceful stop, 0–6 s down, start;
- ``recreate`` (4 in 10): a dedicated topic (own configuration and bucket) backed up once, deleted, re-created with
  other records (fewer, as many or more), and backed up again: that backup must refuse it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

FORMATS = ("avro", "parquet", "json")
REQUEST_KINDS = ("PUT", "GET", "LIST", "ANY")
PRIMARIES = ("backup", "restore")


@dataclass(frozen=True)
class Step:
    at: float  # seconds after the followers run
    kind: str  # kill9, sigterm, latency, errors, stall, backup2, restore2, broker-restart, recreate-backup, recreate
    params: dict = field(default_factory=dict, hash=False, compare=True)

    def describe(self) -> str:
        shown = " ".join(f"{k}={_fmt(v)}" for k, v in sorted(self.params.items()))
        return f"t={self.at:6.1f}s {self.kind:<15} {shown}".rstrip()


@dataclass(frozen=True)
class Recreate:
    """The dedicated topic of the delete-and-re-create step."""

    partitions: int
    old_records: int  # per partition, produced before the followers start
    new_records: int  # per partition, produced right after the re-creation


@dataclass
class Schedule:
    seed: int
    topics: dict[str, int]  # suffix -> partitions
    records: int  # records produced into the source topics (committed or aborted, all topics)
    prefill: float  # share produced before the followers start
    transactional: float  # share of records produced in transactions
    abort: float  # share of transactions aborted
    format: str
    flush_size: int
    precreate_targets: bool
    cycle_interval_ms: int
    poll_interval_ms: int
    transaction_records: int
    duration: float  # seconds of faults and production after the followers run
    recreate: Recreate | None
    steps: list[Step]
    broker_controlled: bool

    def describe(self) -> str:
        topics = ", ".join(f"{name} ({n} partitions)" for name, n in self.topics.items())
        lines = [
            f"schedule seed {self.seed}: {self.duration:.0f}s of faults, {self.records} records into {topics} "
            f"({self.prefill:.0%} before the followers start, {self.transactional:.0%} transactional, "
            f"{self.abort:.0%} of transactions aborted)",
            f"  format.class={self.format} store.envelope=true flush.size={self.flush_size} "
            f"cycle.interval.ms={self.cycle_interval_ms} s3.poll.interval.ms={self.poll_interval_ms} "
            f"restore.transaction.records={self.transaction_records} "
            f"targets {'created beforehand' if self.precreate_targets else 'created by the restore'}",
        ]
        if self.recreate:
            r = self.recreate
            lines.append(
                f"  re-created topic: {r.partitions} partitions, {r.old_records} records per partition before, "
                f"{r.new_records} after"
            )
        if not self.broker_controlled:
            lines.append("  broker restart left out: Kafka is external (KAFKA_BOOTSTRAP_SERVERS)")
        lines += ["  " + step.describe() for step in self.steps]
        return "\n".join(lines)


def _fmt(value: object) -> str:
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def build_schedule(seed: int, broker_controlled: bool = True) -> Schedule:
    """The schedule of ``seed`` (``broker_controlled=False``: Kafka is external, no broker restart)."""
    rng = random.Random(seed)
    topics = {chr(ord("a") + i): rng.randint(2, 4) for i in range(rng.randint(2, 3))}
    records = rng.randrange(1500, 3001, 100)
    duration = round(rng.uniform(60, 90), 1)
    flush_size = rng.randint(30, 80)
    schedule = Schedule(
        seed=seed,
        topics=topics,
        records=records,
        prefill=0.25,
        transactional=round(rng.uniform(0.2, 0.45), 2),
        abort=round(rng.uniform(0.2, 0.35), 2),
        format=rng.choice(FORMATS),
        flush_size=flush_size,
        precreate_targets=rng.random() < 0.5,
        cycle_interval_ms=rng.randrange(1000, 3001, 500),
        poll_interval_ms=rng.randrange(1000, 3001, 500),
        transaction_records=rng.randint(20, 200),
        duration=duration,
        recreate=None,
        steps=[],
        broker_controlled=broker_controlled,
    )
    steps: list[Step] = []

    def at(low: float = 3.0, high: float | None = None) -> float:
        return round(rng.uniform(low, duration - 5 if high is None else high), 1)

    for _ in range(rng.choice((1, 1, 2, 2, 3))):
        steps.append(Step(at(), "kill9", _target(rng) | {"restart_after": round(rng.uniform(0, 8), 1)}))
    if rng.random() < 0.7:
        for _ in range(rng.choice((1, 1, 2))):
            params = _target(rng) | {"group": rng.random() < 0.5, "restart_after": round(rng.uniform(0, 8), 1)}
            steps.append(Step(at(), "sigterm", params))
    for _ in range(rng.randint(1, 3)):
        steps.append(
            Step(
                at(0.0),
                "latency",
                {
                    "requests": rng.choice(REQUEST_KINDS),
                    "probability": round(rng.uniform(0.2, 0.7), 2),
                    "seconds": (round(rng.uniform(0.3, 1.0), 1), round(rng.uniform(1.0, 3.0), 1)),
                    "lasts": round(rng.uniform(8, 25), 1),
                },
            )
        )
    if rng.random() < 0.6:
        for _ in range(rng.randint(1, 2)):
            steps.append(
                Step(
                    at(),
                    "errors",
                    {
                        "requests": rng.choice(REQUEST_KINDS[:3]),
                        "status": rng.choice((500, 503)),
                        "probability": round(rng.uniform(0.05, 0.25), 2),
                        "lasts": round(rng.uniform(5, 15), 1),
                    },
                )
            )
    if rng.random() < 0.6:
        topic = rng.choice(sorted(topics))
        partition = rng.randrange(topics[topic])
        per_partition = records / sum(topics.values())
        # a chunk written in the middle of the schedule: after the prefill, before the producers stop
        low = max(1, int(per_partition * 0.35 / flush_size))
        high = max(low, int(per_partition * 0.75 / flush_size))
        chunk = rng.randint(low, high)
        steps.append(
            Step(
                0.0,
                "stall",
                {"topic": topic, "partition": partition, "chunk": chunk, "seconds": round(rng.uniform(20, 45), 1)},
            )
        )
    for role in ("backup2", "restore2"):
        if rng.random() < 0.6:
            mode = rng.choice(("once", "follow"))
            params: dict = {"mode": mode}
            if mode == "follow":
                params["stop_after"] = round(rng.uniform(10, 40), 1) if rng.random() < 0.7 else None
            steps.append(Step(at(0.0), role, params))
    if broker_controlled and rng.random() < 0.4:
        steps.append(Step(at(10.0), "broker-restart", {"down": round(rng.uniform(0, 6), 1)}))
    if rng.random() < 0.4:
        old = rng.randint(2, 6) * flush_size + rng.randint(0, flush_size - 1)
        new = rng.choice((old - rng.randint(1, flush_size), old, old + rng.randint(1, 3 * flush_size)))
        schedule.recreate = Recreate(partitions=rng.randint(1, 2), old_records=old, new_records=max(1, new))
        first = at(0.0, duration * 0.3)
        steps.append(Step(first, "recreate-backup", {"incarnation": "old"}))
        second = at(first + 5, max(first + 6, duration * 0.6))
        steps.append(Step(second, "recreate", {}))
        steps.append(Step(at(second + 3, max(second + 4, duration - 5)), "recreate-backup", {"incarnation": "new"}))
    # drawn apart, so that the schedules of the seeds above keep their steps
    extra = random.Random(seed * 1_000_003 + 11)
    if any(s.kind == "stall" for s in steps) and extra.random() < 0.5:
        steps = [s for s in steps if s.kind != "restore2"]
        params = {"mode": "once", "alone": True, "after_stall": round(extra.uniform(2, 10), 1)}
        steps.append(Step(round(duration - 15, 1), "restore2", params))
    schedule.steps = sorted(steps, key=lambda s: (s.at, s.kind))
    return schedule


def _target(rng: random.Random) -> dict:
    """Which process a signal goes to: a primary follower (4 in 5), else any kafka-s3 process running then (``pick``
    chooses among them in a stable order)."""
    if rng.random() < 0.8:
        return {"target": rng.choice(PRIMARIES)}
    return {"target": "any", "pick": round(rng.random(), 3)}
