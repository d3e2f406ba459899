"""What a restore would do, decided before anything is produced: the backup surveyed and checked (is it whole, where
does each partition's frontier stand), the bounds judged, and per source partition its target, objects and bounds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_s3.core.errors import ConfigError, PlanError
from kafka_s3.io.kafka.clients import TP
from kafka_s3.pipelines.read.ambiguity import refuse_ambiguous
from kafka_s3.pipelines.read.bounds import refuse_empty_bounds
from kafka_s3.pipelines.read.committed import cross_check, read_marks
from kafka_s3.pipelines.read.discovery import Problem, SourcePartition
from kafka_s3.pipelines.read.integrity import Finding, Kind, PartitionCheck, incomplete, survey, without_excluded
from kafka_s3.pipelines.read.pruned import Start, pruned_starts, refuse_pruned_bounds
from kafka_s3.pipelines.read.reader import order_warning, unprovable_bound
from kafka_s3.pipelines.restore.context import RestoreContext
from kafka_s3.pipelines.restore.task import RestorePlan
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
    pruned: dict[TP, Start] = field(default_factory=dict)  # partitions kafka-s3 prune left a recorded start

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


def plan_restore(
    ctx: RestoreContext,
    probe: Callable[[], bool],
    only_new_after: dict[TP, int] | None = None,
    probe_transactions: bool = True,
) -> RestorePlanSet:
    """What a restore would do. ``probe`` says whether it will use transactions (asked only when there is something
    to restore); ``probe_transactions=False``: plans that will not be run (``kafka-s3 groups``) do not ask the cluster
    for a transactional producer, so a principal without a transactional id can plan."""
    by_time = ctx.options.from_timestamp is not None or ctx.options.until_timestamp is not None
    if by_time and not ctx.plugins.envelope:
        raise ConfigError(
            "--from-timestamp/--until-timestamp need record timestamps, which only store.envelope=true backups keep",
            key="store.envelope",
        )
    ctx.store.check()
    detection = ctx.detect()
    problems: list[Problem] = []
    topics = ctx.options.topics or ctx.config["topics"] or None
    # The backup's own group (where this cluster has it) says what the bucket must hold: read before the listing
    marks, note = read_marks(ctx.config, ctx.store.url, topics or ctx.plugins.manifests(ctx.store).topics())
    if note:
        log.debug("the backup's consumer group was not compared with the bucket: %s", note)
    found = survey(ctx.store, ctx.plugins, topics, ctx.config["behavior.on.error"], problems)
    cross_check(found.checks, found.manifests, marks, set(found.sizes))
    partitions, checks = found.partitions, found.checks
    refuse_ambiguous(partitions, found.loaded)  # ByteArray records that cannot be told apart
    refuse_empty_bounds(ctx.options, partitions, ctx.following)  # before Spark starts or a topic is created
    starts = pruned_starts(found.manifests)  # a bound before what kafka-s3 prune left is an error, not a gap
    refuse_pruned_bounds(starts, sorted(partitions), ctx.options.from_offsets, ctx.options.from_timestamp)
    hold = ctx.following or not ctx.options.allow_gaps  # --allow-gaps skips unfinished chunks instead
    if ctx.options.verify_deep:
        readable = {tp: without_excluded(part, checks.get(tp), hold) for tp, part in partitions.items()}
        for tp, findings in deep_check(ctx.engine, ctx.config, readable).items():
            checks[tp].findings.extend(findings)
            checks[tp].excluded |= {key for f in findings if f.blocking for key in f.keys}
    for check in checks.values():
        for finding in check.findings:
            if finding.kind is not Kind.IN_PROGRESS:  # said once per partition, by run() and follow()
                log.log(logging.ERROR if finding.blocking else logging.WARNING, "%s", finding)
    if topics:
        missing = [t for t in topics if not any(tp[0] == t for tp in partitions)]
        if missing and not partitions and not ctx.following:
            raise ConfigError(
                f"no backed-up objects found for topic(s) {', '.join(missing)} under {ctx.store.url}/"
                f"{ctx.config['topics.dir']}: nothing to restore",
                key="topics",
            )
        if missing:
            log.warning("no backed-up objects found for topic(s): %s", ", ".join(missing))
    for part in partitions.values():
        warning = order_warning(part, ctx.plugins.stored_offsets)
        if warning:
            log.warning("%s", warning)
    targets = {tp[0]: ctx.route(tp[0]) for tp in partitions}
    exactly_once = probe() if partitions and probe_transactions else False
    plans = []
    unprovable = []
    for tp, part in partitions.items():
        objects = without_excluded(part, checks.get(tp), hold)
        if not ctx.plugins.stored_offsets and len(part.directories) <= 1:
            reason = unprovable_bound(objects, ctx.options.bounds(tp))
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
                bounds=ctx.options.bounds(tp),
                exactly_once=exactly_once,
                transactional_id=f"{ctx.progress_base}-{tp[0]}-{tp[1]}",
                progress_group=f"{ctx.progress_base}-{tp[0]}",
                offset_map_topic=ctx.config["restore.offset.map.topic"],
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
        timestamps=ctx.plugins.timestamps,
        layout=detection.describe(),
        pruned=starts,
    )


def check_whole(plan_set: RestorePlanSet, allow_gaps: bool) -> None:
    """Stop before producing anything when the bucket lacks part of the backup, unless ``--allow-gaps``."""
    blocking = plan_set.blocking
    if blocking and not allow_gaps:
        raise incomplete(blocking, "\n(--allow-gaps restores the rest and lists what is skipped)")


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
