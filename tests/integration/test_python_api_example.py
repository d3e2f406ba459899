"""docs/python-api.md's example runs as written: a backup, a verify, a restore and a read through the Python API,
against the real services (its file gets the connection settings and names of this run added)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)```", DOC.read_text(), re.S)


def test_the_python_api_example_backs_up_verifies_restores_and_reads(
    fresh_bucket, fresh_topic, produce, s3_env, kafka_bootstrap, tmp_path
):
    from tests.support.integration import stable_end_offsets

    topic = fresh_topic(2)
    produce(topic, [{"partition": i % 2, "key": f"k{i}".encode(), "value": f"v{i}".encode()} for i in range(2500)])
    properties = blocks("properties")[0]
    properties = properties.replace("topics=orders", f"topics={topic}").replace("backups", fresh_bucket)
    properties = properties.replace("orders:orders-restored", f"{topic}:{topic}-restored")
    properties += (
        f"bootstrap.servers={kafka_bootstrap}\nstore.url={s3_env['endpoint_url']}\ns3.region={s3_env['region']}\n"
        f"aws.access.key.id={s3_env['access_key']}\naws.secret.access.key={s3_env['secret_key']}\n"
    )
    (tmp_path / "orders.properties").write_text(properties)
    [example] = blocks("python")
    run = subprocess.run(
        [sys.executable, "-c", example],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert "backed up 2500 records" in run.stdout and "restored 2500 records" in run.stdout, run.stdout
    assert "[(0, b'k0'), (1, b'k2'), (2, b'k4')]" in run.stdout, run.stdout
    restored = f"{topic}-restored"
    ends = stable_end_offsets(kafka_bootstrap, [(restored, 0), (restored, 1)])
    assert sum(ends.values()) >= 2500
