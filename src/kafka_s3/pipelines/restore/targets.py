"""The restore's targets, checked before anything is produced: each target topic exists with enough partitions (or is
created with the source's partition count and recorded configs), an existing one's ``cleanup.policy`` matches the
source's (else a warning), and no non-empty source topic is restored into itself (Confluent's feedback loop).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from kafka_s3.core.errors import KafkaAuthorizationError, KafkaError, PlanError
from kafka_s3.core.topic_config import SERIES as TOPIC_CONFIGS
from kafka_s3.core.topic_config import TopicConfig, creation_configs, policy_warning
from kafka_s3.io.kafka.leases import Lease, refusal
from kafka_s3.pipelines.restore.context import RestoreContext
from kafka_s3.pipelines.restore.plan import RestorePlanSet

log = logging.getLogger("kafka_s3.restore")


class TargetChecks:
    def __init__(self, ctx: RestoreContext):
        self.ctx = ctx

    def check(self, plan_set: RestorePlanSet, create: bool = True, lease: Lease | None = None) -> None:
        """Every target topic exists with enough partitions (or is created), and no non-empty source topic is restored
        into itself, before anything is produced.

        ``create=False`` (dry runs) creates nothing and raises nothing: what would stop the restore is recorded in
        ``plan_set.blockers``.
        """

        def fail(message: str) -> None:
            if create:
                raise PlanError(message)
            plan_set.blockers.append(message)

        existing = self.ctx.admin.topics()
        needed: dict[str, int] = {}
        for plan in plan_set.plans:
            needed[plan.target_topic] = max(needed.get(plan.target_topic, 0), plan.target_partition + 1)
        for target, count in sorted(needed.items()):
            have = existing.get(target)
            plan_set.target_partitions[target] = have
            if have is None:
                if not self.ctx.config["topic.creation.enable"]:
                    fail(
                        f"target topic {target!r} does not exist; create it with at least {count} partitions, or set "
                        "topic.creation.enable=true"
                    )
                    continue
                count = max(count, self._recorded_partitions(plan_set, target))
                if self.ctx.config["restore.topic.configs"]:
                    recorded = self.recorded_config(plan_set, target)
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
        if not create and lease is not None:  # a dry run claims nothing: it says who holds a target now
            holders = lease.holders(needed)
            if holders:
                fail(refusal(holders, int(time.time() * 1000)))

    def recorded_config(self, plan_set: RestorePlanSet, target: str) -> tuple[str, TopicConfig] | None:
        """The configuration the backup recorded for the source topic routed to ``target`` (the newest at or before
        ``--until-timestamp`` when given), with that source's name; ``None`` when none was recorded."""
        manifests = self.ctx.plugins.manifests(self.ctx.store)
        for source, routed in sorted(plan_set.targets.items()):
            if routed != target:
                continue
            recorded = manifests.newest(TOPIC_CONFIGS, source, self.ctx.options.until_timestamp)
            if recorded is not None:
                return source, recorded
        return None

    def _check_policies(self, plan_set: RestorePlanSet, targets: list[str]) -> None:
        """Existing targets whose cleanup.policy differs from the source's: a warning in the plan and the log."""
        try:
            actual = self.ctx.admin.topic_configs(targets, only_own=False) if targets else {}
        except KafkaAuthorizationError as exc:  # the check is advice: the restore itself needs no DESCRIBE_CONFIGS
            skipped = f"cleanup.policy of the existing targets not compared with the source's: {exc}"
            plan_set.warnings.append(skipped)
            log.warning("%s", skipped)
            return
        for target in targets:
            recorded = self.recorded_config(plan_set, target)
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
        manifests = self.ctx.plugins.manifests(self.ctx.store)
        counts = [manifests.partition_count(source) for source, routed in plan_set.targets.items() if routed == target]
        return max((c for c in counts if c is not None), default=0)

    def _create_target(self, plan_set: RestorePlanSet, target: str, count: int) -> None:
        replication, topic_config = self._creation_settings()
        if self.ctx.config["restore.topic.configs"]:
            recorded = self.recorded_config(plan_set, target)
            topic_config = creation_configs(recorded[1] if recorded else None, topic_config)
        self.ctx.admin.create_topic(target, count, replication, topic_config)
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
        settings = {k[len(prefix) :]: str(v) for k, v in self.ctx.config.extras.items() if k.startswith(prefix)}
        replication = int(settings.pop("replication.factor", "-1"))
        settings.pop("partitions", None)
        return replication, settings

    def _check_feedback_loop(
        self, plan_set: RestorePlanSet, existing: dict[str, int], fail: Callable[[str], None]
    ) -> None:
        if self.ctx.config["restore.allow.same.topic"]:
            return
        for source, target in sorted(plan_set.targets.items()):
            if source != target or target not in existing:
                continue
            tps = [(target, p) for p in range(existing[target])]
            ends = self.ctx.admin.end_offsets(tps, read_committed=False)
            if not any(ends.values()):
                continue
            group = f"{self.ctx.progress_base}-{source}"
            if self.ctx.admin.pending_transactional_offsets(group, tps):
                continue  # a run of this very restore stopped inside a transaction: resuming
            if any(v is not None for v in self.ctx.admin.group_offsets(group, tps).values()):
                continue  # resuming this very restore
            fail(
                f"restoring into {target!r}, the topic the backup came from, which is not empty: that duplicates its "
                "records (and feeds a running backup back into itself). Rename the target with transforms "
                "(RegexRouter) or topic.rename, or set restore.allow.same.topic=true"
            )

    def ensure_offset_map_topic(self) -> None:
        """The offset map's topic exists before any task writes to it (one partition: its records are few)."""
        topic = self.ctx.config["restore.offset.map.topic"]
        if not topic or topic in self.ctx.admin.topics():
            return
        replication = int(self._creation_settings()[0])
        try:
            self.ctx.admin.create_topic(topic, 1, replication, {"retention.ms": "-1", "retention.bytes": "-1"})
        except KafkaError:
            if topic not in self.ctx.admin.topics():  # created by a concurrent restore meanwhile: fine
                raise
        log.info("created topic %s (the restores' offset maps, restore.offset.map.topic)", topic)
