"""An object store that freezes in the middle of ``backup --once`` ends the command with exit code 3 and a message
naming the endpoint, instead of minutes of silent read timeouts (the "No silent loss II" issue, item 5: a SeaweedFS
stopped with SIGSTOP left ``backup --once`` running for 14 minutes, saying almost nothing).

The freeze is the fault proxy in front of the real S3 server holding every request from the first data object's PUT
on (a client sees what it sees of a stopped process: connections accepted, never answered). Only the exit code and
the words are asserted; the bound on the wait only keeps a regression from hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from kafka_s3.core.errors import StoreError
from tests.support.backup import write_properties
from tests.support.faultproxy import FaultProxy
from tests.support.integration import list_keys

pytestmark = pytest.mark.integration

FROZEN_S = 3600.0  # longer than the test: a request that reaches the frozen store is never answered
BOUND_S = 600  # a regression guard only


def chunk_manifests(s3_client, bucket: str, topic: str) -> list[str]:
    return [k for k in list_keys(s3_client, bucket, f"topics/_kafka-s3/json/{topic}/") if k.endswith(".chunk")]


def test_backup_once_exits_3_naming_the_endpoint_when_the_store_freezes_mid_backup(
    make_config, fresh_bucket, fresh_topic, produce, s3_client, s3_env, tmp_path
):
    topic = fresh_topic(1)
    produce(topic, [{"value": f'{{"i": {i}}}'.encode()} for i in range(300)])
    with FaultProxy(s3_env["endpoint_url"]) as proxy:
        data = rf"/topics/{topic}/"  # the data objects (chunk manifests live under topics/_kafka-s3/)
        proxy.delay(FROZEN_S, 1_000_000, method="PUT", path=data)
        raw, _ = make_config(fresh_bucket, topic, store__url=proxy.url, flush__size="100")
        path = str(write_properties(tmp_path / "b.properties", raw))
        command = subprocess.Popen(
            [sys.executable, "-m", "kafka_s3.cli", "backup", "--once", "--no-progress", "-c", path],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        )
        try:
            # A chunk's manifest is created just before its data object is put: from then on (the data object's
            # PUT held either way) the store answers nothing at all.
            deadline = time.monotonic() + BOUND_S
            while not chunk_manifests(s3_client, fresh_bucket, topic) and command.poll() is None:
                assert time.monotonic() < deadline, "no chunk was ever committed"
                time.sleep(0.1)
            proxy.delay(FROZEN_S, 1_000_000)
            _, stderr = command.communicate(timeout=BOUND_S)
        finally:
            if command.poll() is None:
                command.kill()
    assert command.returncode == StoreError.exit_code, stderr[-4000:]
    errors = [line for line in stderr.splitlines() if line.startswith("kafka-s3: error:")]
    assert len(errors) == 1, stderr[-4000:]
    assert proxy.url in errors[0] and "answer" in errors[0], errors[0]
    assert f"{topic}[0]" in errors[0]
