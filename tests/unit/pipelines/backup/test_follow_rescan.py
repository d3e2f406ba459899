"""Issue 15 (B6): with Lenses' default flush.interval (3600 s) every Lenses sink configuration has a scheduled
rotation; a follow cycle must not re-read a partition's open chunk (up to flush.count records) on every cycle just
because a schedule exists — only once its rotation can be due (or new data arrived)."""

from __future__ import annotations

import time

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY
from kafka_s3.pipelines.backup.cycle import PartitionState
from kafka_s3.pipelines.backup.driver import Backup

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
TP = ("t", 0)


def _driver(open_since: float) -> Backup:
    config = SINK.parse(
        {
            "name": "lenses-sink",
            "connector.class": LENSES_SINK,
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            KCQL_KEY: "INSERT INTO b:p SELECT * FROM t STOREAS JSON",
        }
    )
    driver = Backup.__new__(Backup)  # only the planning state: no services
    driver.config = config
    driver.states = {TP: PartitionState(next_offset=0, last_scanned=3, open_since=open_since, open_start=0)}
    return driver


def test_an_open_chunk_is_not_reread_before_its_lenses_interval_can_be_due():
    assert not _driver(time.time())._worth_scanning(TP, 3)


def test_an_open_chunk_is_reread_once_its_lenses_interval_is_due_or_new_data_came():
    assert _driver(time.time() - 3601)._worth_scanning(TP, 3)
    assert _driver(time.time())._worth_scanning(TP, 4)
