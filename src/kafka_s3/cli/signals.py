"""Ctrl-C (SIGINT) and SIGTERM during a backup or restore.

The first signal stops the run: the loop of cycles ends, and the running Spark job is cancelled from a thread (so
the handler returns at once) — the cycle is abandoned, and since offsets and restore progress are only committed for
durable, whole data, nothing partial is committed. With no Spark job running (the driver waiting for Kafka, the
object store or a Schema Registry), the handler raises :class:`Interrupted` in the main thread instead, which ends
the blocking call it is in — as safe as a kill there, and no job starts after it. The command then prints one line
saying what was committed and exits 128 + the signal's number (130 / 143). A second signal aborts at once with the
same guarantee.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType, TracebackType
from typing import Protocol

from kafka_s3.core.errors import Interrupted


class Cancellable(Protocol):
    """What a signal stops: an engine that says whether a job runs, and cancels it (a SparkEngine)."""

    cancelled: bool

    @property
    def job_running(self) -> bool: ...

    def cancel(self) -> None: ...


SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """``with Interrupts(engine) as stop:`` — ``stop`` is set by the first SIGINT/SIGTERM, which also cancels
    ``engine``'s running job; ``signum`` tells which signal came (``None``: none)."""

    def __init__(self, engine: Cancellable):
        self.engine = engine
        self.stop = threading.Event()
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or 0)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else ""

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:  # the second one: no waiting for the cancelled job to wind down
            sys.stderr.write(
                f"kafka-s3: aborted by a second {signal.Signals(signum).name}: only whole, durable data was committed\n"
            )
            sys.stderr.flush()
            os._exit(self.exit_code)
        self.signum = signum
        self.stop.set()
        sys.stderr.write(f"kafka-s3: {self.name}: stopping (abandoning the running job); again to abort at once\n")
        sys.stderr.flush()
        if self.engine.job_running:
            threading.Thread(target=self._cancel, name="kafka-s3-cancel", daemon=True).start()
            return
        self.engine.cancelled = True  # the wait at hand ends here, and no job starts after it
        raise Interrupted(f"stopped by {self.name}")

    def _cancel(self) -> None:
        try:
            self.engine.cancel()
        except Exception:  # a session stopping under us: the job is gone either way
            return

    def __enter__(self) -> threading.Event:
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self.stop

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self.signum is not None:
            return  # stopping: a second signal until the process ends still means "abort at once"
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
