"""Randomized fault schedules (Jepsen-style) against the real services (issue 26, item 8).

Each schedule comes from a seed (``chaos_schedule.build_schedule``; what a schedule holds and how likely each step is
is described there) and is run by ``chaos_harness.ScheduleRun``: producers into several source topics, ``backup
--follow`` and ``restore --follow`` side by side as CLI processes, second runs of the same configuration, a fault
proxy in front of S3, kill -9 and SIGTERM of process groups, a broker restart, a topic deleted and re-created; then the
invariants (the target equals the source's committed records, exit codes say what happened, refusals are loud).

``KAFKA_S3_CHAOS_SCHEDULES`` schedules run (2 by default, as in ``make test``; ``make chaos`` runs 50), with the
seeds ``KAFKA_S3_CHAOS_SEED``, +1, +2, … (the seed defaults to the time). A failing schedule's seed replays it:
``KAFKA_S3_CHAOS_SEED=<seed> KAFKA_S3_CHAOS_SCHEDULES=1 .venv/bin/python -m pytest tests/chaos/test_fault_schedules.py``
(the same steps at the same times; what the processes do between them is up to the machine).

The harness starts a broker of its own on a free port (noida-db or Apache Kafka, as the suite's Kafka), so that
restarting it never disturbs other tests; with an external Kafka (``KAFKA_BOOTSTRAP_SERVERS``) it uses that cluster
and leaves the broker restart out (the schedule's log says so). ``KAFKA_S3_CHAOS_KAFKA=noida|apache`` makes it start
a broker of that kind in any case (e.g. beside shared services named by ``KAFKA_BOOTSTRAP_SERVERS``, which the suite
then leaves alone). The S3 server is the suite's (or ``AWS_ENDPOINT_URL_S3``), with buckets of the schedule's own.
``KAFKA_S3_CHAOS_REPORT=FILE`` appends one JSON line per schedule (seed, violations, seconds) to FILE.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

from tests.chaos.chaos_harness import ScheduleRun
from tests.chaos.chaos_schedule import build_schedule

SCHEDULES = int(os.environ.get("KAFKA_S3_CHAOS_SCHEDULES", "2"))
BASE_SEED = int(os.environ.get("KAFKA_S3_CHAOS_SEED") or int(time.time()))
SEEDS = [BASE_SEED + i for i in range(SCHEDULES)]
HERE = "tests/chaos/test_fault_schedules.py"


@pytest.mark.chaos
def test_a_seed_always_gives_the_same_schedule_and_seeds_cover_every_step():
    assert build_schedule(12345).describe() == build_schedule(12345).describe()
    assert build_schedule(12345).describe() != build_schedule(12346).describe()
    kinds = {step.kind for seed in range(200) for step in build_schedule(seed).steps}
    assert kinds == {
        "kill9",
        "sigterm",
        "latency",
        "errors",
        "stall",
        "backup2",
        "restore2",
        "broker-restart",
        "recreate-backup",
        "recreate",
    }
    assert not any(step.kind == "broker-restart" for step in build_schedule(7, broker_controlled=False).steps)
    assert "broker restart left out" in build_schedule(7, broker_controlled=False).describe()


def _broker_kind(services) -> str:
    chosen = os.environ.get("KAFKA_S3_CHAOS_KAFKA")
    if chosen:  # a broker of the schedule's own, even beside an external cluster
        assert chosen in ("noida", "apache"), f"KAFKA_S3_CHAOS_KAFKA={chosen}: noida or apache"
        return chosen
    return services.kafka_kind or "external"


@pytest.mark.integration
@pytest.mark.chaos
@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{seed}" for seed in SEEDS])
def test_randomized_fault_schedules_keep_the_target_equal_to_the_source(seed, services, s3_client, remove_bucket):
    kind = _broker_kind(services)
    # not pytest's workdir: other pytest sessions on the machine prune old base directories while this one runs
    base = Path(os.environ.get("KAFKA_S3_CHAOS_DIR") or Path(tempfile.gettempdir()) / "kafka-s3-chaos")
    base.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f"seed{seed}-", dir=base))
    schedule = build_schedule(seed, broker_controlled=kind != "external")
    run = ScheduleRun(schedule, workdir, services, s3_client, kind)
    started = time.monotonic()
    violations: list[str] = []
    error: BaseException | None = None
    try:
        violations = run.run()
    except BaseException as exc:
        error = exc
        raise
    finally:
        seconds = time.monotonic() - started
        if violations or error:
            run.dump_bucket()
        run.close()
        for bucket in (run.bucket, run.recreate_bucket if run.recreate_topic else None):
            if bucket:
                try:
                    remove_bucket(bucket)
                except Exception as exc:  # a bucket never created, or already gone
                    print(f"bucket {bucket} not removed: {exc}")
        report = os.environ.get("KAFKA_S3_CHAOS_REPORT")
        if report:
            with open(report, "a") as out:
                line = {
                    "seed": seed,
                    "kafka": kind,
                    "seconds": round(seconds, 1),
                    "violations": violations,
                    "notes": run.notes,
                    "error": f"{type(error).__name__}: {error}" if error else None,
                    "workdir": str(workdir),
                    "steps": sorted({s.kind for s in schedule.steps}),
                }
                out.write(json.dumps(line) + "\n")
        print(f"schedule seed {seed} on {kind}: {len(violations)} violations in {seconds:.0f}s; log {workdir}")
        if not violations and error is None:
            shutil.rmtree(workdir, ignore_errors=True)  # kept when the schedule failed
    replay = f"replay: KAFKA_S3_CHAOS_SEED={seed} KAFKA_S3_CHAOS_SCHEDULES=1 .venv/bin/python -m pytest {HERE}"
    assert not violations, "\n".join([*violations, replay, f"schedule log: {workdir / 'schedule.log'}"])
