"""Where a pipeline's per-partition tasks run: the contract the Spark layer fulfils.

The pipelines plan on the driver and do their per-partition work in tasks; something must run those tasks in
parallel, close to the data. That is Spark (:class:`kafka_s3.spark.engine.SparkEngine`), but the pipelines only
need the few things below, so they never import Spark and their drivers are testable on their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

Task = Callable[[int], Iterable[str]]
"""``task(i)`` does slot ``i``'s work and yields its results, each serialized to one string (see the ``to_json`` /
``from_json`` pairs of the pipelines' result types)."""


class Engine(Protocol):
    def start(self) -> None:
        """Be ready to run tasks (start Spark) now, rather than on the first ``run_tasks``."""
        ...

    @property
    def started(self) -> bool:
        """Whether :meth:`start` has nothing left to do (a driver tells its display "starting Spark" otherwise)."""
        ...

    def run_tasks(self, description: str, task: Task, count: int) -> list[str]:
        """Run ``task(0) … task(count - 1)`` in parallel and return every string they yield (in no set order)."""
        ...

    @property
    def driver_host(self) -> str:
        """The address tasks reach the driver at (live progress counts are sent there)."""
        ...

    def task_progress(self) -> tuple[int, int] | None:
        """(finished, total) tasks of the running job, or ``None`` when nothing runs (progress bars)."""
        ...

    cancelled: bool
    """Set once :meth:`cancel` was called: no job starts after it."""

    @property
    def job_running(self) -> bool:
        """Whether a job runs now (a signal then cancels it; otherwise it ends the wait at hand)."""
        ...

    def cancel(self) -> None:
        """Abandon the running job and refuse the next ones (a signal stopping the command)."""
        ...
