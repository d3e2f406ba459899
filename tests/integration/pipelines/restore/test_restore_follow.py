"""``--follow`` keeps restoring what a running backup writes after the restore started — including objects in a new
time-period directory of a time-based partitioner, which Confluent's source never notices."""

from __future__ import annotations

import datetime as dt
import threading
import time

import pytest

from tests.support.integration import list_keys
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

PARTITIONS = 2
HOUR_10 = int(dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC).timestamp() * 1000)
HOUR_11 = HOUR_10 + 3_600_000
HOURLY = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
    "partitioner.class": "hourly",
    "timestamp.extractor": "Record",
    "timezone": "UTC",
    "locale": "en-US",
    "flush.size": "2",
}


def batch(first: int, count: int, base_ts: int) -> list[dict]:
    return [
        {"partition": p, "value": f'{{"p":{p},"n":{n}}}'.encode(), "timestamp": base_ts + n * 1000}
        for p in range(PARTITIONS)
        for n in range(first, first + count)
    ]


def wait_for(bootstrap: str, topic: str, count: int, follower: Follower, limit: float = 180) -> dict:
    """Poll the target until it holds ``count`` records in all (a time-out, not a timing assertion)."""
    deadline = time.monotonic() + limit
    while True:
        follower.check()
        rows = read_topic(bootstrap, topic)
        if sum(len(r) for r in rows.values()) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.5)


class Follower:
    """``Restore.follow`` in a thread, stopped through its threading.Event; its exception, if any, re-raised."""

    def __init__(self, restore):
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(restore,), daemon=True)

    def _run(self, restore) -> None:
        try:
            restore.follow(self.stop)
        except BaseException as exc:  # surfaced in the test thread
            self.error = exc

    def check(self) -> None:
        if self.error is not None:
            raise self.error

    def __enter__(self) -> Follower:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(300)
        assert not self.thread.is_alive(), "follow did not stop after its event was set"


def test_follow_restores_objects_written_after_it_started(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic = fresh_topic(PARTITIONS)
    target = fresh_topic(PARTITIONS)
    produce(topic, batch(0, 4, HOUR_10))
    backup(fresh_bucket, topic, HOURLY)
    restore = restorer(
        fresh_bucket, topic, {**HOURLY, "topic.rename": f"{topic}:{target}", "s3.poll.interval.ms": "200"}
    )

    with Follower(restore) as follower:
        first = wait_for(kafka_bootstrap, target, PARTITIONS * 4, follower)
        assert sum(len(r) for r in first.values()) == PARTITIONS * 4

        # More data while the restore follows: the rest of hour 10, then a new hour (a new directory).
        produce(topic, batch(4, 2, HOUR_10) + batch(6, 4, HOUR_11))
        backup(fresh_bucket, topic, HOURLY)
        keys = list_keys(s3_client, fresh_bucket, f"topics/{topic}/")
        assert any("/hour=11/" in key for key in keys) and any("/hour=10/" in key for key in keys)
        wait_for(kafka_bootstrap, target, PARTITIONS * 10, follower)
        follower.check()
    follower.check()

    # Every record exactly once, in order, although the restore ran many cycles over the same objects.
    restored, original = read_topic(kafka_bootstrap, target), read_topic(kafka_bootstrap, topic)
    assert {p: [r["value"] for r in rows] for p, rows in restored.items()} == {
        p: [r["value"] for r in rows] for p, rows in original.items()
    }
    assert all(len(rows) == 10 for rows in restored.values())


def test_follow_reports_an_object_that_appears_below_its_progress(
    restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap, caplog
):
    """Confluent's sink writes each directory's objects at its own pace: an object can appear after the restore
    passed its first offset. It cannot be inserted in order any more; follow says so, naming it."""
    import json
    import logging

    target = fresh_topic(1)
    source = f"{target}-src"

    def put(directory: str, offsets: list[int]) -> str:
        key = f"topics/{source}/{directory}/{source}+0+{offsets[0]:010d}.json"
        body = b"".join(json.dumps({"kind": directory, "i": i}).encode() + b"\n" for i in offsets)
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
        return key

    put("kind=a", [0, 1, 3])
    put("kind=a", [5, 6])
    properties = {
        "format.class": "json",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "topic.rename": f"{source}:{target}",
        "s3.poll.interval.ms": "200",
    }
    caplog.set_level(logging.WARNING, logger="kafka_s3")
    with Follower(restorer(fresh_bucket, source, properties)) as follower:
        wait_for(kafka_bootstrap, target, 5, follower)
        late = put("kind=b", [2, 4])  # below the progress: too late to restore in order
        put("kind=b", [7, 8])  # after it: restored
        wait_for(kafka_bootstrap, target, 7, follower)
        deadline = time.monotonic() + 60
        while not any(late in r.getMessage() for r in caplog.records) and time.monotonic() < deadline:
            follower.check()
            time.sleep(0.2)
    warning = next(r.getMessage() for r in caplog.records if late in r.getMessage())
    assert f"{source}[0] had passed its first offset 2" in warning and "not restored" in warning, warning
    restored = [json.loads(r["value"])["i"] for r in read_topic(kafka_bootstrap, target)[0]]
    assert restored == [0, 1, 3, 5, 6, 7, 8]  # nothing twice, the late object not at all


@pytest.mark.issue(26, item=8)
def test_a_following_restore_rides_out_an_object_store_outage_and_restores_everything_after_it(
    backup, restorer, fresh_bucket, fresh_topic, produce, kafka_bootstrap, s3_env
):
    """An object store answering 503 to every read for a while ends no follower: each failed cycle is logged and
    tried again with backoff, as a following backup does, and what was not restored is restored once the store
    answers (a restore --follow exited 3 after four 503s of one GET — chaos seed 2001)."""
    from tests.support.faultproxy import FaultProxy

    topic = fresh_topic(1)
    target = fresh_topic(1)
    produce(topic, [{"value": f"v{i}".encode()} for i in range(10)])
    settings = {"format.class": "bytearray", "flush.size": "5"}
    backup(fresh_bucket, topic, settings)
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        restore = restorer(
            fresh_bucket,
            topic,
            {**settings, "store.url": proxy.url, "topic.rename": f"{topic}:{target}", "s3.poll.interval.ms": "200"},
        )
        proxy.fail(503, times=100_000, method="GET")  # every object read fails until the outage ends
        with Follower(restore) as follower:
            deadline = time.monotonic() + 120
            while len(proxy.requests(method="GET")) < 12 and time.monotonic() < deadline:
                follower.check()
                time.sleep(0.2)
            follower.check()  # still following: the failed cycles are retried
            assert sum(len(r) for r in read_topic(kafka_bootstrap, target).values()) == 0

            proxy.clear()  # the outage ends
            rows = wait_for(kafka_bootstrap, target, 10, follower)
            assert [r["value"] for r in rows[0]] == [f"v{i}".encode() for i in range(10)]
