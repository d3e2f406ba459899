"""What a table backup's task tells the driver about one topic-partition: the files it completed (paths, sizes,
partition values, footers) and where its read ended. No record travels to the driver. It crosses the Spark boundary
as JSON, (de)serialized here."""

from __future__ import annotations

import json
from dataclasses import dataclass

from kafka_s3.io.iceberg.table import WrittenFile


@dataclass(frozen=True)
class TablePartitionResult:
    topic: str
    partition: int
    start: int  # where the task started reading
    next_offset: int  # every record of [start, next_offset) is in ``files``
    records: int = 0
    files: tuple[WrittenFile, ...] = ()
    error: str | None = None  # nothing of this partition is to be committed this cycle

    def to_json(self) -> str:
        return json.dumps(
            {
                "topic": self.topic,
                "partition": self.partition,
                "start": self.start,
                "next_offset": self.next_offset,
                "records": self.records,
                "files": [f.to_dict() for f in self.files],
                "error": self.error,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> TablePartitionResult:
        doc = json.loads(text)
        return cls(
            topic=doc["topic"],
            partition=doc["partition"],
            start=doc["start"],
            next_offset=doc["next_offset"],
            records=doc["records"],
            files=tuple(WrittenFile.from_dict(f) for f in doc["files"]),
            error=doc["error"],
        )
