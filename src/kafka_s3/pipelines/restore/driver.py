"""The restore pipeline's driver: plan, check, claim the targets, run one Spark job, report; or keep doing so.

A restore is made of parts that each do one job, sharing one context (:mod:`.context`): the plan (:mod:`.plan`:
survey, integrity, bounds, per-partition objects), the target checks (:mod:`.targets`), transactions and where each
partition starts (:mod:`.fencing`), Schema Registry subjects (:mod:`.schemas`) and consumer groups
(:mod:`.translation`). :class:`Restore` runs them in order and loops for ``--follow``; every check that can fail is
done before the first record is produced.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import (
    BucketNotFoundError,
    EngineError,
    KafkaAuthorizationError,
    KafkaError,
    PrunedWhileRestoring,
    RestoreFailed,
    StoreAccessDeniedError,
    StoreError,
)
from kafka_s3.core.metrics import HealthPolicy, PipelineMetrics
from kafka_s3.core.store import Store
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.clients import TP
from kafka_s3.io.kafka.leases import Lease
from kafka_s3.pipelines.backup.cycle import backoff
from kafka_s3.pipelines.engine import PARTITIONS_AT_ONCE, Engine, Task, task_slots
from kafka_s3.pipelines.phases import PLANNING, RESTORING, STARTING_SPARK, OnPhase, Phase
from kafka_s3.pipelines.read.discovery import Problem
from kafka_s3.pipelines.read.integrity import Finding
from kafka_s3.pipelines.read.options import RestoreOptions
from kafka_s3.pipelines.read.plugins import ReadPlugins
from kafka_s3.pipelines.read.pruned import pruned_meanwhile
from kafka_s3.pipelines.read.reader import Gap
from kafka_s3.pipelines.restore.context import RestoreContext
from kafka_s3.pipelines.restore.fencing import Fencing
from kafka_s3.pipelines.restore.groups import GroupsPlan
from kafka_s3.pipelines.restore.metrics import measure_cycle
from kafka_s3.pipelines.restore.plan import RestorePlanSet, check_whole, late_objects, plan_restore
from kafka_s3.pipelines.restore.result import RestoreResult
from kafka_s3.pipelines.restore.schemas import SchemaImport
from kafka_s3.pipelines.restore.targets import TargetChecks
from kafka_s3.pipelines.restore.task import RestorePlan, restore_task
from kafka_s3.pipelines.restore.translation import translate_groups
from kafka_s3.runtime.live import LiveCounts
from kafka_s3.runtime.metrics import serve

log = logging.getLogger("kafka_s3.restore")

__all__ = ["Restore", "RestorePlanSet", "RestoreSummary"]


@dataclass
class RestoreSummary:
    results: list[RestoreResult] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)  # offsets of the source partitions that no object holds
    skipped: list[Finding] = field(
        default_factory=list
    )  # --allow-gaps: what the bucket lacks, left out (integrity.Finding)
    seconds: float = 0.0
    timestamps: str = ""  # where the restored records' timestamps come from (ReadPlugins.timestamps)
    layout: str = ""  # whose layout the prefix holds (RestorePlanSet.layout)
    # Offsets not restored because a chunk before them is not uploaded yet: run again (exit code 8 on the CLI)
    unfinished: list[Finding] = field(default_factory=list)
    groups: GroupsPlan | None = None  # restore --consumer-groups: the groups committed after the restore

    @property
    def records(self) -> int:
        return sum(r.records for r in self.results)


class Restore:
    """One configuration's restore: ``plan()``, ``run()`` (once) or ``follow(stop)``, ``translate_groups()``."""

    JOB_NAME = "kafka-s3 restore"  # the Spark job's description, before its partition count

    def __init__(self, config: Config, engine: Engine, options: RestoreOptions | None = None):
        self.ctx = RestoreContext.open(config, engine, options)
        self.targets = TargetChecks(self.ctx)
        self.fencing = Fencing(self.ctx)
        self.schemas = SchemaImport(self.ctx)
        self.engine = engine
        self.current_plan: RestorePlanSet | None = None  # what run() is restoring (progress bars read it)
        self.live_progress = False  # the CLI's progress bar asks for running counts from the tasks
        self.live: LiveCounts | None = None
        self.on_phase: OnPhase | None = None  # told of each step (planning, starting Spark, ...) as it starts
        self.restored_records = 0  # by every finished job (the CLI's summary after a signal)
        self._lease: Lease | None = None  # this run's claim on its target topics (restore.lease.topic)
        # what --metrics-port serves in --follow mode (records, lag, commits, cycles, errors; healthy or stalled)
        self.metrics = PipelineMetrics(
            "restore", config["name"], HealthPolicy(config["metrics.unhealthy.after.cycles"])
        )

    # What callers read of the context (its configuration and plugins change once the layout is detected)
    @property
    def config(self) -> Config:
        return self.ctx.config

    @property
    def options(self) -> RestoreOptions:
        return self.ctx.options

    @property
    def plugins(self) -> ReadPlugins:
        return self.ctx.plugins

    @property
    def store(self) -> Store:
        return self.ctx.store

    @property
    def admin(self) -> Admin:
        return self.ctx.admin

    @property
    def producer_settings(self) -> dict[str, str]:
        return self.ctx.producer_settings

    @property
    def following(self) -> bool:
        return self.ctx.following

    # ------------------------------------------------------------------------------------------------ planning
    def exactly_once(self) -> bool:
        """Whether to use transactions (:meth:`.fencing.Fencing.exactly_once`)."""
        return self.fencing.exactly_once()

    def plan(self, only_new_after: dict[TP, int] | None = None, probe_transactions: bool = True) -> RestorePlanSet:
        """What a restore would do (:func:`.plan.plan_restore`)."""
        return plan_restore(self.ctx, self.fencing.exactly_once, only_new_after, probe_transactions)

    def check_whole(self, plan_set: RestorePlanSet) -> None:
        check_whole(plan_set, self.options.allow_gaps)

    def check_targets(self, plan_set: RestorePlanSet, create: bool = True) -> None:
        """The target checks (:class:`.targets.TargetChecks`); a dry run (``create=False``) also says who holds a
        target now."""
        self.targets.check(plan_set, create, self.lease())

    def start_refusals(self, plan_set: RestorePlanSet) -> list[str]:
        return self.fencing.start_refusals(plan_set)

    def schemas_plan(self, plan_set: RestorePlanSet) -> str:
        return self.schemas.plan(plan_set)

    def translate_groups(self, regex: str = ".*", dry_run: bool = False) -> GroupsPlan:
        """Commit (or, ``dry_run``, plan) the recorded consumer groups fully matching ``regex`` on the target."""
        return translate_groups(self.ctx, self.fencing, self.current_plan or self.plan(), regex, dry_run)

    # ------------------------------------------------------------------------------------------------ running
    def lease(self) -> Lease | None:
        """This run's claim on its target topics (``None`` when ``restore.lease.topic`` is empty)."""
        topic = self.ctx.config["restore.lease.topic"]
        if topic and self._lease is None:
            source = f"{self.ctx.store.url}/{self.ctx.plugins.layout.topics_dir}"
            self._lease = Lease(
                self.ctx.admin,
                self.ctx.producer_settings,
                self.ctx.consumer_settings,
                topic,
                self.ctx.config["name"],
                source,
                self.ctx.run_id,
                f"{self.ctx.progress_base}-lease",
            )
        return self._lease

    def hold_targets(self, plan_set: RestorePlanSet) -> None:
        """Claim the plan's target topics before anything is created or produced: a restore (of this configuration
        or another) already restoring into one of them is live, and this one is refused, naming it."""
        lease = self.lease()
        if lease is not None:
            lease.acquire({p.target_topic for p in plan_set.plans})

    def release_targets(self) -> None:
        if self._lease is not None:
            self._lease.release()

    def run(self, plan_set: RestorePlanSet | None = None) -> RestoreSummary:
        """Restore what ``plan_set`` (by default a new plan) holds: one Spark job. Outside :meth:`follow`, the target
        topics are claimed for the run and released at its end."""
        try:
            return self._run(plan_set)
        finally:
            if not self.following:
                self.release_targets()

    def _run(self, plan_set: RestorePlanSet | None = None) -> RestoreSummary:
        started = time.monotonic()
        if plan_set is None:
            if self.options.verify_deep:  # its checks run as a Spark job while planning
                self._start_engine()
            self._phase(PLANNING, "listing objects, checking the backup is whole")
            plan_set = self.plan()
        check_whole(plan_set, self.options.allow_gaps)
        self._phase(PLANNING, "checking the target topics")
        self.hold_targets(plan_set)
        if self.options.schemas:  # the registry answers (or fails the restore) before any topic is created
            plan_set.plans = self.schemas.run(plan_set)
        self.targets.check(plan_set)
        plan_set.plans = self.fencing.decide_starts(plan_set.plans)
        self.current_plan = plan_set
        skipping = self.options.allow_gaps and not self.following  # unfinished chunks skipped, not waited for
        summary = RestoreSummary(
            problems=list(plan_set.problems),
            skipped=plan_set.blocking + (plan_set.in_progress if skipping else []),
            timestamps=plan_set.timestamps,
            layout=plan_set.layout,
            unfinished=[] if skipping else plan_set.unfinished,
        )
        for finding in summary.skipped:
            log.warning("skipped (--allow-gaps): %s", finding)
        if not self.following:
            for finding in summary.unfinished:
                log.warning("stopping at an unfinished chunk: %s", finding)
        plans = plan_set.plans
        if plans:
            self.targets.ensure_offset_map_topic()
            try:
                summary.results = self._run_job(plans)
            except StoreError as exc:  # a planned object gone: a prune since the plan, or truly missing
                planned = {(p.source_topic, p.source_partition): [(o.key, o.start) for o in p.objects] for p in plans}
                pruned = pruned_meanwhile(exc, planned, self.ctx.plugins.manifests(self.ctx.store))
                if pruned is None:
                    raise
                raise pruned from None
        logged = self.config["behavior.on.error"] == "log"
        for result in summary.results:
            for problem in result.problems:
                summary.problems.append(problem)
                if logged:  # the task's own log line stays in its Spark worker
                    log.warning("%s", problem)
            for gap in result.gaps:
                summary.gaps.append(gap)
                log.warning("%s", gap)
        summary.seconds = time.monotonic() - started
        self.restored_records += summary.records
        for r in summary.results:
            log.info(
                "restored %s[%d] -> %s[%d]: %d records from %d objects, source offsets %s..%s, target offsets %s..%s",
                r.source_topic,
                r.source_partition,
                r.target_topic,
                r.target_partition,
                r.records,
                r.objects,
                r.first_source_offset,
                r.last_source_offset,
                r.first_target_offset,
                r.last_target_offset,
            )
        errors = [f"{r.source_topic}[{r.source_partition}]: {r.error}" for r in summary.results if r.error]
        if errors:
            raise RestoreFailed("; ".join(errors), summary)
        return summary

    def _run_job(self, plans: list[RestorePlan]) -> list[RestoreResult]:
        cap = self.ctx.config["tasks.max"]
        self._start_engine()  # a lazily started session is not the job's time (operators and the benchmark read it)
        # tasks.max: that many tasks, each restoring its partitions one by one; else a few tasks per core, each
        # restoring several of its partitions at once (many quiet partitions: issue 30)
        slots = min(len(plans), cap) if cap > 0 else task_slots(len(plans), self.engine.parallelism)
        at_once = 1 if cap > 0 else PARTITIONS_AT_ONCE
        if self.live_progress and self.live is None:
            self.live = LiveCounts.open(self.engine.driver_host)
        live = self.live.new_round() if self.live else None
        task = self._job_task(plans, slots, live, at_once)
        job_started = time.monotonic()
        self._phase(RESTORING, f"{len(plans)} partition{'s' if len(plans) != 1 else ''}", tasks=slots)
        rows = self.engine.run_tasks(f"{self.JOB_NAME} ({len(plans)} partitions)", task, slots)
        results = sorted((RestoreResult.from_json(r) for r in rows), key=lambda r: (r.source_topic, r.source_partition))
        log.info("restore job: %d records in %.2fs", sum(r.records for r in results), time.monotonic() - job_started)
        return results

    def _job_task(self, plans: list[RestorePlan], slots: int, live: tuple[str, int, int] | None, at_once: int) -> Task:
        """The Spark task restoring ``plans`` from objects (a table's restore reads data files instead)."""
        return restore_task(plans, self.ctx.task_settings(), slots, live, at_once)

    def _phase(self, name: str, detail: str = "", tasks: int | None = None) -> None:
        if self.on_phase is not None:
            self.on_phase(Phase(name, detail, tasks))

    def _start_engine(self) -> None:
        if not self.engine.started:
            self._phase(STARTING_SPARK)
        self.engine.start()

    def follow(self, stop: threading.Event | None = None) -> None:
        """Restore, then keep restoring objects that appear later (including new time-period directories).

        A partition whose next chunk the backup has not finished uploading waits there (nothing after it is produced
        first) and goes on once it is complete. In buckets without manifests (another tool's), an object that
        appears after the restore went past its first offset (possible with several directories per partition: field
        or time partitioners write each directory's objects at their own pace) cannot be inserted in order any more:
        its records below the progress are reported, not restored. An object-store or Kafka outage, or a failed Spark
        job, fails one cycle: it is logged and tried again with backoff (each task resumes from committed progress),
        as a following backup does; a missing bucket or a refused right ends the restore.
        """
        stop = stop or threading.Event()
        self.ctx.following = True
        interval = self.ctx.config["s3.poll.interval.ms"] / 1000
        seen: dict[TP, set[str]] = {}
        progress: dict[TP, int] = {}
        waiting: dict[TP, int | None] = {}
        server = serve([self.metrics], self.ctx.config)
        try:
            self._follow(stop, interval, seen, progress, waiting)
        finally:
            self.release_targets()
            if server is not None:
                server.close()

    def _follow(
        self,
        stop: threading.Event,
        interval: float,
        seen: dict[TP, set[str]],
        progress: dict[TP, int],
        waiting: dict[TP, int | None],
    ) -> None:
        failures = 0
        while not stop.is_set():
            try:
                self._follow_cycle(interval, seen, progress, waiting)
                failures = 0
            except (BucketNotFoundError, StoreAccessDeniedError, KafkaAuthorizationError):
                raise  # the bucket or the rights are wrong: retrying cannot help
            except PrunedWhileRestoring as exc:  # the plan is stale, not the store: plan again from the new start
                log.warning("%s", exc)
                continue
            except (StoreError, KafkaError, EngineError) as exc:  # outages: nothing was committed past what is produced
                self.metrics.cycle_failed(type(exc).__name__, getattr(exc, "exit_code", 1))
                failures += 1
                wait = backoff(interval, failures)
                first = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else type(exc).__name__
                log.error("cycle failed (%d in a row), retrying in %.0fs: %s", failures, wait, first)
                stop.wait(wait)
                continue
            stop.wait(interval)

    def _follow_cycle(
        self, interval: float, seen: dict[TP, set[str]], progress: dict[TP, int], waiting: dict[TP, int | None]
    ) -> None:
        plan_set = self.plan()
        for tp, check in plan_set.checks.items():
            if check.frontier != waiting.get(tp) and check.unfinished is not None:
                log.info("waiting: %s", check.unfinished)
            waiting[tp] = check.frontier
        for problem in late_objects(plan_set, seen, progress):
            plan_set.problems.append(problem)
            log.warning("%s: %s", problem.key, problem.message)
        started = time.monotonic()
        try:
            summary = self.run(plan_set)
        except RestoreFailed as failed:
            self.metrics.failed(type(failed).__name__, failed.exit_code)
            raise
        measure_cycle(self.metrics, plan_set.plans, summary.results, time.monotonic() - started)
        for r in summary.results:
            if r.progress is not None:
                progress[(r.source_topic, r.source_partition)] = r.progress
        if summary.records:
            log.info("restored %d records; next listing in %.0fs", summary.records, interval)
