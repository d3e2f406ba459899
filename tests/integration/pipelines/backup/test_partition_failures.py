"""A partition whose writes fail (issue 14, part B): its failure is surfaced, never swallowed (a chunk-conflict
restart included), and in follow mode it is retried with backoff while the other partitions keep moving."""

from __future__ import annotations

import threading

import pytest

from kafka_s3.core.errors import BackupFailed
from kafka_s3.io.kafka.settings import client_settings
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.cycle import CycleReport
from kafka_s3.pipelines.backup.driver import Backup, group_id
from kafka_s3.pipelines.backup.task import PartitionPlan, run_partition
from kafka_s3.pipelines.task_settings import TaskSettings
from tests.support.backup import data_keys, group_offsets, wait_until
from tests.support.faultproxy import FaultProxy

pytestmark = pytest.mark.integration


def _config(make_config, bucket, topic, **properties):
    props = {"format.class": "bytearray", "flush.size": "3", **properties}
    return make_config(bucket, topic, **{k.replace(".", "__"): v for k, v in props.items()})


def test_chunk_conflict_restart_surfaces_a_failed_background_upload(
    make_config, fresh_bucket, fresh_topic, produce, s3_client, s3_env
):
    topic = fresh_topic(1)
    produce(topic, [{"value": f"v{i}".encode()} for i in range(9)])
    _, config = _config(make_config, fresh_bucket, topic)
    # An earlier --once flush left a short chunk 3..4 in the bucket (and nothing before it).
    flushed = run_partition(
        PartitionPlan(topic, 0, start=3, end=5, hard_end=5, flush_open=True),
        TaskSettings(config, StoreSpec.from_config(config), client_settings(config, "consumer")),
    )
    assert [(c.start, c.end) for c in flushed.chunks] == [(3, 4)] and flushed.error is None

    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        _, config = _config(make_config, fresh_bucket, topic, **{"store.url": proxy.url, "s3.part.retries": "0"})
        # Chunk 0..2 commits (its manifest), but its data object's upload fails in the background; then chunk 3..5
        # meets the bucket's 3..4 and the task restarts from there.
        proxy.fail(503, times=1000, method="PUT", path=r"0000000000\.bin$")
        result = run_partition(
            PartitionPlan(topic, 0, start=0, end=9, hard_end=9),
            TaskSettings(config, StoreSpec.from_config(config), client_settings(config, "consumer")),
        )
        assert proxy.requests(method="PUT", path=r"0000000000\.bin$")

    assert result.error is not None and "0000000000.bin" in result.error, result
    assert result.retryable
    assert result.committed_offset == 0 and result.chunks == ()  # nothing past the failed chunk counts as durable
    assert f"{topic}+0+0000000000.bin" not in " ".join(data_keys(s3_client, fresh_bucket, topic))


def test_a_failing_partition_does_not_stall_the_others_in_follow_mode(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, s3_env, kafka_bootstrap
):
    topic = fresh_topic(2)
    reports: list[CycleReport] = []
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        _, config = _config(
            make_config,
            fresh_bucket,
            topic,
            **{"store.url": proxy.url, "s3.part.retries": "0", "flush.size": "5", "cycle.interval.ms": "100"},
        )
        backup = Backup(config, engine=engine, on_cycle=lambda report, results: reports.append(report))
        proxy.fail(503, times=100_000, method="PUT", path=r"partition(=|%3D)1/")  # partition 1's objects fail
        stop = threading.Event()
        follower = threading.Thread(target=backup.follow, args=(stop,), daemon=True)
        follower.start()
        try:
            produce(topic, [{"partition": p, "value": f"v{p}-{i}".encode()} for p in (0, 1) for i in range(10)])
            wait_until(
                lambda: group_offsets(kafka_bootstrap, group_id(config), topic, 2)[0] == 10,
                what="partition 0 committed while partition 1 fails",
                timeout=120,
            )
            wait_until(lambda: sum(f"{topic}[1]" in r for c in reports for r in c.retrying) >= 2, what="retries")
            assert group_offsets(kafka_bootstrap, group_id(config), topic, 2)[1] is None
            assert not any(f"{topic}[0]" in r for c in reports for r in c.retrying)
            assert all("503" in r for c in reports for r in c.retrying)

            proxy.clear()  # partition 1's store recovers: it catches up
            wait_until(
                lambda: group_offsets(kafka_bootstrap, group_id(config), topic, 2) == {0: 10, 1: 10},
                what="partition 1 committed after its failures",
                timeout=180,
            )
        finally:
            stop.set()
            follower.join(timeout=120)
    assert not follower.is_alive()
    assert len(data_keys(s3_client, fresh_bucket, topic)) == 4


def test_once_retries_a_failing_partition_then_gives_up_naming_it(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_env, kafka_bootstrap
):
    topic = fresh_topic(2)
    produce(topic, [{"partition": p, "value": f"v{p}-{i}".encode()} for p in (0, 1) for i in range(10)])
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        _, config = _config(
            make_config, fresh_bucket, topic, **{"store.url": proxy.url, "s3.part.retries": "0", "flush.size": "5"}
        )
        proxy.fail(503, times=100_000, method="PUT", path=r"partition(=|%3D)1/")
        with pytest.raises(BackupFailed) as failure:
            Backup(config, engine=engine).run_once()
        assert f"{topic}[1]" in str(failure.value) and "503" in str(failure.value)
        assert f"{topic}[0]" not in str(failure.value)
        assert group_offsets(kafka_bootstrap, group_id(config), topic, 2) == {0: 10, 1: None}

        proxy.clear()
        proxy.fail(503, times=1, method="PUT", path=r"partition(=|%3D)1/")  # a passing fault: retried, then done
        Backup(config, engine=engine).run_once()
        assert group_offsets(kafka_bootstrap, group_id(config), topic, 2) == {0: 10, 1: 10}
