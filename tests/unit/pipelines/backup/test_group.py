"""BackupGroup: one backup per KCQL statement, run side by side in one process; summaries merged, failures raised."""

from __future__ import annotations

import threading

import pytest

from kafka_s3.core.config.loader import load_all
from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import KafkaS3Error
from kafka_s3.core.metrics import PipelineMetrics
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY
from kafka_s3.pipelines.backup import group as backup_group
from kafka_s3.pipelines.backup.cycle import BackupSummary, CycleReport

STATEMENTS = (
    "INSERT INTO b1:p SELECT * FROM orders STOREAS JSON; "
    "INSERT INTO b2:q SELECT * FROM clicks STOREAS TEXT; "
    "INSERT INTO b3:r SELECT * FROM views STOREAS AVRO"
)


class FakeBackup:
    """Stands in for Backup (no Kafka, no Spark). All instances meet at a barrier: the group must run them at once."""

    barrier: threading.Barrier
    fail: set[str] = set()
    created: list[FakeBackup] = []

    def __init__(self, config, engine, on_cycle=None):
        self.config = config
        self.engine = engine
        self.topic = config["topics"][0]
        self.metrics = PipelineMetrics("backup", config["name"])
        FakeBackup.created.append(self)

    def topics(self):
        return {self.topic: 1}

    def run_once(self):
        self.engine_started = self.engine.started
        FakeBackup.barrier.wait(timeout=30)  # fails (BrokenBarrierError) unless every backup runs concurrently
        if self.topic in FakeBackup.fail:
            raise KafkaS3Error(f"{self.topic} failed")
        return BackupSummary([CycleReport(1, 1, records=3)], {(self.topic, 0): 3}, {(self.topic, 0): 3})

    def follow(self, stop, serve_metrics=True):
        assert not serve_metrics, "the group serves its statements' metrics on one endpoint"
        FakeBackup.barrier.wait(timeout=30)
        if self.topic in FakeBackup.fail:
            raise KafkaS3Error(f"{self.topic} failed")
        stop.wait(60)  # ends only when the group stops everyone


class FakeEngine:
    started = False

    def start(self):
        self.started = True


@pytest.fixture
def group(monkeypatch, tmp_path):
    monkeypatch.setattr(backup_group, "Backup", FakeBackup)
    FakeBackup.barrier = threading.Barrier(3)
    FakeBackup.fail = set()
    FakeBackup.created = []
    path = tmp_path / "kcql.properties"
    path.write_text(f"name=multi\n{KCQL_KEY}={STATEMENTS}\n")
    return backup_group.BackupGroup(load_all(SINK, path), FakeEngine())


def test_every_statement_runs_at_once_and_summaries_merge(group):
    summary = group.run_once()
    assert [b.topic for b in FakeBackup.created] == ["orders", "clicks", "views"]
    assert all(b.engine_started for b in FakeBackup.created)  # the session is created before the threads start
    assert summary.records == 9 and len(summary.cycles) == 3
    assert summary.committed == {("orders", 0): 3, ("clicks", 0): 3, ("views", 0): 3}
    assert group.topics() == {"orders": 1, "clicks": 1, "views": 1}


def test_a_failing_statement_is_raised_after_the_others_finish(group):
    FakeBackup.fail = {"clicks"}
    with pytest.raises(KafkaS3Error, match="clicks failed"):
        group.run_once()


def test_follow_stops_every_statement_when_one_fails(group):
    FakeBackup.fail = {"views"}
    stop = threading.Event()
    with pytest.raises(KafkaS3Error, match="views failed"):
        group.follow(stop)
    assert stop.is_set()


def test_follow_ends_when_stopped(group):
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    runner = threading.Thread(target=group.follow, args=(stop,), daemon=True)
    runner.start()
    runner.join(timeout=30)
    assert not runner.is_alive(), "follow did not return after its stop event was set"


def test_needs_a_configuration():
    with pytest.raises(ValueError):
        backup_group.BackupGroup([], FakeEngine())


@pytest.mark.issue(29, item=4)
def test_statements_sharing_a_name_are_told_apart_in_the_metrics(group):
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    group.follow(stop)
    assert [b.metrics.name for b in FakeBackup.created] == ["multi[0]", "multi[1]", "multi[2]"]
