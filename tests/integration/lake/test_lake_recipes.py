"""Issue 28 item 6: the recipes of docs/lake.md, run as written against a real envelope Parquet backup in the real S3,
so the guidance cannot go stale.

Each fenced block headed ```` ```python lake-recipe=<name> ```` is executed with ``bucket`` and ``topic`` bound to
the backup this module makes (``spark`` to the shared session; ``path`` to a local copy of the topic's objects for
the recipes that read files with an engine's own Parquet reader). A recipe leaves ``records`` (every record of the
topic, as that engine's table), ``tombstones`` (the records whose value is null) and ``lookup`` (offsets 10 to 14 of
partition 0); the tests check them: every record once with its partition, offset, key, value, headers and timestamp,
the tombstone, the lookup's records, and one ``partition`` column of Kafka's type (int32) despite the
``partition=<n>`` directories.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs
import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.pipelines.backup.driver import Backup
from tests.support.integration import iceberg_sink

pytestmark = [pytest.mark.integration, pytest.mark.issue(28, item=6)]

LAKE_DOC = Path(__file__).resolve().parents[3] / "docs" / "lake.md"
RECIPE_BLOCK = re.compile(r"^```python lake-recipe=(?P<name>[\w-]+)\n(?P<code>.*?)^```$", re.MULTILINE | re.DOTALL)
PARTITIONS = 2
RECORDS = 200  # 100 a partition, in 3 objects each (flush.size 40)
TOMBSTONE = 7  # the record whose value is null: partition 1, offset 3
FIRST_TIMESTAMP = 1_700_000_000_000
RESULTS = ("records", "tombstones", "lookup")  # the names every recipe leaves


def sent_record(i: int) -> dict[str, Any]:
    """The i-th record produced: keys k<i>, one tombstone, a repeated header key, its own timestamp."""
    return {
        "partition": i % PARTITIONS,
        "offset": i // PARTITIONS,
        "key": f"k{i}".encode(),
        "value": None if i == TOMBSTONE else f"v{i}".encode(),
        "headers": [("h", str(i).encode()), ("h", b"again")],
        "timestamp": FIRST_TIMESTAMP + i,
    }


EXPECTED = sorted(
    (r["partition"], r["offset"], r["key"], r["value"], r["headers"], r["timestamp"])
    for r in map(sent_record, range(RECORDS))
)


def recipes() -> dict[str, str]:
    """The recipe blocks of docs/lake.md by name."""
    return {m["name"]: m["code"] for m in RECIPE_BLOCK.finditer(LAKE_DOC.read_text())}


def run_recipe(name: str, **bindings: Any) -> dict[str, Any]:
    """Executes one recipe of docs/lake.md as written, with ``bindings`` as its free names; returns its names."""
    code = recipes()[name]
    namespace: dict[str, Any] = dict(bindings)
    exec(compile(code, f"docs/lake.md lake-recipe={name}", "exec"), namespace)
    return namespace


def rows(table: pa.Table) -> list[tuple]:
    """(partition, offset, key, value, headers, timestamp ms) of every row, sorted."""
    millis = table.column("timestamp").cast(pa.timestamp("ms", tz="UTC")).cast(pa.int64()).to_pylist()
    return sorted(
        (r["partition"], r["offset"], r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"]], ms)
        for r, ms in zip(table.to_pylist(), millis, strict=True)
    )


def assert_whole_topic(records: pa.Table, tombstones: pa.Table, lookup: pa.Table) -> None:
    """Every record once, as sent, with one ``partition`` column of Kafka's int32; the tombstone found by its null;
    the lookup's five records."""
    assert records.schema.names.count("partition") == 1
    assert records.schema.field("partition").type == pa.int32()
    assert records.schema.field("offset").type == pa.int64()
    assert rows(records) == EXPECTED
    tombstone = sent_record(TOMBSTONE)
    assert [(r["partition"], r["offset"], r["key"]) for r in tombstones.to_pylist()] == [
        (tombstone["partition"], tombstone["offset"], tombstone["key"])
    ]
    assert rows(lookup) == [row for row in EXPECTED if row[0] == 0 and 10 <= row[1] <= 14]


@pytest.fixture(scope="module")
def lake_backup(engine, s3_client, s3_env, kafka_bootstrap):
    """(bucket, topic) of one small envelope Parquet backup with the default partitioner, removed afterwards."""
    from confluent_kafka import Producer

    from kafka_s3.io.kafka.admin import Admin

    topic = f"lake-{uuid.uuid4().hex[:10]}"
    bucket = f"t-lake-{uuid.uuid4().hex[:12]}"
    Admin({"bootstrap.servers": kafka_bootstrap}).create_topic(topic, PARTITIONS, config={"retention.ms": "-1"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    for r in map(sent_record, range(RECORDS)):
        producer.produce(
            topic,
            key=r["key"],
            value=r["value"],
            partition=r["partition"],
            headers=r["headers"],
            timestamp=r["timestamp"],
        )
    producer.flush()
    s3_client.create_bucket(Bucket=bucket)
    sink = SINK.parse(
        {
            "name": f"it-{bucket}",
            "topics": topic,
            "s3.bucket.name": bucket,
            "store.url": s3_env["endpoint_url"],
            "s3.region": s3_env["region"],
            "bootstrap.servers": kafka_bootstrap,
            "format.class": "parquet",
            "store.envelope": "true",
            "flush.size": "40",
        }
    )
    Backup(sink, engine=engine).run_once()
    yield bucket, topic
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            s3_client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
    s3_client.delete_bucket(Bucket=bucket)


@pytest.fixture(scope="module")
def local_copy(lake_backup, s3_env, tmp_path_factory) -> Path:
    """The topic's objects copied to local disk as they are named in the bucket (``partition=<n>/<object>``)."""
    bucket, topic = lake_backup
    target = tmp_path_factory.mktemp("lake") / topic
    s3 = pyarrow.fs.S3FileSystem(endpoint_override=s3_env["endpoint_url"], region=s3_env["region"])
    pyarrow.fs.copy_files(f"{bucket}/topics/{topic}", str(target), source_filesystem=s3)
    return target


def test_the_pyarrow_dataset_recipe_reads_every_record_of_the_backup(lake_backup):
    bucket, topic = lake_backup
    names = run_recipe("pyarrow", bucket=bucket, topic=topic)
    assert_whole_topic(*(names[name] for name in RESULTS))


def test_the_polars_recipe_reads_every_record_of_the_backup(lake_backup):
    bucket, topic = lake_backup
    names = run_recipe("polars", bucket=bucket, topic=topic)
    assert_whole_topic(*(names[name].to_arrow() for name in RESULTS))


def test_the_duckdb_recipe_reads_every_record_of_the_backup(lake_backup):
    bucket, topic = lake_backup
    names = run_recipe("duckdb", bucket=bucket, topic=topic)
    assert_whole_topic(*(pa.table(names[name]) for name in RESULTS))


def test_the_spark_recipe_reads_every_record_of_the_backup(lake_backup, spark):
    bucket, topic = lake_backup
    names = run_recipe("spark", bucket=bucket, topic=topic, spark=spark)
    assert_whole_topic(*(names[name].toArrow() for name in RESULTS))


def test_duckdb_widens_the_partition_column_to_bigint_unless_told_hive_partitioning_false(local_copy):
    import duckdb

    def partition_type(options: str) -> str:
        relation = duckdb.sql(f"SELECT * FROM read_parquet('{local_copy}/*/*.parquet'{options})")
        return dict(zip(relation.columns, map(str, relation.types), strict=True))["partition"]

    assert partition_type("") == "BIGINT"  # the collision docs/lake.md describes
    assert partition_type(", hive_types = {'partition': INTEGER}") == "INTEGER"  # its other fix
    names = run_recipe("duckdb-files", path=str(local_copy))
    assert_whole_topic(*(pa.table(names[name]) for name in RESULTS))


def test_spark_parquet_reader_keeps_one_int_partition_column_with_recursive_file_lookup(local_copy, spark):
    inferred = spark.read.parquet(local_copy.as_uri())  # directories and files both named partition: int, once
    assert [t for name, t in inferred.dtypes if name == "partition"] == ["int"]
    names = run_recipe("spark-files", path=local_copy.as_uri(), spark=spark)
    assert_whole_topic(*(names[name].toArrow() for name in RESULTS))


@pytest.fixture(scope="module")
def lake_table(spark, s3_client, s3_env, kafka_bootstrap, lake_backup, tmp_path_factory):
    """Bindings of the table recipes: the same records backed up by ``kafka-s3 backup`` of an Iceberg sink file into
    a table (sqlite catalog, warehouse in a bucket of its own), removed afterwards."""
    import kafka_s3

    _, topic = lake_backup
    bucket = f"t-ice-{uuid.uuid4().hex[:12]}"
    s3_client.create_bucket(Bucket=bucket)
    catalog_uri = f"sqlite:///{tmp_path_factory.mktemp('catalog') / 'catalog.db'}"
    bindings = {"catalog_uri": catalog_uri, "warehouse": f"s3://{bucket}/warehouse", "table_name": "lake.records"}
    sink = iceberg_sink(
        f"it-{bucket}", topic, bindings["table_name"], catalog_uri, bindings["warehouse"], kafka_bootstrap, s3_env
    )
    sink.update({"iceberg.tables.default-partition-by": "partition", "flush.size": "40"})
    kafka_s3.backup(sink, once=True, spark=spark)
    yield bindings
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            s3_client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
    s3_client.delete_bucket(Bucket=bucket)


@pytest.mark.issue(31, item=4)
def test_the_pyiceberg_recipe_reads_every_record_of_a_table_backup(lake_table):
    names = run_recipe("iceberg-pyiceberg", **lake_table)
    assert_whole_topic(*(names[name] for name in RESULTS))


@pytest.mark.issue(31, item=4)
def test_the_polars_recipe_reads_every_record_of_a_table_backup(lake_table):
    names = run_recipe("iceberg-polars", **lake_table)
    assert_whole_topic(*(names[name].to_arrow() for name in RESULTS))


@pytest.mark.issue(31, item=4)
def test_the_duckdb_recipe_reads_every_record_of_a_table_backup(lake_table):
    names = run_recipe("iceberg-duckdb", **lake_table)
    assert_whole_topic(*(names[name].to_arrow_table() for name in RESULTS))


def test_every_recipe_of_the_doc_is_run_by_a_test():
    """A recipe added to docs/lake.md without a test here would be guidance nobody runs."""
    assert set(recipes()) == {
        "pyarrow",
        "polars",
        "duckdb",
        "spark",
        "duckdb-files",
        "spark-files",
        "iceberg-pyiceberg",
        "iceberg-polars",
        "iceberg-duckdb",
    }


def test_the_shipped_spark_session_has_no_s3_filesystem_for_its_parquet_reader(lake_backup, spark):
    """docs/lake.md says spark.read.parquet("s3a://…") needs hadoop-aws, which the shipped session lacks."""
    bucket, topic = lake_backup
    with pytest.raises(Exception, match="S3AFileSystem not found"):
        spark.read.parquet(f"s3a://{bucket}/topics/{topic}")
    assert "S3AFileSystem not found" in LAKE_DOC.read_text()
