"""``spark.read.format("kafka-s3")``: a backup in the object store as a DataFrame of Kafka records.

Same columns and options as Spark's Kafka source; one Spark partition per backed-up topic-partition, in offset
order::

    df = (spark.read.format("kafka-s3")
          .option("subscribe", "orders")              # optional: only these topics (or subscribePattern, assign)
          .option("startingOffsets", '{"orders":{"0":1000,"1":-2}}')
          .load("s3://my-bucket/topics"))             # or .option("config", "backup.properties"), any property
    df.where("partition = 0 and offset >= 1000").select("key", "value").show()

The path (or ``s3.bucket.name`` and ``topics.dir``) is enough: the layout, the format, its compression, the sidecars'
formats and whether the objects hold whole records are found in the bucket on the driver
(:func:`kafka_s3.pipelines.read.layouts.detected`), and a setting that contradicts it is a ``ConfigError`` there,
before any task runs.

The options (:mod:`kafka_s3.pipelines.read.dataframe_options`) are checked when the DataFrame is loaded: an unknown
one is an error with a did-you-mean, Spark's Kafka-source options mean what they mean there, and a topic or partition
the backup does not hold is an error naming what it holds. Offset and time bounds are per DataFrame: objects outside
them are not read at all, and objects with a block index (``format.class=block_gzip``) are fetched block by block,
only the blocks holding bounded offsets (ranged GETs). That is how a point lookup reads one object of many and still
answers every query on its DataFrame right.

Before planning, the restore's integrity checks (:mod:`kafka_s3.pipelines.read.integrity`) run on the listing and
the manifests: a damaged object holding offsets the read asks for raises ``BackupIncomplete``;
``.option("failOnDataLoss", "false")`` (or ``allow.gaps``) reads the rest, as ``restore --allow-gaps``.

``.option("pushdown", "true")`` also plans by the filters Spark pushes down on ``topic``, ``partition``, ``offset``
and ``timestamp`` (:mod:`kafka_s3.spark.pushdown`). It is off by default because Spark 4 cannot scope a Python data
source's plan to one query: ``PythonScanBuilder.pushFilters`` stores the read plan it got from Python on the
DataFrame's ``PythonDataSourceV2`` (``setReadInfo``), and ``PythonBatch`` takes that stored plan for every later
query on the DataFrame that hands Python no filter (no filter at all, or only ones Spark cannot pass to Python: OR,
expressions on columns), running no Python on the driver for it — so nothing can tell the plan is another query's.
``df.where("offset = 5").count()`` then ``df.count()`` would count one row twice. A query with a filter Spark passes
to Python is planned afresh (so two lookups are each right). With pushdown on, load a DataFrame per query.
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
    from kafka_s3.pipelines.read.dataframe_options import ReaderOptions
    from kafka_s3.pipelines.read.discovery import BackupObject
    from kafka_s3.pipelines.read.options import Bounds
    from kafka_s3.pipelines.read.plugins import ReadPlugins
    from kafka_s3.pipelines.task_settings import TaskSettings

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
        headers: bool = True,
    ):
        super().__init__((topic, partition))
        self.topic, self.partition, self.objects, self.bounds = topic, partition, objects, bounds
        self.settings = settings  # the configuration as the driver parsed it, with the layout it detected
        self.selection = selection  # the filters pushed down: rows outside its offsets are dropped
        self.headers = headers  # includeHeaders: false gives a null headers column, as Spark's Kafka source


class BackupReader(DataSourceReader):
    def __init__(self, raw: dict[str, str], options: ReaderOptions | None = None):
        from kafka_s3.pipelines.read.dataframe_options import ReaderOptions

        self.raw = raw  # the configuration: a configuration file's properties, the options' over them
        self.options = options or ReaderOptions(properties={})
        self.allow_gaps = self.options.allow_gaps  # read what the bucket holds when objects the read needs are damaged
        self.selection = Selection()  # what the filters Spark pushed down ask for (PushdownReader)

    def _setup(self) -> tuple[TaskSettings, Store, ReadPlugins]:
        """On the driver: the configuration parsed, the layout and formats found in the bucket (a setting that
        contradicts them raises here, before any task runs); what the tasks read with."""
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
        from kafka_s3.pipelines.read.dataframe_options import resolve, selected_topics
        from kafka_s3.pipelines.read.discovery import discover
        from kafka_s3.pipelines.read.integrity import (
            blocking_within,
            incomplete,
            survey,
            unfinished_error,
            unfinished_within,
            without_excluded,
        )
        from kafka_s3.pipelines.read.planning import Ranges, select_objects
        from kafka_s3.pipelines.read.pruned import pruned_starts, refuse_reader_bounds

        selection = self.selection
        if selection.nothing:  # contradicting filters (partition = 1 AND partition = 2)
            return []
        settings, store, plugins = self._setup()
        config = settings.config
        on_error = config["behavior.on.error"]
        configured: list[str] | None = config["topics"] or None
        topics = selected_topics(self.options, configured)
        found = survey(store, plugins, topics, on_error)

        def every_topic() -> set[str]:
            return {t for t, _ in discover(store, plugins, None, on_error)}

        names = set(topics or ())
        held_all = names <= {t for t, _ in found.partitions}
        bounds = resolve(self.options, found.partitions, configured, None if held_all else every_topic())
        refuse_reader_bounds(pruned_starts(found.manifests), bounds)  # before what kafka-s3 prune left: an error
        if selection.topics is not None:  # the filters' topics: the ones read
            bounds = {tp: b for tp, b in bounds.items() if tp[0] in selection.topics}
        parts = {tp: found.partitions[tp] for tp in bounds if selection.wants(*tp)}
        checks = found.checks

        def wanted(tp: tuple[str, int]) -> Selection:
            return Selection.of_bounds(bounds[tp]) & selection

        def wanted_offsets(tp: tuple[str, int]) -> Ranges | None:
            return wanted(tp).offsets if tp in parts else None

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
                planned.append(
                    BackupPartition(*tp, tuple(objects), settings, bounds[tp], selection, self.options.include_headers)
                )
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
        batches = read_partition(
            settings.open_store(), plugins, part, bounds, on_error=on_error, selection=partition.selection
        )
        yield from batches if partition.headers else (without_headers(batch) for batch in batches)


def without_headers(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with a null ``headers`` column (``includeHeaders=false``)."""
    import pyarrow as pa

    index = batch.schema.get_field_index("headers")
    nulls = pa.nulls(batch.num_rows, batch.schema.field(index).type)
    return batch.set_column(index, batch.schema.field(index), nulls)


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
        self._options()  # at load(): a wrong option is an error before any query
        return RECORD_DDL

    def _options(self) -> ReaderOptions:
        from kafka_s3.core.config.source import SOURCE
        from kafka_s3.pipelines.read.dataframe_options import parse

        keys = [*SOURCE.props, *SOURCE.alias_map(), *SOURCE.quiet, "name"]
        return parse(dict(self.options), keys, SOURCE.passthrough_prefixes)

    def reader(self, schema: StructType) -> DataSourceReader:
        from kafka_s3.core.config.loader import interpolate, read_raw

        options = self._options()
        raw = read_raw(options.config_file) if options.config_file is not None else {}
        raw.update(options.properties)
        if options.path is not None:
            raw.update(bucket_and_prefix(options.path, raw))
        raw.setdefault("name", "kafka-s3-reader")
        pushdown = scoped_read_plans() and options.pushdown is not False
        if options.pushdown and not pushdown:
            log.warning(
                "pushdown=true is not applied: Spark %s keeps the read plan of a query that pushed filters for later "
                "queries on the same DataFrame, which would answer them wrong; bound the read with assign, "
                "startingOffsets/endingOffsets or startingTimestamp/endingTimestamp instead (per DataFrame: every "
                "query right, only the objects holding those offsets read)",
                _spark_version(),
            )
        reader = PushdownReader if pushdown else BackupReader
        return reader(interpolate(raw), options)


def _spark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def scoped_read_plans(version: str | None = None) -> bool:
    """Whether Spark (``version``, default: the running one) keeps a Python data source's read plan per query.

    Spark 4 keeps the plan a query's filter pushdown produced on the DataFrame's relation (``PythonDataSourceV2
    .setReadInfo``) and serves it to every later query that hands Python no filter; Spark 5's ``PythonScanBuilder``
    carries it into its own ``PythonScan`` instead. Filter pushdown is on by default only where plans are per query
    (the suite's ``test_every_query_order_on_one_dataframe_is_answered_right`` proves it on the Spark installed)."""
    major = (version or _spark_version()).split(".", 1)[0]
    return major.isdigit() and int(major) >= 5


def bucket_and_prefix(path: str, raw: dict[str, str]) -> dict[str, str]:
    """``s3://bucket/topics`` (or ``s3a://``) as ``s3.bucket.name`` and ``topics.dir``; a bucket or prefix also
    given as a property must agree with it."""
    from kafka_s3.core.errors import ConfigError

    scheme, _, rest = path.partition("://")
    bucket, _, prefix = rest.partition("/")
    if scheme.lower() not in ("s3", "s3a") or not bucket:
        raise ConfigError(f"path {path!r}: expected s3://BUCKET/TOPICS-DIR", key="path")
    given = {"s3.bucket.name": bucket, "topics.dir": prefix.strip("/") or "topics"}
    for key, value in given.items():
        if key in raw and raw[key].strip("/") != value:
            raise ConfigError(f"path {path!r} says {key}={value}, the configuration {key}={raw[key]}", key=key)
    return given
