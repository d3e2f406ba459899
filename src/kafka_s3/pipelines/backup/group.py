"""Several backups in one process and one Spark session: the statements of a multi-statement KCQL configuration.

Each statement (``connect.s3.kcql``) is a complete backup configuration of its own: a bucket, prefix, format and
partitioner for one topic. The group runs one :class:`~kafka_s3.pipelines.backup.driver.Backup` per statement,
unchanged, each in a thread of its own on the shared SparkSession. Each one keeps its own cycles, plans and offsets,
and their Spark jobs run side by side, so a statement with a big backlog never delays the others. They share the
consumer group ``connect-<name>``, as the statements of one Kafka Connect connector do, and each one commits only
its own topic's partitions (the parser refuses a topic named in two statements).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

from kafka_s3.core.config.model import Config
from kafka_s3.pipelines.backup.cycle import BackupSummary, OnCycle
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.engine import Engine
from kafka_s3.runtime.metrics import serve

log = logging.getLogger("kafka_s3.backup")


class BackupGroup:
    """The backups of several configurations (one per KCQL statement), run together."""

    def __init__(self, configs: Sequence[Config], engine: Engine, on_cycle: OnCycle | None = None):
        if not configs:
            raise ValueError("a backup group needs at least one configuration")
        self.engine = engine
        self.backups = [Backup(config, engine, on_cycle=on_cycle) for config in configs]

    def topics(self) -> dict[str, int]:
        return {topic: n for backup in self.backups for topic, n in backup.topics().items()}

    def run_once(self) -> BackupSummary:
        """Every backup's ``run_once``, side by side; their summaries merged. If one fails, the others still
        finish (what they wrote is durable) before its error is raised."""
        self.engine.start()  # one Spark session for all, started here before the backups' threads use it
        summaries: list[BackupSummary | None] = [None] * len(self.backups)

        def run(index: int, backup: Backup) -> None:
            summaries[index] = backup.run_once()

        self._run_all(run, threading.Event())
        merged = BackupSummary()
        for summary in summaries:
            assert summary is not None
            merged.cycles.extend(summary.cycles)
            merged.committed.update(summary.committed)
            merged.targets.update(summary.targets)
        return merged

    def follow(self, stop: threading.Event | None = None) -> None:
        """Every backup's ``follow`` until ``stop`` is set; the first failure stops them all and is raised."""
        self.engine.start()  # one Spark session for all, started here before the backups' threads use it
        stop = stop or threading.Event()
        names = [backup.metrics.name for backup in self.backups]
        if len(set(names)) < len(names):  # one connector's statements: told apart by their index
            for index, backup in enumerate(self.backups):
                backup.metrics.name = f"{backup.metrics.name}[{index}]"
        server = serve([backup.metrics for backup in self.backups], self.backups[0].config)  # one endpoint for all
        try:
            self._run_all(lambda index, backup: backup.follow(stop, serve_metrics=False), stop)
        finally:
            if server is not None:
                server.close()

    def _run_all(self, run: Callable[[int, Backup], None], stop: threading.Event) -> None:
        errors: list[BaseException] = []

        def guarded(index: int, backup: Backup) -> None:
            try:
                run(index, backup)
            except BaseException as exc:  # reported below, in the calling thread
                log.error("statement for %s failed: %s", ", ".join(backup.config["topics"]), exc)
                errors.append(exc)
                stop.set()

        threads = [
            threading.Thread(target=guarded, args=(i, b), name=f"kafka-s3-backup-{i}", daemon=True)
            for i, b in enumerate(self.backups)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)
        if errors:
            raise errors[0]
