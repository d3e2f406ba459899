"""A backup cycle writes an Apache Iceberg table, exactly once (issue 31, items 2 and 3): Spark tasks write Parquet
data files carrying Iceberg field ids and statistics, one per partition value; the driver commits one snapshot per
cycle whose summary holds every topic-partition's next offset; the table, not the consumer group, says where a
backup resumes. Real Kafka, S3, Spark, and pyiceberg's SQL catalog on a sqlite file."""

from __future__ import annotations

import datetime as dt

import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThanOrEqual

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.iceberg.offsets import parse_offsets
from kafka_s3.io.iceberg import catalog_from_config
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.pipelines.backup.iceberg.driver import TableBackup
from tests.support.backup import group_offsets
from tests.support.integration import iceberg_sink, list_keys

pytestmark = [pytest.mark.integration, pytest.mark.issue(31, item=3)]

TABLE = "backups.orders"
PARTITIONS, PER_PARTITION = 3, 6
HOUR_MS = 3_600_000
BASE_MS = int(dt.datetime(2026, 11, 29, 10, 30, tzinfo=dt.UTC).timestamp() * 1000)


@pytest.fixture
def catalog(tmp_path, fresh_bucket, s3_env):
    """pyiceberg's SQL catalog on a sqlite file, its warehouse in the test's bucket."""
    return SqlCatalog(
        "backups",
        uri=f"sqlite:///{tmp_path / 'catalog.db'}",
        warehouse=f"s3://{fresh_bucket}/warehouse",
        **{
            "s3.endpoint": s3_env["endpoint_url"],
            "s3.access-key-id": s3_env["access_key"],
            "s3.secret-access-key": s3_env["secret_key"],
            "s3.region": s3_env["region"],
        },
    )


def _records(first: int = 0, count: int = PER_PARTITION) -> list[dict]:
    """Records spanning two hours, with repeated header keys, a tombstone and a keyless record per partition."""
    rows = []
    for p in range(PARTITIONS):
        for i in range(first, first + count):
            rows.append(
                {
                    "partition": p,
                    "key": None if i == 1 else f"k{p}-{i}".encode(),
                    "value": None if i == 2 else f"v{p}-{i}".encode(),
                    "headers": [("h", f"a{i}".encode()), ("h", b"b"), ("other", None)],
                    "timestamp": BASE_MS + (i % 2) * HOUR_MS + i,
                }
            )
    return rows


def _table_rows(catalog) -> list[dict]:
    rows = catalog.load_table(TABLE).scan().to_arrow().sort_by([("partition", "ascending"), ("offset", "ascending")])
    return rows.to_pylist()


def _expected(topic: str, count: int) -> list[dict]:
    out = []
    for p in range(PARTITIONS):
        for i in range(count):
            record = next(r for r in _records(i, 1) if r["partition"] == p)
            out.append(
                {
                    "key": record["key"],
                    "value": record["value"],
                    "topic": topic,
                    "partition": p,
                    "offset": i,
                    "timestamp": dt.datetime.fromtimestamp(record["timestamp"] / 1000, dt.UTC),
                    "timestampType": 0,
                    "headers": [{"key": k, "value": v} for k, v in record["headers"]],
                }
            )
    return out


def _backup(config, engine, catalog) -> TableBackup:
    return TableBackup(config, engine, catalog, TABLE, partition_by="hour(timestamp), partition")


def _config(make_config, bucket, topic):
    return make_config(bucket, topic, format__class="parquet", store__envelope="true")[1]


def _table_files(catalog) -> set[str]:
    return {task.file.file_path for task in catalog.load_table(TABLE).scan().plan_files()}


def test_a_backup_cycle_commits_one_snapshot_of_field_id_parquet_files_split_by_hour_and_partition(
    engine, make_config, fresh_bucket, fresh_topic, produce, catalog, kafka_bootstrap
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, _records())
    config = _config(make_config, fresh_bucket, topic)

    summary = _backup(config, engine, catalog).run_once()

    table = catalog.load_table(TABLE)
    assert summary.records == PARTITIONS * PER_PARTITION
    assert len(table.snapshots()) == 1
    assert parse_offsets(table.current_snapshot().summary.additional_properties) == {
        (topic, p): PER_PARTITION for p in range(PARTITIONS)
    }
    assert _table_rows(catalog) == _expected(topic, PER_PARTITION)
    files = [task.file for task in table.scan().plan_files()]
    assert len(files) == PARTITIONS * 2  # one per (hour, partition)
    for data_file in files:
        schema = pq.read_schema(table.io.new_input(data_file.file_path).open())
        assert schema.field("offset").metadata[b"PARQUET:field_id"] == b"5"
        assert data_file.lower_bounds.keys() >= {5, 6} and data_file.upper_bounds.keys() >= {5, 6}
    # partition 0's offsets 2..4: only partition 0's files are planned
    scan = table.scan(
        row_filter=And(EqualTo("partition", 0), GreaterThanOrEqual("offset", 2), LessThanOrEqual("offset", 4))
    )
    assert {task.file.partition[1] for task in scan.plan_files()} == {0}
    assert scan.to_arrow().num_rows == 3
    assert group_offsets(kafka_bootstrap, f"connect-{config['name']}", topic, PARTITIONS) == dict.fromkeys(
        range(PARTITIONS), PER_PARTITION
    )


class DriverKilled(BaseException):
    """The driver dying after its tasks wrote their files and before it commits (as kill -9 would leave it)."""


class DiesAfterTasks:
    """The shared engine; the driver dies as the first job's results come back."""

    def __init__(self, engine):
        self.engine = engine

    def run_tasks(self, description, task, count):
        self.engine.run_tasks(description, task, count)
        raise DriverKilled

    def __getattr__(self, name):
        return getattr(self.engine, name)


def test_files_written_but_never_committed_are_written_again_by_the_rerun_and_committed_once(
    engine, make_config, fresh_bucket, fresh_topic, produce, catalog, s3_client
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, _records())
    config = _config(make_config, fresh_bucket, topic)
    with pytest.raises(DriverKilled):
        _backup(config, DiesAfterTasks(engine), catalog).run_once()
    orphans = {
        f"s3://{fresh_bucket}/{k}" for k in list_keys(s3_client, fresh_bucket, "warehouse/") if k.endswith(".parquet")
    }
    assert orphans and catalog.load_table(TABLE).current_snapshot() is None

    _backup(config, engine, catalog).run_once()

    assert _table_rows(catalog) == _expected(topic, PER_PARTITION)
    assert len(catalog.load_table(TABLE).snapshots()) == 1
    assert not orphans & _table_files(catalog)  # the killed run's files stay orphans (for prune)


def test_a_group_behind_the_table_resumes_from_the_table_without_duplicate_rows(
    engine, make_config, fresh_bucket, fresh_topic, produce, catalog, kafka_bootstrap
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, _records())
    config = _config(make_config, fresh_bucket, topic)
    _backup(config, engine, catalog).run_once()
    group = f"connect-{config['name']}"
    # the snapshot was committed, the group's commit lost: the group is where it was before the cycle
    Admin({"bootstrap.servers": kafka_bootstrap}).commit_group_offsets(
        group, {(topic, p): 0 for p in range(PARTITIONS)}
    )
    produce(topic, _records(PER_PARTITION, 2))

    summary = _backup(config, engine, catalog).run_once()

    assert summary.records == PARTITIONS * 2
    assert _table_rows(catalog) == _expected(topic, PER_PARTITION + 2)
    assert group_offsets(kafka_bootstrap, group, topic, PARTITIONS) == dict.fromkeys(
        range(PARTITIONS), PER_PARTITION + 2
    )


class RivalCommitsFirst:
    """The shared engine; while the first job's files are written, a second backup of the same table runs whole."""

    def __init__(self, engine, rival):
        self.engine = engine
        self.rival = rival
        self.rival_ran = False

    def run_tasks(self, description, task, count):
        results = self.engine.run_tasks(description, task, count)
        if not self.rival_ran:
            self.rival_ran = True
            self.rival()
        return results

    def __getattr__(self, name):
        return getattr(self.engine, name)


def test_two_backups_of_one_table_at_once_both_commit_and_no_record_is_in_the_table_twice(
    engine, make_config, fresh_bucket, fresh_topic, produce, catalog
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, _records())
    config = _config(make_config, fresh_bucket, topic)
    rival = RivalCommitsFirst(engine, lambda: _backup(config, engine, catalog).run_once())

    summary = _backup(config, rival, catalog).run_once()

    assert rival.rival_ran
    assert summary.records == 0 and summary.dropped_files == PARTITIONS * 2  # its files named offsets already in
    assert _table_rows(catalog) == _expected(topic, PER_PARTITION)
    assert len(catalog.load_table(TABLE).snapshots()) == 1


def test_a_backup_of_an_iceberg_sink_configuration_writes_each_topic_into_the_table_its_route_names(
    spark, fresh_bucket, fresh_topic, produce, s3_env, kafka_bootstrap, tmp_path
):
    import kafka_s3

    orders, payments = fresh_topic(1, prefix="orders"), fresh_topic(1, prefix="pay")
    produce(orders, [{"value": f"o{i}".encode(), "timestamp": BASE_MS + i} for i in range(3)])
    produce(payments, [{"value": f"p{i}".encode(), "timestamp": BASE_MS + i} for i in range(2)])
    catalog_uri, warehouse = f"sqlite:///{tmp_path / 'catalog.db'}", f"s3://{fresh_bucket}/warehouse"
    properties = {
        **iceberg_sink(
            "lake", f"{orders},{payments}", "lake.orders,lake.payments", catalog_uri, warehouse, kafka_bootstrap, s3_env
        ),
        "iceberg.tables.route-field": "topic",
        "iceberg.table.lake.orders.route-regex": "orders-.*",
        "iceberg.table.lake.payments.route-regex": "pay-.*",
        "iceberg.tables.default-partition-by": "day(timestamp)",
    }

    summary = kafka_s3.backup(properties, once=True, spark=spark)

    assert (summary.records, summary.snapshots) == (5, 2)
    catalog = catalog_from_config(SINK.parse(properties))  # the catalog the file names, as the backup opened it
    for table, topic, values in (
        ("lake.orders", orders, [b"o0", b"o1", b"o2"]),
        ("lake.payments", payments, [b"p0", b"p1"]),
    ):
        rows = (
            catalog.load_table(table).scan(selected_fields=("topic", "value")).to_arrow().sort_by("value").to_pylist()
        )
        assert rows == [{"topic": topic, "value": v} for v in values]
        assert [f.name for f in catalog.load_table(table).spec().fields] == ["timestamp_day"]
