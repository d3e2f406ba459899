"""A restore of many quiet partitions (issue 30, target 1): a few Spark tasks serve them all, each partition still
restored exactly (its records, order, keys, headers and timestamps) with its own progress."""

from __future__ import annotations

import pytest

from kafka_s3.pipelines.engine import TASKS_PER_CORE
from tests.support.integration import CountingEngine
from tests.support.restore import fidelity, read_topic, records, restore_progress

pytestmark = [pytest.mark.integration, pytest.mark.issue(30, item=1)]

PARTITIONS, PER_PARTITION = 40, 3
EXACT = {"store.envelope": "true", "flush.size": 100}


def test_a_restore_of_many_quiet_partitions_runs_in_a_few_tasks_and_restores_every_partition_exactly(
    backup, engine, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap
):
    from kafka_s3.pipelines.restore.driver import Restore

    source, target = fresh_topic(PARTITIONS), fresh_topic(PARTITIONS)
    rows = records(PARTITIONS, PER_PARTITION)
    produce(source, rows)
    assert backup(fresh_bucket, source, EXACT).records == PARTITIONS * PER_PARTITION
    _, config = make_config(
        fresh_bucket, source, source=True, store__envelope="true", topic__rename=f"{source}:{target}"
    )
    counting = CountingEngine(engine)

    summary = Restore(config, counting).run()

    assert len(counting.jobs) == 1 and counting.jobs[0] <= TASKS_PER_CORE * 2, counting.jobs  # local[2]
    assert sorted(r.source_partition for r in summary.results) == list(range(PARTITIONS))
    restored = read_topic(kafka_bootstrap, target)
    assert {p: fidelity(restored[p]) for p in range(PARTITIONS)} == {
        p: fidelity([r for r in rows if r["partition"] == p]) for p in range(PARTITIONS)
    }
    assert restore_progress(kafka_bootstrap, config, source, target) == dict.fromkeys(range(PARTITIONS), PER_PARTITION)
