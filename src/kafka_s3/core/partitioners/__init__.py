"""Partitioners: which directory (encoded partition) each record goes to.

Confluent's partitioners are registered here; a peer's own (Lenses' PARTITIONBY) are registered from its package
(``kafka_s3.core.peers``), when the registry is first used."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_s3.core.registry import Registry

if TYPE_CHECKING:
    from kafka_s3.core.partitioners.base import Partitioner
    from kafka_s3.core.partitioners.timestamps import TimestampExtractor

REGISTRY: Registry[type[Partitioner]] = Registry(
    "partitioner", "partitioner.class", more="kafka_s3.core.peers:register_partitioners"
)
REGISTRY.register(
    "default",
    "kafka_s3.core.partitioners.default:DefaultPartitioner",
    aliases=("io.confluent.connect.storage.partitioner.DefaultPartitioner", "DefaultPartitioner"),
)
REGISTRY.register(
    "field",
    "kafka_s3.core.partitioners.field:FieldPartitioner",
    aliases=("io.confluent.connect.storage.partitioner.FieldPartitioner", "FieldPartitioner"),
)
REGISTRY.register(
    "time_based",
    "kafka_s3.core.partitioners.time_based:TimeBasedPartitioner",
    aliases=("io.confluent.connect.storage.partitioner.TimeBasedPartitioner", "TimeBasedPartitioner", "timebased"),
)
REGISTRY.register(
    "daily",
    "kafka_s3.core.partitioners.time_based:DailyPartitioner",
    aliases=("io.confluent.connect.storage.partitioner.DailyPartitioner", "DailyPartitioner"),
)
REGISTRY.register(
    "hourly",
    "kafka_s3.core.partitioners.time_based:HourlyPartitioner",
    aliases=("io.confluent.connect.storage.partitioner.HourlyPartitioner", "HourlyPartitioner"),
)

EXTRACTORS: Registry[type[TimestampExtractor]] = Registry("timestamp extractor", "timestamp.extractor")
EXTRACTORS.register(
    "Wallclock",
    "kafka_s3.core.partitioners.timestamps:WallclockTimestampExtractor",
    aliases=("io.confluent.connect.storage.partitioner.TimeBasedPartitioner$WallclockTimestampExtractor",),
)
EXTRACTORS.register(
    "Record",
    "kafka_s3.core.partitioners.timestamps:RecordTimestampExtractor",
    aliases=("io.confluent.connect.storage.partitioner.TimeBasedPartitioner$RecordTimestampExtractor",),
)
EXTRACTORS.register(
    "RecordField",
    "kafka_s3.core.partitioners.timestamps:RecordFieldTimestampExtractor",
    aliases=("io.confluent.connect.storage.partitioner.TimeBasedPartitioner$RecordFieldTimestampExtractor",),
)
