"""Plain helpers shared by the integration tests: CLI runs (also on a pseudo-terminal), configuration files, object
listings, stable end offsets, free ports."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

QUICKSTART_SCHEMA = {
    "type": "struct",
    "name": "myrecord",
    "optional": False,
    "fields": [{"field": "f1", "type": "string", "optional": False}],
}


def quickstart_values(with_schema: bool) -> list[bytes]:
    out = []
    for i in range(1, 10):
        payload = {"f1": f"value{i}"}
        doc = {"schema": QUICKSTART_SCHEMA, "payload": payload} if with_schema else payload
        out.append(json.dumps(doc).encode())
    return out


ITEM_SCHEMA = {
    "type": "struct",
    "name": "item",
    "optional": False,
    "fields": [{"field": "p", "type": "int32", "optional": False}, {"field": "i", "type": "int32", "optional": False}],
}


def sidecar_records(partitions: int = 2, per_partition: int = 5) -> list[dict]:
    """Records for keys and headers sidecars: values are Connect JSON with ITEM_SCHEMA; record 1 of a partition has
    no headers, record 2 a null key, the others repeated header keys around a null header value."""
    out = []
    for p in range(partitions):
        for i in range(per_partition):
            headers = (
                None
                if i == 1
                else [("h", f"first-{p}-{i}".encode()), ("empty", None), ("h", f"second-{p}-{i}".encode())]
            )
            out.append(
                {
                    "partition": p,
                    "key": None if i == 2 else f"key-{p}-{i}".encode(),
                    "headers": headers,
                    "value": json.dumps({"schema": ITEM_SCHEMA, "payload": {"p": p, "i": i}}).encode(),
                }
            )
    return out


def list_keys(s3_client, bucket: str, prefix: str = "") -> list[str]:
    keys = []
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.extend(item["Key"] for item in page.get("Contents", []))
    return sorted(keys)


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_in_terminal(args: list[str], timeout: float = 300, env: dict | None = None) -> tuple[int, str]:
    """Run ``kafka-s3 ARGS`` with a pseudo-terminal as stdout and stderr (progress bars only draw on a terminal);
    returns the exit code and everything it printed, terminal control sequences removed."""
    main, secondary = pty.openpty()
    environ = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "COLUMNS": "200",
        "LINES": "50",
        "TERM": "xterm",
        **(env or {}),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafka_s3.cli", *args],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=environ,
        close_fds=True,
    )
    os.close(secondary)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"kafka-s3 {' '.join(args)} did not end within {timeout}s")
            ready, _, _ = select.select([main], [], [], 0.5)
            if ready:
                try:
                    data = os.read(main, 65536)
                except OSError:  # EIO: the terminal's other end closed (the process ended)
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(main)
    return proc.wait(timeout=30), ANSI.sub("", b"".join(chunks).decode("utf-8", errors="replace")).replace("\r", "\n")


def stable_end_offsets(bootstrap: str, tps, timeout: float = 10.0) -> dict:
    """End offsets under read_committed once they reach the high watermarks. Apache Kafka's commit_transaction
    returns once the coordinator has logged the commit; the markers reach the partitions a moment later, and until
    then the last stable offset lags behind (noida-db writes them at once). Call it when no transaction is open."""
    from kafka_s3.io.kafka.admin import Admin

    admin = Admin({"bootstrap.servers": bootstrap})
    tps = list(tps)
    deadline = time.monotonic() + timeout
    while True:
        stable = admin.end_offsets(tps, read_committed=True)
        if stable == admin.end_offsets(tps, read_committed=False) or time.monotonic() > deadline:
            return stable
        time.sleep(0.1)


def free_port_pair() -> int:
    """A free port on 127.0.0.1 whose successor is free too (an Apache Kafka controller listens on port + 1)."""
    import socket

    for _ in range(50):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port >= 65535:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no free pair of ports on 127.0.0.1")


def xdist_worker_index() -> int:
    """0, 1, ... for pytest-xdist's workers gw0, gw1, ... (``make test`` runs two); 0 outside xdist. Tests that start a
    server of their own on a fixed port add a multiple of it, so the workers' servers never meet."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(worker[2:]) if worker[2:].isdigit() else 0


@contextlib.contextmanager
def standalone_cluster() -> Iterator[str]:
    """A loopback Spark standalone cluster of this test worker's own (ports 10 apart per worker); yields its URL."""
    from tools import spark_cluster

    port = spark_cluster.DEFAULT_PORT + 10 * xdist_worker_index()
    cluster = spark_cluster.up(port)
    try:
        yield cluster.master_url
    finally:
        spark_cluster.down(port)


def iceberg_sink(
    name: str, topics: str, tables: str, catalog_uri: str, warehouse: str, bootstrap: str, s3_env: Mapping[str, str]
) -> dict[str, str]:
    """An Apache Iceberg sink configuration writing ``topics`` into ``tables`` (auto-created) of pyiceberg's SQL
    catalog at ``catalog_uri``, the warehouse and Kafka those of the tests' services; callers add their own keys."""
    return {
        "name": name,
        "connector.class": "org.apache.iceberg.connect.IcebergSinkConnector",
        "topics": topics,
        "iceberg.tables": tables,
        "iceberg.tables.auto-create-enabled": "true",
        "iceberg.catalog.type": "sql",
        "iceberg.catalog.uri": catalog_uri,
        "iceberg.catalog.warehouse": warehouse,
        "bootstrap.servers": bootstrap,
        "store.url": s3_env["endpoint_url"],
        "s3.region": s3_env["region"],
        "aws.access.key.id": s3_env["access_key"],
        "aws.secret.access.key": s3_env["secret_key"],
    }


def write_properties(path: Path, raw: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in raw.items()))
    return path


def run_cli(args: list[str], timeout: float = 300, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """``kafka-s3 ARGS`` in a subprocess (the services' environment and ``env`` over it, workers on this
    interpreter), output as text. Spark runs in-process (``KAFKA_S3_SPARK_SERVER=0``, set for the whole suite in
    tests/conftest.py) unless ``env`` says otherwise."""
    return subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, **(env or {})},
        check=False,
    )


class CountingEngine:
    """The shared engine, noting how many Spark tasks each job asked for."""

    def __init__(self, engine):
        self.engine = engine
        self.jobs: list[int] = []

    def run_tasks(self, description: str, task, count: int) -> list[str]:
        self.jobs.append(count)
        return self.engine.run_tasks(description, task, count)

    def __getattr__(self, name: str):
        return getattr(self.engine, name)
