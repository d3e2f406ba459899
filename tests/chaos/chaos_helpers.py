"""Crash trials: kill -9 a kafka-s3 process at a random moment, run it again, compare with a clean run.

``KAFKA_S3_CHAOS_TRIALS`` sets the number of trials (5 in ``make test``, 20 in ``make chaos``); ``KAFKA_S3_CHAOS_SEED``
makes the kill moments reproducible (the seed in use is printed with every trial).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Run:
    returncode: int | None
    seconds: float
    killed: bool
    output: str
    work_started: float | None = None  # when ``probe`` first saw work land (objects / records), seconds from start

    def kill_plan(self, rng: random.Random, trial: int) -> dict:
        """``cli`` keyword arguments: half the trials die anywhere in the run (start-up included), the other half
        a random time after work started landing (measured from that moment, so start-up jitter cannot hide it)."""
        if trial % 2 and self.work_started is not None:
            return {"kill_after_work": rng.uniform(0.0, max(0.5, self.seconds - self.work_started))}
        return {"kill_after": rng.uniform(1.0, self.seconds * 1.1)}


def cli(
    args: list[str],
    env: dict[str, str],
    log: Path,
    kill_after: float | None = None,
    kill_group: bool = True,
    timeout: float = 600,
    probe=None,
    kill_after_work: float | None = None,
) -> Run:
    """Run ``kafka-s3 ARGS`` in its own process group; SIGKILL it (or its whole group) after ``kill_after`` s, or
    ``kill_after_work`` s after ``probe()`` first turned true.

    ``probe()`` (optional) is polled while the process runs; the first time it is true is reported as
    ``work_started`` (used to aim kills at the moments that matter).
    """
    started = time.monotonic()
    work_started = None
    with open(log, "ab") as out:
        out.write(f"\n=== kafka-s3 {' '.join(args)} (kill after {kill_after}) ===\n".encode())
        out.flush()
        proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_s3.cli", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        deadline = started + (kill_after if kill_after is not None else timeout)
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise subprocess.TimeoutExpired(args, kill_after or timeout)
                try:
                    proc.wait(timeout=min(remaining, 0.2) if probe else remaining)
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() >= deadline:
                        raise
                    if probe and work_started is None and probe():
                        work_started = time.monotonic() - started
                        if kill_after_work is not None:
                            deadline = time.monotonic() + kill_after_work
                            kill_after = work_started + kill_after_work
            killed = False
        except subprocess.TimeoutExpired:
            if kill_after is None:
                os.killpg(proc.pid, signal.SIGKILL)
                raise
            if kill_group:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            killed = True
        if not kill_group:
            _reap_group(proc.pid)
    return Run(
        proc.returncode, time.monotonic() - started, killed, log.read_text(errors="replace")[-4000:], work_started
    )


def _reap_group(pgid: int, grace: float = 20.0) -> None:
    """After killing only the driver, give the orphaned JVM/workers time to notice and exit, then kill leftovers."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


def bucket_contents(s3_client, bucket: str) -> dict[str, bytes]:
    out = {}
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            out[item["Key"]] = s3_client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
    return out
