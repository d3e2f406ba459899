"""Helpers of the backup integration tests (object listings, reads, consumer-group offsets, CLI runs)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from kafka_s3.io.kafka.admin import Admin
from tests.support.integration import list_keys

MANIFEST_PREFIX = "topics/_kafka-s3/"


def utc_ms(*args) -> int:
    """Epoch milliseconds of a UTC date-time given as ``datetime`` arguments."""
    return int(dt.datetime(*args, tzinfo=dt.UTC).timestamp() * 1000)


def data_keys(s3_client, bucket: str, topic: str) -> list[str]:
    """Every object under ``topics/<topic>/`` (sorted)."""
    return list_keys(s3_client, bucket, f"topics/{topic}/")


def get(s3_client, bucket: str, key: str) -> bytes:
    return s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()


def json_lines(body: bytes) -> list:
    """JSON values of a JSON-lines object: a newline after every record, the last one too."""
    if not body:
        return []
    assert body.endswith(b"\n"), body[-50:]
    return [json.loads(line) for line in body.split(b"\n")[:-1]]


def json_objects(s3_client, bucket: str, topic: str, decompress: Callable[[bytes], bytes] | None = None) -> dict:
    """``{key: [values]}`` for every data object of ``topic``."""
    out = {}
    for key in data_keys(s3_client, bucket, topic):
        body = get(s3_client, bucket, key)
        out[key] = json_lines(decompress(body) if decompress else body)
    return out


def group_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    admin = Admin({"bootstrap.servers": bootstrap})
    got = admin.group_offsets(group, [(topic, p) for p in range(partitions)])
    return {p: got[(topic, p)] for p in range(partitions)}


def wait_until(
    predicate: Callable[[], bool], timeout: float = 90.0, what: str = "condition", interval: float = 0.25
) -> None:
    """Poll ``predicate`` until it holds; a generous bound only guards against hanging (never a timing claim)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def write_properties(path: Path, raw: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in raw.items()))
    return path


def cli(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run ``kafka-s3`` as a subprocess with the test interpreter."""
    environ = {**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", *args], capture_output=True, text=True, timeout=timeout, env=environ
    )


def recreate_topic(kafka_bootstrap: str, topic: str, partitions: int = 1) -> None:
    """Delete ``topic`` and create it again, empty: a new log whose offsets start at 0 again."""
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    admin.delete_topic(topic)
    for _ in range(100):  # deletion completes asynchronously on some brokers
        try:
            admin.create_topic(topic, partitions, config={"retention.ms": "-1"})
            return
        except Exception:
            time.sleep(0.2)
    raise AssertionError(f"could not re-create {topic}")
