"""The partitioner contract: records -> encoded partition (the directory part of an object key), vectorised.

Mirrors Confluent's ``io.confluent.connect.storage.partitioner.Partitioner``: ``encode`` is ``encodePartition``
applied to a whole batch, ``path`` is ``generatePartitionedPath``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config
    from kafka_s3.core.converters.base import Logical


class Partitioner(ABC):
    """Configured from the connector config (``partition.field.name``, ``path.format``, ``timezone``...)."""

    #: short registry name
    name: str = ""
    #: True when the directory of a record depends only on the record (not on the wall clock): exactly-once holds.
    deterministic: bool = True
    #: True when directories depend on the record value (field, RecordField time): values are converted even in
    #: envelope mode, which otherwise stores raw bytes without converting them.
    uses_values: bool = False
    #: True when the directory is the record's Kafka partition alone (DefaultPartitioner): a layout naming its own
    #: directories (``Layout.directory``) names them after the partition instead of taking the partitioner's
    by_kafka_partition: bool = False

    def __init__(self, config: Config):
        self.config = config
        self.directory_delim: str = config.get("directory.delim", "/")

    @abstractmethod
    def encode(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> pa.Array:
        """The encoded partition (``string``) of every row. ``now_ms`` is the wall clock for Wallclock extractors.

        Raise :class:`~kafka_s3.core.errors.PartitionerError` naming the offset when a record cannot be partitioned
        (missing field, null timestamp...).
        """

    def timestamps(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> np.ndarray | None:
        """Per-row timestamps (int64 ms) for ``rotate.interval.ms``; ``None`` for partitioners that are not time based
        (Confluent ignores ``rotate.interval.ms`` for them)."""
        return None

    def path(self, topic: str, encoded_partition: str) -> str:
        """Directory of an object below ``topics.dir``: ``<topic><delim><encodedPartition>``."""
        return f"{topic}{self.directory_delim}{encoded_partition}"

    def partition_fields(self) -> list[str]:
        """Names of the directory fields (``partition``, ``region``, ``year``...), for Hive-style readers."""
        return []
