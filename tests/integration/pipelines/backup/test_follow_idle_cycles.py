"""A following backup's cycles with nothing new stay cheap: no Spark job, and the consumer-group snapshot does not ask
for the offsets of a group it has already found to be kafka-s3's own (another backup's) on every cycle — a cluster
running many backups would otherwise cost one request per backup and cycle (issue 30, target 5)."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid

import pytest

from kafka_s3.io.kafka.admin import Admin
from kafka_s3.pipelines.backup.driver import Backup
from tests.support.backup import wait_until
from tests.support.integration import CountingEngine

pytestmark = pytest.mark.integration

IDLE_CYCLES = 3


@pytest.mark.issue(30)
def test_idle_follow_cycles_start_no_spark_job_and_ask_for_another_backups_group_once(
    engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, caplog
):
    topic = fresh_topic(1)
    other_backup = f"connect-other-backup-{uuid.uuid4().hex[:8]}"
    Admin({"bootstrap.servers": kafka_bootstrap}).commit_group_offsets(
        other_backup, {(topic, 0): 0}, {(topic, 0): json.dumps({"chunk": 0, "store": "s3://elsewhere"})}
    )
    now = int(time.time() * 1000)
    produce(topic, [{"value": b"r%d" % i, "timestamp": now + i} for i in range(3)])
    _, config = make_config(
        fresh_bucket,
        topic,
        **{
            "format__class": "bytearray",
            "partitioner__class": "TimeBasedPartitioner",
            "partition__duration__ms": "3600000",
            "path__format": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH",
            "locale": "en-US",
            "timezone": "UTC",
            "timestamp__extractor": "Record",
            "rotate__interval__ms": "600000",  # the chunk stays open: no record comes to close it
            "flush__size": "1000",
            "cycle__interval__ms": "100",
        },
    )
    caplog.set_level(logging.DEBUG, logger="kafka_s3.io.kafka.groups")
    counting = CountingEngine(engine)
    backup = Backup(config, engine=counting)
    stop = threading.Event()
    errors: list[BaseException] = []

    def follow() -> None:
        try:
            backup.follow(stop, serve_metrics=False)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        wait_until(
            lambda: errors or backup.cycle_number >= 1 + IDLE_CYCLES, timeout=300, what="idle cycles after the first"
        )
    finally:
        stop.set()
        thread.join(60)
    assert not errors, errors
    assert backup.states[(topic, 0)].open_records == 3  # the first cycle read them into a chunk still open
    assert len(counting.jobs) == 1, counting.jobs  # the first cycle's; the idle ones start none
    asked = [r for r in caplog.records if r.getMessage().startswith(f"group {other_backup} is kafka-s3's own")]
    assert len(asked) == 1, f"{len(asked)} cycles asked for {other_backup}'s offsets"
