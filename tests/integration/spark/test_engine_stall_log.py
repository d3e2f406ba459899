"""A Spark job whose tasks stop moving logs what the driver waits for (the "No silent loss II" issue, item 5: a
backup waited minutes for a task stuck on a frozen object store, and a restore ten minutes for one stuck on a
transaction, with nothing on the driver's log).

The period is shortened for the test; the job is real (the shared session), its one task sleeps.
"""

from __future__ import annotations

import logging
import time

import pytest

from kafka_s3.core import stall

pytestmark = pytest.mark.integration


def test_a_job_without_task_progress_logs_its_description_and_its_tasks(engine, caplog, monkeypatch):
    monkeypatch.setattr(stall, "STALL_LOG_S", 1.0)

    def task(slot: int):
        time.sleep(5)
        yield "done"

    with caplog.at_level(logging.WARNING, logger="kafka_s3.spark.engine"):
        assert engine.run_tasks("kafka-s3 backup cycle 7 (1 partitions)", task, 1) == ["done"]
    seen = [r.getMessage() for r in caplog.records if "still waiting for" in r.getMessage()]
    assert seen, caplog.text
    assert all("Spark job 'kafka-s3 backup cycle 7 (1 partitions)'" in m for m in seen), seen
    assert any("0 of 1 tasks done" in m for m in seen), seen
