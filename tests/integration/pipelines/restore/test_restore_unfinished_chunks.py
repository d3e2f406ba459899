"""A restore never goes past a chunk the backup has not finished uploading (issue 26, finding 1).

A backup creates a chunk's manifest first and completes its files in the background, so while it runs a later chunk
can be complete before an earlier one. The bucket below is what such a backup leaves: it committed (marked) up to
chunk 200, chunks 300..900 have their manifests, and the object of chunk 400 is not there yet. A restore must stop
before chunk 400 (and say so with its own exit code), wait there when following, and restore 400.. once the object
arrives; readers asking for those offsets are told they are not committed yet.
"""

from __future__ import annotations

import threading
import time

import pytest

from kafka_s3.core.errors import BackupUnfinished
from kafka_s3.pipelines.read.lookup import read_records
from kafka_s3.pipelines.read.options import RestoreOptions
from tests.support.restore import read_topic, records, run_cli, write_properties

pytestmark = pytest.mark.integration

RECORDS = 1000
FLUSH = 100
STALLED = 400  # the chunk whose object is still uploading
EXACT = {"flush.size": FLUSH, "store.envelope": "true"}  # keys restored too: the tests read records by key


def data_key(topic: str, start: int) -> str:
    return f"topics/{topic}/partition=0/{topic}+0+{start:010d}.json"


def mark_key(topic: str, start: int) -> str:
    return f"topics/_kafka-s3/json/{topic}/0/{start:020d}.tail"


@pytest.fixture
def uploading(backup, fresh_bucket, fresh_topic, produce, s3_client):
    """A backed-up topic whose bucket looks like a backup still uploading chunk 400; returns ``(topic, finish)``,
    ``finish()`` completing the upload as the backup would (the object, then the committed-end mark)."""
    topic = fresh_topic(1)
    produce(topic, records(1, RECORDS))
    assert backup(fresh_bucket, topic, EXACT).records == RECORDS
    stalled = data_key(topic, STALLED)
    body = s3_client.get_object(Bucket=fresh_bucket, Key=stalled)["Body"].read()
    s3_client.delete_object(Bucket=fresh_bucket, Key=stalled)
    s3_client.delete_object(Bucket=fresh_bucket, Key=mark_key(topic, RECORDS - FLUSH))
    s3_client.put_object(Bucket=fresh_bucket, Key=mark_key(topic, 200), Body=b"")

    def finish() -> None:
        s3_client.put_object(Bucket=fresh_bucket, Key=stalled, Body=body)
        s3_client.put_object(Bucket=fresh_bucket, Key=mark_key(topic, RECORDS - FLUSH), Body=b"")

    return topic, finish


def offsets_in(bootstrap: str, topic: str) -> list[int]:
    return [int(r["key"][1:]) for r in read_topic(bootstrap, topic)[0]]


def test_a_restore_stops_at_a_chunk_still_uploading_and_restores_it_once_it_is_there(
    uploading, restorer, fresh_bucket, fresh_topic, kafka_bootstrap
):
    topic, finish = uploading
    target = fresh_topic(1)
    restore = restorer(fresh_bucket, topic, {**EXACT, "topic.rename": f"{topic}:{target}"})
    summary = restore.run()
    assert summary.records == STALLED  # nothing after the chunk that is not there yet
    assert [(f.first, f.last) for f in summary.unfinished] == [(STALLED, RECORDS - 1)]
    assert offsets_in(kafka_bootstrap, target) == list(range(STALLED))

    finish()
    summary = restorer(fresh_bucket, topic, {**EXACT, "topic.rename": f"{topic}:{target}"}).run()
    assert summary.records == RECORDS - STALLED and summary.unfinished == []
    assert offsets_in(kafka_bootstrap, target) == list(range(RECORDS))


def test_restore_exits_8_at_an_unfinished_chunk_and_allow_gaps_restores_past_it(
    uploading, make_config, fresh_bucket, fresh_topic, kafka_bootstrap, tmp_path
):
    topic, _ = uploading
    target = fresh_topic(1)
    raw, _ = make_config(fresh_bucket, topic, source=True, flush__size=FLUSH, store__envelope="true")
    raw["topic.rename"] = f"{topic}:{target}"
    path = write_properties(tmp_path / "restore.properties", raw)
    result = run_cli(["restore", "--config", str(path), "--no-progress"])
    assert result.returncode == 8, result.stderr[-3000:]
    assert f"{topic}[0] offsets {STALLED}..{RECORDS - 1}" in result.stderr
    assert "not uploaded yet" in result.stderr and "run again" in result.stderr
    assert offsets_in(kafka_bootstrap, target) == list(range(STALLED))

    result = run_cli(["restore", "--config", str(path), "--no-progress", "--allow-gaps"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"skipped (--allow-gaps): {topic}[0] offsets {STALLED}..{STALLED + FLUSH - 1}" in result.stderr
    assert offsets_in(kafka_bootstrap, target) == [*range(STALLED), *range(STALLED + FLUSH, RECORDS)]


def test_a_following_restore_waits_at_an_unfinished_chunk_and_continues_when_it_commits(
    uploading, restorer, fresh_bucket, fresh_topic, kafka_bootstrap
):
    topic, finish = uploading
    target = fresh_topic(1)
    restore = restorer(fresh_bucket, topic, {**EXACT, "topic.rename": f"{topic}:{target}", "s3.poll.interval.ms": 500})
    stop = threading.Event()
    failure: list[BaseException] = []

    def follow() -> None:
        try:
            restore.follow(stop)
        except BaseException as exc:  # reported by the test below
            failure.append(exc)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while restore.restored_records < STALLED and time.monotonic() < deadline and not failure:
            time.sleep(0.2)
        time.sleep(2)  # a few more cycles: none of them may go past the unfinished chunk
        assert offsets_in(kafka_bootstrap, target) == list(range(STALLED))
        finish()
        while restore.restored_records < RECORDS and time.monotonic() < deadline and not failure:
            time.sleep(0.2)
    finally:
        stop.set()
        thread.join(timeout=120)
    assert not failure, failure
    assert offsets_in(kafka_bootstrap, target) == list(range(RECORDS))


def test_readers_refuse_offsets_that_are_not_committed_yet(uploading, make_config, fresh_bucket, spark):
    topic, finish = uploading
    _, config = make_config(fresh_bucket, topic, source=True, flush__size=FLUSH, store__envelope="true")
    assert [r["offset"] for r in read_records(config, 0, 398, 2)] == [398, 399]  # below the unfinished chunk
    with pytest.raises(BackupUnfinished, match=rf"{topic}\[0\] offsets {STALLED}\.\.{RECORDS - 1}: in progress"):
        read_records(config, 0, 450, 2)
    with pytest.raises(BackupUnfinished, match=rf"{topic}\[0\] offsets {STALLED}\.\."):
        read_records(config, 0, 398, 5)  # reads on past offset 399

    raw, _ = make_config(fresh_bucket, topic, source=True, flush__size=FLUSH, store__envelope="true")
    df = spark.read.format("kafka-s3").options(**raw).load()
    with pytest.raises(Exception, match="not uploaded yet"):
        df.count()
    rows = spark.read.format("kafka-s3").options(**raw).option("allow.gaps", "true").load().count()
    assert rows == RECORDS - FLUSH
    finish()
    assert spark.read.format("kafka-s3").options(**raw).load().count() == RECORDS


def test_a_restore_plan_with_allow_gaps_keeps_the_objects_after_an_unfinished_chunk(uploading, fresh_bucket, restorer):
    topic, _ = uploading
    held = restorer(fresh_bucket, topic, EXACT).plan()
    [plan] = held.plans
    assert max(o.start for o in plan.objects) == STALLED - FLUSH
    skipping = restorer(fresh_bucket, topic, EXACT, RestoreOptions(allow_gaps=True)).plan()
    [plan] = skipping.plans
    assert STALLED not in [o.start for o in plan.objects] and max(o.start for o in plan.objects) == RECORDS - FLUSH
