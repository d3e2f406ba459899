"""Progress bars and summaries for the CLI (rich), fed by the driver's cycle reports and Spark's status tracker."""

from __future__ import annotations

import threading
from collections import defaultdict

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table


class BackupProgress:
    """One bar per topic (records read up to the target offsets) plus the running Spark stage's task count."""

    def __init__(self, backup, enabled: bool = True):
        self.backup = backup
        self.console = Console(stderr=True)
        self.enabled = enabled and self.console.is_terminal
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self.console,
            disable=not self.enabled,
        )
        self.tasks: dict[str, int] = {}
        self.done: dict[str, int] = defaultdict(int)
        self.bytes: dict[str, int] = defaultdict(int)
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._stage_task = None

    def __enter__(self) -> "BackupProgress":
        previous = self.backup.on_cycle
        self.backup.on_cycle = lambda report, results: (self._on_cycle(results), previous and previous(report, results))
        self.progress.start()
        if self.enabled:
            self._stage_task = self.progress.add_task("spark tasks", total=None, detail="")
            self._poller = threading.Thread(target=self._poll_spark, daemon=True)
            self._poller.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.progress.stop()

    def _ensure_topic_bars(self) -> None:
        if self.tasks or not self.backup.states:
            return
        totals: dict[str, int] = defaultdict(int)
        targets = getattr(self.backup, "targets", {})
        for (topic, partition), state in self.backup.states.items():
            totals[topic] += max(0, targets.get((topic, partition), state.next_offset) - state.next_offset)
        for topic, total in sorted(totals.items()):
            self.tasks[topic] = self.progress.add_task(topic, total=total, detail="")

    def _on_cycle(self, results) -> None:
        self._ensure_topic_bars()
        for result in results:
            topic = result["topic"]
            self.done[topic] += max(0, result["read_until"] - result["start"])
            self.bytes[topic] += sum(f["bytes"] for c in result["chunks"] for f in c["files"])
            if topic in self.tasks:
                self.progress.update(
                    self.tasks[topic], completed=self.done[topic], detail=f"{self.bytes[topic] / 1e6:.1f} MB"
                )

    def _poll_spark(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self._ensure_topic_bars()
                tracker = self.backup.spark.sparkContext.statusTracker()
                done = total = 0
                for stage_id in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(stage_id)
                    if info:
                        done += info.numCompletedTasks
                        total += info.numTasks
                if self._stage_task is not None:
                    self.progress.update(self._stage_task, completed=done, total=total or None,
                                         detail=f"cycle {self.backup.cycle_number + (1 if total else 0)}")
            except Exception:  # progress display must never break the job
                pass

    def print_summary(self, summary) -> None:
        print_backup_summary(summary)


def print_backup_summary(summary) -> None:
    table = Table(title="backup summary")
    for column in ("topic", "partition", "committed offset", "target"):
        table.add_column(column, justify="right" if column != "topic" else "left")
    for (topic, partition), offset in sorted(summary.committed.items()):
        table.add_row(topic, str(partition), str(offset), str(summary.targets.get((topic, partition), "")))
    console = Console()
    console.print(table)
    console.print(
        f"{summary.records} records in {summary.objects} objects ({summary.bytes / 1e6:.1f} MB), "
        f"{len(summary.cycles)} cycle(s)"
    )


def print_restore_summary(summary) -> None:
    table = Table(title="restore summary")
    for column in ("source", "target", "objects", "records", "source offsets", "target offsets"):
        table.add_column(column)
    for r in summary.results:
        table.add_row(
            f"{r['source_topic']}[{r['source_partition']}]",
            f"{r['target_topic']}[{r['target_partition']}]",
            str(r["objects"]),
            str(r["records"]),
            f"{r['first_source_offset']}..{r['last_source_offset']}" if r["records"] else "-",
            f"{r['first_target_offset']}..{r['last_target_offset']}" if r["records"] else "-",
        )
    console = Console()
    console.print(table)
    for problem in summary.problems:
        console.print(f"[yellow]skipped[/yellow] {problem.key} at {problem.position}: {problem.message}")
    for gap in getattr(summary, "gaps", []):
        console.print(f"[yellow]missing[/yellow] {gap}")
    console.print(f"{summary.records} records restored in {summary.seconds:.1f}s")
