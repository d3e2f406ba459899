"""A following backup rides out an object-store outage: nothing is committed during it, everything after it."""

from __future__ import annotations

import threading

import pytest

from kafka_s3.pipelines.backup.driver import Backup, group_id
from tests.support.backup import data_keys, group_offsets, wait_until
from tests.support.faultproxy import FaultProxy

pytestmark = pytest.mark.integration


def test_follow_retries_failed_cycles_and_commits_only_durable_data(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, s3_env, kafka_bootstrap
):
    topic = fresh_topic(1)
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        properties = {
            "store.url": proxy.url,
            "format.class": "bytearray",
            "flush.size": "5",
            "cycle.interval.ms": "100",
            "s3.part.retries": "0",
        }
        _, config = make_config(fresh_bucket, topic, **{k.replace(".", "__"): v for k, v in properties.items()})
        backup = Backup(config, engine=engine)  # checks the bucket through the proxy while it is healthy
        proxy.fail(503, times=10_000, method="PUT")  # every upload fails until the outage ends
        stop = threading.Event()
        follower = threading.Thread(target=backup.follow, args=(stop,), daemon=True)
        follower.start()
        try:
            produce(topic, [{"value": f"v{i}".encode()} for i in range(10)])
            wait_until(lambda: len(proxy.requests(method="PUT")) >= 3, what="failed upload attempts")
            assert data_keys(s3_client, fresh_bucket, topic) == []
            assert group_offsets(kafka_bootstrap, group_id(config), topic, 1) == {0: None}

            proxy.clear()  # the outage ends
            wait_until(
                lambda: group_offsets(kafka_bootstrap, group_id(config), topic, 1) == {0: 10},
                what="offsets committed after the outage",
                timeout=180,
            )
            assert len(data_keys(s3_client, fresh_bucket, topic)) == 2
        finally:
            stop.set()
            follower.join(timeout=120)
    assert not follower.is_alive()
