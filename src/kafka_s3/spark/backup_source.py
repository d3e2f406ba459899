"""``spark.read.format("kafka-s3")``: a backup in the object store as a DataFrame of Kafka records.

Same columns as Spark's Kafka source; one Spark partition per backed-up topic-partition, in offset order::

    df = (spark.read.format("kafka-s3")
          .option("config", "backup.properties")      # the backup's own configuration file, and/or
          .option("s3.bucket.name", "my-bucket")      # any property as an option
          .option("topics", "orders")                 # optional: only these topics
          .load())
    df.where("partition = 0 and offset >= 1000").select("key", "value").show()

Before planning, the restore's integrity checks (:mod:`kafka_s3.pipelines.read.integrity`) run on the listing and
the manifests: a damaged object holding offsets the read asks for raises ``BackupIncomplete``;
``.option("allow.gaps", "true")`` reads the rest, as ``restore --allow-gaps``.

Options ``from.offset`` and ``until.offset`` bound the offsets read, with the restore's syntax
(``PARTITION:OFFSET[,...]`` or ``TOPIC:PARTITION:OFFSET``; ``until`` is exclusive). Objects outside the bounds are not
read at all, and objects with a block index (``format.class=block_gzip``) are fetched block by block, only the
blocks holding bounded offsets (ranged GETs)::

    spark.read.format("kafka-s3").option("config", "backup.properties").option("from.offset", "0:1000").load()

With ``.option("pushdown", "true")``, filters on ``topic``, ``partition``, ``offset`` and ``timestamp`` are pushed
down to planning (:mod:`kafka_s3.spark.pushdown`): a query for a few offsets of one partition creates one Spark
partition and reads only the objects whose offset spans (and, where manifests recorded them, record-time spans) hold
them. Spark needs ``spark.sql.python.filterPushdown.enabled`` for it (registering the source with
:func:`kafka_s3.spark.session.register_data_sources` turns it on).

It is an option, off by default, because Spark 4.3 keeps the read plan of the first query that pushed filters on the
DataFrame's relation and reuses it for a later query on the same DataFrame that pushes none (``df.count()`` after
``df.where("offset = 5").show()`` counts one row). With pushdown on, load a DataFrame per query.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafka_s3.core.records import RECORD_DDL
from kafka_s3.pipelines.read.planning import Selection

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.datasource import Filter
    from pyspark.sql.types import StructType

    from kafka_s3.core.store import Store
    from kafka_s3.pipelines.read.discovery import BackupObject
    from kafka_s3.pipelines.read.options import Bounds
    from kafka_s3.pipelines.read.plugins import ReadPlugins
    from kafka_s3.pipelines.task_settings import TaskSettings

FROM_OFFSET = "from.offset"
UNTIL_OFFSET = "until.offset"
PUSHDOWN = "pushdown"
ALLOW_GAPS = "allow.gaps"

log = logging.getLogger(__name__)


class BackupPartition(InputPartition):
    def __init__(
        self,
        topic: str,
        partition: int,
        objects: tuple[BackupObject, ...],
        settings: TaskSettings,
        bounds: Bounds | None = None,
        selection: Selection | None = None,
    ):
        super().__init__((topic, partition))
        self.topic, self.partition, self.objects, self.bounds = topic, partition, objects, bounds
        self.settings = settings  # the configuration as the driver parsed it, with the layout it detected
        self.selection = selection  # the filters pushed down: rows outside its offsets are dropped


class BackupReader(DataSourceReader):
    def __init__(self, raw: dict[str, str], offsets: dict[str, str] | None = None, allow_gaps: bool = False):
        self.raw = raw
        self.offsets = offsets or {}
        self.allow_gaps = allow_gaps  # read what the bucket holds when objects the read needs are damaged
        self.selection = Selection()  # what the filters Spark pushed down ask for (PushdownReader)

    def _setup(self) -> tuple[TaskSettings, Store, ReadPlugins]:
        """On the driver: the configuration parsed, the layout detected; what the tasks read with."""
        from kafka_s3.core.config.source import SOURCE
        from kafka_s3.io.stores.spec import StoreSpec
        from kafka_s3.pipelines.read.layouts import detected
        from kafka_s3.pipelines.read.plugins import ReadPlugins
        from kafka_s3.pipelines.task_settings import TaskSettings

        config = SOURCE.parse(self.raw)
        spec = StoreSpec.from_config(config)
        store = spec.open()
        config, _ = detected(config, store)
        return TaskSettings(config, spec), store, ReadPlugins.from_config(config)

    def partitions(self) -> list[BackupPartition]:
        from kafka_s3.pipelines.read.integrity import (
            blocking_within,
            incomplete,
            survey,
            unfinished_error,
            unfinished_within,
            without_excluded,
        )
        from kafka_s3.pipelines.read.options import RestoreOptions, parse_offsets
        from kafka_s3.pipelines.read.planning import Ranges, select_objects

        selection = self.selection
        if selection.nothing:  # contradicting filters (partition = 1 AND partition = 2)
            return []
        settings, store, plugins = self._setup()
        config = settings.config
        options = RestoreOptions(
            from_offsets=parse_offsets(self.offsets.get(FROM_OFFSET), FROM_OFFSET),
            until_offsets=parse_offsets(self.offsets.get(UNTIL_OFFSET), UNTIL_OFFSET),
        )
        topics: list[str] | None = config["topics"] or None
        if selection.topics is not None:  # list only the topics asked for
            topics = sorted(selection.topics if topics is None else selection.topics & set(topics))
            if not topics:
                return []
        found = survey(store, plugins, topics, config["behavior.on.error"])
        parts = {tp: part for tp, part in found.partitions.items() if selection.wants(*tp)}
        checks = found.checks

        def wanted(tp: tuple[str, int]) -> Selection:
            return Selection.of_bounds(options.bounds(tp)) & selection

        def wanted_offsets(tp: tuple[str, int]) -> Ranges | None:
            return wanted(tp).offsets if selection.wants(*tp) else None

        # The restore's checks, from the listing and the manifests, before a row is read: a damaged object the read
        # needs is an error, never rows silently absent, and so are offsets in or after a chunk the backup has not
        # finished uploading (allow.gaps: read the rest, as restore --allow-gaps).
        damaged = blocking_within(checks, wanted_offsets)
        if damaged and not self.allow_gaps:
            raise incomplete(damaged, f'\n(.option("{ALLOW_GAPS}", "true") reads the rest)')
        unfinished = unfinished_within(checks, wanted_offsets)
        if unfinished and not self.allow_gaps:
            raise unfinished_error(unfinished)
        for finding in damaged + unfinished:
            log.warning("skipped (%s): %s", ALLOW_GAPS, finding)
        planned = []
        for tp, part in parts.items():
            readable = without_excluded(part, checks.get(tp), hold=not self.allow_gaps)
            objects = select_objects(readable, wanted(tp), len(part.directories) <= 1)
            if objects:
                planned.append(BackupPartition(*tp, tuple(objects), settings, options.bounds(tp), selection))
        return planned

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        from kafka_s3.pipelines.read.discovery import SourcePartition
        from kafka_s3.pipelines.read.options import Bounds
        from kafka_s3.pipelines.read.plugins import ReadPlugins
        from kafka_s3.pipelines.read.reader import read_partition

        if not isinstance(partition, BackupPartition):
            return  # partitions() planned none: Spark reads one empty InputPartition(None) instead

        settings = partition.settings
        plugins = settings.plugins("read-plugins", ReadPlugins.from_config)
        part = SourcePartition(partition.topic, partition.partition, list(partition.objects))
        bounds = partition.bounds or Bounds()
        on_error = settings.config["behavior.on.error"]
        yield from read_partition(
            settings.open_store(), plugins, part, bounds, on_error=on_error, selection=partition.selection
        )


class PushdownReader(BackupReader):
    """The reader of ``.option("pushdown", "true")``: plans by the filters Spark pushes down."""

    def pushFilters(self, filters: list[Filter]) -> list[Filter]:
        from kafka_s3.spark.pushdown import push

        self.selection, rest = push(filters)
        return rest


class BackupDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka-s3"

    def schema(self) -> str:
        return RECORD_DDL

    def reader(self, schema: StructType) -> DataSourceReader:
        from kafka_s3.core.config.loader import interpolate, read_raw
        from kafka_s3.core.errors import ConfigError

        options = dict(self.options)
        offsets = {key: options.pop(key) for key in (FROM_OFFSET, UNTIL_OFFSET) if key in options}
        flags = {key: options.pop(key, "false").strip().lower() for key in (PUSHDOWN, ALLOW_GAPS)}
        for key, flag in flags.items():
            if flag not in ("true", "false"):
                raise ConfigError(f"{key}: expected true or false, got {flag!r}", key=key)
        raw = read_raw(options.pop("config")) if "config" in options else {}
        raw.update(options)
        raw.setdefault("name", "kafka-s3-reader")
        reader = PushdownReader if flags[PUSHDOWN] == "true" else BackupReader
        return reader(interpolate(raw), offsets, flags[ALLOW_GAPS] == "true")
