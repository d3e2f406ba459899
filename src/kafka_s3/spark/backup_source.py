"""``spark.read.format("kafka-s3")``: a backup in the object store as a DataFrame of Kafka records.

Same columns as Spark's Kafka source; one Spark partition per backed-up topic-partition, in offset order::

    df = (spark.read.format("kafka-s3")
          .option("config", "backup.properties")      # the backup's own configuration file, and/or
          .option("s3.bucket.name", "my-bucket")      # any property as an option
          .option("topics", "orders")                 # optional: only these topics
          .load())
    df.where("partition = 0 and offset >= 1000").select("key", "value").show()
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from ..records import RECORD_DDL


class BackupPartition(InputPartition):
    def __init__(self, topic: str, partition: int, objects: tuple):
        super().__init__((topic, partition))
        self.topic, self.partition, self.objects = topic, partition, objects


class BackupReader(DataSourceReader):
    def __init__(self, raw: dict[str, str]):
        self.raw = raw

    def _setup(self):
        from ..config.source import SOURCE
        from ..reading import ReadPlugins
        from ..stores.spec import StoreSpec

        config = SOURCE.parse(self.raw)
        return config, StoreSpec.from_config(config).open(), ReadPlugins.from_config(config)

    def partitions(self):
        from ..reading import discover

        config, store, plugins = self._setup()
        parts = discover(store, plugins, config["topics"] or None, config["behavior.on.error"])
        return [BackupPartition(t, p, tuple(part.objects)) for (t, p), part in parts.items()]

    def read(self, partition: BackupPartition):
        from ..reading import SourcePartition, read_partition

        config, store, plugins = self._setup()
        part = SourcePartition(partition.topic, partition.partition, list(partition.objects))
        yield from read_partition(store, plugins, part, on_error=config["behavior.on.error"])


class BackupDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka-s3"

    def schema(self) -> str:
        return RECORD_DDL

    def reader(self, schema) -> DataSourceReader:
        from ..config.loader import interpolate, read_raw

        options = dict(self.options)
        raw = read_raw(options.pop("config")) if "config" in options else {}
        raw.update(options)
        raw.setdefault("name", "kafka-s3-reader")
        return BackupReader(interpolate(raw))
