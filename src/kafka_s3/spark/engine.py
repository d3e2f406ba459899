"""Spark as the pipelines' engine: one ``mapInArrow`` job per round of tasks.

A round is ``spark.range(0, n, 1, n).mapInArrow(...)``: Spark partition ``i`` holds the row ``i`` and runs task
``i`` in a Python worker. Only each task's small serialized result comes back to the driver; the records themselves
move between Kafka and the object store inside the task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_s3.pipelines.engine import Task

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
RESULT_SCHEMA = "result string"


def _task_per_row(task: Task) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: every row id is a task slot, every string the task yields one result row."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for slot in batch.column(0).to_pylist():
                for result in task(slot):
                    yield pa.RecordBatch.from_pydict({"result": [result]})

    return run


class SparkEngine:
    """Runs tasks on a SparkSession: the one given, or one built on first use (``master``, ``app_name``, ``conf``),
    so that a command fails on a bad configuration or an unreachable service before paying Spark's start-up."""

    def __init__(
        self,
        session: SparkSession | None = None,
        master: str | None = None,
        app_name: str = "kafka-s3",
        conf: Mapping[str, str] | None = None,
    ):
        self._session = session
        self.master = master
        self.app_name = app_name
        self.conf = dict(conf or {})

    @property
    def session(self) -> SparkSession:
        if self._session is None:
            from kafka_s3.spark.session import build_session

            started = time.monotonic()
            self._session = build_session(self.master, self.app_name, self.conf, data_sources=False)
            log.info("spark session ready in %.2fs", time.monotonic() - started)
        return self._session

    def start(self) -> None:
        self.session  # noqa: B018 (built on first use)

    def run_tasks(self, description: str, task: Task, count: int) -> list[str]:
        session = self.session
        session.sparkContext.setJobDescription(description)
        rows = session.range(0, count, 1, count).mapInArrow(_task_per_row(task), RESULT_SCHEMA).collect()
        return [row.result for row in rows]

    @property
    def driver_host(self) -> str:
        return str(self.session.sparkContext.getConf().get("spark.driver.host", "127.0.0.1"))

    def task_progress(self) -> tuple[int, int] | None:
        if self._session is None:
            return None
        tracker: Any = self._session.sparkContext.statusTracker()
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info:
                done += info.numCompletedTasks
                total += info.numTasks
        return (done, total) if total else None

    def stop(self) -> None:
        if self._session is not None:
            self._session.stop()
            self._session = None
