"""Item 15 of issue 14: before a backup uses a bucket it checks once that the store refuses a conditional put on an
existing key; a store that ignores ``If-None-Match: *`` is an error unless ``store.allow.unconditional.puts=true``."""

from __future__ import annotations

import logging

import pytest

from kafka_s3.core.errors import ConfigError
from kafka_s3.pipelines.backup.driver import Backup, group_id
from tests.support.backup import data_keys, group_offsets
from tests.support.faultproxy import FaultProxy
from tests.support.integration import list_keys

pytestmark = pytest.mark.integration


def _config(make_config, bucket, topic, **properties):
    props = {"format.class": "bytearray", "flush.size": "3", **properties}
    return make_config(bucket, topic, **{k.replace(".", "__"): v for k, v in props.items()})[1]


def test_a_store_ignoring_conditional_puts_is_refused_unless_allowed(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, s3_env, kafka_bootstrap, caplog
):
    topic = fresh_topic(1)
    produce(topic, [{"value": f"v{i}".encode()} for i in range(3)])
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        proxy.ignore_condition(times=1_000_000, method="PUT")  # every refused conditional put "succeeds"
        config = _config(make_config, fresh_bucket, topic, **{"store.url": proxy.url})

        with pytest.raises(ConfigError) as failure:
            Backup(config, engine=engine).run_once()
        message = str(failure.value)
        assert fresh_bucket in message and "conformance-probe" in message and "If-None-Match" in message
        assert "store.allow.unconditional.puts=true" in message
        assert data_keys(s3_client, fresh_bucket, topic) == []  # nothing was written
        assert list_keys(s3_client, fresh_bucket, "topics/_kafka-s3/conformance-probe") == []  # the probe is gone

        allowed = _config(
            make_config, fresh_bucket, topic, **{"store.url": proxy.url, "store.allow.unconditional.puts": "true"}
        )
        with caplog.at_level(logging.WARNING, logger="kafka_s3.backup"):
            Backup(allowed, engine=engine).run_once()
        assert "ignores the condition" in caplog.text
        assert len(data_keys(s3_client, fresh_bucket, topic)) == 1
        assert group_offsets(kafka_bootstrap, group_id(allowed), topic, 1) == {0: 3}


def test_a_conforming_store_is_probed_once_per_backup(engine, make_config, fresh_bucket, fresh_topic, produce, s3_env):
    topic = fresh_topic(1)
    produce(topic, [{"value": f"v{i}".encode()} for i in range(3)])
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        backup = Backup(_config(make_config, fresh_bucket, topic, **{"store.url": proxy.url}), engine=engine)
        backup.run_once()
        backup.run_once()
        probes = proxy.requests(method="PUT", path="conformance-probe")
    assert len(probes) == 2  # one probe: its first put, then the refused second one
    assert all(r.headers.get("if-none-match") == "*" for r in probes)
