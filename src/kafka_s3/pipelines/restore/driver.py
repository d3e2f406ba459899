"""The restore pipeline's driver: discover, plan per source partition, check targets, run one Spark job, report.

Every check that can fail is done before the first record is produced: target topics exist (or are created with
``topic.creation.enable``) with enough partitions, restoring into a backup's own non-empty source topic is refused
(the feedback loop Confluent warns about) unless allowed, and the bucket and its objects are reachable.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_s3.core.config.model import Config
from kafka_s3.core.errors import ConfigError, KafkaAuthorizationError, KafkaError, PlanError, RestoreFailed
from kafka_s3.core.groups import OffsetMap, Translation, pick_snapshot, translate_offset
from kafka_s3.core.layouts.detection import Detection
from kafka_s3.core.schemas import SavedSchemas
from kafka_s3.core.topic_config import TopicConfig, creation_configs, policy_warning
from kafka_s3.core.transforms import topic_router
from kafka_s3.io.kafka import retry
from kafka_s3.io.kafka.admin import TP, Admin
from kafka_s3.io.kafka.denied import denial, lacks
from kafka_s3.io.kafka.leases import Lease, refusal
from kafka_s3.io.kafka.settings import client_settings
from kafka_s3.pipelines.engine import Engine
from kafka_s3.pipelines.live import LiveCounts
from kafka_s3.pipelines.read.ambiguity import refuse_ambiguous
from kafka_s3.pipelines.read.bounds import refuse_empty_bounds
from kafka_s3.pipelines.read.committed import cross_check, read_marks
from kafka_s3.pipelines.read.discovery import Problem, SourcePartition
from kafka_s3.pipelines.read.integrity import (
    Finding,
    Kind,
    PartitionCheck,
    incomplete,
    survey,
    without_excluded,
)
from kafka_s3.pipelines.read.layouts import detected
from kafka_s3.pipelines.read.options import RestoreOptions
from kafka_s3.pipelines.read.plugins import ReadPlugins
from kafka_s3.pipelines.read.reader import Gap, order_warning, unprovable_bound
from kafka_s3.pipelines.restore.groups import GroupsPlan, MapKey, read_offset_maps
from kafka_s3.pipelines.restore.progress import Decision, ProgressIdentity, decide
from kafka_s3.pipelines.restore.result import RestoreResult
from kafka_s3.pipelines.restore.task import RestorePlan, restore_task
from kafka_s3.pipelines.verify import deep_check

log = logging.getLogger("kafka_s3.restore")


@dataclass
class RestorePlanSet:
    partitions: dict[TP, SourcePartition]
    targets: dict[str, str]  # source topic -> target topic
    plans: list[RestorePlan]
    problems: list[Problem]
    created_topics: list[str] = field(default_factory=list)
    target_partitions: dict[str, int | None] = field(default_factory=dict)
    creation_partitions: dict[str, int] = field(default_factory=dict)  # missing targets: partitions they get
    blockers: list[str] = field(default_factory=list)  # what would stop the restore (dry runs)
    warnings: list[str] = field(default_factory=list)  # what the plan warns about (cleanup.policy mismatches)
    schema_note: str = ""  # restore --schemas: ids preserved, or which are rewritten
    checks: dict[TP, PartitionCheck] = field(default_factory=dict)  # is the backup whole (read/integrity)
    timestamps: str = ""  # where the restored records' timestamps come from (ReadPlugins.timestamps)
    layout: str = ""  # whose layout the prefix holds (read/layouts.py)

    @property
    def findings(self) -> list[Finding]:
        return [f for check in self.checks.values() for f in check.findings]

    @property
    def blocking(self) -> list[Finding]:
        return [f for check in self.checks.values() for f in check.blocking]

    @property
    def unfinished(self) -> list[Finding]:
        """Per partition, the offsets held back at a chunk the backup has not finished uploading."""
        return [check.unfinished for check in self.checks.values() if check.unfinished is not None]

    @property
    def in_progress(self) -> list[Finding]:
        """Each chunk not uploaded yet (what ``--allow-gaps`` skips)."""
        return [f for check in self.checks.values() for f in check.findings if f.kind is Kind.IN_PROGRESS]


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

    @property
    def records(self) -> int:
        return sum(r.records for r in self.results)


class Restore:
    def __init__(self, config: Config, engine: Engine, options: RestoreOptions | None = None):
        from kafka_s3.io.stores.spec import StoreSpec

        self.config = config
        self.options = options or RestoreOptions()
        self.store_spec = StoreSpec.from_config(config)
        self.store = self.store_spec.open()
        self.plugins = ReadPlugins.from_config(config)
        self.route = topic_router(config)
        self.admin = Admin(
            client_settings(config, "admin", warn=False), connect_timeout=config["service.timeout.ms"] / 1000
        )
        self.producer_settings = client_settings(config, "producer")
        self.consumer_settings = client_settings(config, "consumer", warn=False)
        self.engine = engine
        self.raw_config = {k: str(v) for k, v in config.originals.items()}
        self.detection: Detection | None = None  # the layout under topics.dir, found by the first plan
        self.progress_base = f"kafka-s3-restore-{config['name']}"
        self._exactly_once: bool | None = None
        self.current_plan: RestorePlanSet | None = None  # what run() is restoring (progress bars read it)
        self.live_progress = False  # the CLI's progress bar asks for running counts from the tasks
        self.live: LiveCounts | None = None
        self.following = False  # follow(): topics without objects yet are waited for, not an error
        self.restored_records = 0  # by every finished job (the CLI's summary after a signal)
        self.run_id = uuid.uuid4().hex  # this run: stamped in its progress (its own --restart progress is resumed)
        self._lease: Lease | None = None  # this run's claim on its target topics (restore.lease.topic)

    # ------------------------------------------------------------------------------------------------ planning
    def exactly_once(self) -> bool:
        """Whether to use transactions: required / requested (probe the broker) / disabled. The log says which."""
        if self._exactly_once is None:
            mode = self.config["exactly.once.support"]
            if mode == "disabled":
                self._exactly_once = False
                log.info("restoring at least once (exactly.once.support=disabled)")
            else:
                self.admin.topics()  # an unreachable cluster is a KafkaError naming it, not "no transactions"
                supported, reason = self._probe_transactions(mode)
                if not supported and mode == "required":
                    raise PlanError(
                        f"exactly.once.support=required but the Kafka cluster refused transactions: {reason}"
                    )
                if supported:
                    log.info("restoring exactly once (transactions; exactly.once.support=%s)", mode)
                else:
                    log.warning("the Kafka cluster does not support transactions (%s): restoring at least once", reason)
                self._exactly_once = supported
        return self._exactly_once

    def _probe_transactions(self, mode: str) -> tuple[bool, str]:
        """``(True, "")`` when the cluster gives a transactional producer id; ``(False, why)`` only when the cluster
        says it has no transactions. Any other failure (timeout, authorization, a bad producer setting) is an error:
        a restore must not quietly fall back to at-least-once because the probe itself went wrong."""
        from confluent_kafka import KafkaError as RdKafkaError
        from confluent_kafka import KafkaException, Producer

        transactional_id = f"{self.progress_base}-probe"
        producer = Producer({**self.producer_settings, "transactional.id": transactional_id})

        def attempt(remaining: float) -> tuple[bool, str]:
            try:
                producer.init_transactions(min(30.0, remaining))
                return True, ""
            except KafkaException as exc:
                error = retry.error_of(exc)
                if error is not None and error.code() in (
                    RdKafkaError._UNSUPPORTED_FEATURE,
                    RdKafkaError.UNSUPPORTED_VERSION,
                ):
                    return False, str(error.str())
                needed = self._transactions_denied(exc, transactional_id)
                if needed:
                    raise KafkaAuthorizationError(
                        f"exactly.once.support={mode}: the restore's transactional producer was refused: {needed} "
                        f"(every transactional id of this restore starts with '{self.progress_base}-': grant WRITE "
                        "and DESCRIBE on that prefix), or set exactly.once.support=disabled to restore at least once "
                        f"({retry.describe(exc)})"
                    ) from None
                raise  # retried when retriable (a transaction coordinator still loading on a fresh cluster)

        try:
            return retry.call(f"init_transactions of transactional.id {transactional_id!r}", attempt, 30.0)
        except KafkaAuthorizationError:
            raise
        except KafkaError as exc:
            raise KafkaError(
                f"exactly.once.support={mode}: probing the Kafka cluster for transactions failed ({exc}); fix the "
                "cause, or set exactly.once.support=disabled to restore at least once"
            ) from None

    def plan(self, only_new_after: dict[TP, int] | None = None, probe_transactions: bool = True) -> RestorePlanSet:
        """What a restore would do. ``probe_transactions=False``: plans that will not be run (``kafka-s3 groups``)
        do not ask the cluster for a transactional producer, so a principal without a transactional id can plan."""
        by_time = self.options.from_timestamp is not None or self.options.until_timestamp is not None
        if by_time and not self.plugins.envelope:
            raise ConfigError(
                "--from-timestamp/--until-timestamp need record timestamps, which only store.envelope=true backups "
                "keep",
                key="store.envelope",
            )
        self.store.check()
        if self.detection is None:
            self.config, self.detection = detected(self.config, self.store)
            self.plugins = ReadPlugins.from_config(self.config)
            self.raw_config = {k: str(v) for k, v in self.config.originals.items()}
        problems: list[Problem] = []
        topics = self.options.topics or self.config["topics"] or None
        # The backup's own group (where this cluster has it) says what the bucket must hold: read before the listing
        marks, note = read_marks(self.config, self.store.url, topics or self.plugins.manifests(self.store).topics())
        if note:
            log.debug("the backup's consumer group was not compared with the bucket: %s", note)
        found = survey(self.store, self.plugins, topics, self.config["behavior.on.error"], problems)
        cross_check(found.checks, found.manifests, marks, set(found.sizes))
        partitions, checks = found.partitions, found.checks
        refuse_ambiguous(partitions, found.loaded)  # ByteArray records that cannot be told apart
        refuse_empty_bounds(self.options, partitions, self.following)  # before Spark starts or a topic is created
        hold = self.following or not self.options.allow_gaps  # --allow-gaps skips unfinished chunks instead
        if self.options.verify_deep:
            readable = {tp: without_excluded(part, checks.get(tp), hold) for tp, part in partitions.items()}
            for tp, findings in deep_check(self.engine, self.config, readable).items():
                checks[tp].findings.extend(findings)
                checks[tp].excluded |= {key for f in findings if f.blocking for key in f.keys}
        for check in checks.values():
            for finding in check.findings:
                if finding.kind is not Kind.IN_PROGRESS:  # said once per partition, by run() and follow()
                    log.log(logging.ERROR if finding.blocking else logging.WARNING, "%s", finding)
        if topics:
            missing = [t for t in topics if not any(tp[0] == t for tp in partitions)]
            if missing and not partitions and not self.following:
                raise ConfigError(
                    f"no backed-up objects found for topic(s) {', '.join(missing)} under {self.store.url}/"
                    f"{self.config['topics.dir']}: nothing to restore",
                    key="topics",
                )
            if missing:
                log.warning("no backed-up objects found for topic(s): %s", ", ".join(missing))
        for part in partitions.values():
            warning = order_warning(part, self.plugins.stored_offsets)
            if warning:
                log.warning("%s", warning)
        targets = {tp[0]: self.route(tp[0]) for tp in partitions}
        exactly_once = self.exactly_once() if partitions and probe_transactions else False
        plans = []
        unprovable = []
        for tp, part in partitions.items():
            objects = without_excluded(part, checks.get(tp), hold)
            if not self.plugins.stored_offsets and len(part.directories) <= 1:
                reason = unprovable_bound(objects, self.options.bounds(tp))
                if reason:
                    unprovable.append(reason)
            if only_new_after is not None and tp in only_new_after:
                objects = [o for o in objects if o.start >= only_new_after[tp]]
                if not objects:
                    continue
            plans.append(
                RestorePlan(
                    source_topic=tp[0],
                    source_partition=tp[1],
                    target_topic=targets[tp[0]],
                    objects=tuple(objects),
                    bounds=self.options.bounds(tp),
                    exactly_once=exactly_once,
                    transactional_id=f"{self.progress_base}-{tp[0]}-{tp[1]}",
                    progress_group=f"{self.progress_base}-{tp[0]}",
                    offset_map_topic=self.config["restore.offset.map.topic"],
                )
            )
        if unprovable:
            raise PlanError("; ".join(unprovable))
        return RestorePlanSet(
            partitions,
            targets,
            plans,
            problems,
            checks=checks,
            timestamps=self.plugins.timestamps,
            layout=self.detection.describe(),
        )

    def check_whole(self, plan_set: RestorePlanSet) -> None:
        """Stop before producing anything when the bucket lacks part of the backup, unless ``--allow-gaps``."""
        blocking = plan_set.blocking
        if blocking and not self.options.allow_gaps:
            raise incomplete(blocking, "\n(--allow-gaps restores the rest and lists what is skipped)")

    def check_targets(self, plan_set: RestorePlanSet, create: bool = True) -> None:
        """Every target topic exists with enough partitions (or is created), and no non-empty source topic is restored
        into itself, before anything is produced.

        ``create=False`` (dry runs) creates nothing and raises nothing: what would stop the restore is recorded in
        ``plan_set.blockers``.
        """

        def fail(message: str) -> None:
            if create:
                raise PlanError(message)
            plan_set.blockers.append(message)

        existing = self.admin.topics()
        needed: dict[str, int] = {}
        for plan in plan_set.plans:
            needed[plan.target_topic] = max(needed.get(plan.target_topic, 0), plan.target_partition + 1)
        for target, count in sorted(needed.items()):
            have = existing.get(target)
            plan_set.target_partitions[target] = have
            if have is None:
                if not self.config["topic.creation.enable"]:
                    fail(
                        f"target topic {target!r} does not exist; create it with at least {count} partitions, or set "
                        "topic.creation.enable=true"
                    )
                    continue
                count = max(count, self._recorded_partitions(plan_set, target))
                if self.config["restore.topic.configs"]:
                    recorded = self._recorded_config(plan_set, target)
                    count = max(count, recorded[1].partitions if recorded else 0)
                plan_set.creation_partitions[target] = count
                if create:
                    self._create_target(plan_set, target, count)
            elif have < count:
                fail(
                    f"target topic {target!r} has {have} partitions but the backup holds partition {count - 1}: add "
                    f"partitions (kafka-topics --alter --partitions {count}) or restore to another topic; nothing "
                    "was produced"
                )
        self._check_policies(plan_set, [t for t in sorted(needed) if t in existing])
        self._check_feedback_loop(plan_set, existing, fail)
        lease = self.lease()
        if not create and lease is not None:  # a dry run claims nothing: it says who holds a target now
            holders = lease.holders(needed)
            if holders:
                fail(refusal(holders, int(time.time() * 1000)))

    def _recorded_config(self, plan_set: RestorePlanSet, target: str) -> tuple[str, TopicConfig] | None:
        """The configuration the backup recorded for the source topic routed to ``target`` (the newest at or before
        ``--until-timestamp`` when given), with that source's name; ``None`` when none was recorded."""
        manifests = self.plugins.manifests(self.store)
        for source, routed in sorted(plan_set.targets.items()):
            if routed != target:
                continue
            at = pick_snapshot(manifests.topic_config_times(source), self.options.until_timestamp)
            if at is not None:
                return source, manifests.topic_config(source, at)
        return None

    def _check_policies(self, plan_set: RestorePlanSet, targets: list[str]) -> None:
        """Existing targets whose cleanup.policy differs from the source's: a warning in the plan and the log."""
        try:
            actual = self.admin.topic_configs(targets, only_own=False) if targets else {}
        except KafkaAuthorizationError as exc:  # the check is advice: the restore itself needs no DESCRIBE_CONFIGS
            skipped = f"cleanup.policy of the existing targets not compared with the source's: {exc}"
            plan_set.warnings.append(skipped)
            log.warning("%s", skipped)
            return
        for target in targets:
            recorded = self._recorded_config(plan_set, target)
            if recorded is None:
                continue
            warning = policy_warning(
                recorded[0], recorded[1], target, actual.get(target, {}).get("cleanup.policy", "delete")
            )
            if warning:
                plan_set.warnings.append(warning)
                log.warning("%s", warning)

    def _recorded_partitions(self, plan_set: RestorePlanSet, target: str) -> int:
        """The partition count the backup recorded for the source topic(s) routed to ``target`` (0 when none did:
        objects written by another tool), so that a created topic has the source's partitions, empty ones included."""
        manifests = self.plugins.manifests(self.store)
        counts = [manifests.partition_count(source) for source, routed in plan_set.targets.items() if routed == target]
        return max((c for c in counts if c is not None), default=0)

    def _create_target(self, plan_set: RestorePlanSet, target: str, count: int) -> None:
        replication, topic_config = self._creation_settings()
        if self.config["restore.topic.configs"]:
            recorded = self._recorded_config(plan_set, target)
            topic_config = creation_configs(recorded[1] if recorded else None, topic_config)
        self.admin.create_topic(target, count, replication, topic_config)
        plan_set.created_topics.append(target)
        plan_set.target_partitions[target] = count
        log.info(
            "created topic %s with %d partitions%s",
            target,
            count,
            f" ({', '.join(f'{k}={v}' for k, v in sorted(topic_config.items()))})" if topic_config else "",
        )
        if "retention.ms" not in topic_config:
            log.warning(
                "created topic %s with the broker's default retention: restored records older than it are "
                "deleted by the broker at once (set topic.creation.default.retention.ms=-1 to keep them)",
                target,
            )

    def _creation_settings(self) -> tuple[int, dict[str, str]]:
        """Replication factor and topic configs of created targets, from Kafka Connect's ``topic.creation.default.*``
        (e.g. ``topic.creation.default.retention.ms=-1``); ``partitions`` is always the backup's partition count."""
        prefix = "topic.creation.default."
        settings = {k[len(prefix) :]: str(v) for k, v in self.config.extras.items() if k.startswith(prefix)}
        replication = int(settings.pop("replication.factor", "-1"))
        settings.pop("partitions", None)
        return replication, settings

    def _check_feedback_loop(
        self, plan_set: RestorePlanSet, existing: dict[str, int], fail: Callable[[str], None]
    ) -> None:
        if self.config["restore.allow.same.topic"]:
            return
        for source, target in sorted(plan_set.targets.items()):
            if source != target or target not in existing:
                continue
            tps = [(target, p) for p in range(existing[target])]
            ends = self.admin.end_offsets(tps, read_committed=False)
            if not any(ends.values()):
                continue
            group = f"{self.progress_base}-{source}"
            if self.admin.pending_transactional_offsets(group, tps):
                continue  # a run of this very restore stopped inside a transaction: resuming
            if any(v is not None for v in self.admin.group_offsets(group, tps).values()):
                continue  # resuming this very restore
            fail(
                f"restoring into {target!r}, the topic the backup came from, which is not empty: that duplicates its "
                "records (and feeds a running backup back into itself). Rename the target with transforms "
                "(RegexRouter) or topic.rename, or set restore.allow.same.topic=true"
            )

    # ------------------------------------------------------------------------------------------------ running
    def lease(self) -> Lease | None:
        """This run's claim on its target topics (``None`` when ``restore.lease.topic`` is empty)."""
        topic = self.config["restore.lease.topic"]
        if topic and self._lease is None:
            source = f"{self.store.url}/{self.plugins.layout.topics_dir}"
            self._lease = Lease(
                self.admin,
                self.producer_settings,
                self.consumer_settings,
                topic,
                self.config["name"],
                source,
                self.run_id,
                f"{self.progress_base}-lease",
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
        plan_set = plan_set or self.plan()
        self.check_whole(plan_set)
        self.hold_targets(plan_set)
        if self.options.schemas:  # the registry answers (or fails the restore) before any topic is created
            plan_set.plans = self._import_schemas(plan_set)
        self.check_targets(plan_set)
        plan_set.plans = self._decide_starts(plan_set.plans)
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
            self._ensure_offset_map_topic()
            summary.results = self._run_job(plans)
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

    def _decide_starts(self, plans: list[RestorePlan]) -> list[RestorePlan]:
        """Stamp each plan with the restore's identity and this run, and say before anything is produced whether its
        committed progress is its own (resume), not its own on an empty target (fresh), or not its own on a target
        holding records (refused, unless ``--restart``); a target holding records no progress accounts for is refused
        unless ``--append``. Each task decides again once its producer has fenced any other (:mod:`.task`): what is
        decided here may be stale by the time the task runs."""
        if not plans:
            return plans
        self._fence_killed_runs(plans)
        decided, refusals = [], []
        for plan, identity, decision, append in self._decisions(plans):
            if decision.refused:
                refusals.append(decision.reason)
            elif decision.reason:
                log.warning("%s", decision.reason)
            decided.append(
                dataclasses.replace(
                    plan, identity=identity.to_metadata(), run=self.run_id, restart=self.options.restart, append=append
                )
            )
        if refusals:
            raise PlanError("nothing was produced: " + "; ".join(refusals))
        return decided

    def start_refusals(self, plan_set: RestorePlanSet) -> list[str]:
        """What would refuse the plan's targets at their start (a dry run: read only, nothing fenced or stamped)."""
        existing = self.admin.topics()
        plans = [p for p in plan_set.plans if existing.get(p.target_topic, 0) > p.target_partition]
        return [decision.reason for _, _, decision, _ in self._decisions(plans) if decision.refused]

    def _decisions(self, plans: list[RestorePlan]) -> list[tuple[RestorePlan, ProgressIdentity, Decision, bool]]:
        """Each plan with its identity, the decision on its start (:func:`.progress.decide`) and whether it appends."""
        if not plans:
            return []
        identities = self._identities(plans)
        targets = [(p.target_topic, p.target_partition) for p in plans]
        ends = self.admin.end_offsets(targets, read_committed=False)
        committed: dict[tuple[str, TP], tuple[int | None, str]] = {}
        for group in sorted({p.progress_group for p in plans}):
            tps = [(p.target_topic, p.target_partition) for p in plans if p.progress_group == group]
            for tp, value in self.admin.group_offsets_with_metadata(group, tps).items():
                committed[(group, tp)] = value
        unaccounted = [
            (p.target_topic, p.target_partition)
            for p in plans
            if committed.get((p.progress_group, (p.target_topic, p.target_partition)), (None, ""))[0] is None
            and ends.get((p.target_topic, p.target_partition), 0) > 0
        ]
        holding = self.admin.holding_records(unaccounted, f"{self.progress_base}-probe")
        out = []
        for plan, identity in zip(plans, identities, strict=True):
            tp = (plan.target_topic, plan.target_partition)
            offset, metadata = committed.get((plan.progress_group, tp), (None, ""))
            # restore.allow.same.topic=true restores into a non-empty source topic: adding to its records, as asked
            append = self.options.append or (
                plan.target_topic == plan.source_topic and self.config["restore.allow.same.topic"]
            )
            decision = decide(
                identity,
                offset,
                metadata,
                ends.get(tp, 0),
                self.options.restart,
                run=self.run_id,
                append=append,
                target_has_records=tp in holding if tp in unaccounted else None,
            )
            out.append((plan, identity, decision, append))
        return out

    def _fence_killed_runs(self, plans: list[RestorePlan]) -> None:
        """A run killed inside a transaction left it open (until its timeout), its progress pending in the group:
        Kafka will not show that group's offsets until the transaction ends. Starting a producer with the same
        transactional id aborts it — records and progress together — as the task would, only later."""
        for group in sorted({p.progress_group for p in plans}):
            members = [p for p in plans if p.progress_group == group]
            pending = self.admin.pending_transactional_offsets(
                group, [(p.target_topic, p.target_partition) for p in members]
            )
            for plan in members:
                if (plan.target_topic, plan.target_partition) in pending:
                    self._fence(plan.transactional_id)
                    log.warning(
                        "%s[%d]: a previous run was stopped inside a transaction: aborted it (transactional.id %r), "
                        "its records and progress discarded",
                        plan.target_topic,
                        plan.target_partition,
                        plan.transactional_id,
                    )

    def _transactions_denied(self, exc: Exception, transactional_id: str) -> str:
        """The ACL lacking when ``init_transactions`` of ``transactional_id`` was refused ("" when it was not)."""
        error = retry.error_of(exc)
        return (
            denial(
                error.code() if error is not None else None, self.producer_settings, transactional_id=transactional_id
            )
            or ""
        )

    def _fence(self, transactional_id: str) -> None:
        from confluent_kafka import KafkaException, Producer

        producer = Producer({**self.producer_settings, "transactional.id": transactional_id})

        def attempt(remaining: float) -> None:
            try:
                producer.init_transactions(min(30.0, remaining))
            except KafkaException as exc:
                needed = self._transactions_denied(exc, transactional_id)
                if needed:
                    raise KafkaAuthorizationError(
                        f"a previous run left a transaction open; aborting it was refused: {needed}"
                    ) from None
                raise

        retry.call(f"init_transactions of transactional.id {transactional_id!r}", attempt, 60.0)

    # ------------------------------------------------------------------------------------------------ groups
    def translate_groups(self, regex: str = ".*", dry_run: bool = False) -> GroupsPlan:
        """Commit, on the target cluster, the recorded groups (full match of ``regex``) at the target offsets their
        source offsets translate to (:mod:`.groups`); ``dry_run`` commits nothing. Groups with active members on the
        target are refused (a ``PlanError`` naming them; nothing is committed)."""
        try:
            pattern = re.compile(regex)
        except re.error as exc:
            raise ConfigError(f"--consumer-groups: not a regular expression: {regex!r} ({exc})") from None
        plan_set = self.current_plan or self.plan()
        manifests = self.plugins.manifests(self.store)
        result = GroupsPlan()
        wanted: list[tuple[str, str, int, int]] = []  # group, source topic, partition, committed source offset
        for topic in sorted(plan_set.targets):
            times = manifests.group_snapshot_times(topic)
            at = pick_snapshot(times, self.options.until_timestamp)
            if at is None and times:
                at = times[0]
                log.warning(
                    "%s: no consumer-group snapshot at or before --until-timestamp %s: using the oldest (%d)",
                    topic,
                    self.options.until_timestamp,
                    at,
                )
            result.snapshots[topic] = at
            if at is None:
                continue
            snapshot = manifests.group_snapshot(topic, at)
            for group, offsets in sorted(snapshot.groups.items()):
                if pattern.fullmatch(group):
                    wanted.extend((group, topic, p, o) for p, o in sorted(offsets.items()))
        if not wanted:
            return result
        existing = self.admin.topics()
        targets = {(t, p): plan_set.targets[t] for _, t, p, _ in wanted}
        plans = {(p.source_topic, p.source_partition): p for p in plan_set.plans}
        keyed = [
            (tp, plans.get(tp) or RestorePlan(tp[0], tp[1], target, (), self.options.bounds(tp), False, "", ""))
            for tp, target in sorted(targets.items())
        ]
        present = [(tp, plan) for tp, plan in keyed if existing.get(plan.target_topic, 0) > tp[1]]
        identities = {
            (tp[0], tp[1], plan.target_topic, plan.target_partition): identity.to_metadata()
            for (tp, plan), identity in zip(present, self._identities([p for _, p in present]), strict=True)
        }
        map_topic = self.config["restore.offset.map.topic"]
        maps: dict[MapKey, OffsetMap] = {}
        if map_topic and map_topic not in existing:  # not there, or invisible to a principal without DESCRIBE on it
            self.admin.require_describe(map_topic, "restore --consumer-groups reads the restore's offset map there")
        if map_topic and map_topic in existing:
            end = self.admin.end_offsets([(map_topic, 0)], read_committed=False)[(map_topic, 0)]
            maps = read_offset_maps(self.consumer_settings, map_topic, end, self.progress_base, identities)
        ends = self.admin.end_offsets([(p.target_topic, p.target_partition) for _, p in present], read_committed=True)
        for group, topic, partition, offset in wanted:
            target = targets[(topic, partition)]
            key = (topic, partition, target, partition)
            if key not in identities:  # the target partition does not exist (yet: a dry run before creating it)
                result.translations.append(
                    Translation(group, topic, partition, offset, target, partition, None, "pending")
                )
                continue
            offset_map = maps.get(key, OffsetMap())
            planned = plans.get((topic, partition))
            if dry_run and planned is not None and planned.objects and not offset_map.ranges:
                translated, how = None, "pending"
            else:
                translated, how = translate_offset(offset_map, offset, ends[(target, partition)])
            result.translations.append(Translation(group, topic, partition, offset, target, partition, translated, how))
        groups = sorted({t.group for t in result.translations})
        described = self.admin.describe_groups(groups)
        result.active = {g: state.members for g, state in described.items() if state.members}
        # DESCRIBE on a group (are members active?) and READ (the commit): checked for every group before any commit
        result.denied = {
            g: state.denied or lacks(self.admin.settings, "READ", "group", g)
            for g, state in described.items()
            if state.denied or (state.operations is not None and "READ" not in state.operations)
        }
        if dry_run:
            return result
        if result.denied:
            raise KafkaAuthorizationError(
                "restore --consumer-groups: "
                + "; ".join(result.denied[g] for g in sorted(result.denied))
                + " (translation needs DESCRIBE and READ on every group it commits): no group offsets were committed"
            )
        if result.active:
            raise PlanError(
                "restore --consumer-groups: "
                + "; ".join(
                    f"group {g} has {n} active member(s) on the target cluster" for g, n in result.active.items()
                )
                + ": stop its consumers first; no group offsets were committed"
            )
        for group in groups:
            commits = {
                (t.target_topic, t.target_partition): t.target_offset
                for t in result.translations
                if t.group == group and t.target_offset is not None
            }
            metadata = {
                (t.target_topic, t.target_partition): f"kafka-s3 restore: {t.source_topic}[{t.source_partition}] "
                f"{t.source_offset}"
                for t in result.translations
                if t.group == group
            }
            self.admin.commit_group_offsets(group, commits, metadata)
        result.committed = True
        for t in result.translations:
            log.info("%s", t.line())
        return result

    # ------------------------------------------------------------------------------------------------ schemas
    def saved_schemas(self, plan_set: RestorePlanSet) -> list[SavedSchemas]:
        """The newest saved subjects of each source topic (at or before ``--until-timestamp`` when given)."""
        manifests = self.plugins.manifests(self.store)
        out = []
        for topic in sorted(plan_set.targets):
            at = pick_snapshot(manifests.schemas_times(topic), self.options.until_timestamp)
            if at is not None:
                out.append(manifests.schemas(topic, at))
        return out

    def schemas_plan(self, plan_set: RestorePlanSet) -> str:
        """Dry run of ``--schemas``: per subject, the target registry's mode and so what the restore does (IMPORT:
        imported under the source's ids; READWRITE: registered, the target assigns ids); which saved versions keep
        their ids, which get others (rewritten in the payloads) and which are not there yet."""
        from kafka_s3.io.schema_registry.subjects import IMPORT, READONLY, SchemaImport, predict_ids, registry_for

        client = registry_for(self.config.originals)
        if client is None:
            return "schemas: no target Schema Registry (set schemas.registry.url): restore --schemas would fail"
        saved = self.saved_schemas(plan_set)
        if not saved:
            return "schemas: the backup saved no Schema Registry subjects for these topics"
        predicted = SchemaImport()
        for record in saved:
            one = predict_ids(client, record)
            predicted.ids.update(one.ids)
            predicted.modes.update(one.modes)
            predicted.conflicts.update(one.conflicts)
        same = sorted(old for old, new in predicted.ids.items() if new == old)
        moved = sorted((old, new) for old, new in predicted.ids.items() if new is not None and new != old)
        missing = sorted(old for old, new in predicted.ids.items() if new is None)
        subjects = ", ".join(sorted(predicted.modes))
        parts = [f"schemas ({subjects}): {len(same)} id(s) preserved"]
        if moved:
            parts.append("rewritten in payloads: " + ", ".join(f"{old}->{new}" for old, new in moved))
        if missing:
            parts.append(
                f"{len(missing)} version(s) not in the target registry yet (ids {', '.join(map(str, missing))}): "
                "registered, and rewritten in payloads where the target assigns other ids"
            )
        for subject, mode in sorted(predicted.modes.items()):
            if subject in predicted.conflicts:
                held = ", ".join(map(str, predicted.conflicts[subject]))
                parts.append(
                    f"{subject}: target mode IMPORT, but other schemas hold id(s) {held} there: "
                    "restore --schemas would fail"
                )
            elif mode == IMPORT:
                parts.append(f"{subject}: target mode IMPORT, imported under the source's ids and versions")
            elif mode == READONLY:
                parts.append(f"{subject}: target mode READONLY: restore --schemas would fail")
            else:
                parts.append(f"{subject}: target mode {mode}, registered (ids the target assigns)")
        return "; ".join(parts)

    def _import_schemas(self, plan_set: RestorePlanSet) -> list[RestorePlan]:
        """``--schemas``: write the saved subjects into the target registry (IMPORT mode: under their own ids, else
        registered); where the target has other ids, the plans rewrite them in the restored payloads."""
        from kafka_s3.io.schema_registry.subjects import IMPORT, import_subjects, registry_for

        client = registry_for(self.config.originals)
        if client is None:
            raise ConfigError(
                "restore --schemas needs the target Schema Registry: set schemas.registry.url",
                key="schemas.registry.url",
            )
        saved = self.saved_schemas(plan_set)
        if not saved:
            log.warning("restore --schemas: the backup saved no Schema Registry subjects for these topics")
        ids: dict[int, int] = {}
        imported: list[str] = []
        for record in saved:
            result = import_subjects(client, record)
            ids.update({old: new for old, new in result.ids.items() if new is not None})
            imported += [s for s, mode in result.modes.items() if mode == IMPORT]
            log.info(
                "wrote subjects %s into the target registry (%s)",
                ", ".join(sorted(record.subjects)),
                ", ".join(f"{s}: {m}" for s, m in sorted(result.modes.items())),
            )
        moved = tuple(sorted((old, new) for old, new in ids.items() if old != new))
        plan_set.schema_note = schema_note(len(ids), moved, tuple(sorted(imported)))
        log.info("%s", plan_set.schema_note)
        return [dataclasses.replace(p, schema_ids=moved) for p in plan_set.plans]

    def _identities(self, plans: list[RestorePlan]) -> list[ProgressIdentity]:
        """Each plan's identity (:mod:`.progress`): what its progress and its offset map are stamped with."""
        cluster = self.admin.cluster_id()
        topic_ids = self.admin.topic_ids({p.target_topic for p in plans})
        source = f"{self.store.url}/{self.plugins.layout.topics_dir}"
        return [
            ProgressIdentity(
                source,
                plan.source_topic,
                plan.source_partition,
                cluster,
                plan.target_topic,
                topic_ids.get(plan.target_topic, ""),
                plan.target_partition,
                str(plan.bounds),
            )
            for plan in plans
        ]

    def _ensure_offset_map_topic(self) -> None:
        """The offset map's topic exists before any task writes to it (one partition: its records are few)."""
        topic = self.config["restore.offset.map.topic"]
        if not topic or topic in self.admin.topics():
            return
        replication = int(self._creation_settings()[0])
        try:
            self.admin.create_topic(topic, 1, replication, {"retention.ms": "-1", "retention.bytes": "-1"})
        except KafkaError:
            if topic not in self.admin.topics():  # created by a concurrent restore meanwhile: fine
                raise
        log.info("created topic %s (the restores' offset maps, restore.offset.map.topic)", topic)

    def _run_job(self, plans: list[RestorePlan]) -> list[RestoreResult]:
        cap = self.config["tasks.max"]
        slots = min(len(plans), cap) if cap > 0 else len(plans)
        if self.live_progress and self.live is None:
            self.live = LiveCounts.open(self.engine.driver_host)
        task = restore_task(
            plans,
            self.raw_config,
            self.store_spec,
            self.producer_settings,
            self.consumer_settings,
            slots,
            self.live.new_round() if self.live else None,
        )
        self.engine.start()  # a lazily started session is not the job's time (operators and the benchmark read it)
        job_started = time.monotonic()
        rows = self.engine.run_tasks(f"kafka-s3 restore ({len(plans)} partitions)", task, slots)
        results = sorted((RestoreResult.from_json(r) for r in rows), key=lambda r: (r.source_topic, r.source_partition))
        log.info("restore job: %d records in %.2fs", sum(r.records for r in results), time.monotonic() - job_started)
        return results

    def follow(self, stop: threading.Event | None = None) -> None:
        """Restore, then keep restoring objects that appear later (including new time-period directories).

        A partition whose next chunk the backup has not finished uploading waits there (nothing after it is produced
        first) and goes on once it is complete. In buckets without manifests (another tool's), an object that
        appears after the restore went past its first offset (possible with several directories per partition: field
        or time partitioners write each directory's objects at their own pace) cannot be inserted in order any more:
        its records below the progress are reported, not restored.
        """
        stop = stop or threading.Event()
        self.following = True
        interval = self.config["s3.poll.interval.ms"] / 1000
        seen: dict[TP, set[str]] = {}
        progress: dict[TP, int] = {}
        waiting: dict[TP, int | None] = {}
        try:
            self._follow(stop, interval, seen, progress, waiting)
        finally:
            self.release_targets()

    def _follow(
        self,
        stop: threading.Event,
        interval: float,
        seen: dict[TP, set[str]],
        progress: dict[TP, int],
        waiting: dict[TP, int | None],
    ) -> None:
        while not stop.is_set():
            plan_set = self.plan()
            for tp, check in plan_set.checks.items():
                if check.frontier != waiting.get(tp) and check.unfinished is not None:
                    log.info("waiting: %s", check.unfinished)
                waiting[tp] = check.frontier
            for problem in late_objects(plan_set, seen, progress):
                plan_set.problems.append(problem)
                log.warning("%s: %s", problem.key, problem.message)
            summary = self.run(plan_set)
            for r in summary.results:
                if r.progress is not None:
                    progress[(r.source_topic, r.source_partition)] = r.progress
            if summary.records:
                log.info("restored %d records; next listing in %.0fs", summary.records, interval)
            stop.wait(interval)


def late_objects(plan_set: RestorePlanSet, seen: dict[TP, set[str]], progress: dict[TP, int]) -> list[Problem]:
    """Objects listed for the first time whose start offset is below the restore's progress (``follow``); updates
    ``seen``."""
    problems = []
    for tp, part in plan_set.partitions.items():
        keys = {o.key for o in part.objects}
        before = seen.get(tp)
        if before is not None and tp in progress:
            for obj in part.objects:
                if obj.key not in before and obj.start < progress[tp]:
                    problems.append(
                        Problem(
                            obj.key,
                            f"offset {obj.start}",
                            f"appeared after the restore of {tp[0]}[{tp[1]}] had passed its first offset {obj.start} "
                            f"(progress {progress[tp]}): its records below offset {progress[tp]} (all of them when "
                            "offsets are not stored) are not restored",
                        )
                    )
        seen[tp] = keys
    return problems


def schema_note(registered: int, moved: tuple[tuple[int, int], ...], imported: tuple[str, ...] = ()) -> str:
    """What ``restore --schemas`` does with the schema ids, in words (the plan and the summary say it)."""
    how = f" (imported in IMPORT mode: {', '.join(imported)})" if imported else ""
    if not moved:
        return f"schemas: {registered} schema version(s) written into the target registry{how}, ids preserved"
    pairs = ", ".join(f"{old}->{new}" for old, new in moved)
    return (
        f"schemas: {registered} schema version(s) written into the target registry{how}, some under other ids; the "
        f"restore rewrites them in each wire-format key and value ({pairs})"
    )
