"""Issue 28, item 3 as a kcat or kafka-console-consumer user types it: ``-b``, ``-X``, ``-t``, ``-p`` and ``-o`` in
kcat's forms on the real command in a subprocess, against one small backup in the real S3 server shared by the
module (two topics: three partitions of 100 records, one of 10; a tombstone at the end of the first topic's
partition 2), ``read`` quiet by default and tombstones printed as ``null`` in every output format."""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest

from tests.support.restore import records, run_cli, write_properties

pytestmark = [pytest.mark.integration, pytest.mark.issue(28, item=3)]

BASE_TS = 1_700_000_000_000  # records(): partition offset i has timestamp BASE_TS + i * 1000
PER_PARTITION = 100


@pytest.fixture(scope="module")
def backed_up(s3_client, s3_env, kafka_bootstrap, engine, tmp_path_factory):
    """Topic ``orders`` (3 partitions x 100 records, offset 99 of partition 2 a tombstone) and ``events`` (1 x 10),
    backed up once in envelope JSON objects of 40 records. Returns (orders, events, the config file for reading, the
    same file for commands of the backup side)."""
    from confluent_kafka import Producer

    from kafka_s3.core.config.sink import SINK
    from kafka_s3.io.kafka.admin import Admin
    from kafka_s3.pipelines.backup.driver import Backup

    suffix = uuid.uuid4().hex[:10]
    orders, events, bucket = f"orders-{suffix}", f"events-{suffix}", f"t-{suffix}"
    s3_client.create_bucket(Bucket=bucket)
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    admin.create_topic(orders, 3, config={"retention.ms": "-1"})
    admin.create_topic(events, 1, config={"retention.ms": "-1"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for topic, partitions, per_partition in ((orders, 3, PER_PARTITION), (events, 1, 10)):
        for record in records(partitions, per_partition):
            last = record["partition"] == 2 and record["timestamp"] == BASE_TS + (PER_PARTITION - 1) * 1000
            producer.produce(
                topic,
                value=None if last else record["value"],
                key=record["key"],
                partition=record["partition"],
                headers=record["headers"],
                timestamp=record["timestamp"],
            )
    producer.flush()
    raw = {
        "name": f"flags-{suffix}",
        "topics": f"{orders},{events}",
        "flush.size": "40",
        "s3.bucket.name": bucket,
        "store.url": s3_env["endpoint_url"],
        "s3.region": s3_env["region"],
        "aws.access.key.id": s3_env["access_key"],
        "aws.secret.access.key": s3_env["secret_key"],
        "bootstrap.servers": kafka_bootstrap,
        "format.class": "json",
        "store.envelope": "true",
    }
    Backup(SINK.parse(raw), engine=engine).run_once()
    folder = tmp_path_factory.mktemp("flags")
    path = str(write_properties(folder / "backup.properties", raw))  # read takes a backup's file as it is
    yield orders, events, path, path
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            s3_client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
    s3_client.delete_bucket(Bucket=bucket)  # SeaweedFS gives every bucket volumes of its own: slots run out


def read_json(*args: str) -> list[tuple[str, int, int]]:
    """``kafka-s3 read ARGS --json``: (topic, partition, offset) of each record printed; the command must succeed."""
    result = run_cli(["read", *args, "--json"], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return [(d["topic"], d["partition"], d["offset"]) for d in map(json.loads, result.stdout.splitlines())]


def test_read_offset_beginning_prints_every_partition_from_its_first_record(backed_up):
    orders, _, source, _ = backed_up
    printed = read_json("-c", source, "-t", orders, "-o", "beginning")
    assert printed == [(orders, p, o) for p in range(3) for o in range(PER_PARTITION)]


def test_read_offset_end_prints_nothing_and_exits_0(backed_up):
    orders, _, source, _ = backed_up
    assert read_json("-c", source, "-t", orders, "-o", "end") == []


def test_read_offset_number_starts_at_that_offset_and_reads_to_the_end(backed_up):
    orders, _, source, _ = backed_up
    assert read_json("-c", source, "-t", orders, "-p", "1", "-o", "97") == [(orders, 1, o) for o in (97, 98, 99)]


def test_read_offset_minus_n_prints_the_last_n_records_of_each_partition_given(backed_up):
    orders, _, source, _ = backed_up
    printed = read_json("-c", source, "-t", orders, "-p", "0", "-p", "1", "-o", "-2")
    assert printed == [(orders, 0, 98), (orders, 0, 99), (orders, 1, 98), (orders, 1, 99)]


def test_read_offset_at_epoch_ms_starts_at_the_first_record_at_or_after_that_time(backed_up):
    orders, _, source, _ = backed_up
    at_50 = read_json("-c", source, "-t", orders, "-p", "0", "-o", f"s@{BASE_TS + 50_000}", "--count", "2")
    assert at_50 == [(orders, 0, 50), (orders, 0, 51)]
    between = read_json("-c", source, "-t", orders, "-p", "0", "-o", f"s@{BASE_TS + 50_500}", "--count", "1")
    assert between == [(orders, 0, 51)]


def test_read_offset_at_an_iso_time_starts_at_the_first_record_at_or_after_it(backed_up):
    orders, _, source, _ = backed_up
    iso = dt.datetime.fromtimestamp((BASE_TS + 60_000) / 1000, dt.UTC).isoformat().replace("+00:00", "Z")
    assert read_json("-c", source, "-t", orders, "-p", "2", "-o", f"s@{iso}", "--count", "1") == [(orders, 2, 60)]


def test_read_topic_repeated_reads_every_partition_of_each_topic(backed_up):
    orders, events, source, _ = backed_up
    printed = read_json("-c", source, "-t", orders, "-t", events, "-o", "-1")
    assert printed == [(orders, 0, 99), (orders, 1, 99), (orders, 2, 99), (events, 0, 9)]


def test_read_partition_and_offset_pairs_keep_working_and_print_one_record_by_default(backed_up):
    orders, _, source, _ = backed_up
    assert read_json("-c", source, "-t", orders, "--offset", "1:5") == [(orders, 1, 5)]
    assert read_json("-c", source, "-t", orders, "-o", "0:5,2:7", "--count", "2") == [
        (orders, 0, 5),
        (orders, 0, 6),
        (orders, 2, 7),
        (orders, 2, 8),
    ]


@pytest.mark.parametrize("output", ["table", "--json", "--raw"])
def test_read_prints_a_tombstone_as_null_in_every_format(backed_up, output):
    orders, _, source, _ = backed_up
    flags = [] if output == "table" else [output]
    result = run_cli(["read", "-c", source, "-t", orders, "-p", "2", "-o", "-1", *flags], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    last = result.stdout.splitlines()[-1]
    if output == "--json":
        assert json.loads(last)["value"] is None, last
    elif output == "--raw":
        assert last == "null", result.stdout
    else:
        assert last.split(maxsplit=4)[4].startswith("null  headers:"), last  # the value column


def test_read_is_quiet_by_default_and_logs_the_layout_with_verbose(backed_up):
    orders, _, source, _ = backed_up
    quiet = run_cli(["read", "-c", source, "-t", orders, "-p", "0", "-o", "-1"], timeout=120)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr[-3000:]
    verbose = run_cli(["read", "-c", source, "-t", orders, "-p", "0", "-o", "-1", "-v"], timeout=120)
    assert verbose.returncode == 0 and "layout:" in verbose.stderr, verbose.stderr[-3000:]


def test_bootstrap_server_flag_overrides_a_configuration_whose_bootstrap_is_wrong(backed_up, kafka_bootstrap, tmp_path):
    orders, _, _, sink = backed_up
    wrong = tmp_path / "wrong-bootstrap.properties"
    with open(sink) as given:
        wrong.write_text(given.read().replace(f"bootstrap.servers={kafka_bootstrap}", "bootstrap.servers=127.0.0.1:9"))
    result = run_cli(["status", "-c", str(wrong), "-b", kafka_bootstrap, "-t", orders, "--json"], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads(result.stdout)
    assert sorted((r["topic"], r["partition"], r["end"]) for r in rows) == [(orders, p, 100) for p in range(3)]


def test_client_property_flag_reaches_the_kafka_client(backed_up, tmp_path):
    orders, _, _, sink = backed_up
    client_id = f"kafka-s3-x-{uuid.uuid4().hex[:8]}"
    args = ["--debug", "status", "-c", sink, "-t", orders, "-X", f"client.id={client_id}", "-X", "debug=broker"]
    result = run_cli(args, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"[{client_id}#" in result.stderr, result.stderr[-3000:]  # librdkafka names its clients CLIENT.ID#KIND-N
