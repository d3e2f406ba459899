"""The backup pipeline's driver: plan a cycle, run it as one Spark job, commit what became durable, repeat.

Per topic-partition the driver keeps the next offset to read. It comes from the consumer group (``connect-<name>``
by default, so Kafka's own tools show the backup's lag) or, when the group has nothing, from the bucket's latest
chunk manifest (the backup resumes from what is already stored), or from the log start. After each Spark job the
group offsets move to the start of each partition's still-open chunk: never past data that is not durable.

Over 450 lines: resuming, planning, running and committing a cycle all read and move the partitions' state; the
state itself is :mod:`.cycle`, what is kept beside the records :mod:`.history`.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafka_s3.core.config.model import Config
from kafka_s3.core.config.restore_props import LEASE_TOPIC, OFFSET_MAP_TOPIC
from kafka_s3.core.errors import (
    BackupFailed,
    BucketNotFoundError,
    ConfigError,
    Interrupted,
    KafkaError,
    KafkaS3Error,
    PlanError,
    SourceChanged,
    StoreAccessDeniedError,
    StoreError,
)
from kafka_s3.core.manifest import MANIFEST_DIR, Manifest, ManifestStore
from kafka_s3.core.metrics import HealthPolicy, PipelineMetrics
from kafka_s3.core.rotation import RotationPolicy
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.clients import TP
from kafka_s3.io.kafka.settings import client_settings
from kafka_s3.io.stores.conformance import check_conditional_put
from kafka_s3.pipelines.backup.cycle import (
    ONCE_ATTEMPTS,
    ONCE_RETRY_BASE_SECONDS,
    BackupSummary,
    CycleReport,
    OnCycle,
    PartitionState,
    backoff,
    failure_kind,
    gave_up,
    metadata_field,
)
from kafka_s3.pipelines.backup.history import History
from kafka_s3.pipelines.backup.plugins import BackupPlugins
from kafka_s3.pipelines.backup.result import PartitionResult, logged_objects
from kafka_s3.pipelines.backup.resume import (
    LogRange,
    Resume,
    after_retention,
    check_log_end,
    check_topic_id,
    committed_by_us,
    from_bucket,
    from_group,
)
from kafka_s3.pipelines.backup.task import PartitionPlan, backup_task
from kafka_s3.pipelines.engine import Engine, task_slots
from kafka_s3.pipelines.phases import COMMITTING, PLANNING, STARTING_SPARK, UPLOADING, OnPhase, Phase
from kafka_s3.pipelines.prune import prune, retention_selectors
from kafka_s3.pipelines.task_settings import TaskSettings
from kafka_s3.runtime.live import LiveCounts
from kafka_s3.runtime.metrics import serve

log = logging.getLogger("kafka_s3.backup")
STORE_REQUESTS = 16  # the driver's requests to the bucket at once (resumes, committed-end marks): the client's pool


def backup_topics(admin: Admin, config: Config) -> tuple[dict[str, int], list[str]]:
    """The topics a backup takes (``topics`` or ``topics.regex``; Kafka's internal topics never), and the
    ``topics.regex`` matches it leaves out: the restores' offset-map and lease topics (``restore.offset.map.topic``,
    ``restore.lease.topic``), kafka-s3's own bookkeeping of a restore's target cluster, as Kafka's internal topics."""
    topics = admin.select_topics(config["topics"], config["topics.regex"])
    if not config["topics.regex"]:
        return topics, []
    own = {
        str(config.originals.get(key, default) or "").strip()
        for key, default in (("restore.offset.map.topic", OFFSET_MAP_TOPIC), ("restore.lease.topic", LEASE_TOPIC))
    }
    left_out = [t for t in topics if t in own]
    return {t: n for t, n in topics.items() if t not in left_out}, left_out


def group_id(config: Config) -> str:
    return config["group.id"] or f"connect-{config['name']}"


class Backup:
    """A configured backup. ``run_once`` backs up to the high watermarks seen at its start; ``follow`` never ends."""

    def __init__(self, config: Config, engine: Engine, on_cycle: OnCycle | None = None):
        from kafka_s3.io.stores.spec import StoreSpec

        self.config = config
        self.group = group_id(config)
        self.kafka_settings = client_settings(config, "consumer")
        self.admin = Admin.for_config(config)
        self.store_spec = StoreSpec.from_config(config)
        self.store = self.store_spec.open()
        self.engine = engine
        self.on_cycle = on_cycle
        self.states: dict[TP, PartitionState] = {}
        self.cycle_number = 0
        self.finished: list[CycleReport] = []  # every cycle that committed (the CLI's summary after a signal)
        self._cycle_wall_start = 0.0  # wall time the current cycle started
        self.plugins = BackupPlugins.from_config(config)  # also validates every plugin setting before a job starts
        self.manifests = ManifestStore(self.store, self.plugins.manifest_root, config["directory.delim"])
        self.history = History(config, self.admin, self.manifests, self.group)
        self._left_out: set[str] = set()  # topics.regex matches left out (logged once)
        self.topic_ids: dict[str, str] = {}  # topic -> id ("" where the broker has none), recorded with commits
        self.live_progress = False  # the CLI's progress bar asks for running counts from the tasks
        self.live: LiveCounts | None = None  # running counts and stored objects, as the tasks tell them
        self.on_phase: OnPhase | None = None  # told of each step (planning, starting Spark, ...) as it starts
        self._told: set[str] = set()  # objects of the running cycle whose "committed" line is logged
        self._told_lock = threading.Lock()
        self.targets: dict[TP, int] = {}  # run_once: the offsets it backs up to
        self._conditional_checked = False
        self._retry_base = config["cycle.interval.ms"] / 1000  # a failing partition's first backoff (doubling)
        self.task_settings = TaskSettings(config, self.store_spec, self.kafka_settings)
        self._retention_cache: dict[str, Manifest] = {}  # manifests retention read (they never change)
        # what --metrics-port serves (records, lag, commits, cycles, errors; healthy or stalled)
        self.metrics = PipelineMetrics("backup", config["name"], HealthPolicy(config["metrics.unhealthy.after.cycles"]))

    # ------------------------------------------------------------------------------------------------ setup
    def topics(self) -> dict[str, int]:
        topics, left_out = backup_topics(self.admin, self.config)
        for topic in left_out:
            if topic not in self._left_out:
                self._left_out.add(topic)
                log.info(
                    "topics.regex matches %s, a topic of the restores' own (restore.offset.map.topic, "
                    "restore.lease.topic): not backed up",
                    topic,
                )
        if not topics and not self.config["topics.regex"]:
            raise KafkaS3Error("no topic to back up")
        self.history.note_topics(topics)
        return topics

    def _check_sources(self, topics: dict[str, int]) -> None:
        """Each cycle: the topics already backed up by this run still have the ids they had (a topic deleted and
        re-created between two cycles is another log: :class:`SourceChanged`). Brokers without ids give ""."""
        known = {t: self.topic_ids[t] for t in topics if self.topic_ids.get(t)}
        if not known:
            return
        for topic, now in sorted(self.admin.topic_ids(known).items()):
            if now and now != known[topic]:
                reached = ", ".join(
                    f"{topic}[{p}] offset {state.next_offset}"
                    for (t, p), state in sorted(self.states.items())
                    if t == topic
                )
                raise SourceChanged(
                    f"{reached}: the topic's id is {now} now, and this backup has been backing up topic id "
                    f"{known[topic]}: this is not the log the bucket holds (the topic was deleted and re-created). "
                    "Nothing of it was written; back this log up under another topics.dir (or bucket), or remove the "
                    "old backup first"
                )

    def _resume(self, tps: list[TP]) -> None:
        """Initial positions for partitions seen for the first time (:mod:`.resume`)."""
        new = [tp for tp in tps if tp not in self.states]
        if not new:
            return
        committed = self.admin.group_offsets_with_metadata(self.group, new)
        self.topic_ids.update(self.admin.topic_ids({tp[0] for tp in new}))
        log_start = self.admin.start_offsets(new)
        log_end = self.admin.end_offsets(new, read_committed=False)
        reset_latest = self.config.originals.get("consumer.override.auto.offset.reset", "earliest") == "latest"

        def resume_one(tp: TP) -> PartitionState:
            offset, metadata = committed.get(tp, (None, ""))
            log_range = LogRange(log_start[tp], log_end[tp])
            resume: Resume | None
            if offset is not None:
                check_topic_id(tp, self.group, metadata, self.topic_ids.get(tp[0], ""))
                resume = from_group(self.manifests, tp, self.group, offset, committed_by_us(metadata), log_range)
            else:
                resume = from_bucket(
                    self.manifests, tp, self.group, self.store.url, log_range, self.topic_ids.get(tp[0], "")
                )
            unrecorded = resume is None and offset is None  # from_bucket listed the partition: no chunk
            if resume is None:
                resume = Resume(log_end[tp] if reset_latest else log_start[tp])
            state = PartitionState(
                resume.next_offset,
                forced_end=resume.forced_end,
                last_object=metadata_field(metadata, "object", ""),
                last_chunk=metadata_field(metadata, "chunk", None),
                previous_known=unrecorded,
                unrecorded=unrecorded,
            )
            if state.next_offset < log_start[tp]:
                log.warning(
                    "%s[%d]: offsets %d..%d were deleted from Kafka before being backed up (retention); continuing "
                    "from %d",
                    tp[0],
                    tp[1],
                    state.next_offset,
                    log_start[tp] - 1,
                    log_start[tp],
                )
                resume = after_retention(self.manifests, tp, log_start[tp])
                state = PartitionState(resume.next_offset)
            return state

        # Each partition's resume may read the bucket (its manifests when the group has no offset): in parallel
        with ThreadPoolExecutor(max_workers=min(STORE_REQUESTS, len(new))) as pool:
            for tp, state in zip(new, pool.map(resume_one, new), strict=True):
                self.states[tp] = state

    # ------------------------------------------------------------------------------------------------ cycles
    def plan(self, ends: dict[TP, int], flush_open: bool, targets: dict[TP, int] | None = None) -> list[PartitionPlan]:
        cap = self.config["max.records.per.partition.per.cycle"]
        plans = []
        for tp, end in sorted(ends.items()):
            state = self.states[tp]
            if end < state.next_offset:  # below a read_committed end is an open transaction; below the log's is not
                check_log_end(tp, state.next_offset, self.admin.end_offsets([tp], read_committed=False)[tp], self.group)
            if state.next_offset >= end and state.forced_end is None:
                continue
            if not flush_open and not self._worth_scanning(tp, end):
                continue
            if state.retry_at > time.monotonic():
                continue  # failing: its backoff has not elapsed (the other partitions go on)
            target = end if targets is None else targets[tp]
            reopened = state.open_since is not None and state.open_start == state.next_offset
            plans.append(
                PartitionPlan(
                    topic=tp[0],
                    partition=tp[1],
                    start=state.next_offset,
                    end=min(end, state.next_offset + cap),
                    hard_end=end,
                    forced_end=state.forced_end,
                    flush_open=flush_open and end >= target,
                    # (open_since is never None when reopened: the second test only narrows the type)
                    open_since_ms=int(state.open_since * 1000) if reopened and state.open_since is not None else None,
                    open_until=state.last_scanned if reopened else None,
                    previous_end=state.previous_end,
                    previous_known=state.previous_known,
                    previous_record=state.previous_record,
                    unrecorded=state.unrecorded,
                    topic_id=self.topic_ids.get(tp[0], ""),
                )
            )
        return plans

    def _worth_scanning(self, tp: TP, end: int) -> bool:
        """In follow mode, re-read an open chunk only when something could close it (new data that may fill it,
        a time rule, or a scheduled rotation once it can be due), not on every cycle."""
        state = self.states[tp]
        if state.open_since is None or end > state.last_scanned:
            return True
        interval_ms: int = self.config["rotate.schedule.interval.ms"]
        if interval_ms <= 0:
            return False
        # The task counts the schedule from when the chunk was first seen open (Rotator's opened_at_ms)
        due_ms = RotationPolicy.from_config(self.config).next_scheduled_rotation(int(state.open_since * 1000))
        return time.time() * 1000 >= due_ms

    def run_cycle(self, plans: list[PartitionPlan]) -> CycleReport:
        self.cycle_number += 1
        report = CycleReport(self.cycle_number, len(plans))
        if not plans:
            self.snapshot_groups()
            self.retain()
            return report
        started = time.monotonic()
        self._cycle_wall_start = time.time()
        if not self.engine.started:
            self._phase(STARTING_SPARK)
        self.engine.start()  # a lazily started session is not the job's time (operators and the benchmark read it)
        self._open_live()
        with self._told_lock:
            self._told = set()
        slots = task_slots(len(plans), self.engine.parallelism)
        task = backup_task(plans, self.task_settings, slots, self.live.new_round() if self.live else None)
        job_started = time.monotonic()
        partitions = f"{len(plans)} partition{'s' if len(plans) != 1 else ''}"
        self._phase(UPLOADING, f"cycle {self.cycle_number}, {partitions}", tasks=slots)
        description = f"kafka-s3 backup cycle {self.cycle_number} ({len(plans)} partitions)"
        results = [PartitionResult.from_json(r) for r in self.engine.run_tasks(description, task, slots)]
        log.info("cycle %d: spark job ran in %.2fs", self.cycle_number, time.monotonic() - job_started)
        self._phase(COMMITTING, f"cycle {self.cycle_number}, {partitions}")
        self._apply(results, plans, report)
        self.snapshot_groups()
        self.retain()
        report.seconds = time.monotonic() - started
        self.finished.append(report)
        log.info(
            "cycle %d: %d partitions, %d records, %d objects (%d already stored), %.1f MB in %.1fs",
            report.cycle,
            report.partitions,
            report.records,
            report.objects,
            report.replayed,
            report.bytes / 1e6,
            report.seconds,
            extra={
                "cycle": report.cycle,
                "partitions": report.partitions,
                "records": report.records,
                "objects": report.objects,
                "replayed": report.replayed,
                "bytes": report.bytes,
                "seconds": round(report.seconds, 3),
            },
        )
        if self.on_cycle:
            self.on_cycle(report, results)
        if report.errors:
            raise BackupFailed("; ".join(report.errors))
        return report

    def _phase(self, name: str, detail: str = "", tasks: int | None = None) -> None:
        if self.on_phase is not None:
            self.on_phase(Phase(name, detail, tasks))

    def _open_live(self) -> None:
        """The channel the tasks tell running counts (for the progress bars) and stored objects (for the log's
        "committed" lines, as they happen) over; opened when either is wanted, once."""
        if self.live is None and (self.live_progress or log.isEnabledFor(logging.INFO)):
            self.live = LiveCounts.open(self.engine.driver_host, self._heard_stored)

    def close_live(self) -> None:
        if self.live is not None:
            self.live.close()
            self.live = None

    def _heard_stored(self, tp: tuple[str, int], fields: dict[str, Any]) -> None:
        """A task stored an object (:mod:`kafka_s3.runtime.live`): its "committed" line, now."""
        self._log_committed(
            tp,
            str(fields["key"]),
            int(fields["records"]),
            int(fields["first"]),
            int(fields["last"]),
            int(fields["bytes"]),
        )

    def _log_committed(self, tp: TP, key: str, records: int, first: int, last: int, nbytes: int) -> None:
        """One line per object stored, once: as a task tells it, or from the job's results when that was lost."""
        with self._told_lock:
            if key in self._told:
                return
            self._told.add(key)
        log.info(
            "committed %s/%s records=%d offsets=%d..%d bytes=%d",
            self.store.url,
            key,
            records,
            first,
            last,
            nbytes,
            extra={
                "object": f"{self.store.url}/{key}",
                "topic": tp[0],
                "partition": tp[1],
                "records": records,
                "first_offset": first,
                "last_offset": last,
                "bytes": nbytes,
            },
        )

    def _run_once_cycle(self, plans: list[PartitionPlan]) -> CycleReport:
        """A cycle of ``run_once``: a partition failing ``ONCE_ATTEMPTS`` times in a row ends it (what the other
        partitions committed is durable and committed). A failed partition is retried only while the services
        answer: a store or cluster that stopped answering ends the run at once with its error, instead of
        ``ONCE_ATTEMPTS`` more rounds of timeouts. The exit code is the failing service's."""
        report = self.run_cycle(plans)
        if report.retrying:
            self._check_services(report.retrying)
        if any(s.failures >= ONCE_ATTEMPTS for s in self.states.values()):
            raise gave_up(f"gave up after {ONCE_ATTEMPTS} attempts: " + "; ".join(report.retrying), report.retrying)
        return report

    def _check_services(self, failures: list[str]) -> None:
        """Before partitions that failed are tried again: the object store (its bucket) and Kafka (a metadata
        request) still answer, each asked within ``service.timeout.ms``, else the run ends with the partitions'
        errors and the service's (endpoint or bootstrap servers named; exit code 3 or 4)."""
        failed = "; ".join(failures)
        try:
            self.store.check()
        except StoreError as exc:
            raise gave_up(f"{failed}; and the object store does not answer now either: {exc}", [], exc) from None
        try:
            self.admin.cluster_id()
        except KafkaError as exc:
            raise gave_up(f"{failed}; and Kafka does not answer now either: {exc}", [], exc) from None

    def _apply(self, results: list[PartitionResult], plans: list[PartitionPlan], report: CycleReport) -> None:
        plans_by_tp = {(p.topic, p.partition): p for p in plans}
        commits: dict[TP, int] = {}
        metadata: dict[TP, str] = {}
        for result in results:
            tp = (result.topic, result.partition)
            state = self.states[tp]
            plan = plans_by_tp[tp]
            report.bytes += sum(f.bytes for f in result.files)
            self._count_committed(tp, result)
            for chunk in result.chunks:
                for f in logged_objects(chunk):
                    report.objects += 1
                    report.records += f.records
                    state.last_object = f.key
                    self._log_committed(tp, f.key, f.records, f.first_offset, f.last_offset, f.bytes)
            ambiguous = sum(f.ambiguous for f in result.files)
            if ambiguous:
                log.warning("%s", ambiguous_warning(tp[0], tp[1], ambiguous))
            report.replayed += result.replayed_files
            if result.error and result.retryable:
                self._retry_later(tp, state, result.error, report)
            elif result.error:
                report.errors.append(f"{tp[0]}[{tp[1]}]: {result.error}")
            else:
                state.failures, state.retry_at = 0, 0.0
            if state.absorb(result, plan.start, self._cycle_wall_start):
                commits[tp] = state.next_offset
                metadata[tp] = state.commit_metadata(self.store.url, self.topic_ids.get(tp[0], ""))
        # The bucket's own record of each partition's committed end (restores detect a deleted tail with it): every
        # file of these chunks is complete; marked before the group commit, so a crash in between only re-marks.
        marks = [(r.topic, r.partition, r.chunks[-1].start) for r in results if r.chunks]
        with ThreadPoolExecutor(max_workers=min(STORE_REQUESTS, max(1, len(marks)))) as pool:
            list(pool.map(lambda mark: self.manifests.mark_committed(*mark), marks))  # all, or raise: no commit
        if commits:
            self.admin.commit_group_offsets(self.group, commits, metadata)
            for (topic, partition), offset in sorted(commits.items()):
                log.debug("group %s: %s[%d] committed at %d", self.group, topic, partition, offset)

    def _count_committed(self, tp: TP, result: PartitionResult) -> None:
        objects = [f for chunk in result.chunks for f in logged_objects(chunk)]
        times = [f.last_timestamp for f in result.files if f.last_timestamp is not None]
        self.metrics.committed(
            tp[0],
            tp[1],
            sum(f.records for f in objects),
            sum(f.bytes for f in result.files),
            len(objects),
            max(times) if times else None,
        )

    def _measure(self, ends: dict[TP, int], report: CycleReport, seconds: float) -> None:
        """After a follow cycle: each partition's lag (the end read this cycle minus the committed offset) and the
        cycle. For health, records wait only where no task has read them yet: an open chunk waiting for its rotation
        is not a stall."""
        unread = sum(
            max(0, end - max(self.states[tp].next_offset, self.states[tp].last_scanned)) for tp, end in ends.items()
        )
        for line in report.retrying:
            self.metrics.failed(*failure_kind(line))
        lags = {tp: end - self.states[tp].next_offset for tp, end in ends.items()}
        self.metrics.cycle(seconds, report.records > 0 or report.objects > 0, time.time(), unread, lags)

    def snapshot_groups(self) -> None:
        """The consumer groups' offsets on the backed-up topics, after a cycle's commit (:class:`.History`)."""
        if self.history.once and any(s.failures for s in self.states.values()):
            return  # run_once: taken when no partition is failing (else the run fails), not against a failing store
        self.history.snapshot_groups(sorted({tp[0] for tp in self.states}))

    def retain(self) -> None:
        """``backup.retention.ms`` / ``backup.retention.bytes``: the chunks they ask to remove, pruned at the end of a
        cycle as ``kafka-s3 prune --execute`` would (the partitions' positions protected). A prune that fails is
        logged and tried again next cycle: retention never stops the records' backup."""
        selectors = retention_selectors(self.config)
        if selectors.empty:
            return
        resume = {tp: state.next_offset for tp, state in self.states.items()}
        if not resume:
            return
        try:
            prune(
                self.config,
                self.manifests,
                selectors,
                topics=sorted({topic for topic, _ in resume}),
                execute=True,
                resume=resume,
                check_live=False,
                cache=self._retention_cache,
            )
        except Interrupted:
            raise
        except KafkaS3Error as exc:
            log.error("retention not applied (tried again next cycle): %s", exc)

    def _retry_later(self, tp: TP, state: PartitionState, error: str, report: CycleReport) -> None:
        """A partition whose task failed in a way another attempt may cure: retried with exponential backoff,
        reported in the cycle's report and the log; the other partitions keep moving."""
        state.failures += 1
        wait = backoff(self._retry_base, state.failures)
        state.retry_at = time.monotonic() + wait
        first_line = error.strip().splitlines()[0][:500] if error.strip() else "failed"
        report.retrying.append(f"{tp[0]}[{tp[1]}]: {first_line}")
        log.error(
            "%s[%d]: backup failed (%d in a row), retrying this partition in %.1fs (the others go on): %s",
            tp[0],
            tp[1],
            state.failures,
            wait,
            first_line,
        )

    # ------------------------------------------------------------------------------------------------ modes
    def check_store(self) -> None:
        """The bucket exists and is reachable, and (once per backup) the store refuses a conditional put on an
        existing key: exactly-once rests on it (:mod:`kafka_s3.io.stores.conformance`)."""
        self.store.check()
        if self._conditional_checked:
            return
        prefix = f"{self.manifests.root.rsplit(MANIFEST_DIR, 1)[0]}{MANIFEST_DIR}{self.manifests.delim}"
        check_conditional_put(self.store, prefix, self.config["store.allow.unconditional.puts"])
        self._conditional_checked = True

    def run_once(self) -> BackupSummary:
        """Back up every record below the high watermarks seen now, flush what is open, and return. A part it was
        asked to save besides the records (schemas, topic configurations, group snapshots) that failed is raised at
        the end (:class:`~kafka_s3.pipelines.backup.history.PartsNotSaved`)."""
        try:
            return self._run_once()
        finally:
            self.close_live()

    def _run_once(self) -> BackupSummary:
        self.history.once = True
        self._phase(PLANNING, "checking the bucket, listing topics")
        self.check_store()
        topics = self.topics()
        self._check_sources(topics)
        tps = [(t, p) for t, n in topics.items() for p in range(n)]
        self._phase(PLANNING, f"reading the offsets of {len(tps)} partition{'s' if len(tps) != 1 else ''}")
        self._resume(tps)
        targets = self.admin.end_offsets(tps, read_committed=self.config["isolation.level"] == "read_committed")
        self.targets = dict(targets)
        summary = BackupSummary(targets=dict(targets))
        self._retry_base = ONCE_RETRY_BASE_SECONDS
        while True:
            plans = self.plan(targets, flush_open=True, targets=targets)
            if not plans:
                waiting = [s.retry_at for s in self.states.values() if s.failures and s.retry_at > time.monotonic()]
                if not waiting:
                    break
                time.sleep(max(0.0, min(waiting) - time.monotonic()))  # only failing partitions are left
                continue
            summary.cycles.append(self._run_once_cycle(plans))
        if not summary.cycles:
            self.snapshot_groups()
        summary.committed = {tp: s.next_offset for tp, s in self.states.items()}
        self.history.raise_unsaved(summary.records, summary.objects)
        return summary

    def follow(self, stop: threading.Event | None = None, serve_metrics: bool = True) -> None:
        """Run cycles forever (or until ``stop`` is set), every ``cycle.interval.ms``. A store or Kafka outage, at the
        start too, is retried with backoff; a missing bucket, refused access or a store ignoring conditional puts
        is not. ``metrics.port`` serves the metrics (``serve_metrics=False``: a group serves its backups' at once)."""
        server = serve([self.metrics], self.config) if serve_metrics else None
        try:
            self._follow(stop or threading.Event())
        finally:
            self.close_live()
            if server is not None:
                server.close()

    def _follow(self, stop: threading.Event) -> None:
        interval = self.config["cycle.interval.ms"] / 1000
        read_committed = self.config["isolation.level"] == "read_committed"
        failures = 0
        while not stop.is_set():
            started = time.monotonic()
            try:
                if not self._conditional_checked:
                    self.check_store()
                topics = self.topics()
                self._check_sources(topics)
                tps = [(t, p) for t, n in topics.items() for p in range(n)]
                self._resume(tps)
                ends = self.admin.end_offsets(tps, read_committed=read_committed)
                self.metrics.lags({tp: end - self.states[tp].next_offset for tp, end in ends.items()})
                report = self.run_cycle(self.plan(ends, flush_open=False))
                self._measure(ends, report, time.monotonic() - started)
                failures = 0
            except (BackupFailed, ConfigError, PlanError, BucketNotFoundError, StoreAccessDeniedError, Interrupted):
                raise  # the records, the configuration, the bucket or the log are wrong: retrying cannot help
            except Exception as exc:  # Kafka/S3 outages, failed Spark jobs: nothing was committed past what is durable
                self.metrics.cycle_failed(type(exc).__name__, getattr(exc, "exit_code", 1))
                failures += 1
                wait = backoff(interval, failures)
                log.error(
                    "cycle failed (%d in a row), retrying in %.0fs: %s",
                    failures,
                    wait,
                    str(exc).strip().splitlines()[0][:500] if str(exc).strip() else type(exc).__name__,
                )
                stop.wait(wait)
                continue
            stop.wait(max(0.0, interval - (time.monotonic() - started)))


def ambiguous_warning(topic: str, partition: int, records: int) -> str:
    return (
        f"{topic}[{partition}]: {records} record{'s' if records != 1 else ''} cannot be restored one by one: "
        "ByteArrayFormat wrote values (or keys) holding format.bytearray.separator, or tombstones as empty records "
        "(Lenses' CSV and TEXT: values holding a line break; Lenses' BYTES: tombstones), so reading the objects back "
        "cannot give them back as they were. Their chunk manifests count them and a restore refuses those objects; "
        "use format.class=avro, parquet or json (or store.envelope=true) for such data"
    )
