"""What a ``restore --follow`` cycle tells its metrics endpoint (:mod:`kafka_s3.core.metrics`), from what the cycle
already holds: its plans (the objects the bucket has beyond each partition's progress, with their manifests' counts
and times) and its tasks' results. No extra request to Kafka or the bucket."""

from __future__ import annotations

import time

from kafka_s3.core.metrics import PipelineMetrics
from kafka_s3.pipelines.restore.result import RestoreResult
from kafka_s3.pipelines.restore.task import RestorePlan


def measure_cycle(
    metrics: PipelineMetrics, plans: list[RestorePlan], results: list[RestoreResult], seconds: float
) -> None:
    """Per source partition: what was restored (records, objects and their bytes), and what the bucket still holds
    beyond the progress (lag in records, and in seconds from the newest restored record's time); then the cycle."""
    by_tp = {(r.source_topic, r.source_partition): r for r in results}
    lags: dict[tuple[str, int], int] = {}
    for plan in plans:
        tp = (plan.source_topic, plan.source_partition)
        result = by_tp.get(tp)
        restored = [
            o
            for o in plan.objects
            if result is not None
            and result.last_source_offset is not None
            and result.first_source_offset is not None
            and o.last_offset is not None
            and o.last_offset >= result.first_source_offset
            and o.name.start_offset <= result.last_source_offset
        ]
        times = [o.last_timestamp for o in restored if o.last_timestamp is not None]
        metrics.committed(
            tp[0],
            tp[1],
            result.records if result is not None else 0,
            sum(o.size for o in restored),
            result.objects if result is not None else 0,
            max(times) if times else None,
        )
        ends = [o.last_offset + 1 for o in plan.objects if o.last_offset is not None]
        reached = result.progress if result is not None and result.progress is not None else None
        if ends and reached is not None:
            lags[tp] = max(0, max(ends) - reached)
        elif result is not None and result.error is None:
            lags[tp] = 0  # objects of another tool (no manifest counts): a task that finished restored them all
    for tp in metrics.partitions:  # seen before, nothing new in the bucket for them this cycle
        lags.setdefault(tp, 0)
    committed = any(r.records for r in results)
    metrics.cycle(seconds, committed, time.time(), sum(lags.values()), lags)
