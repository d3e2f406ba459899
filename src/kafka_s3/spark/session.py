"""The one place a SparkSession is built.

Defaults are those measured to matter on small machines: workers run this very Python (so they have
pyarrow and kafka-s3), the UI and console progress are off, logs are quiet, and `spark.*` keys from the connector
configuration are applied last so operators can tune anything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

# JVM flags that halve session start-up and trim ~80 MB of resident memory on small machines (local masters).
FAST_START_JVM_FLAGS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xms64m -XX:ReservedCodeCacheSize=64m"


def _log4j_config() -> str:
    return str(resources.files("kafka_s3.spark").joinpath("log4j2.properties"))


def build_session(
    master: str | None = None,
    app_name: str = "kafka-s3",
    conf: Mapping[str, str] | None = None,
    fast_start: bool | None = None,
    warm_up: bool = True,
    data_sources: bool = True,
) -> SparkSession:
    """Get or create the SparkSession for a kafka-s3 job.

    ``master`` defaults to ``$KAFKA_S3_SPARK_MASTER`` then ``local[*]``; ``conf`` holds extra ``spark.*`` settings;
    ``fast_start`` adds JVM flags that trade peak JIT performance for a faster start (default: on for local masters,
    overridable with ``$KAFKA_S3_SPARK_FAST_START=0/1``).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = master or os.environ.get("KAFKA_S3_SPARK_MASTER") or DEFAULT_MASTER
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if fast_start is None:
        fast_start = os.environ.get("KAFKA_S3_SPARK_FAST_START", "1" if master.startswith("local") else "0") == "1"

    from pyspark.sql import SparkSession

    java_opts = f"-Dlog4j2.configurationFile=file:{_log4j_config()}"
    if fast_start:
        java_opts += " " + FAST_START_JVM_FLAGS
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.log.structuredLogging.enabled": "false",
        "spark.python.worker.reuse": "true",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        "spark.executorEnv.PYSPARK_PYTHON": os.environ["PYSPARK_PYTHON"],
        # Tasks are idempotent (deterministic names, conditional creates), so Spark may retry them freely.
        "spark.task.maxFailures": "4",
    }
    if master.startswith("local") and "," not in master:
        master = master[:-1] + ",4]" if master.endswith("]") else master  # local[N,F]: let Spark retry tasks
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    if data_sources:  # costs two Python helper processes (~100 MB): jobs that only run tasks skip it
        register_data_sources(session)
    if warm_up:
        warm_up_workers(session)
    return session


# Modules every backup/restore task needs; importing them once per Python worker up front moves seconds of start-up
# out of the first cycle (workers are reused for every later task).
WORKER_MODULES = (
    "confluent_kafka",
    "boto3",
    "fastavro",
    "pyarrow.parquet",
    "kafka_s3.pipelines.backup.task",
    "kafka_s3.pipelines.restore.task",
    "kafka_s3.pipelines.backup.partition",
    "kafka_s3.pipelines.read.reader",
    "kafka_s3.io.kafka.reader",
    "kafka_s3.io.stores.s3",
    "kafka_s3.core.formats.avro",
    "kafka_s3.core.formats.parquet",
    "kafka_s3.core.formats.json",
    "kafka_s3.core.formats.bytearray",
    "kafka_s3.core.converters.json",
    "kafka_s3.core.partitioners.time_based",
    "kafka_s3.core.partitioners.field",
)


def _import_modules(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import importlib

    import pyarrow as pa

    for batch in batches:
        for name in WORKER_MODULES:
            importlib.import_module(name)
        yield pa.RecordBatch.from_pydict({"n": [batch.num_rows]})


def warm_up_workers(session: SparkSession) -> None:
    """Start one Python worker per core and import the task modules in it (part of start-up, not of any cycle)."""
    slots = max(1, session.sparkContext.defaultParallelism)
    session.range(0, slots, 1, slots).mapInArrow(_import_modules, "n long").collect()


def register_data_sources(session: SparkSession) -> None:
    """Make ``spark.read.format("kafka-s3-topic")`` (Kafka) and ``"kafka-s3"`` (a backup) available, with filter
    pushdown to Python data sources on (``"kafka-s3"`` plans by the filters; Spark refuses a source that takes
    filters while it is off)."""
    from kafka_s3.spark.backup_source import BackupDataSource
    from kafka_s3.spark.kafka_source import KafkaTopicDataSource

    session.conf.set("spark.sql.python.filterPushdown.enabled", "true")

    session.dataSource.register(KafkaTopicDataSource)
    session.dataSource.register(BackupDataSource)


def spark_settings(config_values: Mapping[str, str]) -> dict[str, str]:
    """The ``spark.*`` keys of a connector configuration (passed through to the session)."""
    return {k: str(v) for k, v in config_values.items() if k.startswith("spark.")}
