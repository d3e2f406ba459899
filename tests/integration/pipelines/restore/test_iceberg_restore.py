"""A restore from an Apache Iceberg table (issue 31, item 4): the table kafka-s3 backed up is restored record for
record into another topic, exactly once, its scan planned with the offset and time bounds pushed down, at a snapshot
of the past (``--as-of-snapshot`` / ``--as-of-timestamp``), and a row missing from the table is an error before
anything is produced. Real Kafka, S3, Spark, and pyiceberg's SQL catalog on a sqlite file."""

from __future__ import annotations

import datetime as dt

import pytest

import kafka_s3
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import BackupIncomplete
from kafka_s3.io.iceberg import catalog_from_config
from kafka_s3.io.kafka.admin import Admin
from tests.support.integration import iceberg_sink, run_cli, write_properties
from tests.support.restore import fidelity, read_topic

pytestmark = [pytest.mark.integration, pytest.mark.issue(31, item=4)]

TABLE = "lake.orders"
HOUR_MS = 3_600_000
BASE_MS = int(dt.datetime(2026, 11, 29, 10, 30, tzinfo=dt.UTC).timestamp() * 1000)


def _records(partitions: int, first: int, count: int) -> list[dict]:
    """Records whose times go back and forth between two hours (a partition's offsets interleave across its hourly
    files), with repeated header keys, a tombstone and a keyless record per partition."""
    return [
        {
            "partition": p,
            "key": None if i == 1 else f"k{p}-{i}".encode(),
            "value": None if i == 2 else f"v{p}-{i}".encode(),
            "headers": [("h", f"a{i}".encode()), ("h", b"b"), ("other", None)],
            "timestamp": BASE_MS + (i % 2) * HOUR_MS + i,
        }
        for p in range(partitions)
        for i in range(first, first + count)
    ]


@pytest.fixture
def lake(fresh_bucket, s3_env, kafka_bootstrap, tmp_path):
    """``lake(topic, target, **more)``: an Iceberg sink configuration backing ``topic`` up into :data:`TABLE`
    (hour and partition), restoring into ``target``."""

    def properties(topic: str, target: str, **more: str) -> dict[str, str]:
        catalog_uri, warehouse = f"sqlite:///{tmp_path / 'catalog.db'}", f"s3://{fresh_bucket}/warehouse"
        return {
            **iceberg_sink(f"lake-{topic}", topic, TABLE, catalog_uri, warehouse, kafka_bootstrap, s3_env),
            "iceberg.tables.default-partition-by": "hour(timestamp), partition",
            "topic.rename": f"{topic}:{target}",
            "topic.creation.enable": "true",
            **more,
        }

    return properties


def _table(properties):
    return catalog_from_config(SINK.parse(properties)).load_table(TABLE)


def test_a_restore_from_a_table_gives_back_every_record_exactly_and_a_second_run_produces_nothing(
    spark, fresh_topic, produce, lake, kafka_bootstrap
):
    topic = fresh_topic(2)
    target = f"{topic}-restored"
    produce(topic, _records(2, 0, 40))
    properties = lake(topic, target)
    kafka_s3.backup(properties, once=True, spark=spark)

    summary = kafka_s3.restore(properties, spark=spark)

    assert summary.records == 80
    source, restored = read_topic(kafka_bootstrap, topic), read_topic(kafka_bootstrap, target)
    for p in range(2):
        assert fidelity(restored[p]) == fidelity(source[p])
    assert kafka_s3.restore(properties, spark=spark).records == 0
    assert len(read_topic(kafka_bootstrap, target)[0]) == 40


def test_a_restore_as_of_an_earlier_snapshot_restores_only_the_rows_that_snapshot_held(
    spark, fresh_topic, produce, lake, kafka_bootstrap
):
    topic = fresh_topic(1)
    produce(topic, _records(1, 0, 10))
    properties = lake(topic, f"{topic}-then")
    kafka_s3.backup(properties, once=True, spark=spark)
    first = _table(properties).current_snapshot()
    produce(topic, _records(1, 10, 5))
    kafka_s3.backup(properties, once=True, spark=spark)

    by_id = kafka_s3.restore(properties, kafka_s3.restore_options(as_of_snapshot=first.snapshot_id), spark=spark)
    by_time = kafka_s3.restore(
        lake(topic, f"{topic}-at"), kafka_s3.restore_options(as_of_timestamp=first.timestamp_ms), spark=spark
    )

    assert (by_id.records, by_time.records) == (10, 10)
    source = read_topic(kafka_bootstrap, topic)[0]
    assert fidelity(read_topic(kafka_bootstrap, f"{topic}-then")[0]) == fidelity(source[:10])
    assert fidelity(read_topic(kafka_bootstrap, f"{topic}-at")[0]) == fidelity(source[:10])


def test_offset_bounds_are_pushed_down_to_the_scan_and_plan_fewer_files(spark, fresh_topic, produce, lake):
    from kafka_s3.pipelines.restore.iceberg.plan import TableSource

    topic = fresh_topic(1)
    produce(topic, [{"value": f"v{i}".encode(), "timestamp": BASE_MS + i} for i in range(200)])
    properties = lake(topic, f"{topic}-some", **{"flush.size": "50"})
    kafka_s3.backup(properties, once=True, spark=spark)
    config = SINK.parse(properties)
    everything = TableSource.open(config, kafka_s3.restore_options()).plan()
    bounded = TableSource.open(config, kafka_s3.restore_options(from_offset="0:120", until_offset="0:140")).plan()

    assert sum(len(files) for files in everything.files.values()) == 4
    assert sum(len(files) for files in bounded.files.values()) == 1
    summary = kafka_s3.restore(
        properties, kafka_s3.restore_options(from_offset="0:120", until_offset="0:140"), spark=spark
    )
    assert summary.records == 20


# a topic name longer than the 16 characters Iceberg's default statistics keep must not hide a gap
@pytest.mark.parametrize("prefix", ["t", "orders-europe-west"], ids=["short-topic", "long-topic"])
def test_a_row_missing_from_the_table_is_an_error_naming_the_table_partition_and_offset_before_anything_is_produced(
    spark, fresh_topic, produce, lake, kafka_bootstrap, prefix
):
    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThanOrEqual

    topic = fresh_topic(1, prefix=prefix)
    produce(topic, [{"value": f"v{i}".encode(), "timestamp": BASE_MS + i} for i in range(150)])
    properties = lake(topic, f"{topic}-gap", **{"flush.size": "50"})
    kafka_s3.backup(properties, once=True, spark=spark)
    # the data file of offsets 50..99 dropped from the table (a delete of exactly its rows removes it whole)
    _table(properties).delete(
        And(EqualTo("partition", 0), GreaterThanOrEqual("offset", 50), LessThanOrEqual("offset", 99))
    )

    with pytest.raises(BackupIncomplete, match=rf"Iceberg table {TABLE}.*{topic}\[0\].*offset 50"):
        kafka_s3.restore(properties, spark=spark)
    assert f"{topic}-gap" not in Admin({"bootstrap.servers": kafka_bootstrap}).topics()


@pytest.mark.parametrize(("lost_from", "lost_to"), [(0, 49), (0, 149)], ids=["first-file", "every-file"])
def test_a_table_that_lost_its_first_rows_is_an_error_naming_the_first_offset_backed_up(
    spark, fresh_topic, produce, lake, kafka_bootstrap, lost_from, lost_to
):
    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThanOrEqual

    topic = fresh_topic(1)
    produce(topic, [{"value": f"v{i}".encode(), "timestamp": BASE_MS + i} for i in range(150)])
    properties = lake(topic, f"{topic}-head", **{"flush.size": "50"})
    kafka_s3.backup(properties, once=True, spark=spark)
    _table(properties).delete(
        And(EqualTo("partition", 0), GreaterThanOrEqual("offset", lost_from), LessThanOrEqual("offset", lost_to))
    )

    with pytest.raises(BackupIncomplete, match=rf"Iceberg table {TABLE}.*{topic}\[0\].*offset 0\b"):
        kafka_s3.restore(properties, spark=spark)
    assert f"{topic}-head" not in Admin({"bootstrap.servers": kafka_bootstrap}).topics()


def test_a_dry_run_of_the_cli_as_of_a_snapshot_lists_that_snapshots_files_and_produces_nothing(
    fresh_topic, produce, lake, kafka_bootstrap, spark, tmp_path
):
    topic = fresh_topic(1)
    produce(topic, _records(1, 0, 6))
    properties = lake(topic, f"{topic}-cli")
    kafka_s3.backup(properties, once=True, spark=spark)
    first = _table(properties).current_snapshot().snapshot_id
    produce(topic, _records(1, 6, 4))
    kafka_s3.backup(properties, once=True, spark=spark)
    path = write_properties(tmp_path / "lake.properties", properties)

    done = run_cli(["restore", "-c", str(path), "--as-of-snapshot", str(first), "--dry-run"])

    assert done.returncode == 0, done.stderr
    # the first snapshot's 6 records, in one file per hour (their times alternate between two hours)
    assert f"{topic}[0] -> {topic}-cli[0]: 2 data files" in done.stdout
    assert "offsets 0..5, 6 rows in those files" in done.stdout
    assert f"Iceberg table {TABLE} at snapshot {first}" in done.stdout
    assert f"{topic}-cli" not in Admin({"bootstrap.servers": kafka_bootstrap}).topics()
