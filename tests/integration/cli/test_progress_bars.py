"""The progress display of bounded runs (``backup --once``, ``restore``) on a real terminal (a pseudo-terminal: bars
only draw there), against the real services: the step named as it happens, no time left before it means something, every
bar complete at the end, log lines above the bars, and a backup's "committed" lines as its objects are stored.

One backup and one restore run (module fixtures) serve every test: each CLI run starts Spark, which costs seconds.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from dataclasses import dataclass

import pytest

from tests.support.integration import run_in_terminal
from tests.support.restore import write_properties

pytestmark = pytest.mark.integration

RECORDS = 3_000
PARTITIONS = 3
FLUSH_SIZE = 500  # 6 objects: several "committed" lines during the job
LOG_LINE = re.compile(r"\d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR) kafka_s3\S*: ")
BAR_GLYPHS = re.compile(r"[━╸╺]")
ETA = re.compile(r"ETA (\d+:\d\d:\d\d|-:--:--)")


@dataclass
class Run:
    topic: str
    code: int
    output: str

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()

    def bar_lines(self, name: str) -> list[str]:
        return [line for line in self.lines if re.match(rf"\s*{re.escape(name)}\s+[━╸╺]", line)]

    def first(self, pattern: str) -> int:
        """The index of the first line matching ``pattern`` (fails naming it when there is none)."""
        for index, line in enumerate(self.lines):
            if re.search(pattern, line):
                return index
        raise AssertionError(f"no line matches {pattern!r} in:\n{self.output[-4000:]}")


@pytest.fixture(scope="module")
def backed_up(kafka_bootstrap, s3_env, s3_client, tmp_path_factory):
    """A 3-partition topic of 3,000 records backed up with ``backup --once`` on a terminal (6 objects)."""
    from confluent_kafka import Producer

    from kafka_s3.io.kafka.admin import Admin

    topic = f"progress-{uuid.uuid4().hex[:10]}"
    Admin({"bootstrap.servers": kafka_bootstrap}).create_topic(topic, PARTITIONS, config={"retention.ms": "-1"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(topic, value=b'{"i":%d,"pad":"%s"}' % (i, b"x" * 80), partition=i % PARTITIONS)
    producer.flush(30)
    bucket = "t-" + uuid.uuid4().hex[:16]
    s3_client.create_bucket(Bucket=bucket)
    raw = {
        "name": f"it-{bucket}",
        "topics": topic,
        "flush.size": str(FLUSH_SIZE),
        "s3.bucket.name": bucket,
        "store.url": s3_env["endpoint_url"],
        "s3.region": s3_env["region"],
        "format.class": "parquet",
        "store.envelope": "true",
        "bootstrap.servers": kafka_bootstrap,
        "topic.rename": f"{topic}:{topic}-restored",
        "topic.creation.enable": "true",
    }
    path = write_properties(tmp_path_factory.mktemp("progress") / "backup.properties", raw)
    code, output = run_in_terminal(["backup", "--once", "-c", str(path)])
    yield Run(topic, code, output), path
    with contextlib.suppress(Exception):
        for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                s3_client.delete_object(Bucket=bucket, Key=item["Key"])
        s3_client.delete_bucket(Bucket=bucket)


@pytest.fixture(scope="module")
def backup_run(backed_up) -> Run:
    run, _ = backed_up
    assert run.code == 0, run.output[-4000:]
    return run


@pytest.fixture(scope="module")
def restore_run(backed_up) -> Run:
    run, path = backed_up
    assert run.code == 0, run.output[-4000:]
    code, output = run_in_terminal(["restore", "-c", str(path)])
    restored = Run(run.topic, code, output)
    assert code == 0, output[-4000:]
    return restored


def assert_every_bar_ends_complete(run: Run, tasks: int) -> None:
    """The last frame of each bar: the topic's records all done (with the run's rate), the Spark tasks all done."""
    topic_bar = run.bar_lines(run.topic)[-1]
    assert f"{RECORDS}/{RECORDS}" in topic_bar and "done" in topic_bar and "rec/s" in topic_bar, topic_bar
    tasks_bar = run.bar_lines("spark tasks")[-1]
    assert f"{tasks}/{tasks}" in tasks_bar and "done" in tasks_bar, tasks_bar


def assert_no_eta_before_five_seconds_of_progress(run: Run) -> None:
    """A time left shows only on a bar that has run for 5 s (its elapsed column), and never as a placeholder."""
    for line in run.bar_lines(run.topic):
        eta = ETA.search(line)
        if eta is None:
            continue
        assert eta.group(1) != "-:--:--", f"a placeholder ETA: {line}"
        elapsed = re.findall(r"(\d+):(\d\d):(\d\d)\s*$", line)
        assert elapsed, line
        hours, minutes, seconds = (int(part) for part in elapsed[-1])
        assert hours * 3600 + minutes * 60 + seconds >= 5, f"an ETA after less than 5 s of progress: {line}"


@pytest.mark.issue(28, item=4)
def test_backup_names_starting_spark_and_its_other_steps_before_any_bar(backup_run):
    starting = backup_run.first(r"^starting Spark")
    first_bar = min(backup_run.first(rf"^\s*{re.escape(backup_run.topic)}\s+[━╸╺]"), backup_run.first(r"^spark tasks"))
    uploading = backup_run.first(r"^uploading: cycle 1, 3 partitions")
    assert backup_run.first(r"^planning: ") < starting < uploading < first_bar
    assert uploading < backup_run.first(r"^committing: cycle 1")
    assert backup_run.first(r"^backup done in \d+:\d\d:\d\d") > backup_run.first(r"^committing: ")


@pytest.mark.issue(28, item=4)
def test_backup_final_frame_shows_every_bar_complete(backup_run):
    assert_every_bar_ends_complete(backup_run, tasks=PARTITIONS)


@pytest.mark.issue(28, item=4)
def test_backup_log_lines_print_above_the_bars_never_inside_them(backup_run):
    logged = [line for line in backup_run.lines if LOG_LINE.search(line)]
    assert any("committed s3://" in line for line in logged), backup_run.output[-4000:]
    for line in logged:
        assert LOG_LINE.match(line) and not BAR_GLYPHS.search(line), f"a log line shares a line with a bar: {line!r}"


@pytest.mark.issue(28, item=4)
def test_backup_logs_committed_lines_as_objects_are_stored_before_the_job_ends(backup_run):
    committed = [i for i, line in enumerate(backup_run.lines) if "INFO kafka_s3.backup: committed s3://" in line]
    assert len(committed) == RECORDS // FLUSH_SIZE, backup_run.output[-4000:]
    job_ended = backup_run.first(r"kafka_s3.backup: cycle 1: spark job ran in")
    assert max(committed) < job_ended, "committed lines came after the Spark job ended"


@pytest.mark.issue(28, item=4)
def test_backup_shows_no_eta_before_the_rate_means_something(backup_run):
    assert_no_eta_before_five_seconds_of_progress(backup_run)


@pytest.mark.issue(28, item=4)
def test_restore_names_its_steps_shows_no_early_eta_and_ends_with_every_bar_complete(restore_run):
    starting = restore_run.first(r"^starting Spark")
    first_bar = restore_run.first(rf"^\s*{re.escape(restore_run.topic)}\s+[━╸╺]")
    assert restore_run.first(r"^planning: ") < starting < restore_run.first(r"^restoring: 3 partitions") < first_bar
    assert_no_eta_before_five_seconds_of_progress(restore_run)
    assert_every_bar_ends_complete(restore_run, tasks=PARTITIONS)
    for line in restore_run.lines:
        if LOG_LINE.search(line):
            assert LOG_LINE.match(line) and not BAR_GLYPHS.search(line), (
                f"a log line shares a line with a bar: {line!r}"
            )
