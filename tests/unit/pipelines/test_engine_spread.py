"""How a job's plans are spread over its Spark tasks: a few tasks per core, each serving many quiet partitions, the
heavy partitions spread first so no task ends far behind the others (issue 30, target 1)."""

from __future__ import annotations

import pytest

from kafka_s3.pipelines.engine import TASKS_PER_CORE, spread, task_slots

pytestmark = pytest.mark.issue(30, item=1)


def test_a_thousand_quiet_partitions_run_in_a_few_tasks_per_core():
    assert task_slots(1000, parallelism=2) == 2 * TASKS_PER_CORE
    assert task_slots(3, parallelism=2) == 3  # never more tasks than plans
    assert task_slots(0, parallelism=2) == 0
    assert task_slots(10, parallelism=0) == TASKS_PER_CORE  # an engine that cannot tell its cores: still some


def test_spread_places_every_plan_exactly_once_in_at_most_the_slots():
    groups = spread([1] * 1000, 4)
    assert len(groups) == 4
    assert sorted(i for group in groups for i in group) == list(range(1000))
    assert sorted(len(g) for g in groups) == [250, 250, 250, 250]


def test_spread_gives_each_heavy_partition_a_task_of_its_own_before_grouping_the_quiet_ones():
    weights = [1_000_000, 10, 1_000_000, 10, 10, 1_000_000, 10, 1_000_000]
    groups = spread(weights, 4)
    heavy = {0, 2, 5, 7}
    assert all(len(heavy & set(g)) == 1 for g in groups)
    assert [g[0] for g in groups] == [0, 2, 5, 7]  # each group runs its heaviest plan first


def test_spread_balances_the_weights_and_is_deterministic():
    weights = [7, 3, 9, 1, 4, 4, 8, 2, 6, 5]
    groups = spread(weights, 3)
    totals = sorted(sum(weights[i] for i in g) for g in groups)
    assert totals[-1] - totals[0] <= max(weights)
    assert spread(weights, 3) == groups
    assert spread([], 4) == []
    assert spread([5, 5], 8) == [[0], [1]]  # fewer plans than slots: one plan per task, as before
