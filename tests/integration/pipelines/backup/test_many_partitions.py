"""Many quiet partitions in one cycle (issue 30, target 1): a few Spark tasks serve them all, and every partition
still gets exactly its own objects, manifest, committed-end mark and group offset; a failing partition among many
is retried alone."""

from __future__ import annotations

import re

import pytest

from kafka_s3.core.manifest import TAIL
from kafka_s3.pipelines.backup.driver import Backup, group_id
from kafka_s3.pipelines.engine import PARTITIONS_AT_ONCE, TASKS_PER_CORE
from tests.support.backup import data_keys, group_offsets
from tests.support.faultproxy import FaultProxy
from tests.support.integration import CountingEngine, list_keys

pytestmark = [pytest.mark.integration, pytest.mark.issue(30, item=1)]

PARTITIONS, PER_PARTITION = 40, 3


def _config(make_config, bucket, topic, **properties):
    props = {"format.class": "bytearray", "flush.size": "100", **properties}
    return make_config(bucket, topic, **{k.replace(".", "__"): v for k, v in props.items()})[1]


def test_a_cycle_over_many_quiet_partitions_runs_in_a_few_tasks_and_backs_up_every_partition_exactly(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, [{"partition": p, "value": f"v{p}-{i}".encode()} for p in range(PARTITIONS) for i in range(3)])
    config = _config(make_config, fresh_bucket, topic)
    counting = CountingEngine(engine)

    summary = Backup(config, engine=counting).run_once()

    assert len(counting.jobs) == 1 and counting.jobs[0] <= TASKS_PER_CORE * 2, counting.jobs  # local[2]
    assert summary.records == PARTITIONS * PER_PARTITION
    assert summary.committed == {(topic, p): PER_PARTITION for p in range(PARTITIONS)}
    keys = data_keys(s3_client, fresh_bucket, topic)
    assert sorted(keys) == sorted(f"topics/{topic}/partition={p}/{topic}+{p}+0000000000.bin" for p in range(PARTITIONS))
    marks = [k for k in list_keys(s3_client, fresh_bucket) if k.endswith(TAIL) and f"/{topic}/" in k]
    assert len(marks) == PARTITIONS
    assert group_offsets(kafka_bootstrap, group_id(config), topic, PARTITIONS) == dict.fromkeys(
        range(PARTITIONS), PER_PARTITION
    )


def test_a_failing_partition_among_many_quiet_ones_is_retried_alone(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_env, kafka_bootstrap
):
    partitions = 12
    topic = fresh_topic(partitions)
    produce(topic, [{"partition": p, "value": f"v{p}-{i}".encode()} for p in range(partitions) for i in range(3)])
    counting = CountingEngine(engine)
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        config = _config(make_config, fresh_bucket, topic, **{"store.url": proxy.url, "s3.part.retries": "0"})
        proxy.fail(503, times=1, method="PUT", path=r"partition(=|%3D)5/")  # partition 5's first object put fails

        summary = Backup(config, engine=counting).run_once()

    assert counting.jobs[0] <= TASKS_PER_CORE * 2 and counting.jobs[1:] == [1], counting.jobs  # then 5 alone
    assert summary.committed == {(topic, p): 3 for p in range(partitions)}
    assert group_offsets(kafka_bootstrap, group_id(config), topic, partitions) == dict.fromkeys(range(partitions), 3)


def test_a_partition_new_to_the_bucket_is_listed_once_and_no_chunk_is_looked_up_before_its_own(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_env
):
    partitions = 6
    topic = fresh_topic(partitions)
    produce(topic, [{"partition": p, "value": f"v{p}-{i}".encode()} for p in range(partitions) for i in range(3)])
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        config = _config(make_config, fresh_bucket, topic, **{"store.url": proxy.url})

        Backup(config, engine=engine).run_once()

        listings = [
            r for r in proxy.requests(method="GET", query="list-type") if re.search(rf"{topic}%2F\d+%2F", r.query)
        ]
        looked_up = proxy.requests(method="HEAD", path=r"\.chunk$")
    assert len(listings) == partitions, [r.query for r in listings]  # the driver's resume, one per partition
    assert looked_up == []  # the tasks know the bucket held none: no HEAD before each manifest's create


class InProcessEngine:
    """An engine running each job's tasks in this process, one after another (no Spark: the tasks' own code against
    the real Kafka and S3), so the test sees the Kafka clients a task starts (``consumers_started``)."""

    started = True
    driver_host = "127.0.0.1"
    cancelled = False
    job_running = False

    def __init__(self, consumers_started: list[str], parallelism: int = 2):
        self.consumers_started = consumers_started
        self.parallelism = parallelism
        self.jobs: list[tuple[int, int]] = []  # (tasks, consumers the job started)

    def start(self) -> None:
        return None

    def task_progress(self) -> None:
        return None

    def cancel(self) -> None:
        self.cancelled = True

    def run_tasks(self, description: str, task, count: int) -> list[str]:
        before = len(self.consumers_started)
        results = [result for slot in range(count) for result in task(slot)]
        self.jobs.append((count, len(self.consumers_started) - before))
        return results


def test_a_backup_task_reads_all_of_its_partitions_with_one_consumer(
    make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap, monkeypatch
):
    import confluent_kafka

    started: list[str] = []

    class CountedConsumer(confluent_kafka.Consumer):  # the real consumer, its starts counted
        def __init__(self, config, *args, **kwargs):
            started.append(config.get("group.id", ""))
            super().__init__(config, *args, **kwargs)

    partitions = 12
    topic = fresh_topic(partitions)
    produce(topic, [{"partition": p, "value": f"v{p}-{i}".encode()} for p in range(partitions) for i in range(3)])
    config = _config(make_config, fresh_bucket, topic)
    in_process = InProcessEngine(started)
    monkeypatch.setattr(confluent_kafka, "Consumer", CountedConsumer)

    summary = Backup(config, engine=in_process).run_once()

    [(tasks, consumers)] = in_process.jobs
    assert consumers == tasks < partitions, in_process.jobs  # one consumer per task, not one per partition
    assert summary.committed == {(topic, p): 3 for p in range(partitions)}
    assert sorted(data_keys(s3_client, fresh_bucket, topic)) == sorted(
        f"topics/{topic}/partition={p}/{topic}+{p}+0000000000.bin" for p in range(partitions)
    )
    assert group_offsets(kafka_bootstrap, group_id(config), topic, partitions) == dict.fromkeys(range(partitions), 3)


def test_a_backup_task_stores_more_partitions_at_once_than_it_once_read(
    make_config, fresh_bucket, fresh_topic, produce, s3_env
):
    """Each manifest PUT is held half a second: the PUTs of the partitions a task works on at once overlap."""
    partitions = 12
    topic = fresh_topic(partitions)
    produce(topic, [{"partition": p, "value": f"v{p}".encode()} for p in range(partitions)])
    in_process = InProcessEngine([], parallelism=1)  # 2 tasks of 6 partitions each, one task after the other
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        config = _config(make_config, fresh_bucket, topic, **{"store.url": proxy.url})
        proxy.delay(0.5, times=partitions, method="PUT", path=r"\.chunk$")

        summary = Backup(config, engine=in_process).run_once()

        puts = proxy.requests(method="PUT", path=r"\.chunk$")
    assert summary.committed == {(topic, p): 1 for p in range(partitions)}
    most_at_once = max(sum(1 for o in puts if o.started <= p.started < o.finished) for p in puts)
    assert most_at_once > PARTITIONS_AT_ONCE, [(round(p.started, 2), round(p.finished, 2)) for p in puts]
