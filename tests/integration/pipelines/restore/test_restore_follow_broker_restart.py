"""A following restore (``restore --follow``, exactly once) meets a broker restart: once the broker is back, it
restores what the backup wrote meanwhile within a few cycles, and never goes silent for long while it waits — a
wait over 30 s is logged naming what it waits for (chaos seed 1019: after an 8 s restart the follower printed nothing
for 71 s, then restored nothing for another 47 s).

The broker is an Apache Kafka of the test's own (marker ``apache_kafka``), stopped and started again on its data;
the object store is the suite's (an external one when ``AWS_ENDPOINT_URL_S3`` names it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from confluent_kafka import Producer

from kafka_s3.io.kafka.admin import Admin
from tests.support.integration import write_properties
from tests.support.own_broker import OwnBroker
from tests.support.restore import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.apache_kafka]

TOPICS = 2  # source topics: the restore has a progress group for each, and the driver asks after each every cycle
PARTITIONS = 2
FIRST, MORE = 40, 40  # records per partition before the restart, and after it
TOTAL = TOPICS * PARTITIONS * (FIRST + MORE)
DOWN_S = 8.0  # how long the broker is down (the chaos run's restart)
RESUME_BOUND_S = 90.0  # from the new records in the bucket to the new records in the target (a few cycles)
SILENCE_BOUND_S = 45.0  # the follower's longest silence (a wait is logged after 30 s: some slack for a busy machine)
LIMIT_S = 240.0  # how long the test waits at most (to measure, not to bound)


@pytest.fixture
def broker(tmp_path):
    own = OwnBroker(tmp_path / "apache-kafka")
    yield own
    own.stop()


class Output:
    """A process's output lines, each with the time (monotonic) it arrived."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list[tuple[float, str]] = []
        self._threads = [
            threading.Thread(target=self._read, args=(stream,), daemon=True) for stream in (proc.stdout, proc.stderr)
        ]
        for thread in self._threads:
            thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def join(self) -> None:
        for thread in self._threads:
            thread.join(30)

    def longest_silence(self, since: float, until: float) -> tuple[float, float]:
        """The longest stretch without a line between ``since`` and ``until``: (seconds, where it began)."""
        times = [since] + [t for t, _ in self.lines if since < t < until] + [until]
        gaps = [(b - a, a) for a, b in zip(times, times[1:], strict=False)]
        return max(gaps)

    def text(self, since: float = 0.0) -> str:
        return "\n".join(f"[{t - since:+7.1f}s] {line}" for t, line in self.lines if t >= since)


def produce(bootstrap: str, topics: list[str], first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for topic in topics:
        for p in range(PARTITIONS):
            for n in range(first, first + count):
                producer.produce(topic, key=f"{p}-{n}".encode(), value=f'{{"p":{p},"n":{n}}}'.encode(), partition=p)
    assert producer.flush(60) == 0


def backup_once(path: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", "backup", "--once", "--no-progress", "-c", path],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stderr[-3000:]


def restored(bootstrap: str, targets: list[str]) -> int:
    """Records in the targets under read_committed (0 while the broker does not answer)."""
    try:
        return sum(len(rows) for target in targets for rows in read_topic(bootstrap, target).values())
    except Exception:
        return 0


@pytest.mark.issue(26, item=5)
def test_a_following_restore_resumes_within_a_minute_of_a_broker_restart_and_logs_its_waits(
    broker, fresh_bucket, s3_env, tmp_path
):
    """``restore --follow`` (exactly once) has restored everything; the broker is restarted (down 8 s) and the backup
    adds records. The follower restores them within 90 s of their backup, and its output never goes silent for more
    than 45 s from the broker's stop on: a wait over 30 s names what it waits for."""
    admin = Admin({"bootstrap.servers": broker.bootstrap})
    run = uuid.uuid4().hex[:8]
    sources = [f"src-{run}-{i}" for i in range(TOPICS)]
    targets = [f"dst-{run}-{i}" for i in range(TOPICS)]
    for topic in sources + targets:
        admin.create_topic(topic, PARTITIONS, config={"retention.ms": "-1"})
    produce(broker.bootstrap, sources, 0, FIRST)
    raw = {
        "name": f"follow-{run}",
        "topics": ",".join(sources),
        "topic.rename": ",".join(f"{s}:{t}" for s, t in zip(sources, targets, strict=True)),
        "s3.bucket.name": fresh_bucket,
        "store.url": s3_env["endpoint_url"],
        "s3.region": s3_env["region"],
        "aws.access.key.id": s3_env["access_key"],
        "aws.secret.access.key": s3_env["secret_key"],
        "bootstrap.servers": broker.bootstrap,
        "format.class": "json",
        "store.envelope": "true",
        "flush.size": "20",
        "exactly.once.support": "required",
        "s3.poll.interval.ms": "1000",
        "restore.transaction.records": "25",
        "restore.offset.map.topic": f"offset-map-{run}",
    }
    path = str(write_properties(tmp_path / "follow.properties", raw))
    backup_once(path)

    follower = subprocess.Popen(
        [sys.executable, "-m", "kafka_s3.cli", "restore", "--follow", "--no-progress", "-c", path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONUNBUFFERED": "1"},
    )
    output = Output(follower)
    try:
        deadline = time.monotonic() + LIMIT_S
        while restored(broker.bootstrap, targets) < TOPICS * PARTITIONS * FIRST:
            assert follower.poll() is None, output.text()
            assert time.monotonic() < deadline, f"the follower never restored the first records:\n{output.text()}"
            time.sleep(0.5)

        stopped = time.monotonic()
        down = broker.restart(DOWN_S)
        back = time.monotonic()
        produce(broker.bootstrap, sources, FIRST, MORE)
        backup_once(path)
        backed_up = time.monotonic()
        deadline = backed_up + LIMIT_S
        while restored(broker.bootstrap, targets) < TOTAL and time.monotonic() < deadline:
            assert follower.poll() is None, output.text(stopped)
            time.sleep(0.5)
        caught_up = time.monotonic()
    finally:
        if follower.poll() is None:
            follower.send_signal(signal.SIGTERM)
        try:
            follower.wait(60)
        except subprocess.TimeoutExpired:
            follower.kill()
            follower.wait(30)
        output.join()

    resumed = caught_up - backed_up
    silence, at = output.longest_silence(stopped, caught_up)
    story = (
        f"broker down {down:.1f}s, the new records backed up {backed_up - back:.1f}s after it was back; the follower "
        f"restored them {resumed:.1f}s after that (bound {RESUME_BOUND_S:.0f}s); its longest silence {silence:.1f}s "
        f"from {at - stopped:+.1f}s (bound {SILENCE_BOUND_S:.0f}s); restored {restored(broker.bootstrap, targets)} of "
        f"{TOTAL}. Its output since the broker was stopped:\n{output.text(stopped)}"
    )
    print(story)
    assert resumed <= RESUME_BOUND_S and silence <= SILENCE_BOUND_S, story
    for target in targets:
        rows = read_topic(broker.bootstrap, target)
        keys = [r["key"] for p in sorted(rows) for r in rows[p]]
        assert len(keys) == len(set(keys)) == PARTITIONS * (FIRST + MORE), story  # every record once
