"""``restore --consumer-groups``: the groups a backup recorded, committed on the target cluster at the offsets their
source offsets translate to through the offset map the restore recorded (:mod:`.groups`). Every group is checked —
no active member, the rights to commit — before any is committed. A group whose offset lies below the backup's
pruned start (``kafka-s3 prune`` removed the record it would read next) is translated to the restore's first record,
with a warning naming the group, the partition, its offset and the start (:func:`below_pruned_start`).
"""

from __future__ import annotations

import logging
import re

from kafka_s3.core.errors import ConfigError, KafkaAuthorizationError, PlanError
from kafka_s3.core.groups import SERIES as GROUPS
from kafka_s3.core.groups import OffsetMap, Translation, pick_snapshot, translate_offset
from kafka_s3.io.kafka.denied import lacks
from kafka_s3.io.kafka.offset_map import MapKey, read_offset_maps
from kafka_s3.pipelines.restore.context import RestoreContext
from kafka_s3.pipelines.restore.fencing import Fencing
from kafka_s3.pipelines.restore.groups import GroupsPlan
from kafka_s3.pipelines.restore.plan import RestorePlanSet
from kafka_s3.pipelines.restore.task import RestorePlan

log = logging.getLogger("kafka_s3.restore")


def translate_groups(
    ctx: RestoreContext, fencing: Fencing, plan_set: RestorePlanSet, regex: str = ".*", dry_run: bool = False
) -> GroupsPlan:
    """Commit, on the target cluster, the recorded groups (full match of ``regex``) at the target offsets their
    source offsets translate to (:mod:`.groups`); ``dry_run`` commits nothing. Groups with active members on the
    target are refused (a ``PlanError`` naming them; nothing is committed)."""
    try:
        pattern = re.compile(regex)
    except re.error as exc:
        raise ConfigError(f"--consumer-groups: not a regular expression: {regex!r} ({exc})") from None
    manifests = ctx.plugins.manifests(ctx.store)
    result = GroupsPlan()
    wanted: list[tuple[str, str, int, int]] = []  # group, source topic, partition, committed source offset
    for topic in sorted(plan_set.targets):
        times = manifests.times(GROUPS, topic)
        at = pick_snapshot(times, ctx.options.until_timestamp)
        if at is None and times:
            at = times[0]
            log.warning(
                "%s: no consumer-group snapshot at or before --until-timestamp %s: using the oldest (%d)",
                topic,
                ctx.options.until_timestamp,
                at,
            )
        result.snapshots[topic] = at
        if at is None:
            continue
        snapshot = manifests.load(GROUPS, topic, at)
        for group, offsets in sorted(snapshot.groups.items()):
            if pattern.fullmatch(group):
                wanted.extend((group, topic, p, o) for p, o in sorted(offsets.items()))
    if not wanted:
        return result
    existing = ctx.admin.topics()
    targets = {(t, p): plan_set.targets[t] for _, t, p, _ in wanted}
    plans = {(p.source_topic, p.source_partition): p for p in plan_set.plans}
    keyed = [
        (tp, plans.get(tp) or RestorePlan(tp[0], tp[1], target, (), ctx.options.bounds(tp), False, "", ""))
        for tp, target in sorted(targets.items())
    ]
    present = [(tp, plan) for tp, plan in keyed if existing.get(plan.target_topic, 0) > tp[1]]
    identities = {
        (tp[0], tp[1], plan.target_topic, plan.target_partition): identity.to_metadata()
        for (tp, plan), identity in zip(present, fencing.identities([p for _, p in present]), strict=True)
    }
    map_topic = ctx.config["restore.offset.map.topic"]
    maps: dict[MapKey, OffsetMap] = {}
    if map_topic and map_topic not in existing:  # not there, or invisible to a principal without DESCRIBE on it
        ctx.admin.require_describe(map_topic, "restore --consumer-groups reads the restore's offset map there")
    if map_topic and map_topic in existing:
        end = ctx.admin.end_offsets([(map_topic, 0)], read_committed=False)[(map_topic, 0)]
        maps = read_offset_maps(ctx.consumer_settings, map_topic, end, ctx.progress_base, identities)
    ends = ctx.admin.end_offsets([(p.target_topic, p.target_partition) for _, p in present], read_committed=True)
    for group, topic, partition, offset in wanted:
        target = targets[(topic, partition)]
        key = (topic, partition, target, partition)
        pruned = below_pruned_start(plan_set, group, (topic, partition), offset)
        if key not in identities:  # the target partition does not exist (yet: a dry run before creating it)
            result.translations.append(
                Translation(group, topic, partition, offset, target, partition, None, "pending", pruned)
            )
            continue
        offset_map = maps.get(key, OffsetMap())
        planned = plans.get((topic, partition))
        if dry_run and planned is not None and planned.objects and not offset_map.ranges:
            translated, how = None, "pending"
        else:
            translated, how = translate_offset(offset_map, max(offset, pruned or 0), ends[(target, partition)])
        result.translations.append(
            Translation(group, topic, partition, offset, target, partition, translated, how, pruned)
        )
    groups = sorted({t.group for t in result.translations})
    described = ctx.admin.describe_groups(groups)
    result.active = {g: state.members for g, state in described.items() if state.members}
    # DESCRIBE on a group (are members active?) and READ (the commit): checked for every group before any commit
    result.denied = {
        g: state.denied or lacks(ctx.admin.settings, "READ", "group", g)
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
            + "; ".join(f"group {g} has {n} active member(s) on the target cluster" for g, n in result.active.items())
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
        ctx.admin.commit_group_offsets(group, commits, metadata)
    result.committed = True
    for t in result.translations:
        log.info("%s", t.line())
    return result


def below_pruned_start(plan_set: RestorePlanSet, group: str, tp: tuple[str, int], offset: int) -> int | None:
    """The backup's recorded start when ``group``'s committed ``offset`` lies below it (``kafka-s3 prune`` removed
    the record it would read next), with a warning naming them: the group resumes at the restore's first record."""
    start = plan_set.pruned.get(tp)
    if start is None or offset >= start.pruned.offset:
        return None
    log.warning(
        "group %s: %s[%d] offset %d was pruned (%s by kafka-s3 prune): translated to the restore's first record, "
        "source offset %d (%s)",
        group,
        tp[0],
        tp[1],
        offset,
        start.pruned.describe(),
        start.pruned.offset,
        start.describe(),
    )
    return start.pruned.offset
