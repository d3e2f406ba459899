"""Who may write a target partition, and from where: the restore's transactions and the progress it resumes.

Whether to use transactions at all (``exactly.once.support``: probed, never silently given up), fencing the open
transaction a killed run left (its records and progress discarded together), and each partition's start: resume this
restore's own progress, start fresh, or refuse (another restore's progress on a non-empty target without
``--restart``; records no restore accounts for without ``--append``). Each task decides again once its producer has
fenced any other (:mod:`.task`): what is decided here may be stale by the time the task runs.
"""

from __future__ import annotations

import dataclasses
import logging

from kafka_s3.core.errors import KafkaAuthorizationError, KafkaError, PlanError
from kafka_s3.io.kafka.clients import TP
from kafka_s3.io.kafka.transactions import init_transactions
from kafka_s3.pipelines.restore.context import RestoreContext
from kafka_s3.pipelines.restore.plan import RestorePlanSet
from kafka_s3.pipelines.restore.progress import Decision, ProgressIdentity, decide
from kafka_s3.pipelines.restore.task import RestorePlan

log = logging.getLogger("kafka_s3.restore")


class Fencing:
    def __init__(self, ctx: RestoreContext):
        self.ctx = ctx
        self._exactly_once: bool | None = None

    def exactly_once(self) -> bool:
        """Whether to use transactions: required / requested (probe the broker) / disabled. The log says which."""
        if self._exactly_once is None:
            mode = self.ctx.config["exactly.once.support"]
            if mode == "disabled":
                self._exactly_once = False
                log.info("restoring at least once (exactly.once.support=disabled)")
            else:
                self.ctx.admin.topics()  # an unreachable cluster is a KafkaError naming it, not "no transactions"
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

        def refused(needed: str, detail: str) -> str:
            return (
                f"exactly.once.support={mode}: the restore's transactional producer was refused: {needed} (every "
                f"transactional id of this restore starts with '{self.ctx.progress_base}-': grant WRITE and DESCRIBE "
                f"on that prefix), or set exactly.once.support=disabled to restore at least once ({detail})"
            )

        try:
            reason = init_transactions(self.ctx.producer_settings, f"{self.ctx.progress_base}-probe", 30.0, refused)
        except KafkaAuthorizationError:
            raise
        except KafkaError as exc:
            raise KafkaError(
                f"exactly.once.support={mode}: probing the Kafka cluster for transactions failed ({exc}); fix the "
                "cause, or set exactly.once.support=disabled to restore at least once"
            ) from None
        return not reason, reason

    def decide_starts(self, plans: list[RestorePlan]) -> list[RestorePlan]:
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
                    plan,
                    identity=identity.to_metadata(),
                    run=self.ctx.run_id,
                    restart=self.ctx.options.restart,
                    append=append,
                )
            )
        if refusals:
            raise PlanError("nothing was produced: " + "; ".join(refusals))
        return decided

    def start_refusals(self, plan_set: RestorePlanSet) -> list[str]:
        """What would refuse the plan's targets at their start (a dry run: read only, nothing fenced or stamped)."""
        existing = self.ctx.admin.topics()
        plans = [p for p in plan_set.plans if existing.get(p.target_topic, 0) > p.target_partition]
        return [decision.reason for _, _, decision, _ in self._decisions(plans) if decision.refused]

    def _decisions(self, plans: list[RestorePlan]) -> list[tuple[RestorePlan, ProgressIdentity, Decision, bool]]:
        """Each plan with its identity, the decision on its start (:func:`.progress.decide`) and whether it appends."""
        if not plans:
            return []
        identities = self.identities(plans)
        targets = [(p.target_topic, p.target_partition) for p in plans]
        ends = self.ctx.admin.end_offsets(targets, read_committed=False)
        committed: dict[tuple[str, TP], tuple[int | None, str]] = {}
        for group in sorted({p.progress_group for p in plans}):
            tps = [(p.target_topic, p.target_partition) for p in plans if p.progress_group == group]
            for tp, value in self.ctx.admin.group_offsets_with_metadata(group, tps).items():
                committed[(group, tp)] = value
        unaccounted = [
            (p.target_topic, p.target_partition)
            for p in plans
            if committed.get((p.progress_group, (p.target_topic, p.target_partition)), (None, ""))[0] is None
            and ends.get((p.target_topic, p.target_partition), 0) > 0
        ]
        holding = self.ctx.admin.holding_records(unaccounted, f"{self.ctx.progress_base}-probe")
        out = []
        for plan, identity in zip(plans, identities, strict=True):
            tp = (plan.target_topic, plan.target_partition)
            offset, metadata = committed.get((plan.progress_group, tp), (None, ""))
            # restore.allow.same.topic=true restores into a non-empty source topic: adding to its records, as asked
            append = self.ctx.options.append or (
                plan.target_topic == plan.source_topic and self.ctx.config["restore.allow.same.topic"]
            )
            decision = decide(
                identity,
                offset,
                metadata,
                ends.get(tp, 0),
                self.ctx.options.restart,
                run=self.ctx.run_id,
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
            pending = self.ctx.admin.pending_transactional_offsets(
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

    def _fence(self, transactional_id: str) -> None:
        reason = init_transactions(
            self.ctx.producer_settings,
            transactional_id,
            60.0,
            lambda needed, _: f"a previous run left a transaction open; aborting it was refused: {needed}",
        )
        if reason:
            raise KafkaError(f"aborting the transaction a previous run left open failed: {reason}")

    def identities(self, plans: list[RestorePlan]) -> list[ProgressIdentity]:
        """Each plan's identity (:mod:`.progress`): what its progress and its offset map are stamped with."""
        cluster = self.ctx.admin.cluster_id()
        topic_ids = self.ctx.admin.topic_ids({p.target_topic for p in plans})
        source = f"{self.ctx.store.url}/{self.ctx.plugins.layout.topics_dir}"
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
