"""What a pipeline's driver is doing now, told as it happens to whoever shows it (the CLI's progress display).

A backup or restore spends long stretches outside its Spark job: listing offsets or objects, starting Spark, committing
what the job stored. A display fed only by record counts shows nothing moving then; the drivers call their
``on_phase`` callback at each step instead, so the display can say which step it is and for how long.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

PLANNING = "planning"
STARTING_SPARK = "starting Spark"
UPLOADING = "uploading"
RESTORING = "restoring"
COMMITTING = "committing"


@dataclass(frozen=True)
class Phase:
    """A step of a run: ``name`` (one of the constants above), ``detail`` (what it works on: "cycle 2, 3
    partitions"), and ``tasks``: the number of tasks of the Spark job that runs in this step (``None``: no job)."""

    name: str
    detail: str = ""
    tasks: int | None = None

    def __str__(self) -> str:
        return f"{self.name}: {self.detail}" if self.detail else self.name


OnPhase = Callable[[Phase], None]
"""Called on the driver's thread at the start of each step; must return quickly (a display only records it)."""
