"""Progress bars and summaries for the CLI (rich), fed by the driver's cycle reports and Spark's status tracker."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections import defaultdict
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

if TYPE_CHECKING:
    from typing import Self

    from kafka_s3.api import Backup, BackupSummary, CycleReport, PartitionResult, Restore

Key = tuple[str, int]


def _rate(task: Task, now: float | None = None) -> float | None:
    """Records per second since records began to move (the bar's ``since`` field: the last moment it stood at zero,
    so Spark's start-up does not count), averaged over the run: steady between the tasks' count updates."""
    since = task.fields.get("since")
    if since is None or task.completed <= 0:
        return None
    if task.finished_time is not None and task.start_time is not None:
        now = task.start_time + task.finished_time
    elif now is None:
        now = time.monotonic()
    return float(task.completed / max(now - float(since), 1e-3))


class RateColumn(ProgressColumn):
    """``12,345 rec/s`` (blank until records move)."""

    def render(self, task: Task) -> Text:
        rate = _rate(task)
        if rate is None or task.fields.get("stage"):
            return Text("")
        return Text(f"{rate:,.0f} rec/s", style="progress.data.speed")


class EtaColumn(ProgressColumn):
    """``ETA 0:01:23`` for a bar with a known total (bounded runs), ``done`` when it is reached, blank otherwise."""

    def render(self, task: Task) -> Text:
        if task.total is None or task.fields.get("stage"):
            return Text("")
        if task.completed >= task.total:
            return Text("done", style="progress.remaining")
        rate = _rate(task)
        if rate is None:
            return Text("ETA -:--:--", style="progress.remaining")
        seconds = int((task.total - task.completed) / rate)
        return Text(f"ETA {seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}", style="progress.remaining")


class _LiveBars(ABC):
    """One bar per topic (records, MB) fed by the running tasks' live counts plus the counts of finished jobs, and a
    bar of the running Spark stage's tasks. ``job`` is a Backup or a Restore (``engine``, ``live_progress``,
    ``live``)."""

    unit = "MB"
    job: Backup | Restore

    def __init__(self, job: Backup | Restore, enabled: bool = True):
        self.job = job
        self.console = Console(stderr=True)
        self.enabled = enabled and self.console.is_terminal
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            RateColumn(),
            EtaColumn(),
            TimeElapsedColumn(),
            console=self.console,
            disable=not self.enabled,
        )
        self.bars: dict[str, TaskID] = {}
        self.finished: dict[Key, tuple[int, int]] = defaultdict(lambda: (0, 0))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._stage_bar: TaskID | None = None

    @abstractmethod
    def totals(self) -> dict[str, int | None]:
        """Records expected per topic (``None``: unknown), or ``{}`` while the job is not planned yet."""

    def __enter__(self) -> Self:
        self.job.live_progress = self.enabled
        self.progress.start()
        if self.enabled:
            self._stage_bar = self.progress.add_task("spark tasks", total=None, detail="", stage=True)
            threading.Thread(target=self._poll, name="kafka-s3-progress", daemon=True).start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self._stop.set()
        with self._lock:
            self._refresh()
            if exc_type is None:  # the run finished: what it did is the total (a restore's total was an estimate)
                for task in self.progress.tasks:
                    if task.id in self.bars.values():
                        self.progress.update(task.id, total=task.completed)
        self.progress.stop()
        if self.job.live is not None:
            self.job.live.close()
            self.job.live = None

    def finish_round(self, counts: dict[Key, tuple[int, int]]) -> None:
        """Add a finished job's counts; the live counts of that job are dropped (they are in ``counts`` now)."""
        with self._lock:
            for key, (records, nbytes) in counts.items():
                before = self.finished[key]
                self.finished[key] = (before[0] + records, before[1] + nbytes)
            if self.job.live is not None:
                self.job.live.new_round()
            self._refresh()

    def _refresh(self) -> None:
        if not self.bars:
            for topic, total in sorted(self.totals().items()):
                self.bars[topic] = self.progress.add_task(topic, total=total, detail="", since=time.monotonic())
        live = self.job.live.snapshot() if self.job.live is not None else {}
        per_topic: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for source in (self.finished, live):
            for (topic, _), (records, nbytes) in source.items():
                per_topic[topic][0] += records
                per_topic[topic][1] += nbytes
        for topic, (records, nbytes) in per_topic.items():
            if topic in self.bars:
                bar = self.bars[topic]
                self.progress.update(bar, completed=records, detail=f"{nbytes / 1e6:.1f} {self.unit}")
                if not records:  # still at zero: the rate counts from the last moment the bar stood here
                    self.progress.update(bar, since=time.monotonic())

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            try:
                with self._lock:
                    self._refresh()
                if self._stage_bar is None:
                    continue
                done, total = self.job.engine.task_progress() or (0, 0)
                self.progress.update(self._stage_bar, completed=done, total=total or None)
            except Exception:  # progress display must never break the job
                pass


class BackupProgress(_LiveBars):
    """Records read per topic up to the offsets the ``--once`` run targets."""

    unit = "MB read"
    job: Backup

    def __enter__(self) -> Self:
        previous = self.job.on_cycle

        def on_cycle(report: CycleReport, results: list[PartitionResult]) -> None:
            self._on_cycle(results)
            if previous:
                previous(report, results)

        self.job.on_cycle = on_cycle
        return super().__enter__()

    def totals(self) -> dict[str, int | None]:
        totals: dict[str, int | None] = {}
        for (topic, partition), target in self.job.targets.items():
            state = self.job.states.get((topic, partition))
            if state is not None:
                totals[topic] = (totals.get(topic) or 0) + max(0, target - state.next_offset)
        return totals

    def _on_cycle(self, results: list[PartitionResult]) -> None:
        self.finish_round({(r.topic, r.partition): (max(0, r.read_until - r.start), r.read_bytes) for r in results})

    def print_summary(self, summary: BackupSummary) -> None:
        from kafka_s3.cli.render import print_backup_summary

        print_backup_summary(summary)


class RestoreProgress(_LiveBars):
    """Records produced per source topic, against the estimate from the objects' names and sizes."""

    unit = "MB produced"
    job: Restore

    def totals(self) -> dict[str, int | None]:
        from kafka_s3.api import estimate_records

        plan_set = self.job.current_plan
        if plan_set is None:
            return {}
        totals: dict[str, int | None] = {}
        for plan in plan_set.plans:
            estimate = estimate_records(list(plan.objects))
            known = totals.get(plan.source_topic, 0)
            totals[plan.source_topic] = None if estimate is None or known is None else known + estimate
        return totals
