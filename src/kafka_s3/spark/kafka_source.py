"""``spark.read.format("kafka-s3-topic")``: Kafka offset ranges as a DataFrame, read by Python tasks.

Spark's own Kafka connector is a JVM package that is often unavailable (it is here); this source gives the same
columns as Spark's (key, value, topic, partition, offset, timestamp, timestampType, headers) and the same core
options, using confluent-kafka inside the tasks and Arrow batches end to end::

    spark.read.format("kafka-s3-topic")
        .option("kafka.bootstrap.servers", "host:9092")
        .option("subscribe", "orders,payments")          # or subscribePattern
        .option("startingOffsets", "earliest")           # or latest, or {"orders":{"0":42}}
        .option("endingOffsets", "latest")
        .load()

Any other ``kafka.*`` option is a client setting, named as librdkafka or the Java clients (and Spark's Kafka source)
name it: ``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``,
``kafka.ssl.truststore.location`` with ``kafka.ssl.truststore.type=PEM``... are translated as a backup's settings are
(``kafka_s3.io.kafka.settings``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal, cast

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafka_s3.core.records import RECORD_DDL

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

#: ``earliest``, ``latest``, or parsed JSON like ``{"topic": {"0": 42}}``
OffsetsSpec = Literal["earliest", "latest"] | dict[str, Any]


class KafkaRangePartition(InputPartition):
    def __init__(self, topic: str, partition: int, start: int, end: int):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


def _offsets_option(value: str | None, default: str) -> OffsetsSpec:
    value = (value or default).strip()
    if value in ("earliest", "latest"):
        return cast(Literal["earliest", "latest"], value)
    try:
        parsed: dict[str, Any] = json.loads(value)  # other JSON than an object fails later, in pick
        return parsed
    except ValueError as exc:
        raise ValueError(
            f'offsets option must be earliest, latest or JSON like {{"topic":{{"0":42}}}}: {value!r}'
        ) from exc


def _client_settings(options: dict[str, str], warn: bool = True) -> dict[str, str]:
    """The ``kafka.*`` options as librdkafka settings."""
    from kafka_s3.io.kafka.settings import librdkafka_settings

    return librdkafka_settings({k[len("kafka.") :]: v for k, v in options.items() if k.startswith("kafka.")}, warn)


def plan_ranges(options: dict[str, str]) -> list[tuple[str, int, int, int]]:
    """``(topic, partition, start, end)`` for every partition selected by the options (runs on the driver)."""
    from kafka_s3.io.kafka.admin import Admin

    settings = _client_settings(options)
    if "bootstrap.servers" not in settings:
        raise ValueError("option kafka.bootstrap.servers is required")
    admin = Admin(settings)
    topics = admin.topics()
    if options.get("subscribepattern"):
        pattern = re.compile(options["subscribepattern"])
        selected = {t: n for t, n in topics.items() if pattern.fullmatch(t)}
    else:
        names = [t.strip() for t in (options.get("subscribe") or "").split(",") if t.strip()]
        if not names:
            raise ValueError("option subscribe (comma-separated topics) or subscribePattern is required")
        missing = [t for t in names if t not in topics]
        if missing:
            raise ValueError(f"topic(s) not found: {', '.join(missing)}")
        selected = {t: topics[t] for t in names}
    tps = [(t, p) for t, n in sorted(selected.items()) for p in range(n)]
    read_committed = options.get("kafka.isolation.level", "read_committed") == "read_committed"
    earliest = admin.start_offsets(tps)
    latest = admin.end_offsets(tps, read_committed=read_committed)
    starting = _offsets_option(options.get("startingoffsets"), "earliest")
    ending = _offsets_option(options.get("endingoffsets"), "latest")

    def pick(spec: OffsetsSpec, tp: tuple[str, int], fallback: int) -> int:
        if spec == "earliest":
            return earliest[tp]
        if spec == "latest":
            return latest[tp]
        value = spec.get(tp[0], {}).get(str(tp[1]))
        if value is None:
            return fallback
        return earliest[tp] if value == -2 else latest[tp] if value == -1 else int(value)

    ranges = []
    for tp in tps:
        start = max(pick(starting, tp, earliest[tp]), earliest[tp])
        end = min(pick(ending, tp, latest[tp]), latest[tp])
        if end > start:
            ranges.append((tp[0], tp[1], start, end))
    return ranges


class KafkaTopicReader(DataSourceReader):
    def __init__(self, options: dict[str, str]):
        self.options = options

    def partitions(self) -> list[KafkaRangePartition]:
        return [KafkaRangePartition(*r) for r in plan_ranges(self.options)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from kafka_s3.io.kafka.reader import read_range

        partition = cast(KafkaRangePartition, partition)  # one of those partitions() planned

        settings = _client_settings(self.options, warn=False)
        isolation = settings.pop("isolation.level", "read_committed")
        yield from read_range(
            settings, partition.topic, partition.partition, partition.start, partition.end, isolation_level=isolation
        )


class KafkaTopicDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka-s3-topic"

    def schema(self) -> str:
        return RECORD_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaTopicReader(
            {k.lower() if not k.lower().startswith("kafka.") else k: v for k, v in dict(self.options).items()}
        )
