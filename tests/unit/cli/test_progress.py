"""Issue 16, item 9: the rate and ETA columns of the progress bars (the arithmetic; the end-to-end view on a terminal
is tests/integration/cli/test_progress_bars.py)."""

from __future__ import annotations

from rich.progress import Progress

from kafka_s3.cli.progress import EtaColumn, RateColumn


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rate_counts_from_when_records_move_and_eta_from_the_rate(monkeypatch):
    clock = Clock()
    monkeypatch.setattr("kafka_s3.cli.progress.time.monotonic", clock)
    progress = Progress(get_time=clock, disable=True)
    bar = progress.add_task("orders", total=10_000, since=clock.now)
    task = progress.tasks[0]
    assert str(RateColumn().render(task)) == "" and str(EtaColumn().render(task)) == "ETA -:--:--"

    clock.now = 160.0  # a minute of Spark start-up: nothing moved, the rate's clock starts later
    progress.update(bar, since=clock.now)
    clock.now = 170.0
    progress.update(bar, completed=2_500)  # 2,500 records in 10 s
    assert str(RateColumn().render(task)) == "250 rec/s"
    assert str(EtaColumn().render(task)) == "ETA 0:00:30"  # 7,500 left at 250/s

    clock.now = 200.0
    progress.update(bar, completed=10_000)
    assert str(EtaColumn().render(task)) == "done"
    assert str(RateColumn().render(task)) == "250 rec/s"  # 10,000 in 40 s; frozen once finished
    clock.now = 500.0
    assert str(RateColumn().render(task)) == "250 rec/s"


def test_unbounded_bars_and_the_stage_bar_show_no_eta():
    progress = Progress(disable=True)
    progress.add_task("follow", total=None, since=0.0)
    progress.add_task("spark tasks", total=None, stage=True)
    for task in progress.tasks:
        assert str(EtaColumn().render(task)) == "" and str(RateColumn().render(task)) == ""
