"""Long waits say what they wait for (the "No silent loss II" issue, item 5: a restore stalled ten silent minutes on a
transaction call, a backup waited minutes on a frozen store saying almost nothing).

A wait still running after ``every`` seconds logs a warning naming it (and its progress, when it has some), again
every ``every`` seconds, and never once it has returned; progress restarts the count.
"""

from __future__ import annotations

import logging
import threading
import time

from kafka_s3.core.stall import logged_wait

LOGGER = "kafka_s3.test.stall"


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


def test_a_wait_longer_than_the_period_logs_what_it_waits_for(caplog):
    with (
        caplog.at_level(logging.WARNING, logger=LOGGER),
        logged_wait("the object store at http://s3:1 (put_object b/k)", logging.getLogger(LOGGER), every=0.2),
    ):
        time.sleep(1.0)
    seen = warnings(caplog)
    assert seen, caplog.text
    assert all("still waiting for the object store at http://s3:1 (put_object b/k)" in m for m in seen), seen


def test_a_short_wait_logs_nothing_and_nothing_after_it_returns(caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        with logged_wait("Kafka", logging.getLogger(LOGGER), every=0.3):
            time.sleep(0.05)
        time.sleep(0.6)
    assert warnings(caplog) == []


def test_progress_restarts_the_count_and_is_shown(caplog):
    done = [0]
    stop = threading.Event()

    def advance() -> None:  # progress every 0.02 s for 1.2 s, then none
        for _ in range(60):
            time.sleep(0.02)
            done[0] += 1
        stop.set()

    with (
        caplog.at_level(logging.WARNING, logger=LOGGER),
        logged_wait(
            "Spark job 'cycle 1'", logging.getLogger(LOGGER), every=1.0, progress=lambda: f"{done[0]} of 99 tasks done"
        ),
    ):
        threading.Thread(target=advance, daemon=True).start()
        stop.wait(5)
        first = len(warnings(caplog))
        time.sleep(2.0)
    assert first == 0  # it moved the whole time
    seen = warnings(caplog)
    assert seen and all("60 of 99 tasks done" in m and "no progress for" in m for m in seen), seen
