"""Issue 15 (B6, Lenses' flush settings): a continuous (follow) backup under a Lenses sink configuration commits an
object once its ``flush.interval`` has passed since the object opened, without reaching ``flush.count``, and a Lenses
source configuration restores it — with the real Kafka, S3 (SeaweedFS) and Spark.

Lenses' rule (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``): ``sink/commit/CommitPolicyConditions
.Interval`` is due once ``now >= lastModified + interval``, ``lastModified`` being the wall time the file's writer was
created or last flushed (``sink/commit/CommitContext``, ``sink/writer/CommitState``), evaluated after every record and
for idle writers (``sink/writer/WriterManager``, ``WriterCommitManager.commitFlushableWriters``). Not Confluent's
schedule, which is due at the next multiple of the interval counted from midnight.

The records are produced a few seconds before such a multiple (in UTC, which the KCQL mapping used to set): a
midnight-aligned schedule commits the object at that multiple, well before the interval since its opening has passed.
"""

from __future__ import annotations

import threading
import time

import pytest

from kafka_s3.io.kafka.admin import Admin
from kafka_s3.pipelines.backup.driver import Backup, group_id
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
LENSES_SOURCE = "io.lenses.streamreactor.connect.aws.s3.source.S3SourceConnector"
PREFIX = "lenses/flush"
INTERVAL_S = 10
BEFORE_BOUNDARY_S = 3.0  # produce this long before a multiple of the interval (counted from UTC midnight)
T0 = 1_700_000_000_000
RECORDS = [(b"k0", "v0", T0 + 5), (b"k1", "v1", T0 + 1), (b"k2", "v2", T0 + 9)]


class _RecordingBackup(Backup):
    """Records the wall time at which every cycle starts and ends, with the task results."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cycles: list[dict] = []

    def run_cycle(self, plans):
        entry: dict = {"start": time.time(), "results": []}
        self.cycles.append(entry)
        try:
            return super().run_cycle(plans)
        finally:
            entry["end"] = time.time()


def _wait(predicate, what: str, timeout: float = 120.0) -> None:
    """A generous bound only guards against hanging (never a timing claim)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_lenses_flush_interval_commits_a_continuous_backup_since_the_object_opened(
    engine, make_config, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic, target = fresh_topic(1), fresh_topic(1)
    _, config = make_config(
        fresh_bucket,
        topic,
        **{
            "connector__class": LENSES_SINK,
            "connect__s3__kcql": f"INSERT INTO {fresh_bucket}:{PREFIX} SELECT * FROM {topic} STOREAS `JSON` "
            f"PROPERTIES('store.envelope'=true, 'flush.count'=1000, 'flush.interval'={INTERVAL_S})",
            "key__converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "value__converter": "org.apache.kafka.connect.storage.StringConverter",
            "cycle__interval__ms": "100",
        },
    )
    assert config["rotate.schedule.interval.ms"] == INTERVAL_S * 1000 and config["flush.size"] == 1000
    group = group_id(config)
    admin = Admin({"bootstrap.servers": kafka_bootstrap})

    def committed() -> int | None:
        return admin.group_offsets(group, [(topic, 0)])[(topic, 0)]

    backup = _RecordingBackup(
        config, engine=engine, on_cycle=lambda report, results: backup.cycles[-1].update(results=results)
    )
    stop, errors = threading.Event(), []

    def follow():
        try:
            backup.follow(stop)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        _wait(lambda: errors or backup.cycles, "the first cycle")
        boundary = (time.time() // INTERVAL_S + 1) * INTERVAL_S
        if boundary - time.time() < BEFORE_BOUNDARY_S:
            boundary += INTERVAL_S
        time.sleep(boundary - BEFORE_BOUNDARY_S - time.time())
        produce(topic, [{"key": k, "value": v.encode(), "timestamp": ts} for k, v, ts in RECORDS])
        _wait(lambda: errors or committed() == len(RECORDS), "the interval's commit")
    finally:
        stop.set()
        thread.join(120)
    assert not errors, errors
    assert not thread.is_alive()

    # The rule: the object commits in the first cycle whose task runs at or past one interval after the cycle that
    # first saw it open — not at the midnight-aligned multiple a few seconds after it opened.
    cycles = [c for c in backup.cycles if "end" in c]
    opened = next(c for c in cycles if any(r.open_chunk for r in c["results"]))
    commit = next(c for c in cycles if any(r.chunks for r in c["results"]))
    assert opened["start"] < boundary, "the object opened after the aligned boundary: the test produced too late"
    assert commit["end"] >= opened["start"] + INTERVAL_S, (commit["end"] - opened["start"], boundary - opened["start"])
    before = [c for c in cycles if c["start"] > opened["start"] + INTERVAL_S + 0.001 and c["end"] < commit["start"]]
    assert not before, "a cycle past the interval left the object open"

    # One Lenses object for the three records, flush.count (1000) never reached.
    keys = [
        o["Key"]
        for o in s3_client.list_objects_v2(Bucket=fresh_bucket, Prefix=PREFIX + "/").get("Contents", [])
        if "/_kafka-s3/" not in o["Key"]
    ]
    assert keys == [f"{PREFIX}/{topic}/0/{len(RECORDS) - 1:012d}_{T0 + 1}_{T0 + 9}.json"]
    body = s3_client.get_object(Bucket=fresh_bucket, Key=keys[0])["Body"].read()
    assert len(body.splitlines()) == len(RECORDS)

    source = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": f"INSERT INTO {target} SELECT * FROM {fresh_bucket}:{PREFIX} STOREAS `JSON` "
        "PROPERTIES('store.envelope'=true)",
    }
    assert restorer(fresh_bucket, topic, source).run().records == len(RECORDS)
    restored = read_topic(kafka_bootstrap, target)[0]
    assert [(r["key"], r["value"], r["timestamp"]) for r in restored] == [(k, v.encode(), ts) for k, v, ts in RECORDS]
