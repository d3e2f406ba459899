"""What a restore task tells the driver about one source partition: the type that crosses the Spark boundary.

It travels as JSON (a Spark result row holds a string); the (de)serialization is written out here, next to the
type, and tested for round trips.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from kafka_s3.pipelines.read.discovery import Problem
from kafka_s3.pipelines.read.reader import Gap


@dataclass(frozen=True)
class RestoreResult:
    source_topic: str
    source_partition: int
    target_topic: str
    target_partition: int
    resumed_from: int | None = None  # the restore's committed progress when the task started
    progress: int | None = None  # its committed progress when the task ended
    objects: int = 0
    records: int = 0
    first_source_offset: int | None = None
    last_source_offset: int | None = None
    first_target_offset: int | None = None
    last_target_offset: int | None = None
    problems: tuple[Problem, ...] = ()  # objects or records skipped under behavior.on.error=ignore|log
    gaps: tuple[Gap, ...] = ()  # source offsets no object held
    error: str | None = None  # what stopped the partition (behavior.on.error=fail)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["problems"] = [asdict(p) for p in self.problems]
        doc["gaps"] = [asdict(g) for g in self.gaps]
        return doc

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> RestoreResult:
        doc = dict(doc)
        problems = tuple(Problem(**p) for p in doc.pop("problems"))
        gaps = tuple(Gap(**g) for g in doc.pop("gaps"))
        return cls(problems=problems, gaps=gaps, **doc)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> RestoreResult:
        return cls.from_dict(json.loads(text))
