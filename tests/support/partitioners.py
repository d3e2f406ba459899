"""Builders shared by the partitioner tests: connector configs, record batches and converted values."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import orjson
import pyarrow as pa

from kafka_s3.core.config.model import Config
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.converters.base import Logical
from kafka_s3.core.partitioners import REGISTRY
from kafka_s3.core.partitioners.base import Partitioner
from kafka_s3.core.records import make_batch

REQUIRED = {"name": "t", "topics": "t", "flush.size": "3", "s3.bucket.name": "b", "format.class": "json"}


def sink_config(**props: str) -> Config:
    """A parsed sink config; keys are given with dots (``**{"path.format": ...}``)."""
    return SINK.parse({**REQUIRED, **props})


def partitioner(**props: str) -> Partitioner:
    config = sink_config(**props)
    return REGISTRY.resolve(config["partitioner.class"])(config)


def batch(
    count: int,
    *,
    timestamps: Sequence[int | None] | None = None,
    topic: str = "t",
    partition: int = 0,
    first_offset: int = 0,
) -> pa.RecordBatch:
    """``count`` records with consecutive offsets (and the given millisecond timestamps)."""
    return make_batch(
        {
            "offset": first_offset + row,
            "topic": topic,
            "partition": partition,
            "timestamp": None if timestamps is None else timestamps[row],
        }
        for row in range(count)
    )


def json_values(objects: Sequence[Any]) -> Logical:
    """Schemaless JSON values as the JsonConverter gives them: compact JSON bytes per row (None: tombstone)."""
    return Logical("json", pa.array([None if o is None else orjson.dumps(o) for o in objects], pa.binary()))


def struct_values(rows: Sequence[dict | None], arrow_type: pa.DataType) -> Logical:
    return Logical("struct", pa.array(rows, arrow_type))


def bytes_values(count: int) -> Logical:
    return Logical("bytes", pa.array([b"x"] * count, pa.binary()))


def epoch_ms(text: str) -> int:
    """Epoch ms of an ISO date-time with an explicit offset, e.g. ``2015-03-08T03:30:00-07:00``."""
    return round(datetime.fromisoformat(text).timestamp() * 1000)
