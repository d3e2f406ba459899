"""Issue 16, items 5 and 6 as a user sees them: ``kafka-s3 read`` and ``kafka-s3 status``, the real command in a
subprocess against the real Kafka broker and S3 server."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.restore import as_another_tools_bucket, records, run_cli, write_properties

pytestmark = pytest.mark.integration

ENVELOPE = {"format.class": "json", "store.envelope": "true"}


def object_key(topic: str, partition: int, start: int, extension: str = ".json") -> str:
    return f"topics/{topic}/partition={partition}/{topic}+{partition}+{start:010d}{extension}"


@pytest.fixture
def backup_with_a_hole(make_config, fresh_bucket, fresh_topic, produce, backup, s3_client, tmp_path):
    """9 records of one partition backed up in three objects (offsets 0, 3, 6), the middle one deleted (and the
    manifests, as another tool's bucket would be): offsets 3..5 are a gap. Returns (topic, config file)."""
    topic = fresh_topic(1)
    produce(topic, records(1, 9))
    backup(fresh_bucket, topic, ENVELOPE)
    as_another_tools_bucket(s3_client, fresh_bucket)
    s3_client.delete_object(Bucket=fresh_bucket, Key=object_key(topic, 0, 3))
    raw, _ = make_config(fresh_bucket, topic, source=True, format__class="json", store__envelope="true")
    return topic, str(write_properties(tmp_path / "read.properties", raw))


def test_read_prints_partition_and_offset_per_record_and_says_where_the_gap_is(backup_with_a_hole):
    topic, path = backup_with_a_hole
    result = run_cli(["read", "--config", path, "--offset", "0:1", "--count", "4"], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["partition", "offset", "timestamp", "(UTC)", "key", "value"], lines
    assert [line.split()[:2] for line in lines[1:3]] == [["0", "1"], ["0", "2"]], lines
    assert lines[3].startswith(f"gap: {topic}[0] offsets 3..5 not in the backup"), lines
    assert [line.split()[:2] for line in lines[4:]] == [["0", "6"], ["0", "7"]], lines
    row = lines[1].split(maxsplit=4)
    assert row[2] == "2023-11-14T22:13:21.000Z" and row[3] == "k1", row  # record timestamp and key from the envelope
    assert '{"n": 1, "s": "value-1"}' in lines[1] and "headers: h=1, h=1" in lines[1], lines[1]


def test_read_format_json_is_one_object_per_record_and_the_gap_goes_to_stderr(backup_with_a_hole):
    topic, path = backup_with_a_hole
    result = run_cli(["read", "--config", path, "--offset", "0:1", "--count", "4", "--json"], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(d["topic"], d["partition"], d["offset"]) for d in docs] == [(topic, 0, o) for o in (1, 2, 6, 7)]
    assert docs[0]["key"] == "k1" and json.loads(docs[0]["value"]) == {"n": 1, "s": "value-1"}
    assert docs[0]["timestamp"] == 1_700_000_001_000 and docs[0]["headers"] == [["h", "1"], ["h", "1"]]
    assert f"gap: {topic}[0] offsets 3..5 not in the backup" in result.stderr


def test_read_format_raw_prints_values_only(backup_with_a_hole):
    topic, path = backup_with_a_hole
    result = run_cli(["read", "--config", path, "--offset", "0:2", "--count", "2", "--raw"], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [json.loads(line)["n"] for line in result.stdout.splitlines()] == [2, 6]
    assert f"gap: {topic}[0] offsets 3..5 not in the backup" in result.stderr
    b64 = run_cli(["read", "--config", path, "--offset", "0:0", "--raw", "--base64"], timeout=120)
    assert b64.stdout == "eyJuIjogMCwgInMiOiAidmFsdWUtMCJ9\n", b64.stdout  # base64 of the first value


def test_read_says_when_the_first_offset_asked_for_is_in_a_gap(backup_with_a_hole):
    topic, path = backup_with_a_hole
    result = run_cli(["read", "--config", path, "--offset", "0:4", "--count", "1"], timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[1].startswith(f"gap: {topic}[0] offsets 4..5 not in the backup"), lines
    assert lines[2].split()[:2] == ["0", "6"], lines


# ---------------------------------------------------------------------------------------------------- item 5: status
@pytest.fixture
def backed_up_with_lag(make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path):
    """Two partitions of 6 records backed up (objects at offsets 0 and 3 of each), then 2 more records on partition
    0: lag 2 there. Returns (topic, group, raw configuration, config file)."""
    topic = fresh_topic(2)
    produce(topic, records(2, 6))
    backup(fresh_bucket, topic, ENVELOPE)
    produce(topic, [{"partition": 0, "value": b'{"n": 6}'}, {"partition": 0, "value": b'{"n": 7}'}])
    raw, _ = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in ENVELOPE.items()})
    return topic, f"connect-{raw['name']}", raw, str(write_properties(tmp_path / "status.properties", raw))


def _status(path: str) -> tuple[dict[int, dict], str]:
    as_json = run_cli(["status", "--config", path, "--json"], timeout=120)
    assert as_json.returncode == 0, as_json.stderr[-3000:]
    table = run_cli(["status", "--config", path], timeout=120)
    assert table.returncode == 0, table.stderr[-3000:]
    return {row["partition"]: row for row in json.loads(as_json.stdout)}, table.stdout


def _cells(table: str, key: str) -> list[str]:
    line = next(line for line in table.splitlines() if key in line)
    return [c.strip() for c in line.replace("┃", "│").split("│") if c.strip()]


def test_status_reads_kafka_and_the_bucket(backed_up_with_lag):
    topic, group, _, path = backed_up_with_lag
    rows, table = _status(path)
    for partition, end in ((0, 8), (1, 6)):
        row = rows[partition]
        last = object_key(topic, partition, 3)
        assert (row["committed"], row["end"], row["lag"], row["bucket_committed"]) == (6, end, end - 6, 6), row
        assert (row["last_object"], row["view"], row["group"]) == (last, "group", group), row
        assert 0 <= row["last_commit_age_s"] < 600, row
        cells = _cells(table, last)
        assert cells[:5] == [topic, str(partition), "6", str(end), str(end - 6)], cells
        assert cells[5] == last and cells[7].endswith("s") and cells[8:] == ["6", "-", "group"], cells


def test_status_shows_the_buckets_view_when_the_consumer_group_is_gone(backed_up_with_lag, kafka_bootstrap):
    from confluent_kafka.admin import AdminClient

    topic, group, _, path = backed_up_with_lag
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})  # kept referenced until the deletion is done
    for future in admin.delete_consumer_groups([group]).values():
        future.result(30)
    rows, table = _status(path)
    for partition, end in ((0, 8), (1, 6)):
        row = rows[partition]
        last = object_key(topic, partition, 3)
        assert (row["committed"], row["end"], row["lag"], row["bucket_committed"]) == (None, end, end - 6, 6), row
        assert (row["last_object"], row["view"]) == (last, "bucket"), row
        assert row["last_commit"] is not None and 0 <= row["last_commit_age_s"] < 600, row  # the object's time
        cells = _cells(table, last)
        assert cells[:5] == [topic, str(partition), "-", str(end), str(end - 6)], cells
        assert cells[8:] == ["6", "-", "bucket"], cells
    assert f"group {group} has no committed offset for 2 partition(s)" in table
    assert "from the bucket's chunk manifests" in table


@pytest.mark.issue(28, item=3)
def test_read_into_a_pipe_whose_reader_has_gone_exits_0_without_an_error(backup_with_a_hole):
    """``kafka-s3 read … | head -1``: once ``head`` has what it wants it closes the pipe; the records left to print
    are nobody's business, not a failure (it said ``kafka-s3: error: [Errno 32] Broken pipe``, exit 1)."""
    _, path = backup_with_a_hole
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafka_s3.cli", "read", "--config", path, "--offset", "0:0", "--count", "9"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the first record is printed
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()[-3000:]
    assert "error" not in err.decode() and "Broken pipe" not in err.decode(), err.decode()[-3000:]
