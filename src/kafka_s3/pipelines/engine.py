"""Where a pipeline's per-partition tasks run: the contract the Spark layer fulfils.

The pipelines plan on the driver and do their per-partition work in tasks; something must run those tasks in
parallel, close to the data. That is Spark (:class:`kafka_s3.spark.engine.SparkEngine`), but the pipelines only
need the few things below, so they never import Spark and their drivers are testable on their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

Task = Callable[[int], Iterable[str]]
"""``task(i)`` does slot ``i``'s work and yields its results, each serialized to one string (see the ``to_json`` /
``from_json`` pairs of the pipelines' result types)."""

TASKS_PER_CORE = 2
"""Spark tasks a job asks for per core at most. A task has a fixed cost (scheduling, the worker's round trip, its
clients), so a thousand quiet partitions run in a few tasks, each serving many; a few per core rather than one, so a
core whose task ends first takes another instead of idling (issue 30: 1,000 tasks of 10 records each took 9× the
time of 4 tasks of the same records)."""


def task_slots(plans: int, parallelism: int) -> int:
    """How many tasks a job of ``plans`` runs: one per plan, up to :data:`TASKS_PER_CORE` per core."""
    return min(plans, TASKS_PER_CORE * max(1, parallelism))


def spread(weights: Sequence[int], slots: int) -> list[list[int]]:
    """The indexes of ``weights`` in at most ``slots`` groups of about equal total weight: heaviest first, each onto
    the lightest group so far (ties: the lower index, so the result is deterministic). Each group lists its heaviest
    first. With no more plans than slots, each plan is a group of its own: heavy partitions are never grouped
    before every slot has one."""
    order = sorted(range(len(weights)), key=lambda i: (-weights[i], i))
    groups: list[list[int]] = [[] for _ in range(min(slots, len(weights)))]
    totals = [0] * len(groups)
    for i in order:
        lightest = min(range(len(groups)), key=lambda g: (totals[g], g))
        groups[lightest].append(i)
        totals[lightest] += weights[i]
    return groups


PARTITIONS_AT_ONCE = 4
"""Partitions a task works on at once when it serves several: a quiet partition's time is mostly waiting (a
consumer's first fetch or a producer's transactions, the objects' round trips), which a few threads overlap."""

BACKUP_PARTITIONS_AT_ONCE = 16
"""Partitions a backup task works on at once. Its partitions share one Kafka consumer
(:class:`~kafka_s3.io.kafka.reader.TaskConsumer`), so a thread more costs no consumer, and a quiet partition's thread
then waits mostly on its objects' round trips (the manifest's conditional PUT, the data object's): more of them
overlap (issue 30: 1,000 partitions × 10 records, job 84 s with 4 at a time against 36 s with 16, the same run)."""

Item = TypeVar("Item")
Result = TypeVar("Result")


def at_once(work: Callable[[Item], Result], items: Sequence[Item], threads: int) -> Iterator[Result]:
    """``work(item)`` for each of ``items``, up to ``threads`` at a time in this process, each result as soon as it is
    done. An exception (one that ends the task) cancels the items not started, waits for the running ones and is
    raised."""
    if threads <= 1 or len(items) <= 1:
        for item in items:
            yield work(item)
        return
    from concurrent.futures import ThreadPoolExecutor, as_completed

    pool = ThreadPoolExecutor(max_workers=min(threads, len(items)), thread_name_prefix="partition")
    try:
        for future in as_completed([pool.submit(work, item) for item in items]):
            yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


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
    def parallelism(self) -> int:
        """How many tasks run at once (Spark's default parallelism: the cores it has)."""
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
