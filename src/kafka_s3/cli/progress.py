"""Progress bars and summaries for the CLI (rich), fed by the driver's phases and cycle reports, the tasks' live
counts and Spark's status tracker.

What the display promises: the step the run is in is named as it starts (planning, starting Spark, uploading,
committing), with its own clock; a time left is shown only once the rate has been watched long enough to mean
something (:class:`Estimate`); every bar ends complete when the run succeeds, and marked ``failed`` or ``stopped``
where it was when it did not; log lines print above the bars, never through them.
"""

from __future__ import annotations

import logging
import math
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections import defaultdict, deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console, RenderableType
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

from kafka_s3.core.errors import Interrupted

if TYPE_CHECKING:
    from typing import Self

    from kafka_s3.api import Backup, BackupSummary, CycleReport, PartitionResult, Restore

Key = tuple[str, int]


class Step(Protocol):
    """What the display reads of a driver's phase (``kafka_s3.pipelines.phases.Phase``): its text, and the number of
    tasks of the Spark job it runs (``None``: none)."""

    @property
    def tasks(self) -> int | None: ...


class Estimate:
    """The rate and time left of one bar, from the counts it is fed (``update``, twice a second).

    The rate is that of the last ``window`` seconds (since records began to move, while that is shorter: the time
    Spark took to start never counts). A time left is given only once it can mean something: records have moved for
    ``min_seconds`` and ``min_fraction`` of the total is done, or they have moved for ``enough_seconds`` (a run too
    big for the fraction). It then moves smoothly: each count pulls the time left counted down since the last one
    towards what the rate says, by a share growing with the time between them (``settle``: a time constant), and
    between two counts it counts down with the clock.
    """

    def __init__(
        self,
        now: float,
        window: float = 10.0,
        min_seconds: float = 5.0,
        min_fraction: float = 0.02,
        enough_seconds: float = 30.0,
        settle: float = 3.0,
    ):
        self.window = window
        self.settle = settle
        self.min_seconds = min_seconds
        self.min_fraction = min_fraction
        self.enough_seconds = enough_seconds
        self.total: float | None = None
        self.completed = 0.0
        self._zero_at = now  # the last moment the count stood at zero
        self._moving_since: float | None = None
        self._samples: deque[tuple[float, float]] = deque()
        self._finished_at: float | None = None
        self._left: tuple[float, float] | None = None  # (when, seconds left then): the smoothed time left

    def update(self, now: float, completed: float, total: float | None) -> None:
        self.total = total
        self.completed = completed
        if completed <= 0:
            self._zero_at = now
            self._moving_since = None
            self._samples.clear()
            self._left = None
            return
        if self._moving_since is None:
            self._moving_since = self._zero_at
            self._samples.append((self._zero_at, 0))
        self._samples.append((now, completed))
        while len(self._samples) > 2 and self._samples[1][0] <= now - self.window:
            self._samples.popleft()
        if total is not None and completed >= total:
            self.finish(now)
        self._left = self._smoothed(now)

    def _smoothed(self, now: float) -> tuple[float, float] | None:
        left = self._raw_left(now)
        if left is None:
            return None
        if self._left is None:
            return (now, left)
        when, before = self._left
        counted_down = max(0.0, before - (now - when))
        share = 1.0 - math.exp(-(now - when) / self.settle)
        return (now, counted_down + (left - counted_down) * share)

    def finish(self, now: float) -> None:
        """The bar is complete: from now on its rate is the whole run's average."""
        if self._finished_at is None:
            self._finished_at = now

    def moving_for(self, now: float) -> float:
        return 0.0 if self._moving_since is None else max(0.0, now - self._moving_since)

    def rate(self, now: float) -> float | None:
        """Records per second: over the last ``window`` seconds while running (shown once records have moved for a
        second), the whole run's average once finished; ``None`` before."""
        if self._moving_since is None or not self._samples:
            return None
        if self._finished_at is not None:
            return self.completed / max(self._finished_at - self._moving_since, 1e-3)
        if now - self._moving_since < 1.0:
            return None
        (first_at, first), (last_at, last) = self._samples[0], self._samples[-1]
        return (last - first) / max(last_at - first_at, 1e-3)

    def remaining(self, now: float) -> float | None:
        """Seconds left, or ``None`` while that would be a guess (see the class)."""
        if self._left is None or self._finished_at is not None:
            return None
        when, left = self._left
        return max(0.0, left - (now - when))

    def _raw_left(self, now: float) -> float | None:
        """Seconds left at the rate of the last window, at the moment of the last count."""
        if self.total is None or self._finished_at is not None or self.completed >= self.total:
            return None
        moving = self.moving_for(now)
        if moving < self.min_seconds:
            return None
        if self.completed < self.min_fraction * self.total and moving < self.enough_seconds:
            return None
        rate = self.rate(now)
        if not rate:
            return None
        return (self.total - self.completed) / rate


def clock_text(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class RateColumn(ProgressColumn):
    """``12,345 rec/s`` (blank until records have moved for a second)."""

    def render(self, task: Task) -> Text:
        estimate = task.fields.get("estimate")
        rate = estimate.rate(time.monotonic()) if isinstance(estimate, Estimate) else None
        if rate is None:
            return Text("")
        return Text(f"{rate:,.0f} rec/s", style="progress.data.speed")


class EtaColumn(ProgressColumn):
    """``ETA 0:01:23`` once meaningful, ``done`` when the bar is complete, ``failed``/``stopped`` where a run that
    did not succeed left it; blank otherwise."""

    def render(self, task: Task) -> Text:
        state = task.fields.get("state")
        if state:
            return Text(str(state), style="red")
        if task.total is not None and task.completed >= task.total:
            return Text("done", style="progress.remaining")
        estimate = task.fields.get("estimate")
        left = estimate.remaining(time.monotonic()) if isinstance(estimate, Estimate) else None
        return Text("" if left is None else f"ETA {clock_text(left)}", style="progress.remaining")


class PhasedProgress(Progress):
    """Rich's progress bars under one line naming the step the run is in and how long it has been in it."""

    def __init__(self, *columns: str | ProgressColumn, **options: object):
        self.phase_text = ""
        self.phase_style = "bold"
        self.phase_since: float | None = None  # the step's clock (None: the line shows no clock)
        super().__init__(*columns, **options)  # type: ignore[arg-type]

    def get_renderables(self) -> Iterable[RenderableType]:
        if self.phase_text:
            line = Text(self.phase_text, style=self.phase_style)
            if self.phase_since is not None:
                line.append(f"  {clock_text(time.monotonic() - self.phase_since)}", style="progress.elapsed")
            yield line
        yield from super().get_renderables()


class ConsoleLines:
    """A text stream printing each complete line above the live display (log handlers write here while the bars
    show: a line written straight to the terminal would land inside a bar)."""

    def __init__(self, console: Console):
        self.console = console
        self._partial = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            lines = (self._partial + text).split("\n")
            self._partial = lines.pop()
        for line in lines:
            self.console.print(line, markup=False, highlight=False, emoji=False, soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        """Lines print as they complete; a partial line waits for its end."""


class _LiveBars(ABC):
    """One bar per topic (records, MB) fed by the running tasks' live counts plus the counts of finished jobs, a bar
    of the running Spark job's tasks, and the step the run is in above them. ``job`` is a Backup or a Restore
    (``engine``, ``live_progress``, ``live``, ``on_phase``)."""

    unit = "MB"
    verb = "run"
    job: Backup | Restore

    def __init__(self, job: Backup | Restore, enabled: bool = True):
        self.job = job
        self.console = Console(stderr=True)
        self.enabled = enabled and self.console.is_terminal
        self.progress = PhasedProgress(
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
        self.estimates: dict[TaskID, Estimate] = {}
        self._live: dict[Key, tuple[int, int]] = {}  # the running job's counts last heard (kept once it is closed)
        self.finished: dict[Key, tuple[int, int]] = defaultdict(lambda: (0, 0))
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._stage_bar: TaskID | None = None
        self._job_running = False
        self._started = time.monotonic()
        self._handlers: list[tuple[logging.StreamHandler[Any], Any]] = []

    @abstractmethod
    def totals(self) -> dict[str, int | None]:
        """Records expected per topic (``None``: unknown), or ``{}`` while the job is not planned yet."""

    def __enter__(self) -> Self:
        if not self.enabled:
            return self
        self.job.live_progress = True
        self.job.on_phase = self.on_phase
        logs_to = sys.stderr  # before the display puts its own stream there
        self.progress.start()
        self._route_logging(logs_to)
        threading.Thread(target=self._poll, name="kafka-s3-progress", daemon=True).start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if not self.enabled:
            return
        self._stop.set()
        with self._lock:
            self._refresh()
            if exc_type is None:
                self._complete()
            else:
                stopped = issubclass(exc_type, (Interrupted, KeyboardInterrupt))
                self._fail("stopped" if stopped else "failed")
        self.progress.refresh()
        self.progress.stop()
        self._unroute_logging()
        self.job.on_phase = None
        if self.job.live is not None:
            self.job.live.close()
            self.job.live = None

    # ------------------------------------------------------------------------------------------------ events
    def on_phase(self, phase: Step) -> None:
        """The driver starts a step: name it (with its own clock); a step running a job gets a fresh tasks bar, and
        the step after a job means the job ended (its tasks bar completes)."""
        with self._lock:
            if self._job_running:
                self._complete_stage()
            self.progress.phase_text = str(phase)
            self.progress.phase_since = time.monotonic()
            if phase.tasks is not None:
                self._add_bars()
                if self._stage_bar is None:
                    self._stage_bar = self.progress.add_task("spark tasks", total=phase.tasks, detail="")
                else:
                    self.progress.reset(self._stage_bar, total=phase.tasks, completed=0)
                self._job_running = True

    def finish_round(self, counts: dict[Key, tuple[int, int]]) -> None:
        """Add a finished job's counts; the live counts of that job are dropped (they are in ``counts`` now)."""
        with self._lock:
            for key, (records, nbytes) in counts.items():
                before = self.finished[key]
                self.finished[key] = (before[0] + records, before[1] + nbytes)
            if self.job.live is not None:
                self.job.live.new_round()
            self._live = {}
            self._complete_stage()
            self._refresh()

    # ------------------------------------------------------------------------------------------------ bars
    def _add_bars(self) -> None:
        if self.bars:
            return
        now = time.monotonic()
        for topic, total in sorted(self.totals().items()):
            estimate = Estimate(now)
            self.bars[topic] = self.progress.add_task(topic, total=total, detail="", estimate=estimate)
            self.estimates[self.bars[topic]] = estimate

    def _task(self, bar: TaskID) -> Task:
        return next(task for task in self.progress.tasks if task.id == bar)

    def _refresh(self) -> None:
        if not self.bars:
            return
        if self.job.live is not None:  # closed when the run ends: a stopped bar stays where the job left it
            self._live = self.job.live.snapshot()
        live = self._live
        per_topic: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for source in (self.finished, live):
            for (topic, _), (records, nbytes) in source.items():
                per_topic[topic][0] += records
                per_topic[topic][1] += nbytes
        now = time.monotonic()
        for topic, bar in self.bars.items():
            records, nbytes = per_topic.get(topic, (0, 0))
            self.progress.update(bar, completed=records, detail=f"{nbytes / 1e6:.1f} {self.unit}")
            self.estimates[bar].update(now, records, self._task(bar).total)

    def _complete_stage(self) -> None:
        """The running job ended: its tasks bar completes (Spark's tracker forgets a stage once it ends)."""
        self._job_running = False
        if self._stage_bar is not None:
            self.progress.update(self._stage_bar, completed=self._task(self._stage_bar).total or 0)

    def _complete(self) -> None:
        """The run succeeded: what it did is each bar's total (a restore's total was an estimate)."""
        if self._job_running:
            self._complete_stage()
        now = time.monotonic()
        for bar in self.bars.values():
            self.progress.update(bar, total=self._task(bar).completed)
            self.estimates[bar].finish(now)
        self.progress.phase_text = f"{self.verb} done in {clock_text(now - self._started)}"
        self.progress.phase_since = None

    def _fail(self, state: str) -> None:
        """The run did not succeed: every bar stops where it is, saying so."""
        for task in self.progress.tasks:
            if task.total is None or task.completed < task.total:
                self.progress.update(task.id, state=state)
        where = f" while {self.progress.phase_text}" if self.progress.phase_text else ""
        self.progress.phase_text = f"{self.verb} {state}{where}"
        self.progress.phase_style = "bold red"
        self.progress.phase_since = None

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            try:
                with self._lock:
                    self._refresh()
                    if self._stage_bar is None or not self._job_running:
                        continue
                    total = self._task(self._stage_bar).total or 0
                    done, _ = self.job.engine.task_progress() or (None, None)
                    if done is not None:
                        self.progress.update(self._stage_bar, completed=min(done, total))
            except Exception:  # progress display must never break the job
                pass

    # ------------------------------------------------------------------------------------------------ logging
    def _route_logging(self, stream: object) -> None:
        """Log handlers writing to the terminal the bars are on print through the display instead, above it."""
        lines = ConsoleLines(self.console)
        for handler in logging.getLogger().handlers:
            if isinstance(handler, logging.StreamHandler) and handler.stream is stream:
                self._handlers.append((handler, handler.setStream(lines)))

    def _unroute_logging(self) -> None:
        for handler, stream in self._handlers:
            handler.setStream(stream)
        self._handlers = []


class BackupProgress(_LiveBars):
    """Records read per topic up to the offsets the ``--once`` run targets."""

    unit = "MB read"
    verb = "backup"
    job: Backup

    def __enter__(self) -> Self:
        previous = self.job.on_cycle

        def on_cycle(report: CycleReport, results: list[PartitionResult]) -> None:
            self._on_cycle(results)
            if previous:
                previous(report, results)

        if self.enabled:
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
    verb = "restore"
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
