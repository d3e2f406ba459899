"""``--standalone``: a Spark standalone cluster of the bench's own on this machine (one master, two workers of one
core each), started from pyspark's distribution beside ``local[*]`` and stopped at the end of the run.

It uses its own ports (``PORT``..``PORT + 3``) and state directory (``<results>/<stamp>.tmp/spark``), so it never
touches the cluster of the tests (``tools.spark_cluster``, port 27077).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from common import kill_group

PORT = 27177
WORKERS = 2
WORKER_CORES = 1
WORKER_MEMORY = "1536m"
START_TIMEOUT_S = 240  # a master and two JVMs on 2 busy cores: 60 s was not enough at a load average of 16


@dataclass
class Cluster:
    master_url: str
    ui_port: int
    processes: list[subprocess.Popen] = field(default_factory=list)
    workers: int = WORKERS
    worker_cores: int = WORKER_CORES


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _start(role_class: str, args: list[str], log: Path, environ: dict[str, str]) -> subprocess.Popen:
    env = dict(environ)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["SPARK_MASTER_OPTS"] = "-Dspark.master.rest.enabled=false"  # no REST port 6066 shared with other masters
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env["SPARK_HOME"] = str(_spark_home())
    command = [str(_spark_home() / "bin" / "spark-class"), role_class, *args]
    with open(log, "ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _alive_workers(ui_port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as response:
        info = json.load(response)
    return sum(1 for w in info.get("workers", []) if w.get("state") == "ALIVE")


def up(base: Path, env: dict[str, str], port: int = PORT, workers: int = WORKERS) -> Cluster:
    """Start the master and ``workers`` workers (environment ``env``: the executors they launch inherit it, S3 and
    Kafka settings included); wait until all registered (``START_TIMEOUT_S``), else stop them and raise."""
    if _port_open(port):
        raise RuntimeError(f"port {port} is taken: another standalone cluster of the bench is running?")
    base.mkdir(parents=True, exist_ok=True)
    ui_port = port + 1
    cluster = Cluster(f"spark://127.0.0.1:{port}", ui_port, workers=workers)
    cluster.processes.append(
        _start(
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui_port)],
            base / "master.log",
            env,
        )
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _port_open(port) and time.monotonic() < deadline:
        time.sleep(0.3)
    for i in range(workers):
        cluster.processes.append(
            _start(
                "org.apache.spark.deploy.worker.Worker",
                [
                    cluster.master_url,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--webui-port",
                    str(port + 2 + i),
                    "--cores",
                    str(WORKER_CORES),
                    "--memory",
                    WORKER_MEMORY,
                    "--work-dir",
                    str(base / f"work-{i}"),
                ],
                base / f"worker-{i}.log",
                env,
            )
        )
    while time.monotonic() < deadline:
        try:
            if _alive_workers(ui_port) >= workers:
                return cluster
        except OSError:
            pass
        time.sleep(0.5)
    down(cluster)
    raise RuntimeError(f"the standalone cluster did not start with {workers} workers; see the logs in {base}")


def down(cluster: Cluster) -> None:
    """Stop the workers, then the master (each was started in a process group of its own)."""
    import signal

    for proc in reversed(cluster.processes):
        kill_group(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(proc.poll() is None for proc in cluster.processes):
        time.sleep(0.3)
    for proc in cluster.processes:
        kill_group(proc.pid)
        proc.wait()
