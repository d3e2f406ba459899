"""Confluent's DefaultPartitioner: objects of one Kafka partition share a directory, ``partition=<n>``."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.converters.base import Logical
from kafka_s3.core.partitioners.base import Partitioner

PARTITION_FIELD = "partition"


class DefaultPartitioner(Partitioner):
    """Keeps Kafka's partitioning: the directory depends only on the record's partition (deterministic)."""

    name = "default"
    by_kafka_partition = True

    def encode(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> pa.Array:
        partitions = pc.cast(records.column("partition"), pa.string())
        return pc.binary_join_element_wise(f"{PARTITION_FIELD}=", partitions, "")

    def partition_fields(self) -> list[str]:
        return [PARTITION_FIELD]
