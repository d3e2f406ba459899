"""The progress display's arithmetic and rendering: when a time left is shown and how it moves (:class:`Estimate`, fed
synthetic counts on a synthetic clock), the rate and ETA columns, and log lines printed above the bars. The
end-to-end view on a terminal is tests/integration/cli/test_progress_bars.py."""

from __future__ import annotations

import io
import logging
import random

import pytest
from rich.console import Console
from rich.progress import Progress

from kafka_s3.cli.progress import ConsoleLines, Estimate, EtaColumn, RateColumn

# The run of issue 28: Spark took 14 s to start, then 1.5M records moved in 28 s
TOTAL = 1_500_000
SPARK_START_S = 14.0
UPLOAD_S = 28.0


def the_measured_backup(seed: int = 1) -> list[tuple[float, float | None, float]]:
    """(seconds since records began to move, time left shown, true time left) every half second, as the display
    polls: zero while Spark starts, then three tasks whose counts arrive in batches of 5,000 at uneven moments."""
    rng = random.Random(seed)
    estimate = Estimate(0.0)
    now = 0.0
    while now <= SPARK_START_S:
        estimate.update(now, 0, TOTAL)
        now += 0.5
    now = SPARK_START_S
    per_task = [0, 0, 0]
    per_second = TOTAL / UPLOAD_S / 3
    frames = []
    while now < SPARK_START_S + UPLOAD_S:
        now = round(now + 0.5, 3)
        for task in range(3):
            if rng.random() < 0.8:  # a datagram is not there at every poll
                per_task[task] = min(TOTAL // 3, int(per_second * (now - SPARK_START_S)) // 5000 * 5000)
        estimate.update(now, sum(per_task), TOTAL)
        frames.append((now - SPARK_START_S, estimate.remaining(now), SPARK_START_S + UPLOAD_S - now))
    return frames


@pytest.mark.issue(28, item=4)
def test_no_eta_while_spark_starts_nor_before_five_seconds_of_progress_then_a_first_one_near_the_truth():
    frames = the_measured_backup()
    assert all(left is None for moving, left, _ in frames if moving < 5.0)
    moving, first, truth = next((m, left, t) for m, left, t in frames if left is not None)
    assert moving <= 5.5
    assert first is not None and abs(first - truth) <= 0.25 * truth, (first, truth)  # the old display said 1:16:30


@pytest.mark.issue(28, item=4)
def test_eta_moves_smoothly_on_bursty_counts():
    for seed in range(10):
        shown = [(moving, left) for moving, left, _ in the_measured_backup(seed) if left is not None]
        assert len(shown) > 30
        for (_, before), (_, after) in zip(shown, shown[1:], strict=False):
            assert before is not None and after is not None
            assert -1.25 <= after - before <= 0.0, (seed, before, after)  # half a second later: never up, no leap
        settled = [(moving, left) for moving, left in shown if moving >= 10.0 and left is not None]
        assert all(abs(left - (UPLOAD_S - moving)) <= 2.0 for moving, left in settled), seed


@pytest.mark.issue(28, item=4)
def test_no_eta_before_two_percent_is_done_unless_records_have_moved_for_thirty_seconds():
    estimate = Estimate(0.0)
    estimate.update(0.5, 0, 10_000_000)
    for step in range(1, 121):  # 1,000 records/s: 0.3% after 30 s
        now = 0.5 + step * 0.5
        estimate.update(now, step * 500, 10_000_000)
        if now - 0.5 < 30.0:
            assert estimate.remaining(now) is None, now
    left = estimate.remaining(60.5)
    assert left is not None and abs(left - (10_000_000 - 60_000) / 1000) < 1.0


def test_the_rate_is_the_last_windows_and_a_finished_bars_is_the_whole_runs_average():
    estimate = Estimate(0.0)
    estimate.update(20.0, 0, 100_000)  # Spark started: nothing moved yet
    assert estimate.rate(20.0) is None
    for second in range(1, 11):  # 1,000/s for 10 s, then 5,000/s for 10 s
        estimate.update(20.0 + second, 1_000 * second, 100_000)
    for second in range(1, 11):
        estimate.update(30.0 + second, 10_000 + 5_000 * second, 100_000)
    rate = estimate.rate(40.0)
    assert rate is not None and 4_500 <= rate <= 5_000  # the last 10 s, not the whole run's 3,000
    for second in range(1, 11):
        estimate.update(40.0 + second, min(100_000, 60_000 + 5_000 * second), 100_000)
    assert estimate.rate(50.0) == pytest.approx(100_000 / 28)  # done at 48 s: 100,000 in the 28 s it moved
    assert estimate.rate(500.0) == pytest.approx(100_000 / 28) and estimate.remaining(500.0) is None


def test_eta_column_says_eta_only_when_meaningful_done_when_complete_and_where_a_failed_run_stopped(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("kafka_s3.cli.progress.time.monotonic", lambda: clock[0])
    progress = Progress(get_time=lambda: clock[0], disable=True)
    estimate = Estimate(0.0)
    bar = progress.add_task("orders", total=10_000, estimate=estimate)
    task = progress.tasks[0]
    assert str(EtaColumn().render(task)) == "" and str(RateColumn().render(task)) == ""
    for step in range(1, 21):  # 250 records/s
        clock[0] = step * 0.5
        progress.update(bar, completed=125 * step)
        estimate.update(clock[0], 125 * step, 10_000)
    assert str(RateColumn().render(task)) == "250 rec/s"
    assert str(EtaColumn().render(task)) == "ETA 0:00:30"  # 7,500 left at 250/s
    progress.update(bar, state="failed")
    assert str(EtaColumn().render(task)) == "failed"
    progress.update(bar, state=None, completed=10_000)
    assert str(EtaColumn().render(task)) == "done"
    stage = progress.add_task("spark tasks", total=3)
    assert str(EtaColumn().render(progress.tasks[1])) == "" and str(RateColumn().render(progress.tasks[1])) == ""
    progress.update(stage, completed=3)
    assert str(EtaColumn().render(progress.tasks[1])) == "done"


@pytest.mark.issue(28, item=4)
def test_log_lines_print_whole_above_the_display_each_on_its_own_line():
    out = io.StringIO()
    console = Console(file=out, width=40, force_terminal=False)
    lines = ConsoleLines(console)
    handler = logging.StreamHandler(lines)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("kafka_s3.test_progress")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("committed s3://bucket/%s records=500", "x" * 60)
        lines.write("half a ")
        assert out.getvalue().count("\n") == 1  # a partial line waits for its end
        lines.write("line\n")
    finally:
        logger.removeHandler(handler)
    printed = out.getvalue().splitlines()
    assert printed == [f"WARNING committed s3://bucket/{'x' * 60} records=500", "half a line"]  # not folded at 40
