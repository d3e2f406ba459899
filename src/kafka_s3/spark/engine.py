"""Spark as the pipelines' engine: one ``mapInArrow`` job per round of tasks.

A round is ``spark.range(0, n, 1, n).mapInArrow(...)``: Spark partition ``i`` holds the row ``i`` and runs task
``i`` in a Python worker. Only each task's small serialized result comes back to the driver; the records themselves
move between Kafka and the object store inside the task.

The same rounds run over Spark Connect (``remote``: a client of a long-running server, no JVM here): what the
classic session does through its SparkContext has a Connect counterpart here — every job carries this engine's tag
and cancelling interrupts that tag (the server-side session is shared with other commands), task progress comes
from the server's progress reports, and the driver host tasks report live counts to is this machine's address on
the route to the server.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pyarrow as pa

from kafka_s3.core.errors import Interrupted, KafkaS3Error
from kafka_s3.core.stall import logged_wait
from kafka_s3.pipelines.engine import Task
from kafka_s3.runtime.lean import keep_pandas_unloaded
from kafka_s3.spark.errors import engine_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)
RESULT_SCHEMA = "result string"
REMOTE_PARALLELISM = 8
"""The cores assumed of a Spark Connect server that does not set ``spark.default.parallelism`` (the client cannot
ask its executors): a job's tasks are capped at a few per core (:func:`kafka_s3.pipelines.engine.task_slots`)."""


ERROR_MARK = "\x00kafka-s3-error "
"""Starts a result row that carries a task's :class:`KafkaS3Error` instead of a result (see :func:`_task_per_row`)."""


def _error_row(exc: KafkaS3Error) -> str:
    attributes = {k: v for k, v in vars(exc).items() if isinstance(v, (str, int, float, bool, type(None)))}
    kind = type(exc)
    return ERROR_MARK + json.dumps(
        {"module": kind.__module__, "kind": kind.__qualname__, "message": str(exc), "attributes": attributes}
    )


def task_error(row: str) -> KafkaS3Error:
    """The error a task returned in ``row``, rebuilt on the driver as the same class with the same message."""
    doc = json.loads(row[len(ERROR_MARK) :])
    kind: type[KafkaS3Error] = KafkaS3Error
    if str(doc.get("module", "")).startswith("kafka_s3."):
        try:
            found = getattr(importlib.import_module(doc["module"]), doc["kind"], None)
        except ImportError:
            found = None
        if isinstance(found, type) and issubclass(found, KafkaS3Error):
            kind = found
    try:
        error = kind(doc["message"])  # the class's own defaults (e.g. an empty findings list)
    except TypeError:
        error = kind.__new__(kind)
    error.args = (doc["message"],)  # the message exactly as raised in the task
    for name, value in dict(doc.get("attributes") or {}).items():
        setattr(error, name, value)
    return error


def _task_per_row(task: Task) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """The ``mapInArrow`` function: every row id is a task slot, every string the task yields one result row.

    A :class:`KafkaS3Error` is the project's own verdict (a bad record, refused credentials, an unreachable registry
    after its client's retries), not an accident another attempt would cure: it is returned as an error row, so
    Spark does not run the task three more times, and the driver raises it with its message and context instead of
    a Python worker's traceback wrapped in a Java one. Any other exception still fails the task (Spark retries it).
    """

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        keep_pandas_unloaded()  # a worker running kafka-s3's tasks never needs pandas (kafka_s3.runtime.lean)
        for batch in batches:
            for slot in batch.column(0).to_pylist():
                try:
                    for result in task(slot):
                        yield pa.RecordBatch.from_pydict({"result": [result]})
                except KafkaS3Error as exc:
                    yield pa.RecordBatch.from_pydict({"result": [_error_row(exc)]})
                    return

    return run


class ConnectProgress:
    """Task counts of the running operations of a Spark Connect session, from the server's progress reports (a
    ``registerProgressHandler`` callback; the classic session's status tracker is JVM-only)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._operations: dict[str, tuple[int, int]] = {}

    def __call__(self, stages: Iterable[Any] | None, inflight_tasks: int, operation_id: str | None, done: bool) -> None:
        key = operation_id or ""
        with self._lock:
            if done:
                self._operations.pop(key, None)
                return
            stages = list(stages or ())
            self._operations[key] = (
                sum(int(stage.num_completed_tasks) for stage in stages),
                sum(int(stage.num_tasks) for stage in stages),
            )

    def totals(self) -> tuple[int, int] | None:
        with self._lock:
            done = sum(d for d, _ in self._operations.values())
            total = sum(t for _, t in self._operations.values())
        return (done, total) if total else None


def route_address(url: str) -> str:
    """This machine's address on the route to the Spark Connect server at ``url`` (where its tasks can reach us)."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or 15002
    try:
        family, kind, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, kind) as probe:
            probe.connect(address)  # UDP: picks the route, sends nothing
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


class SparkEngine:
    """Runs tasks on a SparkSession: the one given, or one built on first use (``master``, ``remote``,
    ``app_name``, ``conf``), so that a command fails on a bad configuration or an unreachable service before paying
    Spark's start-up."""

    def __init__(
        self,
        session: SparkSession | None = None,
        master: str | None = None,
        app_name: str = "kafka-s3",
        conf: Mapping[str, str] | None = None,
        remote: str | None = None,
    ):
        self._session = session
        self.master = master
        self.remote = remote
        self.app_name = app_name
        self.conf = dict(conf or {})
        self.cancelled = False  # cancel(): the running job is abandoned and no other one starts
        self._jobs = 0  # jobs running now (a backup group runs several at once)
        self._jobs_lock = threading.Lock()
        self._progress: ConnectProgress | None = None
        self._remote_url: str | None = None
        self.tag = f"kafka-s3-{os.getpid()}-{id(self):x}"  # marks this engine's jobs on a shared Connect session
        if session is not None:
            self._adopt(session)

    def _adopt(self, session: SparkSession) -> None:
        from kafka_s3.spark.session import is_remote

        if is_remote(session):
            connect: Any = session
            self._progress = ConnectProgress()
            connect.registerProgressHandler(self._progress)
            endpoint = getattr(getattr(connect.client, "_builder", None), "endpoint", None)
            if endpoint and not self._remote_url:
                self._remote_url = f"sc://{endpoint}"

    @property
    def is_remote(self) -> bool:
        return self._progress is not None

    @property
    def session(self) -> SparkSession:
        if self._session is None:
            from kafka_s3.spark.session import build_session

            started = time.monotonic()
            in_main = threading.current_thread() is threading.main_thread()
            previous = signal.getsignal(signal.SIGINT) if in_main else None
            from kafka_s3.spark.session import remote_url

            self._remote_url = remote_url(self.master, self.remote)
            session = build_session(self.master, self.app_name, self.conf, data_sources=False, remote=self.remote)
            if in_main and previous is not None:  # PySpark replaces the SIGINT handler: the caller's stays in charge
                signal.signal(signal.SIGINT, previous)
            self._adopt(session)
            self._session = session
            log.info(
                "spark session ready in %.2fs%s",
                time.monotonic() - started,
                f" (Spark Connect {self._remote_url})" if self.is_remote else "",
            )
        return self._session

    def start(self) -> None:
        self.session  # noqa: B018 (built on first use)

    @property
    def started(self) -> bool:
        return self._session is not None

    def cancel(self) -> None:
        """Abandon the running job (``SparkContext.cancelAllJobs``, over Connect ``interruptAll``; safe from a
        signal-handling thread) and refuse the next ones: :meth:`run_tasks` raises :class:`Interrupted`, so nothing
        of the job is committed."""
        self.cancelled = True
        if self._session is not None and self.is_remote:
            connect: Any = self._session
            connect.interruptTag(self.tag)  # this engine's jobs only: the session is shared with other commands
        elif self._session is not None:
            context = self._session.sparkContext
            # What Spark logs while killed tasks wind down ("Lost task ... TaskKilled", a task-completion listener
            # missing its broadcast block as the process exits) is expected after a user's stop: no noise.
            context.setLogLevel("OFF")
            context.cancelAllJobs()

    @property
    def job_running(self) -> bool:
        """Whether a job of this engine is running (a signal then cancels it; otherwise it ends the wait at hand)."""
        return self._jobs > 0

    def run_tasks(self, description: str, task: Task, count: int) -> list[str]:
        if self.cancelled:
            raise Interrupted(f"interrupted before {description!r} started")
        session = self.session
        connect: Any = session if self.is_remote else None
        if connect is not None:  # Connect has no job descriptions; tags are per thread (a backup group's threads)
            connect.addTag(self.tag)
        else:
            session.sparkContext.setJobDescription(description)
        with self._jobs_lock:
            self._jobs += 1
        try:
            if self.cancelled:  # stopped while the job was being set up
                raise Interrupted(f"interrupted before {description!r} started")
            with logged_wait(f"Spark job {description!r}", log, progress=self._tasks_done):
                rows = session.range(0, count, 1, count).mapInArrow(_task_per_row(task), RESULT_SCHEMA).collect()
        except KafkaS3Error:
            raise
        except Exception as exc:
            if self.cancelled:
                raise Interrupted(f"{description!r} was cancelled") from None
            raise engine_error(exc, f"Spark job {description!r}") from exc
        finally:
            with self._jobs_lock:
                self._jobs -= 1
            if connect is not None:
                connect.removeTag(self.tag)
        results = [row.result for row in rows]
        for result in results:
            if result.startswith(ERROR_MARK):
                raise task_error(result)
        return results

    def _tasks_done(self) -> str | None:
        """What a stalled job's log line says of its tasks ("0 of 3 tasks done")."""
        progress = self.task_progress()
        return None if progress is None else f"{progress[0]} of {progress[1]} tasks done"

    @property
    def parallelism(self) -> int:
        """Spark's default parallelism (the cores of a local session or a cluster's executors). Over Spark Connect
        the server's setting when it has one, else :data:`REMOTE_PARALLELISM`."""
        session = self.session
        if self.is_remote:
            connect: Any = session
            try:
                value = connect.conf.get("spark.default.parallelism", None)
            except Exception:  # a server that refuses to say: the cap below
                value = None
            return int(value) if value and str(value).isdigit() else REMOTE_PARALLELISM
        return int(session.sparkContext.defaultParallelism)

    @property
    def driver_host(self) -> str:
        session = self.session
        if self.is_remote:  # the driver is the server's; our live-count listener lives here
            return route_address(self._remote_url or "sc://127.0.0.1")
        return str(session.sparkContext.getConf().get("spark.driver.host", "127.0.0.1"))

    def task_progress(self) -> tuple[int, int] | None:
        if self._session is None:
            return None
        if self._progress is not None:
            return self._progress.totals()
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
