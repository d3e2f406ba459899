"""Restores running at the same time never duplicate a record (issue 26, finding 2).

A restore decides where each partition starts from the progress committed when it plans; a task that starts later
(Spark scheduling it late, or running it again) must not act on that stale decision. And a second restore of one
target — the same configuration or another one — is refused while the first is live, naming it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from kafka_s3.core.errors import PlanError
from tests.support.restore import read_topic, records

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 50
EXACT = {"store.envelope": "true", "flush.size": 20}


class RepeatingEngine:
    """The shared engine, running every job twice: what Spark does when it runs a task again (an executor lost
    after the task finished, a speculative copy)."""

    def __init__(self, engine):
        self.engine = engine

    def run_tasks(self, description: str, task, count: int) -> list[str]:
        self.engine.run_tasks(description, task, count)
        return self.engine.run_tasks(description, task, count)

    def __getattr__(self, name: str):
        return getattr(self.engine, name)


class GatedEngine:
    """The shared engine, holding each job until ``gate`` is set (``entered`` says a job is waiting): a restore
    that planned, decided where to start, and whose tasks start late."""

    def __init__(self, engine):
        self.engine = engine
        self.entered = threading.Event()
        self.gate = threading.Event()

    def run_tasks(self, description: str, task, count: int) -> list[str]:
        self.entered.set()
        assert self.gate.wait(120), "the gate was never opened"
        return self.engine.run_tasks(description, task, count)

    def __getattr__(self, name: str):
        return getattr(self.engine, name)


@pytest.fixture
def backed_up(backup, fresh_bucket, fresh_topic, produce):
    topic = fresh_topic(PARTITIONS)
    produce(topic, records(PARTITIONS, PER_PARTITION))
    assert backup(fresh_bucket, topic, EXACT).records == PARTITIONS * PER_PARTITION
    return topic


def keys_in(bootstrap: str, topic: str) -> dict[int, list[bytes]]:
    return {p: [r["key"] for r in rows] for p, rows in read_topic(bootstrap, topic).items()}


def expected_keys() -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for r in records(PARTITIONS, PER_PARTITION):
        out[r["partition"]].append(r["key"])
    return out


def in_thread(run: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(run())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("exactly_once", ["requested", "disabled"])
def test_a_restore_job_run_twice_produces_each_record_once(
    backed_up, fresh_bucket, fresh_topic, make_config, engine, kafka_bootstrap, exactly_once
):
    from kafka_s3.pipelines.restore.driver import Restore

    target = fresh_topic(PARTITIONS)
    _, config = make_config(
        fresh_bucket,
        backed_up,
        source=True,
        store__envelope="true",
        topic__rename=f"{backed_up}:{target}",
        exactly__once__support=exactly_once,
    )
    Restore(config, RepeatingEngine(engine)).run()
    assert keys_in(kafka_bootstrap, target) == expected_keys()


@pytest.mark.parametrize("same_configuration", [True, False], ids=["same configuration", "another configuration"])
def test_a_second_restore_into_a_target_being_restored_is_refused_naming_the_first(
    backed_up, fresh_bucket, fresh_topic, make_config, engine, kafka_bootstrap, same_configuration
):
    from kafka_s3.pipelines.restore.driver import Restore

    target = fresh_topic(PARTITIONS)

    def config(name: str):
        return make_config(
            fresh_bucket,
            backed_up,
            source=True,
            store__envelope="true",
            topic__rename=f"{backed_up}:{target}",
            name=name,
        )[1]

    gated = GatedEngine(engine)
    first = Restore(config("first"), gated)
    thread, outcome = in_thread(first.run)
    try:
        assert gated.entered.wait(120), outcome
        second = Restore(config("first" if same_configuration else "second"), engine)
        with pytest.raises(PlanError, match=rf"another restore .*{target}.*restore 'first'") as refused:
            second.run()
        assert "pid" in str(refused.value)
        assert keys_in(kafka_bootstrap, target) == {p: [] for p in range(PARTITIONS)}  # nothing produced by either
    finally:
        gated.gate.set()
        thread.join(timeout=300)
    assert outcome and not isinstance(outcome[0], BaseException), outcome
    assert keys_in(kafka_bootstrap, target) == expected_keys()


def test_restore_cli_refuses_a_second_run_while_the_first_holds_the_target_and_exits_6(
    backed_up, fresh_bucket, fresh_topic, make_config, kafka_bootstrap, s3_env, tmp_path
):
    import os
    import subprocess
    import sys
    import time

    from tests.support.faultproxy import FaultProxy
    from tests.support.restore import run_cli, write_properties

    target = fresh_topic(PARTITIONS)
    raw, _ = make_config(
        fresh_bucket, backed_up, source=True, store__envelope="true", topic__rename=f"{backed_up}:{target}"
    )
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        proxy.delay(1.0, 1000, method="GET", path=r"\.json$")  # the first run reads its objects slowly
        slow = write_properties(tmp_path / "slow.properties", {**raw, "store.url": proxy.url})
        log = tmp_path / "first.log"
        with open(log, "w") as out:
            first = subprocess.Popen(
                [sys.executable, "-m", "kafka_s3.cli", "restore", "--config", str(slow), "--no-progress"],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYSPARK_PYTHON": sys.executable},
            )
        try:
            deadline = time.monotonic() + 120
            while "holding" not in log.read_text() and first.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            assert "holding" in log.read_text(), log.read_text()[-3000:]
            second = run_cli(
                ["restore", "--config", str(write_properties(tmp_path / "second.properties", raw)), "--no-progress"]
            )
            assert second.returncode == 6, second.stderr[-3000:]
            assert "another restore is restoring into the same target topic(s) right now" in second.stderr
            assert (
                f"{target}: held by restore 'it-{fresh_bucket}'" in second.stderr
                and f"pid {first.pid}" in second.stderr
            )
            assert first.wait(timeout=300) == 0, log.read_text()[-3000:]
        finally:
            if first.poll() is None:
                first.kill()
    assert keys_in(kafka_bootstrap, target) == expected_keys()
